"""Downloading the results of a 50,000-contact job from the web app, over HTTP: time to the
first byte, total time, and the server process's peak memory while it streams the CSV.

Makes the job through the jobs service (as an upload does: ``jobSource`` app, the file's
columns kept), lets the served instance's worker score it, signs in through the sign-in form
and downloads ``/app/jobs/<id>/results.csv``."""

from __future__ import annotations

import argparse
import asyncio
import csv
import io
import re
import shutil
import sys
import tempfile
import threading
import time
from decimal import Decimal
from pathlib import Path

import httpx

from dialscore.accounts import service as accounts
from dialscore.accounts.schemas import Principal
from dialscore.jobs import service as jobs
from dialscore.jobs.schemas import NewContact
from dialscore.kit.clock import utcnow
from dialscore.kit.db import Database
from dialscore.migrations import upgrade
from dialscore.scoring.numbers import parse_contact_phones
from dialscore.signin import service as signin
from embedded import BenchError, Deadline, free_port, running_server, server_env

PASSWORD = "bench password 12345"
EMAIL = "bench@results.example"
COLUMNS = ["First Name", "Last Name", "Email", "Company", "Title", "Mobile", "Work Phone", "Notes"]


def _contacts(count: int) -> list[NewContact]:
    made: list[NewContact] = []
    for i in range(count):
        mobile = f"+1415{2000000 + i % 7_000_000:07d}"
        work = f"(212) {200 + i % 700:03d}-{i % 10_000:04d}"
        row = [f"First{i}", f"Last{i}", f"p{i}@example.com", f"Company {i % 997}", "VP Sales"]
        row += [mobile, work, f"imported row {i}"]
        fields = {
            "firstName": row[0],
            "lastName": row[1],
            "email": row[2],
            "companyAccount": row[3],
            "title": row[4],
            "phone": mobile,
            "phone2": work,
        }
        made.append(
            NewContact(
                fields=fields,
                unmapped={"Notes": row[7]},
                phones=parse_contact_phones(fields),
                source_row=row,
            )
        )
    return made


async def _make_job(url: str, count: int) -> str:
    """A client, a user who can sign in, and their ``count``-contact job, waiting for the
    worker."""
    db = Database(url)
    try:
        async with db.unit_of_work() as session:
            client, user = await accounts.create_client(
                session, name="Bench", plan="enterprise", credits=Decimal(10**9), admin_email=EMAIL
            )
            await signin.set_password(session, user_id=user.id, password=PASSWORD)
            plan = await accounts.client_plan(session, client_id=client.id)
        principal = Principal(
            user_id=user.id, client_id=client.id, role="admin", key_id=None, plan=plan
        )
        contacts = _contacts(count)
        async with db.unit_of_work() as session:
            opened = await jobs.create_job(
                session,
                principal=principal,
                kind="scoring",
                job_type="scoring",
                scoring_type="lightning",
                name="bench.csv",
                total=count,
                contacts=contacts,
                now=utcnow(),
                reason="bench",
                source="app",
                upload_columns=COLUMNS,
            )
        assert opened.job_id is not None
        return opened.job_id
    finally:
        await db.dispose()


def _memory(pid: int, field: str) -> int:
    """A VmRSS/VmHWM figure of /proc/<pid>/status, in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise BenchError(f"no {field} in /proc/{pid}/status")


class Sampler(threading.Thread):
    """Notes the process's largest anonymous resident memory (RssAnon: its heap, not the
    database file SQLite maps) every few milliseconds until stopped."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.peak = 0
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            self.peak = max(self.peak, _memory(self.pid, "RssAnon"))
            self.done.wait(0.005)

    def stop(self) -> int:
        self.done.set()
        self.join()
        return self.peak


def _reset_peak(pid: int) -> bool:
    """Starts the process's peak resident size (VmHWM) again from its current size (Linux
    4.0 and later)."""
    try:
        Path(f"/proc/{pid}/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def _sign_in(web: httpx.Client) -> None:
    form = web.get("/app/sign-in")
    token = re.search(r'name="form_token" value="([^"]+)"', form.text)
    if token is None:
        raise BenchError("no sign-in form")
    data = {"email": EMAIL, "password": PASSWORD, "form_token": token.group(1), "next": ""}
    answer = web.post("/app/sign-in", data=data)
    if answer.status_code != 303:
        raise BenchError(f"sign-in answered {answer.status_code}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--contacts", type=int, default=50_000)
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument("--keep-data", action="store_true")
    options = parser.parse_args()
    deadline = Deadline(options.timeout)
    work = Path(tempfile.mkdtemp(prefix="dialscore-bench-"))
    data_dir = work / "data"
    data_dir.mkdir()
    url = f"sqlite:///{(data_dir / 'dialscore.db').as_posix()}"
    try:
        upgrade(url)
        started = time.monotonic()
        job_id = asyncio.run(_make_job(url, options.contacts))
        print(f"job of {options.contacts} contacts created in {time.monotonic() - started:.1f} s")
        env = server_env(data_dir, SECRET_KEY="bench-secret-key-that-is-long-enough-for-hs256")
        port = free_port()
        with (
            running_server(env, work, port, deadline) as server,
            httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60) as web,
        ):
            _sign_in(web)
            started = time.monotonic()
            while True:
                deadline.check("waiting for the job to finish")
                progress = web.get(f"/app/jobs/{job_id}/progress").json()
                if progress["finished"]:
                    break
                time.sleep(0.5)
            print(
                f"job {progress['status']}: {progress['processed']} contacts scored by the "
                f"served worker in {time.monotonic() - started:.1f} s"
            )
            time.sleep(1.0)  # the worker's last batch settles
            before = _memory(server.pid, "VmRSS")
            anon_before = _memory(server.pid, "RssAnon")
            reset = _reset_peak(server.pid)
            sampler = Sampler(server.pid)
            sampler.start()
            started = time.monotonic()
            first_byte: float | None = None
            size = 0
            tail = b""
            with web.stream("GET", f"/app/jobs/{job_id}/results.csv") as answer:
                headers_at = time.monotonic() - started
                if answer.status_code != 200:
                    raise BenchError(f"the download answered {answer.status_code}")
                for chunk in answer.iter_raw():
                    if first_byte is None:
                        first_byte = time.monotonic() - started
                        head = chunk
                    size += len(chunk)
                    tail = (tail + chunk)[-4096:]
                    deadline.check("downloading")
            total = time.monotonic() - started
            peak = _memory(server.pid, "VmHWM")
            anon_peak = sampler.stop()
            header = next(csv.reader(io.StringIO(head.decode("utf-8-sig").splitlines()[0])))
            last = list(csv.reader(io.StringIO(tail.decode("utf-8", "replace"))))[-1]
        assert first_byte is not None
        print(f"columns: {', '.join(header)}")
        print(f"last row: {', '.join(last)}")
        print(
            f"download {size / 1e6:.1f} MB: headers after {headers_at * 1000:.0f} ms, "
            f"first byte of the body after {first_byte * 1000:.0f} ms, "
            f"all in {total:.2f} s ({options.contacts / total:,.0f} contacts/s)"
        )
        which = "during the download" if reset else "since the server started (reset refused)"
        print(
            f"server memory: {before / 1024:.0f} MiB resident before, peak {peak / 1024:.0f} MiB "
            f"{which} (VmHWM)"
        )
        print(
            f"server heap (RssAnon): {anon_before / 1024:.0f} MiB before, peak "
            f"{anon_peak / 1024:.0f} MiB during the download"
        )
    except BenchError as error:
        print(f"bench failed: {error}", file=sys.stderr)
        raise SystemExit(1) from None
    finally:
        if options.keep_data:
            print(f"data kept in {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
