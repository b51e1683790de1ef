"""What answering a page of contacts costs, by the way the answer is made.

A page of ``GET /jobs/{jobId}/contacts`` holds up to 1000 contacts of 77 fields each. Builds
such a page in memory (scored contacts with two or three numbers), then times, over
``--rounds`` rounds, the median of:

1. presenting the stored rows as dicts (``present_contact``), which every way does first;
2. validating the page against ``ContactsResponse`` and dumping it, as FastAPI does for a
   route's ``response_model``;
3. dumping the presented page as it is, with ``TypeAdapter(dict[str, Any]).dump_json`` (how
   the route answers: the contract test checks that the page keeps to its model);
4. ``json.dumps`` of the presented page (how the route answered before it declared a model).

    .venv/bin/python bench/contacts_response.py [--contacts 1000] [--rounds 30]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

from pydantic import TypeAdapter

from dialscore.jobs.callability import NO_VERDICT
from dialscore.jobs.schemas import ContactsResponse, present_contact
from dialscore.scoring.engine import score_contact

NUMBERS = ("+14155552671", "+442079460958", "+4930123456", "+12125550199", "+61291234567")


def stored_contacts(count: int) -> list[Any]:
    """Rows shaped like ``models.Contact``: what ``present_contact`` reads."""
    now = datetime.now(UTC)
    rows = []
    for i in range(count):
        fields = {
            "firstName": f"Ann{i}",
            "lastName": "Lee",
            "email": f"ann.lee{i}@acme.example",
            "title": "VP Sales",
            "companyAccount": "Acme Corporation",
            "phone": NUMBERS[i % 5],
            "phone2": NUMBERS[(i + 1) % 5],
            "city": "San Francisco",
            "linkedInUrl": f"https://www.linkedin.com/in/ann-lee-{i}",
        }
        if i % 2:
            fields["phone3"] = NUMBERS[(i + 2) % 5]
        score = score_contact(fields)
        rows.append(
            SimpleNamespace(
                id=str(uuid.uuid4()),
                user_id=str(uuid.uuid4()),
                job_id=str(uuid.uuid4()),
                client_id=str(uuid.uuid4()),
                fields=fields,
                # The route merges each phone's call verdict in before it answers (P177):
                # the entries have its fields (its cost is not measured here).
                phones=[{**entry, **NO_VERDICT} for entry in score.phones],
                best_phone=score.best_phone,
                lead_status=score.lead_status,
                enrichment_contact_id=None,
                rejected_reason=None,
                unmapped_fields={"crmStage": "MQL"},
                created_at=now,
                updated_at=now,
                callback_url=None,
            )
        )
    return rows


def median_ms(work: Callable[[], object], rounds: int) -> float:
    seconds = []
    for _ in range(rounds):
        started = time.perf_counter()
        work()
        seconds.append(time.perf_counter() - started)
    return statistics.median(seconds) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--contacts", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args()
    rows = stored_contacts(args.contacts)
    pagination = {
        "page": 1,
        "perPage": args.contacts,
        "totalCount": args.contacts,
        "totalPages": 1,
        "hasNextPage": False,
        "hasPreviousPage": False,
    }
    adapter = TypeAdapter(ContactsResponse)
    as_json = TypeAdapter(dict[str, Any])

    def page() -> dict[str, Any]:
        return {"data": {"contacts": [present_contact(r) for r in rows], "pagination": pagination}}

    body = page()
    validated = adapter.dump_json(adapter.validate_python(body))
    unvalidated = as_json.dump_json(body)
    assert json.loads(validated) == json.loads(unvalidated) == json.loads(json.dumps(body))

    present = median_ms(page, args.rounds)
    ways = {
        "validate + dump_json (FastAPI response_model)": lambda: adapter.dump_json(
            adapter.validate_python(page())
        ),
        "dump_json, not validated (the route)": lambda: as_json.dump_json(page()),
        "json.dumps": lambda: json.dumps(page(), ensure_ascii=False).encode(),
    }
    print(f"a page of {args.contacts} contacts ({len(validated):,} bytes), median of "
          f"{args.rounds} rounds:")  # fmt: skip
    print(f"  presenting the rows alone                        {present:7.1f} ms")
    baseline = None
    for label, work in ways.items():
        ms = median_ms(work, args.rounds)
        baseline = baseline or ms
        print(f"  {label:<48} {ms:7.1f} ms  ({ms / baseline:.2f} of the first)")


if __name__ == "__main__":
    main()
