"""The National Do Not Call Registry's own files (issue 31, item 3): full lists and change
lists, flat text and XML, plain, gzip or zip, on SQLite and PostgreSQL; a change list applied
to a full list gives the next full list; each import is recorded with the file's date."""

from __future__ import annotations

import asyncio
import gzip
import io
import os
import random
import zipfile
from collections.abc import Iterable
from datetime import UTC, date, datetime
from pathlib import Path

import pytest

from dialscore.kit.db import Database
from dialscore.kit.linefiles import FileFormatError
from dialscore.scoring import dncload
from dialscore.scoring.repository import dnc_list_freshness
from tests.test_imports import Cli, cli, listed, rows_of  # noqa: F401 (the cli fixture)

FORMATS = ["flat", "xml"]
COMPRESSIONS = ["none", "gzip", "zip"]


def flat_full(numbers: Iterable[int]) -> str:
    """A flat full list: ``areacode,number`` lines, as the registry writes them."""
    return "".join(f"{str(n)[1:4]},{str(n)[4:]}\n" for n in sorted(numbers))


def flat_changes(added: Iterable[int], deleted: Iterable[int]) -> str:
    lines = [f"{str(n)[1:4]},{str(n)[4:]},A,2026-11-30" for n in sorted(added)]
    lines += [f"{str(n)[1:4]},{str(n)[4:]},D,2026-11-30" for n in sorted(deleted)]
    return "areacode,number,action,date\n" + "\n".join(lines) + "\n"


def _xml_record(n: int, action: str = "") -> str:
    mark = f"<Action>{action}</Action>" if action else ""
    area, number = str(n)[1:4], str(n)[4:]
    return f"<Record><AreaCode>{area}</AreaCode><PhoneNumber>{number}</PhoneNumber>{mark}</Record>"


def xml_full(numbers: Iterable[int], day: str = "2026-11-01") -> str:
    records = "\n  ".join(_xml_record(n) for n in sorted(numbers))
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<DNCList Type="Full" Date="{day}">\n  {records}\n</DNCList>\n'
    )


def xml_changes(added: Iterable[int], deleted: Iterable[int], day: str = "2026-12-01") -> str:
    adds = "".join(_xml_record(n) for n in sorted(added))
    # Deletions both ways: a section, and a mark on the record.
    deleted = sorted(deleted)
    half = len(deleted) // 2
    marked = "".join(_xml_record(n, "D") for n in deleted[:half])
    section = "".join(_xml_record(n) for n in deleted[half:])
    return (
        '<?xml version="1.0"?>\n<ns:DNCChangeList xmlns:ns="urn:example:dnc" Type="Changes">'
        f"<Header><FileDate>{day}</FileDate></Header>"
        f"<Additions>{adds}</Additions><Changes>{marked}</Changes>"
        f"<Deletions>{section}</Deletions></ns:DNCChangeList>\n"
    )


def write(path: Path, text: str, compression: str) -> Path:
    data = text.encode()
    if compression == "gzip":
        path = path.with_name(path.name + ".bin")  # the name says nothing of the format
        path.write_bytes(gzip.compress(data, mtime=0))
    elif compression == "zip":
        path = path.with_name(path.name + ".dat")
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
            info = zipfile.ZipInfo("dnc-list.txt", date_time=(2026, 11, 3, 4, 5, 6))
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, data)
        path.write_bytes(buffer.getvalue())
    else:
        path.write_bytes(data)
    return path


def registry(seed: int, count: int, npas: tuple[int, ...] = (201, 415)) -> set[int]:
    rng = random.Random(seed)
    return {
        10_000_000_000 + rng.choice(npas) * 10_000_000 + rng.randint(2_000_000, 9_999_999)
        for _ in range(count)
    }


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_each_format_and_compression(
    database_url: str, tmp_path: Path, fmt: str, compression: str
) -> None:
    numbers = registry(1, 300)
    text = flat_full(numbers) if fmt == "flat" else xml_full(numbers)
    path = write(tmp_path / "full", text, compression)
    report = dncload.import_dnc(database_url, path, list_name="national", full=True)
    assert (report.format, report.compression, report.kind) == (fmt, compression, "full")
    assert (report.counts.accepted, report.counts.invalid, report.imported) == (300, 0, 300)
    assert listed(database_url, "national") == numbers

    changes = write(
        tmp_path / "changes",
        flat_changes({12015550100}, sorted(numbers)[:10])
        if fmt == "flat"
        else xml_changes({12015550100}, sorted(numbers)[:10]),
        compression,
    )
    applied = dncload.import_dnc(database_url, changes, list_name="national", batch_size=4)
    assert (applied.kind, applied.imported, applied.removed) == ("changes", 1, 10)
    assert applied.counts.deletions == 10 and applied.counts.invalid == 0
    assert listed(database_url, "national") == (numbers - set(sorted(numbers)[:10])) | {12015550100}


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_change_list_over_a_full_list_gives_the_next_full_list(
    database_url: str, tmp_path: Path, fmt: str
) -> None:
    """Two lists: one imports November's full list and December's change list, the other
    December's full list; the same numbers. A number outside the files' area codes (an area
    code not subscribed) and another list's numbers are left alone by both."""
    november = registry(2, 2000)
    december = (november - set(random.Random(3).sample(sorted(november), 150))) | registry(4, 200)
    added, deleted = december - november, november - december
    # A number both deleted and added again in the period: its last mark counts.
    back = sorted(november & december)[0]
    outside = 19075550123  # area code 907: in neither file
    for name in ("by_changes", "by_full"):
        dncload.import_dnc(database_url, write(tmp_path / "seed", f"{outside}\n", "none"),
                           list_name=name)  # fmt: skip
    dncload.import_dnc(database_url, write(tmp_path / "other", flat_full(november), "none"),
                       list_name="internal")  # fmt: skip

    def full(numbers: set[int], name: str) -> Path:
        return write(tmp_path / name, flat_full(numbers) if fmt == "flat" else xml_full(numbers),
                     "gzip")  # fmt: skip

    dncload.import_dnc(database_url, full(november, "nov"), list_name="by_changes", full=True,
                       batch_size=97, range_size=113)  # fmt: skip
    if fmt == "flat":
        text = flat_changes(added, deleted)
        text += f"{str(back)[1:4]},{str(back)[4:]},D\n{str(back)[1:4]},{str(back)[4:]},A\n"
    else:
        text = xml_changes(added, deleted).replace(
            "</ns:DNCChangeList>",
            f"<Changes>{_xml_record(back, 'D')}{_xml_record(back, 'A')}</Changes>"
            "</ns:DNCChangeList>",
        )
    changes = dncload.import_dnc(
        database_url, write(tmp_path / "dec-changes", text, "zip"), list_name="by_changes",
        batch_size=50, range_size=64,
    )  # fmt: skip
    assert (changes.kind, changes.imported, changes.removed) == (
        "changes",
        len(added),
        len(deleted),
    )

    # The December full list over an older state: its numbers, and no others in its area codes.
    dncload.import_dnc(database_url, full(registry(9, 500), "old"), list_name="by_full", full=True)
    by_full = dncload.import_dnc(database_url, full(december, "dec"), list_name="by_full",
                                 full=True, range_size=211)  # fmt: skip
    assert by_full.kind == "full" and by_full.imported == len(december - registry(9, 500))

    assert listed(database_url, "by_changes") == listed(database_url, "by_full")
    assert listed(database_url, "by_full") == december | {outside}
    assert listed(database_url, "internal") == november


def test_imports_are_recorded_with_the_file_date(database_url: str, tmp_path: Path) -> None:
    numbers = registry(5, 50)
    xml = write(tmp_path / "full.xml", xml_full(numbers, day="2026-10-15"), "none")
    flat = write(tmp_path / "changes.txt", flat_changes({12015550199}, set()), "none")
    zipped = write(tmp_path / "zipped", flat_changes({12015550198}, set()), "zip")
    plain = write(tmp_path / "plain.txt", "4155552671\n", "none")
    stamp = datetime(2026, 9, 1, 12, tzinfo=UTC).timestamp()
    os.utime(plain, (stamp, stamp))

    stated = dncload.import_dnc(database_url, xml, list_name="national", file_date=date(2026, 1, 1))
    assert (stated.file_date, stated.file_date_source) == (date(2026, 10, 15), "file")
    option = dncload.import_dnc(
        database_url, flat, list_name="national", file_date=date(2026, 11, 2)
    )
    assert (option.file_date, option.file_date_source) == (date(2026, 11, 2), "option")
    archive = dncload.import_dnc(database_url, zipped, list_name="state_ca")
    assert (archive.file_date, archive.file_date_source) == (date(2026, 11, 3), "archive")
    modified = dncload.import_dnc(database_url, plain, list_name="internal")
    assert (modified.file_date, modified.file_date_source) == (date(2026, 9, 1), "modified")

    rows = rows_of(
        database_url,
        "SELECT list_name, kind, file_name, file_date, file_date_source, numbers, added, removed "
        "FROM dnc_imports ORDER BY id",
    )
    assert [(r[0], r[1], r[2], str(r[3]), r[4], r[5], r[6], r[7]) for r in rows] == [
        ("national", "full", "full.xml", "2026-10-15", "file", 50, 50, 0),
        ("national", "changes", "changes.txt", "2026-11-02", "option", 1, 1, 0),
        ("state_ca", "changes", "zipped.dat", "2026-11-03", "archive", 1, 1, 0),
        ("internal", "changes", "plain.txt", "2026-09-01", "modified", 1, 1, 0),
    ]

    async def freshness() -> dict[str, tuple[date, datetime]]:
        db = Database(database_url)
        try:
            async with db.unit_of_work() as session:
                found = await dnc_list_freshness(session)
        finally:
            await db.dispose()
        return {name: (f.file_date, f.applied_at) for name, f in found.items()}

    fresh = asyncio.run(freshness())
    assert {name: day for name, (day, _) in fresh.items()} == {
        "national": date(2026, 11, 2),
        "state_ca": date(2026, 11, 3),
        "internal": date(2026, 9, 1),
    }
    assert fresh["national"][1] == option.applied_at
    assert all(applied.tzinfo is not None for _, applied in fresh.values())


def test_malformed_lines_and_records_are_counted_and_quoted(
    database_url: str, tmp_path: Path
) -> None:
    text = "areacode,number,action\n201,5550100,A\n201,55501,D\n201,5550101,A,D\n"
    flat = write(tmp_path / "changes.txt", text, "gzip")
    report = dncload.import_dnc(database_url, flat, list_name="national")
    assert (report.counts.accepted, report.counts.invalid, report.imported) == (1, 2, 1)
    assert [(r.line, r.text) for r in report.counts.rejections] == [
        (3, "201,55501,D"),
        (4, "201,5550101,A,D"),
    ]

    xml = write(
        tmp_path / "full.xml",
        "<DNCList>\n<Record><AreaCode>201</AreaCode><PhoneNumber>5550102</PhoneNumber></Record>\n"
        "<Record><AreaCode>20</AreaCode><PhoneNumber>5550103</PhoneNumber></Record>\n"
        "<Record><Phone>not a number</Phone></Record>\n"
        + "".join(f"<Phone>201555{i:04d}</Phone>\n" for i in range(1000, 1100))
        + "</DNCList>\n",
        "none",
    )
    report = dncload.import_dnc(database_url, xml, list_name="xml")
    assert (report.counts.lines, report.counts.accepted, report.counts.invalid) == (103, 101, 2)
    assert [(r.line, r.text) for r in report.counts.rejections] == [
        (3, "20,5550103"),
        (4, "not a number"),
    ]
    assert len(listed(database_url, "xml")) == 101


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("<DNCList><Record><AreaCode>201</AreaCode><PhoneNumber>5550100</PhoneNumber></Record>",
         "not well-formed XML at line 1"),
        ('<?xml version="1.0"?>\n<!DOCTYPE lolz [<!ENTITY lol "lol">'
         '<!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">]>\n'
         "<DNCList><Record><Phone>&lol2;</Phone></Record></DNCList>", "DTD"),
        ('<!DOCTYPE x SYSTEM "file:///etc/passwd"><x>&ext;</x>', "DTD"),
        ("<DNCList><Phone>&undefined;</Phone></DNCList>", "not well-formed XML"),
    ],
)  # fmt: skip
def test_broken_and_hostile_xml_is_refused_whole(
    database_url: str, tmp_path: Path, text: str, message: str
) -> None:
    dncload.import_dnc(database_url, write(tmp_path / "old", "2015550199\n", "none"),
                       list_name="national")  # fmt: skip
    before = rows_of(database_url, "SELECT COUNT(*) FROM dnc_imports")
    with pytest.raises(FileFormatError, match=message):
        dncload.import_dnc(database_url, write(tmp_path / "x", text, "gzip"),
                           list_name="national", full=True)  # fmt: skip
    assert listed(database_url, "national") == {12015550199}
    assert rows_of(database_url, "SELECT COUNT(*) FROM dnc_imports") == before


def test_files_that_contradict_the_options_are_refused(database_url: str, tmp_path: Path) -> None:
    changes = write(tmp_path / "changes.txt", flat_changes({12015550100}, {12015550101}), "none")
    with pytest.raises(FileFormatError, match="full list deletes nothing"):
        dncload.import_dnc(database_url, changes, list_name="national", full=True)
    with pytest.raises(FileFormatError, match="--remove is for plain files"):
        dncload.import_dnc(database_url, changes, list_name="national", remove=True)
    said = write(tmp_path / "said.xml", xml_changes({12015550100}, set()), "none")
    with pytest.raises(FileFormatError, match="says it is a change list"):
        dncload.import_dnc(database_url, said, list_name="national", full=True)
    truncated = tmp_path / "cut.gz"
    truncated.write_bytes(gzip.compress(flat_full(registry(6, 5000)).encode())[:-200])
    with pytest.raises(FileFormatError, match="cannot decompress"):
        dncload.import_dnc(database_url, truncated, list_name="national", full=True)
    two = tmp_path / "two.zip"
    with zipfile.ZipFile(two, "w") as archive:
        archive.writestr("a.txt", "2015550100\n")
        archive.writestr("b.txt", "2015550101\n")
    with pytest.raises(FileFormatError, match="exactly one file"):
        dncload.import_dnc(database_url, two, list_name="national")
    assert listed(database_url, "national") == set()
    assert rows_of(database_url, "SELECT COUNT(*) FROM dnc_imports") == [(0,)]


def test_the_command_reports_kind_date_and_changes(cli: Cli) -> None:  # noqa: F811
    numbers = registry(7, 20)
    full = write(cli.cwd / "full", xml_full(numbers, day="2026-11-01"), "zip")
    first = cli.ok("import", "dnc", str(full), "--list", "national")
    assert (first["kind"], first["format"], first["compression"]) == ("full", "xml", "zip")
    assert (first["fileDate"], first["fileDateSource"]) == ("2026-11-01", "file")
    assert (first["added"], first["removed"], first["numbers"]) == (20, 0, 20)
    assert first["appliedAt"]

    gone = sorted(numbers)[:3]
    changes = write(cli.cwd / "changes", flat_changes({12015550100}, gone), "gzip")
    second = cli.ok("import", "dnc", str(changes), "--file-date", "2026-11-20")
    assert (second["kind"], second["format"], second["compression"]) == ("changes", "flat", "gzip")
    assert (second["fileDate"], second["fileDateSource"]) == ("2026-11-20", "option")
    assert (second["added"], second["removed"], second["deletions"]) == (1, 3, 3)
    assert {n for (n,) in cli.rows("SELECT number FROM dnc_numbers")} == (numbers - set(gone)) | {
        12015550100
    }
    assert cli.rows("SELECT COUNT(*) FROM dnc_imports") == [(2,)]

    assert "exclude each other" in cli.error("import", "dnc", str(changes), "--full", "--remove")
    assert "YYYY-MM-DD" in cli.error("import", "dnc", str(changes), "--file-date", "20/11/2026")
    assert "full list deletes nothing" in cli.error("import", "dnc", str(changes), "--full")
    assert cli.rows("SELECT COUNT(*) FROM dnc_imports") == [(2,)]
