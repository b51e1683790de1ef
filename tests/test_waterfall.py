"""The waterfall: sources in the operator's order, stopping at the first with new numbers."""

from __future__ import annotations

from dataclasses import dataclass, field

from dialscore.enrichment.waterfall import (
    Enrichment,
    EnrichmentRequest,
    FoundPhone,
    run_waterfall,
)

OWN = "+14155550234"
A = "+14155550235"
B = "+14155550236"
C = "+14155550237"


@dataclass
class Source:
    name: str
    numbers: tuple[str, ...] = ()
    asked: list[str] = field(default_factory=list)

    async def find(self, request: EnrichmentRequest) -> Enrichment | None:
        self.asked.append(request.contact_id)
        if not self.numbers:
            return None
        phones = tuple(FoundPhone(n, "mobile") for n in self.numbers)
        return Enrichment(phones, f"{self.name}:1", self.name, 0.95)


def request() -> EnrichmentRequest:
    return EnrichmentRequest("client", "contact", {"firstName": "Ann"}, known=frozenset({OWN}))


async def test_first_source_with_new_numbers_wins_and_later_ones_are_not_asked() -> None:
    empty, first, second = Source("empty"), Source("first", (A,)), Source("second", (B,))
    found = await run_waterfall([empty, first, second], request())
    assert found is not None
    assert (found.source, found.record_id, [p.number for p in found.phones]) == (
        "first",
        "first:1",
        [A],
    )
    assert (empty.asked, first.asked, second.asked) == (["contact"], ["contact"], [])


async def test_a_source_that_only_finds_the_contacts_own_numbers_does_not_count() -> None:
    own_only, other = Source("own", (OWN,)), Source("other", (OWN, B))
    found = await run_waterfall([own_only, other], request())
    assert found is not None
    assert (found.source, [p.number for p in found.phones]) == ("other", [B])


async def test_nothing_new_anywhere_is_none() -> None:
    assert await run_waterfall([Source("a"), Source("b", (OWN,))], request()) is None
    assert await run_waterfall([], request()) is None


async def test_collect_all_adds_every_new_number_once_and_names_the_first_record() -> None:
    first, second, third = Source("first", (A, B)), Source("second", (B, C)), Source("third")
    found = await run_waterfall([first, second, third], request(), collect_all=True)
    assert found is not None
    assert [p.number for p in found.phones] == [A, B, C]
    assert (found.source, found.record_id) == ("first", "first:1")
    assert third.asked == ["contact"]
