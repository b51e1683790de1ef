"""The FCC Reassigned Numbers Database (RND) query: was a number reassigned since a date."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from datetime import date
from typing import Any

import httpx
import structlog

from dialscore.kit.paced_http import PacedClient, Pacing, ProviderUnavailable
from dialscore.phones import masked_number
from dialscore.scoring.evidence import REASSIGNED_ANSWERS

log = structlog.get_logger(__name__)

DEFAULT_BASE_URL = "https://api.reassigned.us"
QUERY_PATH = "/query"
DEFAULT_PACING = Pacing(rate_per_second=10.0, timeout=10.0)
# The RND answers 401 and 403 for the account; any other 4xx is this query's own.
REFUSED = frozenset({401, 403})

# A US number of the North American Numbering Plan: +1, then an area code and an exchange
# that do not start with 0 or 1 (the RND knows only US numbers).
_NANP = re.compile(r"\+1([2-9][0-9]{2}[2-9][0-9]{6})")

Query = tuple[str, date]


def rnd_answer(body: dict[str, Any]) -> str | None:
    """The RND's answer in our words (``yes``, ``no``, ``no_data``), None when unreadable.

    The one place that reads the RND's answer document (P191): its ``result`` is "Yes" (the
    number was permanently disconnected since the date), "No" or "No Data", in any case, and
    with a space, a hyphen or an underscore in "No Data"."""
    result = body.get("result")
    if not isinstance(result, str):
        return None
    answer = re.sub(r"[\s_-]+", "_", result.strip().casefold())
    return answer if answer in REASSIGNED_ANSWERS else None


class ReassignedNumbers:
    """``GET /query?tn=NNNNNNNNNN&date=YYYY-MM-DD``, one (number, date) a request (P191).

    Requests are paced as ``pacing`` says, across every check() call on the instance; 429,
    5xx, timeouts and connection errors are retried with backoff. Create and use an instance
    on one event loop."""

    def __init__(
        self,
        username: str,
        api_key: str,
        *,
        base_url: str = DEFAULT_BASE_URL,
        pacing: Pacing = DEFAULT_PACING,
        name: str = "rnd",
    ) -> None:
        self.name = name
        self.pacing = pacing
        self._client = PacedClient(
            name,
            base_url=base_url,
            headers={},
            auth=httpx.BasicAuth(username, api_key),
            credentials_hint="check DIALSCORE_RND_USERNAME and DIALSCORE_RND_API_KEY",
            events="rnd_query",
            refused=REFUSED,
            pacing=pacing,
        )

    async def check(self, queries: Sequence[Query]) -> dict[Query, str]:
        """The RND's answer (``yes``, ``no``, ``no_data``) for each (E.164 number, consent
        date) asked, each asked once; a query not answered (not a US number, given up after
        retries, rejected, unreadable) is absent. Raises ProviderUnavailable when the RND
        cannot answer at all."""
        results: dict[Query, str] = {}

        async def check_into(query: Query) -> None:
            answer = await self._check_one(*query)
            if answer is not None:
                results[query] = answer

        try:
            # The first ProviderUnavailable cancels the rest of the batch: it would fail alike.
            async with asyncio.TaskGroup() as group:
                for query in dict.fromkeys(queries):
                    group.create_task(check_into(query))
        except* ProviderUnavailable as failures:
            raise _first_unavailable(failures) from None
        return results

    async def close(self) -> None:
        await self._client.close()

    async def _check_one(self, number: str, since: date) -> str | None:
        nanp = _NANP.fullmatch(number)
        if nanp is None:
            log.warning("rnd_query_skipped", reason="not a US number", number=masked_number(number))
            return None
        body = await self._client.fetch_json(
            "GET",
            QUERY_PATH,
            events="rnd_query",
            subject={"number": masked_number(number)},
            params={"tn": nanp.group(1), "date": since.isoformat()},
        )
        if body is None:
            return None
        answer = rnd_answer(body)
        if answer is None:
            log.warning("rnd_query_unreadable", number=masked_number(number), reason="no result")
        return answer


def _first_unavailable(group: BaseExceptionGroup[ProviderUnavailable]) -> ProviderUnavailable:
    for failure in group.exceptions:
        if isinstance(failure, ProviderUnavailable):
            return failure
        return _first_unavailable(failure)
    raise AssertionError("an exception group is never empty")
