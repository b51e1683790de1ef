"""An upload between two API processes on one PostgreSQL database, as behind a load balancer:
each step of an upload served by either instance, each with a data directory of its own, and
"Start job" sent to both at the same moment starting one job."""

from __future__ import annotations

import json
import re
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import psycopg
import pytest

from dialscore.dashboard.web import SESSION_COOKIE
from tests.processes import (
    CLI_TIMEOUT,
    DATABASES,
    Service,
    base_env,
    cli_json,
    dialscore_command,
    fresh_postgres_database,
    private_redis,
    processes,
)
from tests.web_session import hidden_fields, sign_in

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif("postgresql" not in DATABASES, reason="PostgreSQL tests are disabled"),
]

SECRET = "upload-instances-secret-key-long-enough-for-hs256"
EMAIL = "ada@acme.example"
PASSWORD = "a long enough password"
# Dee has no last name: one rejected row, kept with the job.
LIST = "First,Last,Phone\nAda,Lee,4155552671\nBob,Stone,4155552672\nDee,,4155552673\n"
CLEAN = "First,Last,Phone\nAda,Lee,4155552671\n"
MAPPING = {"column-0": "firstName", "column-1": "lastName", "column-2": "phone:unknown"}
UPLOAD_URL = re.compile(r"^/app/upload/([0-9a-f-]{36})/map$")
JOB_LINK = re.compile(r'href="/app/jobs/([0-9a-f-]{36})"')
# Uploads started from both instances at once, one after the other.
RACES = 3


@dataclass
class Instances:
    url: str
    a: httpx.Client
    b: httpx.Client
    csrf: str
    data_dirs: list[Path]

    def jobs(self) -> list[tuple[str, str]]:
        with psycopg.connect(self.url) as conn:
            rows = conn.execute("SELECT id, name FROM jobs ORDER BY created_at").fetchall()
        return [(str(job_id), str(name)) for job_id, name in rows]


def create_admin(env: dict[str, str], cwd: Path) -> None:
    args = ["admin", "create-client", "--name", "Acme", "--email", EMAIL, "--password-stdin"]
    completed = subprocess.run(
        [*dialscore_command(), *args, "--credits", "100"],
        input=PASSWORD + "\n",
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    assert json.loads(completed.stdout)["passwordSet"] is True


def client(service: Service, cookies: httpx.Cookies | None = None) -> httpx.Client:
    return httpx.Client(base_url=service.base_url, cookies=cookies, timeout=30.0, trust_env=False)


@pytest.fixture
def instances(tmp_path: Path) -> Iterator[Instances]:
    with (
        fresh_postgres_database() as url,
        private_redis(tmp_path / "redis") as redis,
        processes(tmp_path / "logs") as procs,
    ):
        env = base_env(tmp_path / "var", DATABASE_URL=url, REDIS_URL=redis.url, SECRET_KEY=SECRET)
        assert cli_json(["migrate"], env=env, cwd=tmp_path) == {"migrated": True}
        create_admin(env, tmp_path)
        # Each instance has a disk of its own: nothing of an upload may be kept there.
        data_dirs = [tmp_path / "var-a", tmp_path / "var-b"]
        a, b = (
            procs.serve(env={**env, "DIALSCORE_DATA_DIR": str(d)}, worker=False) for d in data_dirs
        )
        with client(a) as on_a:
            sign_in(on_a, EMAIL, PASSWORD)
            # The session is a row of the database: A's cookie signs in on B, with the same
            # CSRF token in its forms.
            with client(b, on_a.cookies) as on_b:
                assert on_b.cookies.get(SESSION_COOKIE)
                csrf = hidden_fields(on_a.get("/app/upload").text, "/app/upload")["csrf_token"]
                page = on_b.get("/app/upload")
                assert page.status_code == 200, page.text
                assert hidden_fields(page.text, "/app/upload")["csrf_token"] == csrf
                yield Instances(url, on_a, on_b, csrf, data_dirs)


def upload(on: httpx.Client, csrf: str, text: str, name: str) -> str:
    sent = on.post(
        "/app/upload",
        data={"csrf_token": csrf},
        files={"contacts": (name, text.encode(), "text/csv")},
    )
    assert sent.status_code == 303, sent.text
    found = UPLOAD_URL.match(sent.headers["location"])
    assert found is not None, sent.headers["location"]
    return found[1]


def mapped(on: httpx.Client, csrf: str, upload_id: str) -> None:
    page = on.get(f"/app/upload/{upload_id}/map")
    assert page.status_code == 200, page.text
    answer = on.post(f"/app/upload/{upload_id}/map", data={"csrf_token": csrf, **MAPPING})
    assert answer.status_code == 303, answer.text
    assert answer.headers["location"] == f"/app/upload/{upload_id}/action"


def start_form(on: httpx.Client, upload_id: str) -> dict[str, str]:
    """The action page's form to start the job, as the page fills it."""
    page = on.get(f"/app/upload/{upload_id}/action")
    assert page.status_code == 200, page.text
    fields = hidden_fields(page.text, f"/app/upload/{upload_id}/start")
    return {**fields, "kind": "scoring", "scoring_type": "lightning"}


def press_together(
    clients: list[httpx.Client], path: str, form: dict[str, str]
) -> list[httpx.Response]:
    """The same form posted by each client at the same moment, from threads of its own."""
    together = threading.Barrier(len(clients))
    answers: list[httpx.Response | None] = [None] * len(clients)

    def press(index: int) -> None:
        together.wait(timeout=10)
        answers[index] = clients[index].post(path, data=form)

    threads = [threading.Thread(target=press, args=(i,)) for i in range(len(clients))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    done = [answer for answer in answers if answer is not None]
    assert len(done) == len(clients), answers
    return done


def test_each_step_of_an_upload_is_served_by_either_instance(instances: Instances) -> None:
    a, b, csrf = instances.a, instances.b, instances.csrf
    upload_id = upload(a, csrf, LIST, "fair.csv")
    mapped(b, csrf, upload_id)

    action = a.get(f"/app/upload/{upload_id}/action")
    assert re.search(r'id="contacts-found">2<', action.text)
    assert re.search(r'id="cost">0.1 credits', action.text)
    form = start_form(a, upload_id)
    started = b.post(f"/app/upload/{upload_id}/start", data=form)
    assert started.status_code == 303, started.text
    assert started.headers["location"] == f"/app/upload/{upload_id}/started"

    result = a.get(started.headers["location"])
    assert result.status_code == 200 and "Job started" in result.text
    assert "<td>Dee</td>" in result.text
    job_id = JOB_LINK.search(result.text)
    assert job_id is not None
    assert instances.jobs() == [(job_id[1], "fair.csv")]
    job = a.get(f"/app/jobs/{job_id[1]}")
    assert "Rejected rows (1)" in job.text
    kept = a.get(f"/app/upload/{upload_id}/rejected.csv")
    assert kept.status_code == 200
    assert kept.text.splitlines()[1].startswith("Dee,,4155552673,")
    # The file went with the start, on whichever instance asks.
    assert b.get(f"/app/upload/{upload_id}/map").status_code == 404
    assert a.get(f"/app/upload/{upload_id}/action").status_code == 404
    kept_on_disk = [p for d in instances.data_dirs for p in d.rglob("*") if "upload" in p.name]
    assert kept_on_disk == []


def test_start_sent_to_both_instances_at_once_starts_one_job(instances: Instances) -> None:
    a, b, csrf = instances.a, instances.b, instances.csrf
    for round_ in range(RACES):
        name = f"race-{round_}.csv"
        upload_id = upload(a, csrf, CLEAN, name)
        mapped(a, csrf, upload_id)
        form = start_form(b, upload_id)
        answers = press_together([a, b], f"/app/upload/{upload_id}/start", form)
        assert all(r.status_code == 303 for r in answers), answers
        places = sorted(r.headers["location"] for r in answers)

        jobs = [job_id for job_id, job_name in instances.jobs() if job_name == name]
        assert len(jobs) == 1, (name, jobs)
        # The one who started it goes to its job (no row was rejected), the other to the
        # page that says it started, which leads to the same job.
        assert places == [f"/app/jobs/{jobs[0]}", f"/app/upload/{upload_id}/started"]
        shown = (a if round_ % 2 else b).get(places[1])
        assert "Job started" in shown.text
        assert JOB_LINK.findall(shown.text)[0] == jobs[0]
