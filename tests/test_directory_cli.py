"""``dialscore import directory``: CSV and JSON Lines into the directory, re-importable, as a
real command on SQLite and PostgreSQL; and the imported people found by an enrichment match."""

from __future__ import annotations

import json

from dialscore.identity.keys import Person, lookup_keys
from tests.test_imports import Cli, cli  # noqa: F401  (the fixture)

CSV_FILE = """id,firstName,lastName,email,company,website,phone,phoneType,phone2
ann-1,Ann,Lee,Ann.Lee@Acme.com,Acme Inc.,acme.com,+1 415 555 2671,mobile,not a phone
,Bob,Ray,,Globex,globex.com,(212) 555-7188,direct,
,,,,,,,,
"""


def test_csv_import_and_reimport(cli: Cli) -> None:  # noqa: F811
    path = cli.file("people.csv", CSV_FILE)
    first = cli.ok("import", "directory", path)
    assert (first["rows"], first["imported"], first["updated"]) == (2, 2, 0)
    assert first["invalidPhones"] == 1
    rows = cli.rows(
        "SELECT id, first_name, email_key, last_name_key, phones FROM directory_people ORDER BY 2"
    )
    assert [(r[0], r[1], r[2], r[3]) for r in rows] == [
        ("ann-1", "Ann", lookup_keys(Person(email="Ann.Lee@Acme.com")).email, "lee"),
        (rows[1][0], "Bob", None, "ray"),
    ]
    phones = [json.loads(r[4]) if isinstance(r[4], str) else r[4] for r in rows]
    assert phones[0] == [{"number": "+14155552671", "type": "mobile"}]
    assert phones[1] == [{"number": "+12125557188", "type": "direct"}]

    again = cli.ok("import", "directory", path)
    assert (again["imported"], again["updated"], again["unchanged"]) == (0, 0, 2)
    changed = cli.file("people2.csv", CSV_FILE.replace("Acme Inc.", "Acme Corporation"))
    third = cli.ok("import", "directory", changed)
    assert (third["imported"], third["updated"]) == (0, 1)
    assert cli.rows("SELECT count(*) FROM directory_people") == [(2,)]


def test_json_lines_import(cli: Cli) -> None:  # noqa: F811
    lines = [
        {
            "firstName": "Cleo",
            "lastName": "Diaz",
            "linkedInUrl": "https://uk.linkedin.com/in/cleo-diaz/?trk=x",
            "company": "Initech",
            "phones": [{"number": "+16175552142", "type": "hq"}],
        }
    ]
    path = cli.file("people.jsonl", "\n".join(json.dumps(line) for line in lines) + "\n")
    report = cli.ok("import", "directory", path)
    assert (report["rows"], report["imported"]) == (1, 1)
    (row,) = cli.rows("SELECT linkedin_key, last_name_key FROM directory_people")
    assert row == (lookup_keys(Person(linkedin_url="linkedin.com/in/cleo-diaz")).linkedin, "diaz")


def test_a_missing_file_is_an_error(cli: Cli) -> None:  # noqa: F811
    message = cli.error("import", "directory", str(cli.cwd / "nope.csv"))
    assert "nope.csv" in message
