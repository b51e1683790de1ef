"""Directory import throughput on the embedded SQLite database (or on PostgreSQL with
``--postgres``).

Generates a CSV directory of ``--rows`` people in a temporary directory (names with accents,
work and personal emails, LinkedIn URLs in their variants, companies with websites and
LinkedIn pages, titles, 1 to 3 phones in the usual US forms and some international or
invalid ones; half the rows carry a record id), runs ``python -m dialscore migrate`` and the
real ``python -m dialscore import directory FILE`` on a fresh ``DIALSCORE_DATA_DIR``, and
prints rows/s from the command's own report (``seconds``: reading, parsing and writing,
without the interpreter's start) and the whole command's wall time. Then imports the same
file again (every record known, none changed) and a file of the same people with a tenth
of them changed, and prints the same figures.

Every wait is bounded; the whole run stops after ``--timeout`` seconds. The temporary
directory (files and database) is removed at the end (``--keep-data`` keeps it).

    python bench/directory_import.py [--rows 1000000] [--timeout 900] [--seed 1]
                                     [--postgres postgresql://postgres@127.0.0.1:5432/postgres]
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
from sqlalchemy.engine import make_url

from dialscore.phones import e164_or_reason
from embedded import BenchError, Deadline, cli, server_env


def _words(text: str) -> tuple[str, ...]:
    """Words separated by spaces; "_" stands for a space within one."""
    return tuple(word.replace("_", " ") for word in text.split())


FIRST_NAMES = _words(
    "James Mary Robert Patricia John Jennifer Michael Linda David Elizabeth William Barbara "
    "Richard Susan Joseph Jessica Thomas Sarah Charles Karen Christopher Lisa Daniel Nancy "
    "Matthew Betty Anthony Margaret Mark Sandra Donald Ashley Steven Kimberly Paul Emily "
    "Andrew Donna Joshua Michelle Kenneth Carol Kevin Amanda Brian Melissa George Deborah "
    "Timothy Stephanie Ronald Rebecca Jason Sharon Edward Laura Jeffrey Cynthia Ryan Amy "
    "Jacob Kathleen Gary Angela Nicholas Shirley Eric Anna Jonathan Brenda Stephen Pamela "
    "Larry Emma Justin Nicole Scott Helen Brandon Samantha Benjamin Katherine Samuel Christine "
    "Gregory Debra Alexander Rachel Frank Carolyn Patrick Janet Raymond Maria Jack Catherine "
    "Dennis Heather Jerry Diane Tyler Olivia Aaron Julie José Zoë Søren Łukasz François Jürgen "
    "Renée Chloé Raúl Ángel Björn Mónica Håkon Zoltán Priya Wei Hiroshi Fatima Ahmed Olga"
)
LAST_NAMES = _words(
    "Smith Johnson Williams Brown Jones Garcia Miller Davis Rodriguez Martinez Hernandez "
    "Lopez Gonzalez Wilson Anderson Thomas Taylor Moore Jackson Martin Lee Perez Thompson White "
    "Harris Sanchez Clark Ramirez Lewis Robinson Walker Young Allen King Wright Scott Torres "
    "Nguyen Hill Flores Green Adams Nelson Baker Hall Rivera Campbell Mitchell Carter Roberts "
    "Gomez Phillips Evans Turner Diaz Parker Cruz Edwards Collins Reyes Stewart Morris Morales "
    "Murphy Cook Rogers Gutierrez Ortiz Morgan Cooper Peterson Bailey Reed Kelly Howard Ramos "
    "Kim Cox Ward Richardson Watson Brooks Chavez Wood James Bennett Gray Mendoza Ruiz Hughes "
    "Price Alvarez Castillo Sanders Patel Myers Long Ross Foster Jimenez O'Brien García-López "
    "Müller Schröder Kowalski Nowak Øvergaard Dubois Lefèvre Rossi Ferrari Van_der_Berg Kuznetsov "
    "Yamamoto Tanaka Chen Wang Singh Kumar"
)
CORES = _words(
    "Acme Globex Initech Umbrella Stark Wayne Wonka Tyrell Cyberdyne Soylent Hooli Vandelay "
    "Prestige Oscorp Gringotts Aperture Vehement Massive Dynamic Pied Piper Monarch Sterling "
    "Cooper Dunder Mifflin Bluth Gekko Nakatomi Weyland Yutani Zorg Virtucon Spacely Cogswell "
    "Northwind Contoso Fabrikam Tailspin Litware Proseware Adatum Alpine Blue Yonder Coho Lucerne "
    "Margie Wingtip Woodgrove Fourth Coffee Summit Apex Pinnacle Vertex Horizon Meridian Atlas "
    "Beacon Cascade Evergreen Frontier Harbor Keystone Liberty Nexus Orion Pioneer Quantum "
    "Redwood Sierra Titan Unity Vanguard Zenith"
)
DESCRIPTORS = ("", "", "", "Software", "Systems", "Labs", "Group", "Partners", "Technologies")
SUFFIXES = ("", "", "Inc.", "Inc", "LLC", "Ltd", "Corp.", "Corporation", "GmbH", "S.A.")
TITLES = ("CEO", "CTO", "VP Sales", "Account Executive", "Software Engineer", "Office Manager",
          "Director of Marketing", "Head of Operations", "Recruiter", "")  # fmt: skip
PHONE_TYPES = ("mobile", "direct", "Mobile", "work", "office", "cell", "hq", "")
FOLD = str.maketrans("éëøłçüöåáóñíúèäš", "eeolcuoaaoniueas")


def valid_area_codes() -> list[int]:
    """US and Canadian area codes libphonenumber knows (tried with one exchange)."""
    return [npa for npa in range(200, 1000) if e164_or_reason(f"+1{npa}2345678")[0] is not None]


class People:
    """A seeded generator of directory rows."""

    def __init__(self, rng: random.Random, rows: int) -> None:
        self.rng = rng
        self.area_codes = valid_area_codes()
        self.companies = [self._company(i) for i in range(max(100, rows // 15))]

    def _company(self, index: int) -> tuple[str, str, str]:
        rng = self.rng
        words = [rng.choice(CORES)] + ([rng.choice(CORES)] if rng.random() < 0.4 else [])
        descriptor = rng.choice(DESCRIPTORS)
        base = " ".join(words + ([descriptor] if descriptor else []))
        name = f"{base} {rng.choice(SUFFIXES)}".strip()
        slug = base.lower().replace(" ", "")
        domain = f"{slug}{index}.{rng.choice(('com', 'com', 'io', 'co.uk', 'de'))}"
        page = f"{slug}-{index}" if rng.random() < 0.8 else str(100000 + index)
        return name, domain, page

    def _phone(self, rng: random.Random) -> str:
        pick = rng.random()
        if pick < 0.02:
            return rng.choice(("12345", "555-0100", "n/a", "+1 (800) FLOWERS", "000-000-0000"))
        if pick < 0.06:
            return f"+44 20 7{rng.randint(0, 999):03d} {rng.randint(0, 9999):04d}"
        if pick < 0.07:
            return f"+49 30 {rng.randint(1000000, 9999999)}"
        npa, nxx, line = rng.choice(self.area_codes), rng.randint(200, 999), rng.randint(0, 9999)
        form = rng.random()
        if form < 0.35:
            return f"({npa}) {nxx}-{line:04d}"
        if form < 0.6:
            return f"+1{npa}{nxx}{line:04d}"
        if form < 0.8:
            return f"{npa}-{nxx}-{line:04d}"
        if form < 0.9:
            return f"{npa}{nxx}{line:04d}"
        return f"+1 {npa} {nxx} {line:04d}"

    def row(self, index: int, changed: bool = False) -> list[str]:
        rng = random.Random(index * 7919 + 17)  # the same person on every run
        first = rng.choice(FIRST_NAMES)
        last = rng.choice(LAST_NAMES) + (
            " " + rng.choice(LAST_NAMES) if rng.random() < 0.03 else ""
        )
        company, domain, page = self.companies[rng.randrange(len(self.companies))]
        ascii_first = first.lower().translate(FOLD)
        ascii_last = last.lower().translate(FOLD).replace(" ", "").replace("'", "")
        email = ""
        if rng.random() < 0.85:
            if rng.random() < 0.1:
                email = f"{ascii_first}.{ascii_last}{index}@gmail.com"
            else:
                email = f"{ascii_first}.{ascii_last}.{index}@{domain}"
            if rng.random() < 0.1:
                email = email.title()
        linkedin = ""
        if rng.random() < 0.7:
            slug = f"{ascii_first}-{ascii_last}-{index:x}"
            host = rng.choice(("www", "www", "www", "uk", "de", "ca"))
            linkedin = f"https://{host}.linkedin.com/in/{slug}" + rng.choice(
                ("", "/", "/?trk=public_profile", "/en")
            )
        website = f"https://www.{domain}/" if rng.random() < 0.6 else ""
        page_url = f"https://www.linkedin.com/company/{page}/" if rng.random() < 0.4 else ""
        title = rng.choice(TITLES)
        if changed:
            title = title + " (new)"
        phones: list[str] = []
        for share in (0.95, 0.5, 0.15):
            if rng.random() < share:
                phones += [self._phone(rng), rng.choice(PHONE_TYPES)]
            else:
                phones += ["", ""]
        record_id = f"crm-{index:08d}" if index % 2 == 0 else ""
        return [record_id, first, last, email, linkedin, company, website, page_url, title, *phones]


HEADER = ["id", "firstName", "lastName", "email", "linkedInUrl", "company", "website",
          "companyLinkedInUrl", "title", "phone", "phoneType", "phone2", "phone2Type",
          "phone3", "phone3Type"]  # fmt: skip


def generate(path: Path, people: People, rows: int, changed_every: int = 0) -> None:
    with path.open("w", newline="", encoding="utf-8") as out:
        writer = csv.writer(out)
        writer.writerow(HEADER)
        for index in range(rows):
            changed = changed_every > 0 and index % changed_every == 0
            writer.writerow(people.row(index, changed))


def run_import(path: Path, env: dict[str, str], cwd: Path, deadline: Deadline) -> dict[str, Any]:
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "dialscore", "import", "directory", str(path)],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=max(1.0, deadline.left()),
        check=False,
    )
    if done.returncode != 0:
        raise BenchError(f"import directory failed: {done.stderr.strip() or done.stdout.strip()}")
    report: dict[str, Any] = json.loads(done.stdout)
    report["wall"] = time.perf_counter() - started
    return report


def describe(what: str, report: dict[str, Any], where: str) -> str:
    seconds = report["seconds"]
    return (
        f"{what}: {report['rows']} rows ({report['imported']} new, {report['updated']} updated, "
        f"{report['unchanged']} unchanged, {report['invalid']} invalid; {report['phones']} "
        f"phones, {report['invalidPhones']} invalid) in {seconds:.1f} s: "
        f"{report['rows'] / seconds:,.0f} rows/s ({report['wall']:.1f} s for the whole "
        f"command; {where})"
    )


@contextmanager
def database(admin_url: str | None) -> Iterator[str | None]:
    """None for the embedded SQLite default, else a fresh PostgreSQL database's URL."""
    if not admin_url:
        yield None
        return
    name = f"dialscore_bench_{uuid.uuid4().hex[:10]}"
    admin = make_url(admin_url).set(drivername="postgresql")
    with psycopg.connect(admin.render_as_string(False), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield admin.set(database=name).render_as_string(False)
    finally:
        with psycopg.connect(admin.render_as_string(False), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def run(args: argparse.Namespace) -> None:
    deadline = Deadline(args.timeout)
    work = Path(tempfile.mkdtemp(prefix="dialscore-bench-directory-"))
    try:
        data_dir = work / "var"
        source = work / "directory.csv"
        changed = work / "directory-changed.csv"
        started = time.perf_counter()
        people = People(random.Random(args.seed), args.rows)
        generate(source, people, args.rows)
        generate(changed, people, args.rows, changed_every=10)
        # The files reach the disk before the imports are timed, as an operator's file would
        # be: the kernel writing 400 MB just generated back during the first import is the
        # bench's own doing (it took that import 19.8-20.0 s instead of 18.1-18.7).
        os.sync()
        print(
            f"generated {args.rows} rows twice (the second with every 10th changed), "
            f"{source.stat().st_size / 2**20:.0f} MiB each, in "
            f"{time.perf_counter() - started:.1f} s",
            flush=True,
        )
        deadline.check("generating the files")
        with database(args.postgres) as postgres_url:
            env = server_env(data_dir, **({"DATABASE_URL": postgres_url} if postgres_url else {}))
            cli(["migrate"], env, work, deadline)
            where = "PostgreSQL" if postgres_url else "SQLite"
            report = run_import(source, env, work, deadline)
            if not postgres_url:
                size = (data_dir / "dialscore.db").stat().st_size / 2**20
                where += f", database {size:.0f} MiB"
            print(describe("import", report, where), flush=True)
            again = run_import(source, env, work, deadline)
            print(describe("same file again", again, where), flush=True)
            update = run_import(changed, env, work, deadline)
            print(describe("a tenth changed", update, where), flush=True)
    finally:
        if args.keep_data:
            print(f"data kept in {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000, help="rows (1000000)")
    parser.add_argument("--timeout", type=float, default=900.0, help="overall limit, s (900)")
    parser.add_argument("--seed", type=int, default=1, help="random seed of the companies")
    parser.add_argument("--postgres", help="admin URL of a PostgreSQL server to measure instead")
    parser.add_argument("--keep-data", action="store_true", help="keep the files and database")
    args = parser.parse_args()
    if args.rows < 1000:
        parser.error("--rows must be at least 1000")
    try:
        run(args)
    except (BenchError, subprocess.TimeoutExpired) as exc:
        print(f"bench failed: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
