"""Compliance cost: CPU time of the compliance verdicts of a 1000-contact job (two phones a
contact), against the issue's bar of under 5 % of a job's processing time (about 0.2 s of CPU
per 1000 contacts).

Builds ``--contacts`` contacts of two numbers each, from area codes across the US (states with
rules of their own among them), toll-free numbers narrowed by the contact's state, and a few
numbers outside NANP; a third of the Florida and Oklahoma numbers have three reported calls in
the last 24 hours, and each line type has 60 reported calls by weekday and hour (learnt best
hours). Then, ``--repeats`` times, runs ``assess`` + ``present`` on every phone, first with
the number caches empty (new numbers, as in a job of unseen area codes) and then warm, and
prints verdicts per second and CPU seconds per 1000 contacts.

    python bench/compliance_cost.py [--contacts 1000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from datetime import UTC, datetime, timedelta

from dialscore.compliance import assess, load_rules, places, present, verdict

AREA_CODES = [
    "212", "415", "305", "813", "405", "918", "206", "509", "713", "512", "915", "504",
    "225", "312", "617", "303", "602", "208", "907", "808", "404", "615", "702", "801",
]  # fmt: skip
STATES = ["NY", "CA", "FL", "OK", "WA", "TX", "LA", "IL", "MA", "CO", "AZ", None]
ELSEWHERE = ["+442071234567", "+33123456789", "+61212345678", "+4930123456"]
LINE_TYPES = ["mobile", "direct", "hq", "other"]


def contacts(count: int, seed: int = 31) -> list[dict[str, object]]:
    rng = random.Random(seed)
    now = datetime(2026, 11, 27, 15, 0, tzinfo=UTC)
    made: list[dict[str, object]] = []
    for _ in range(count):
        phones = []
        for _ in range(2):
            draw = rng.random()
            if draw < 0.85:
                number = (
                    f"+1{rng.choice(AREA_CODES)}{rng.randint(200, 999)}{rng.randint(0, 9999):04d}"
                )
            elif draw < 0.95:
                number = f"+1800{rng.randint(200, 999)}{rng.randint(0, 9999):04d}"
            else:
                number = rng.choice(ELSEWHERE)
            recent = (
                [now - timedelta(hours=hours) for hours in (1, 5, 9)] if rng.random() < 0.3 else []
            )
            phones.append((number, rng.choice(LINE_TYPES), recent))
        made.append({"state": rng.choice(STATES), "phones": phones})
    return made


def learnt_counts(seed: int = 5) -> dict[tuple[int, int], tuple[int, int]]:
    rng = random.Random(seed)
    counts: dict[tuple[int, int], tuple[int, int]] = {}
    for _ in range(60):
        cell = (rng.randint(0, 4), rng.randint(8, 19))
        calls, connects = counts.get(cell, (0, 0))
        counts[cell] = (calls + 1, connects + int(rng.random() < 0.3))
    return counts


def run(batch: list[dict[str, object]], cold: bool) -> tuple[float, int]:
    rules = load_rules()
    counts = learnt_counts()
    now = datetime(2026, 11, 27, 15, 0, tzinfo=UTC)
    if cold:
        places._places.clear()
        verdict.best_hours_for.cache_clear()
    verdicts = 0
    started = time.process_time()
    for contact in batch:
        state = contact["state"]
        assert state is None or isinstance(state, str)
        phones = contact["phones"]
        assert isinstance(phones, list)
        for number, line_type, recent in phones:
            present(
                assess(
                    number,
                    now=now,
                    rules=rules,
                    state_province=state,
                    line_type=line_type,
                    recent_calls=recent,
                    call_counts=counts,
                )
            )
            verdicts += 1
    return time.process_time() - started, verdicts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--contacts", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=5)
    options = parser.parse_args()
    batch = contacts(options.contacts)
    run(batch, cold=True)  # imports, the packaged files, the holidays calendars
    for label, cold in (("number caches empty", True), ("number caches warm", False)):
        times = []
        verdicts = 0
        for _ in range(options.repeats):
            spent, verdicts = run(batch, cold)
            times.append(spent)
        median = statistics.median(times)
        per_1000 = median / options.contacts * 1000
        print(
            f"{label}: {verdicts} verdicts in {median:.3f} s CPU (median of {options.repeats}), "
            f"{verdicts / median:,.0f} verdicts/s, {per_1000:.3f} s per 1000 contacts "
            f"({per_1000 / 0.2:.0%} of the 0.2 s bar)"
        )


if __name__ == "__main__":
    main()
