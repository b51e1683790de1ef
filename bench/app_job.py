"""From pressing "Start job" in the web app to a finished job of 1000 contacts, over real HTTP.

Starts ``python -m dialscore serve`` (SQLite in a temporary data directory, worker in-process)
on a free port of 127.0.0.1 and creates an enterprise client whose admin user has a password
with the operator CLI. Signs in through the sign-in form, then ``--runs`` times: uploads a
generated CSV of ``--rows`` contacts, keeps the mapping the app fills in, chooses Score on the
action page and presses "Start job". Times, from sending that form, its answer (the job
created) and the job's status becoming final, read every 50 ms from
``GET /api/public/v2/jobs/{jobId}`` with the client's API key.

Every wait is bounded: the setup, and each run, stop after ``--timeout`` seconds. The server is
always stopped and the data directory removed at the end (``--keep-data`` keeps it).

    python bench/app_job.py [--runs 3] [--rows 1000] [--timeout 120] [--seed 1] [--keep-data]
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import random
import re
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from dialscore.jobs.schemas import TERMINAL_STATES
from dialscore.phones import analyse
from embedded import BenchError, Deadline, bench_data_dir, free_port, running_server, server_env

V2 = "/api/public/v2"
EMAIL = "bench@app-job.example"
PASSWORD = "bench password 12345"
POLL_EVERY = 0.05
HEADER = ["First Name", "Last Name", "Company", "Mobile", "Work Phone", "Email Address"]
US_AREA_CODES = (206, 212, 213, 214, 303, 305, 312, 404, 415, 503, 512, 602, 617, 646, 702, 704)
FIRST_NAMES = [
    "Ada",
    "Grace",
    "Alan",
    "Maria",
    "James",
    "Priya",
    "Chen",
    "Fatima",
    "Lucas",
    "Olivia",
    "Noah",
    "Sofia",
    "Mateo",
    "Hannah",
    "Omar",
    "Yuki",
    "Elena",
    "David",
]
LAST_NAMES = [
    "Smith",
    "Johnson",
    "Garcia",
    "Nguyen",
    "Patel",
    "Kim",
    "Brown",
    "Martinez",
    "Okafor",
    "Rossi",
    "Cohen",
    "Schmidt",
    "Lopez",
    "Walker",
    "Singh",
    "Murphy",
]
COMPANIES = [
    "Northwind Traders",
    "Contoso Ltd",
    "Fabrikam Inc",
    "Tailspin Toys",
    "Litware",
    "Adventure Works",
    "Wide World Importers",
    "Proseware",
    "Lucerne Publishing",
]

FORM_TOKEN = re.compile(r'name="form_token" value="([^"]+)"')
CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')
QUOTE = re.compile(r'name="quote" value="([^"]+)"')
MAPPED = re.compile(r'<select id="(column-\d+)"[^>]*>(.*?)</select>', re.S)
SELECTED = re.compile(r'<option value="([^"]+)" selected>')
CHECKED = re.compile(r'name="(kind|scoring_type)" value="([^"]+)" checked')
ACCEPTED = re.compile(r'id="contacts-found">([\d,]+)<')
JOB_LINK = re.compile(r'href="/app/jobs/([0-9a-f-]{36})"')


# -- data -------------------------------------------------------------------------------------


def _us_number(rng: random.Random) -> str:
    """A valid US number in one of the forms spreadsheets hold. Exchanges N11 (service codes)
    and 555 (its 01xx lines are set aside for fiction) are left out."""
    for _ in range(100):
        area = rng.choice(US_AREA_CODES)
        exchange = rng.randint(200, 999)
        if exchange % 100 == 11 or exchange == 555:
            continue
        line = rng.randint(0, 9999)
        number = rng.choice(
            (
                f"({area}) {exchange}-{line:04d}",
                f"{area}-{exchange}-{line:04d}",
                f"+1 {area} {exchange} {line:04d}",
                f"{area}{exchange}{line:04d}",
            )
        )
        if analyse(number) is not None:
            return number
    raise BenchError("could not generate a valid US number in 100 tries")


def make_csv(rng: random.Random, rows: int, start: int) -> bytes:
    """A contact list as a CRM exports it: every row a mobile, three in four a work phone."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(HEADER)
    for i in range(start, start + rows):
        first, last = rng.choice(FIRST_NAMES), rng.choice(LAST_NAMES)
        company = rng.choice(COMPANIES)
        work = _us_number(rng) if rng.random() < 0.75 else ""
        domain = company.split()[0].lower() + ".example.com"
        email = f"{first.lower()}.{last.lower()}{i}@{domain}"
        writer.writerow([first, last, company, _us_number(rng), work, email])
    return out.getvalue().encode("utf-8")


# -- service ----------------------------------------------------------------------------------


def create_client(env: dict[str, str], cwd: Path, deadline: Deadline) -> dict[str, Any]:
    """An enterprise client, its admin user with ``PASSWORD`` and an API key, by the operator
    CLI (``embedded.cli`` gives the command no standard input to read the password from)."""
    command = [sys.executable, "-m", "dialscore", "admin", "create-client", "--name", "Bench"]
    command += ["--plan", "enterprise", "--credits", "1000000", "--email", EMAIL]
    try:
        done = subprocess.run(
            [*command, "--password-stdin"],
            env=env,
            cwd=cwd,
            input=PASSWORD + "\n",
            capture_output=True,
            text=True,
            timeout=max(1.0, min(120.0, deadline.left())),
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise BenchError("create-client did not finish in time") from None
    if done.returncode != 0:
        raise BenchError(f"create-client failed: {done.stderr.strip() or done.stdout.strip()}")
    created: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return created


def _send(
    web: httpx.Client, method: str, url: str, deadline: Deadline, expect: int, **kwargs: Any
) -> httpx.Response:
    deadline.check(f"{method} {url}")
    try:
        answer = web.request(method, url, timeout=max(1.0, min(60.0, deadline.left())), **kwargs)
    except httpx.HTTPError as exc:
        raise BenchError(f"{method} {url}: {exc!r}") from None
    if answer.status_code != expect:
        raise BenchError(f"{method} {url} answered {answer.status_code}, not {expect}")
    return answer


def _found(pattern: re.Pattern[str], page: httpx.Response, what: str) -> str:
    match = pattern.search(page.text)
    if match is None:
        raise BenchError(f"no {what} in {page.request.url.path}")
    return match.group(1)


def sign_in(web: httpx.Client, deadline: Deadline) -> None:
    form = _send(web, "GET", "/app/sign-in", deadline, 200)
    data = {"email": EMAIL, "password": PASSWORD, "next": "/app/jobs"}
    data["form_token"] = _found(FORM_TOKEN, form, "sign-in form")
    _send(web, "POST", "/app/sign-in", deadline, 303, data=data)


# -- one run ----------------------------------------------------------------------------------


@dataclass
class Run:
    rows: int
    accepted: int
    steps: dict[str, float]
    created: float
    finished: float
    status: str

    @property
    def rate(self) -> float:
        return self.accepted / self.finished


def _timed(steps: dict[str, float], name: str, started: float) -> None:
    steps[name] = time.monotonic() - started


def run_once(
    web: httpx.Client, api: httpx.Client, data: bytes, rows: int, deadline: Deadline
) -> Run:
    steps: dict[str, float] = {}
    started = time.monotonic()
    form = _send(web, "GET", "/app/upload", deadline, 200)
    token = _found(CSRF, form, "CSRF token")
    files = {"contacts": ("leads.csv", data, "text/csv")}
    sent = _send(web, "POST", "/app/upload", deadline, 303, data={"csrf_token": token}, files=files)
    _timed(steps, "upload", started)

    # The mapping as the app fills it in, sent back unchanged.
    started = time.monotonic()
    mapping_url = sent.headers["location"]
    page = _send(web, "GET", mapping_url, deadline, 200)
    chosen = {"csrf_token": token}
    for column, options in MAPPED.findall(page.text):
        selected = SELECTED.search(options)
        if selected is None:
            raise BenchError(f"nothing selected for {column} on the mapping page")
        chosen[column] = selected.group(1)
    if len(chosen) != len(HEADER) + 1:
        raise BenchError(f"the mapping page shows {len(chosen) - 1} columns, not {len(HEADER)}")
    mapped = _send(web, "POST", mapping_url, deadline, 303, data=chosen)
    _timed(steps, "mapping", started)

    # The action page, which reads the file to show the cost; Score is asked for if the page
    # offers something else first.
    started = time.monotonic()
    action_url = mapped.headers["location"]
    page = _send(web, "GET", action_url, deadline, 200)
    checked = dict(CHECKED.findall(page.text))
    if checked.get("kind") != "scoring":
        page = _send(web, "GET", action_url, deadline, 200, params={"kind": "scoring"})
        checked = dict(CHECKED.findall(page.text))
    if checked.get("kind") != "scoring" or "scoring_type" not in checked:
        raise BenchError(f"the action page does not offer scoring: {checked}")
    accepted = int(_found(ACCEPTED, page, "contacts found").replace(",", ""))
    start_form = {"csrf_token": token, **checked, "quote": _found(QUOTE, page, "quote")}
    _timed(steps, "cost page", started)

    upload_id = mapping_url.split("/")[3]
    t0 = time.monotonic()
    answer = _send(web, "POST", f"/app/upload/{upload_id}/start", deadline, 303, data=start_form)
    created = time.monotonic() - t0
    location = answer.headers["location"]
    if location.startswith("/app/jobs/"):
        job_id = location.removeprefix("/app/jobs/")
    else:
        # Some rows were rejected: the page of what was started links the job.
        job_id = _found(JOB_LINK, _send(web, "GET", location, deadline, 200), "job link")

    for _ in range(int(deadline.seconds / POLL_EVERY) + 1):
        asked = time.monotonic()
        job = _send(api, "GET", f"{V2}/jobs/{job_id}", deadline, 200).json()["data"]
        if job["status"] in TERMINAL_STATES:
            return Run(
                rows=rows,
                accepted=job["acceptedRecordCount"],
                steps=steps,
                created=created,
                finished=time.monotonic() - t0,
                status=job["status"],
            )
        deadline.check(f"waiting for job {job_id} ({job['processedCount']} of {accepted} done)")
        time.sleep(max(0.0, POLL_EVERY - (time.monotonic() - asked)))
    raise BenchError(f"job {job_id} did not finish")


# -- main -------------------------------------------------------------------------------------


def report(number: int, run: Run) -> None:
    steps = ", ".join(f"{name} {seconds:.2f} s" for name, seconds in run.steps.items())
    print(
        f"run {number}: {run.rows} rows, {run.accepted} contacts accepted: job created "
        f"{run.created:.2f} s, {run.status} {run.finished:.2f} s after pressing Start job "
        f"({run.rate:,.0f} contacts/s; before it: {steps})",
        flush=True,
    )


def run(args: argparse.Namespace) -> None:
    setup = Deadline(args.timeout)
    rng = random.Random(args.seed)
    load_before = os.getloadavg()
    with bench_data_dir(args.keep_data) as data_dir:
        env = server_env(data_dir)
        api_key = create_client(env, data_dir, setup)["apiKey"]
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        headers = {"Authorization": f"Bearer {api_key}"}
        with (
            running_server(env, data_dir, port, setup),
            httpx.Client(base_url=base) as web,
            httpx.Client(base_url=base, headers=headers) as api,
        ):
            sign_in(web, setup)
            runs: list[Run] = []
            for number in range(1, args.runs + 1):
                data = make_csv(rng, args.rows, start=(number - 1) * args.rows)
                runs.append(run_once(web, api, data, args.rows, Deadline(args.timeout)))
                report(number, runs[-1])
        created = statistics.median(r.created for r in runs)
        finished = statistics.median(r.finished for r in runs)
        print(
            f"median of {len(runs)}: job created {created:.2f} s, finished {finished:.2f} s, "
            f"{statistics.median(r.rate for r in runs):,.0f} contacts/s"
        )
        load_after = os.getloadavg()
        print(
            f"load average (1 min) {load_before[0]:.2f} before, {load_after[0]:.2f} after, "
            f"on {os.cpu_count()} cores"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="jobs started one after another (3)")
    parser.add_argument("--rows", type=int, default=1000, help="rows of each uploaded file (1000)")
    parser.add_argument("--timeout", type=float, default=120.0, help="limit of each run, s (120)")
    parser.add_argument("--seed", type=int, default=1, help="random seed of the contact data")
    parser.add_argument("--keep-data", action="store_true", help="keep the data directory")
    args = parser.parse_args()
    if args.runs < 1 or not 1 <= args.rows <= 50_000 or args.timeout <= 0:
        parser.error("--runs at least 1, --rows 1..50000 (the upload limit), --timeout > 0")
    try:
        run(args)
    except BenchError as exc:
        print(f"bench failed: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
