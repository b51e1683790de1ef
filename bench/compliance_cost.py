"""Compliance cost: CPU time of the compliance verdicts of a 1000-contact job (two phones a
contact) against the issue's bar, under 5 % of the processing time of a job of as many
contacts, both measured in this run.

The bar: ``--jobs`` scoring jobs of ``--contacts`` contacts each, submitted and processed in
this process on SQLite in a temporary directory with ``bench/job_processing.py``'s contacts
and steps (``submissions.submit``, then ``jobs.processing.process_job``); the median CPU time
of one job's processing.

The verdicts: ``--contacts`` contacts of two numbers each, from area codes across the US
(states with rules of their own among them), toll-free numbers narrowed by the contact's
state, and a few numbers outside NANP; a third of the numbers have three reported calls in
the last 24 hours, and each line type has 60 reported calls by weekday and hour (learnt best
hours, a ``CallTally`` as ``tally_calls`` gives). Then, ``--repeats`` times, what
``jobs.callability.with_verdicts`` does for every phone (``number_zone``, ``assess``,
``present``), first with the caches empty (the number places, the states of
area names, what the rules' memo keeps and the instants' text: new numbers, as in a job of
unseen area codes, or the first job of a process) and then warm. Prints both CPU times and
their ratio; the bar is a ratio under 0.05.

    python bench/compliance_cost.py [--contacts 1000] [--repeats 5] [--jobs 3]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from datetime import UTC, datetime, timedelta

import job_processing
from dialscore.compliance import CallTally, assess, load_rules, number_zone, present, verdict

BAR = 0.05

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


def learnt_counts(seed: int = 5) -> CallTally:
    """A line type's reported calls by weekday and hour, as ``tally_calls`` gives them."""
    rng = random.Random(seed)
    counts: dict[tuple[int, int], tuple[int, int]] = {}
    for _ in range(60):
        cell = (rng.randint(0, 4), rng.randint(8, 19))
        calls, connects = counts.get(cell, (0, 0))
        counts[cell] = (calls + 1, connects + int(rng.random() < 0.3))
    return CallTally(counts)


def run(batch: list[dict[str, object]], cold: bool) -> tuple[float, int]:
    rules = load_rules()
    counts = learnt_counts()
    now = datetime(2026, 11, 27, 15, 0, tzinfo=UTC)
    if cold:
        verdict.forget(rules)
    verdicts = 0
    started = time.process_time()
    for contact in batch:
        state = contact["state"]
        assert state is None or isinstance(state, str)
        phones = contact["phones"]
        assert isinstance(phones, list)
        for number, line_type, recent in phones:
            # As jobs.callability.with_verdicts: the zone picks the calls that teach best
            # hours, then the verdict.
            number_zone(number, state, None)
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


def processing_cpu(jobs: int, size: int) -> float:
    """The median CPU seconds of processing a job of ``size`` contacts, embedded
    (``job_processing.process_jobs``)."""
    figures = job_processing.on_fresh_database(
        lambda db: job_processing.process_jobs(db, jobs, size, random.Random(1))
    )
    return statistics.median(figures.job_cpu)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--contacts", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--jobs", type=int, default=3)
    options = parser.parse_args()
    if not (1 <= options.contacts <= 20_000 and 1 <= options.repeats <= 50):
        parser.error("--contacts must be 1..20000 and --repeats 1..50")
    if not 1 <= options.jobs <= 10:
        parser.error("--jobs must be 1..10")
    job = processing_cpu(options.jobs, options.contacts)
    print(
        f"processing a job of {options.contacts} contacts (job_processing's steps, embedded "
        f"SQLite): {job * 1000:.0f} ms CPU (median of {options.jobs} jobs); "
        f"the bar, 5 %: {job * BAR * 1000:.1f} ms"
    )
    batch = contacts(options.contacts)
    run(batch, cold=True)  # imports, the packaged files, the holidays calendars
    for label, cold in (("caches empty", True), ("caches warm", False)):
        times = []
        verdicts = 0
        for _ in range(options.repeats):
            spent, verdicts = run(batch, cold)
            times.append(spent)
        median = statistics.median(times)
        ratio = median / job
        print(
            f"verdicts, {label}: {verdicts} in {median * 1000:.1f} ms CPU (median of "
            f"{options.repeats}), {median / verdicts * 1e6:.1f} us each; "
            f"{ratio:.1%} of processing ({'under' if ratio < BAR else 'OVER'} the 5 % bar)"
        )


if __name__ == "__main__":
    main()
