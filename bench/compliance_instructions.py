"""What the call verdicts add to a job's processing, counted in instructions: the same
measure as ``compliance_cost.py``'s last line (a job whose events a webhook listens to, with
and without verdicts), without the noise of a shared machine's CPU time.

Three runs of one script under valgrind's cachegrind (Debian package ``valgrind``), each
counting every instruction the process executes, on a migrated SQLite database in a
temporary directory: a first job of ``--contacts`` contacts processed in each (imports,
caches), then ``--jobs`` more jobs submitted, and

- ``submit``: not processed;
- ``plain``: processed, their events written without verdicts;
- ``verdicts``: processed as the service processes them.

``plain - submit`` is the processing without verdicts, ``verdicts - plain`` what the verdicts
add (the engine, its queries, writing the larger events); their ratio is printed against the
issue's bar of 0.05. Counts are close to the same from run to run (only what depends on the
clock differs: a lease's heartbeats, a second's verdicts shared); a job takes about fifty times
its CPU time under valgrind, so leases are lengthened to an hour. Instructions are not CPU
time (code waiting on memory runs fewer a second), so this is a check of
``compliance_cost.py``'s figure, not a substitute for it. Takes about three minutes.

    python bench/compliance_instructions.py [--contacts 1000] [--jobs 2]
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Any

BAR = 0.05
MODES = ("submit", "plain", "verdicts")
_TOTAL = re.compile(r"I\s+refs:\s+([\d,]+)")


def run_child(mode: str, contacts: int, jobs: int) -> None:
    """The measured process: ``jobs`` jobs after a first, as ``mode`` says."""
    import job_processing
    from compliance_cost import NoVerdicts
    from dialscore.jobs import processing

    settings_of = processing.ProcessingSettings

    def long_leases(**options: Any) -> processing.ProcessingSettings:
        return settings_of(**{**options, "job_lease": timedelta(hours=1)})

    processing.ProcessingSettings = long_leases  # type: ignore[misc,assignment]

    async def skip(*_: Any, **__: Any) -> None:
        return None

    async def work(db: Any) -> None:
        rng = random.Random(1)
        await job_processing.process_jobs(db, 1, contacts, rng, listening=True)
        if mode == "submit":
            processing.process_job = skip  # type: ignore[assignment]
        if mode == "plain":
            with NoVerdicts():
                await job_processing.process_jobs(db, jobs, contacts, rng, listening=True)
        else:
            await job_processing.process_jobs(db, jobs, contacts, rng, listening=True)

    job_processing.on_fresh_database(work)


def instructions(mode: str, contacts: int, jobs: int) -> int:
    """The instructions of one child run under cachegrind."""
    answer = subprocess.run(
        [
            "valgrind",
            "--tool=cachegrind",
            "--cache-sim=no",
            "--cachegrind-out-file=/dev/null",
            sys.executable,
            __file__,
            "--child",
            mode,
            "--contacts",
            str(contacts),
            "--jobs",
            str(jobs),
        ],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONHASHSEED": "0"},
        timeout=1800,
    )
    found = _TOTAL.search(answer.stderr)
    if found is None:
        raise SystemExit(f"no instruction count in valgrind's output:\n{answer.stderr[-2000:]}")
    return int(found.group(1).replace(",", ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--contacts", type=int, default=1000)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--child", choices=MODES, help=argparse.SUPPRESS)
    options = parser.parse_args()
    if not (1 <= options.contacts <= 5000 and 1 <= options.jobs <= 5):
        parser.error("--contacts must be 1..5000 and --jobs 1..5")
    if options.child:
        run_child(options.child, options.contacts, options.jobs)
        return
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (apt-get install -y valgrind)")
    with ThreadPoolExecutor(2) as pool:
        counted = dict(
            zip(
                MODES,
                pool.map(lambda m: instructions(m, options.contacts, options.jobs), MODES),
                strict=True,
            )
        )
    rest = (counted["plain"] - counted["submit"]) / options.jobs
    added = (counted["verdicts"] - counted["plain"]) / options.jobs
    ratio = added / rest
    print(
        f"a job of {options.contacts} contacts whose events a webhook listens to, per job: "
        f"{rest / 1e6:,.0f} M instructions without verdicts, {added / 1e6:,.0f} M more with "
        f"them: {ratio:.1%} ({'under' if ratio < BAR else 'OVER'} the bar)"
    )


if __name__ == "__main__":
    main()
