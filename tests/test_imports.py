"""Imports of scoring evidence: the pure parsers of do-not-call, number-block and company-line
files, the bulk loaders, and ``dialscore import …`` run as a real command on SQLite and
PostgreSQL, checked against the rows in the database."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest
from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy.engine import make_url

from dialscore.kit.linefiles import MAX_EXAMPLES, FileFormatError
from dialscore.scoring import dncload, loaders
from dialscore.scoring.imports import (
    CompanyLineRow,
    CsvCounts,
    DncScan,
    NumberBlockRow,
    block_category,
    company_line_number,
    dnc_number,
    scan_company_lines,
    scan_number_blocks,
)
from tests.processes import (
    DATABASES,
    base_env,
    cli_error,
    cli_json,
    fresh_postgres_database,
    run_cli,
)

# -- do-not-call lines -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "number"),
    [
        ("4155552671", 14155552671),
        (b"4155552671", 14155552671),
        ("4155552671\n", 14155552671),
        ("4155552671\r\n", 14155552671),
        ("  4155552671  ", 14155552671),
        ("415-555-2671", 14155552671),
        ("(415) 555-2671", 14155552671),
        ("415.555.2671", 14155552671),
        ("415\t555\t2671", 14155552671),
        ("415,5552671", 14155552671),
        ("415, 5552671", 14155552671),
        (' "415" , "5552671" ', 14155552671),
        ("'415','555-2671'", 14155552671),
        ("14155552671", 14155552671),
        ("1-415-555-2671", 14155552671),
        ("+14155552671", 14155552671),
        ("+1 (415) 555-2671", 14155552671),
        ("+442079460000", 442079460000),
        ("+44 20 7946 0000", 442079460000),
        ("+6834002", 6834002),  # Niue: 7 digits in all
        ("+861234567890123", 861234567890123),  # 15 digits
        ("2125550100", 12125550100),
    ],
)
def test_dnc_line_forms_give_e164_digits(line: str | bytes, number: int) -> None:
    assert dnc_number(line) == number


@pytest.mark.parametrize(
    "line",
    [
        "",
        "   ",
        "# a comment 4155552671",
        "phone",
        "12345",
        "415555267",  # 9 digits
        "41555526712",  # 11 digits, not starting with 1
        "24155552671",
        "0155552671",  # area code starting with 0
        "1155552671",  # area code starting with 1
        "4150552671",  # exchange starting with 0
        "4151552671",  # exchange starting with 1
        "10155552671",
        "+1415555267",  # +1 and 9 digits
        "+141555526712",
        "+0441234567",  # country code starting with 0
        "+44123",  # too short
        "+4412345678901234",  # 16 digits
        "+",
        "++14155552671",
        "415,555267",
        "41,55552671",
        "4155,552671",
        "415,5552671,2024-01-01",
        ",4155552671",
        "415,555-267a",
        "1-800-FLOWERS",
        "4155552671 ext 12",
        "٤١٥٥٥٥٢٦٧١",  # Arabic-Indic digits
        "\uff14\uff11\uff15\uff15\uff15\uff15\uff12\uff16\uff17\uff11",  # full-width digits
        "+٤٤٢٠٧٩٤٦٠٠٠٠",
        "415 555 2671 4155552671",
    ],
)
def test_dnc_lines_without_a_valid_number_give_none(line: str) -> None:
    assert dnc_number(line) is None


def scan_lines(lines: list[bytes], splits: list[int]) -> tuple[list[int], DncScan]:
    """Feeds lines as the loader does: in blocks of whole lines (cut before the line indexes
    in ``splits``), each without its final line feed."""
    cuts = [*sorted({cut for cut in splits if 0 < cut < len(lines)}), len(lines)]
    scan = DncScan()
    numbers: list[int] = []
    start = 0
    for cut in cuts:
        numbers += [int(d) for d in scan.feed(b"\n".join(lines[start:cut]))]
        start = cut
    return numbers, scan


def scan_all(text: bytes, *, splits: list[int] | None = None) -> tuple[list[int], DncScan]:
    """Feeds a file's content: a final line feed ends the last line."""
    lines = text.split(b"\n")
    if text.endswith(b"\n"):
        lines.pop()
    return scan_lines(lines, splits or [])


def test_dnc_scan_skips_header_blank_and_comment_lines_and_quotes_invalid_ones() -> None:
    text = (
        b"Phone Number\n"  # 1: header
        b"4155552671\n"  # 2
        b"\n"  # 3: blank
        b"# updated 2026-11-01\n"  # 4: comment
        b"   \t\r\n"  # 5: blank
        b"12345\n"  # 6: invalid
        b"212,5550100\n"  # 7
        b"phone\n"  # 8: words after the first line are invalid
        b"+442079460000\r\n"  # 9
        b"4155552671"  # 10: a repeat, no final line feed
    )
    numbers, scan = scan_all(text)
    assert numbers == [14155552671, 12125550100, 442079460000, 14155552671]
    assert (scan.lines, scan.accepted, scan.skipped, scan.invalid) == (10, 4, 4, 2)
    assert [(r.line, r.text) for r in scan.rejections] == [(6, "12345"), (8, "phone")]
    assert all(r.reason for r in scan.rejections)
    assert "10 digits" in scan.rejections[0].reason


def test_dnc_scan_header_only_on_the_first_line_with_content() -> None:
    numbers, scan = scan_all(b"# list\n\nnumber\nnumber\n4155552671\n")
    assert numbers == [14155552671]
    assert (scan.skipped, scan.invalid) == (3, 1)
    assert scan.rejections[0].line == 4

    numbers, scan = scan_all(b"0155552671\nphone\n")
    assert numbers == []
    assert scan.invalid == 2  # the first line with content was a bad number, not a header


def test_dnc_scan_counts_line_numbers_across_blocks_and_quotes_at_most_a_few() -> None:
    lines = [b"4155552671" if i % 3 else b"x" * 200 + b"-bad" for i in range(1, 31)]
    numbers, scan = scan_all(b"\n".join(lines), splits=[4, 5, 17])
    assert len(numbers) == 20
    assert scan.invalid == 10 and scan.lines == 30
    assert len(scan.rejections) == MAX_EXAMPLES
    assert [r.line for r in scan.rejections] == [3, 6, 9, 12, 15]
    assert all(len(r.text) <= 80 and r.text.endswith("…") for r in scan.rejections)


def test_dnc_scan_ignores_a_byte_order_mark_at_the_start_only() -> None:
    bom = "\ufeff".encode()
    numbers, scan = scan_all(bom + b"4155552671\n" + bom + b"2125550100\n")
    assert numbers == [14155552671]
    assert (scan.invalid, scan.rejections[0].line) == (1, 2)


VALID_FORMS = st.sampled_from(
    ["{n}", "{a},{b}", "1{n}", "+1{n}", "({a}) {b3}-{b4}", '"{a}","{b}"', "+44{n}"]
)
NATIONAL = st.integers(min_value=2_000_000_000, max_value=9_999_999_999)
NOISE = st.text(alphabet="0123456789+-,()# .\"'\tab", max_size=16)


@st.composite
def dnc_lines(draw: st.DrawFn) -> str:
    if draw(st.booleans()):
        national = str(draw(NATIONAL))
        return draw(VALID_FORMS).format(
            n=national, a=national[:3], b=national[3:], b3=national[3:6], b4=national[6:]
        )
    return draw(NOISE)


@given(
    lines=st.lists(dnc_lines(), min_size=1, max_size=40),
    splits=st.lists(st.integers(min_value=0, max_value=40), max_size=5),
)
def test_dnc_scan_in_any_blocks_agrees_with_the_line_parser(
    lines: list[str], splits: list[int]
) -> None:
    numbers, scan = scan_lines([line.encode() for line in lines], splits)
    expected = [n for n in map(dnc_number, lines) if n is not None]
    assert numbers == expected
    assert scan.lines == len(lines)
    assert scan.accepted + scan.skipped + scan.invalid == len(lines)


# -- number blocks -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "category"),
    [
        ("wireless", "wireless"),
        ("Mobile", "wireless"),
        ("CELLULAR", "wireless"),
        ("cell", "wireless"),
        ("PCS", "wireless"),
        ("landline", "landline"),
        ("Wireline", "landline"),
        (" fixed ", "landline"),
        ("ILEC", "landline"),
        ("clec", "landline"),
        ("RBOC", "landline"),
        ("CAP", "landline"),
        ("voip", "voip"),
        ("VoIP", "voip"),
        ("IPES", "voip"),
        ("paging", None),
        ("wireless/landline", None),
        ("", None),
    ],
)
def test_block_categories_are_normalised(value: str, category: str | None) -> None:
    assert block_category(value) == category


def test_number_blocks_from_npa_nxx_x_columns() -> None:
    counts = CsvCounts()
    text = [
        "NPA,NXX,X,Category,Carrier\n",
        "415,555,,Wireless,T-Mobile USA\n",
        "415,556,2,ILEC,Pacific Bell\n",
        "\n",
        "# comment,,,,\n",
        "212,555,,paging,X\n",  # 6: unknown category
        "112,555,,mobile,\n",  # 7: NPA starting with 1
        "212,155,,mobile,\n",  # 8: NXX starting with 1
        "212,556,12,mobile,\n",  # 9: X of two digits
        '646,555,,"VoIP",' + '"' + "C" * 250 + '"\n',
        "646,556,,cellular\n",  # no carrier cell
    ]
    rows = list(scan_number_blocks(text, counts))
    assert rows == [
        NumberBlockRow("415555", "wireless", "T-Mobile USA"),
        NumberBlockRow("4155562", "landline", "Pacific Bell"),
        NumberBlockRow("646555", "voip", "C" * 200),
        NumberBlockRow("646556", "wireless", None),
    ]
    assert (counts.lines, counts.accepted, counts.skipped, counts.invalid) == (11, 4, 3, 4)
    assert [r.line for r in counts.rejections] == [6, 7, 8, 9]
    assert "paging" in counts.rejections[0].reason
    assert counts.columns == {"category", "carrier"}


@pytest.mark.parametrize(
    "header",
    ["prefix,category,carrier", "NPA-NXX,OCN Type,Company", "Block,Type,Carrier Name"],
)
def test_number_blocks_from_a_prefix_column(header: str) -> None:
    counts = CsvCounts()
    text = [
        header,
        "415-555,wireline,AT&T",
        "4155562,IPES,Bandwidth",
        "41555,voip,",
        "abcdef,voip,",
    ]
    rows = list(scan_number_blocks(text, counts))
    assert rows == [
        NumberBlockRow("415555", "landline", "AT&T"),
        NumberBlockRow("4155562", "voip", "Bandwidth"),
    ]
    assert counts.invalid == 2


def test_a_csv_field_over_the_size_limit_is_a_file_error() -> None:
    text = ["prefix,category,carrier\n", "415555,wireless,A\n", '415556,wireless,"' + "x" * 200_000]
    with pytest.raises(FileFormatError, match="line 3"):
        list(scan_number_blocks(text, CsvCounts()))


def test_number_blocks_without_a_carrier_column_say_so() -> None:
    counts = CsvCounts()
    rows = list(scan_number_blocks(["prefix,category", "415555,mobile"], counts))
    assert rows == [NumberBlockRow("415555", "wireless", None)]
    assert counts.columns == {"category"}


@pytest.mark.parametrize(
    "text",
    [[], ["# nothing\n", "\n"], ["415555,wireless,X\n"], ["npa,category\n"], ["prefix,carrier\n"]],
)
def test_number_block_files_need_a_header_with_block_and_category(text: list[str]) -> None:
    with pytest.raises(FileFormatError, match="header"):
        list(scan_number_blocks(text, CsvCounts()))


# -- company lines -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "number"),
    [
        ("+1 415 555 2671", "+14155552671"),
        ("(415) 555-2671", "+14155552671"),
        ("415.555.2671", "+14155552671"),
        ("+44 20 7946 0000", "+442079460000"),
        ("12345", None),
        ("not a number", None),
        ("", None),
        ("+1 415 555 2671 ext. 12", None),
        ("+1 015 555 2671", None),
    ],
)
def test_company_line_numbers_are_e164_with_us_as_default(text: str, number: str | None) -> None:
    assert company_line_number(text) == number


def test_company_lines_with_and_without_ivr_path() -> None:
    counts = CsvCounts()
    text = [
        "Number,Company,ivrPath\n",
        '+1 415 555 2671,Acme Inc.,"1,3,#"\n',
        "(212) 555-0100,Beta,\n",
        "+44 20 7946 0000,,9\n",
        "12345,Gamma,\n",  # 5: invalid number
        "4155552672,Delta," + "1" * 201 + "\n",  # 6: ivrPath too long
        "4155552673,Epsilon,1\x072\n",  # 7: not printable
    ]
    rows = list(scan_company_lines(text, counts))
    assert rows == [
        CompanyLineRow("+14155552671", "Acme Inc.", "1,3,#"),
        CompanyLineRow("+12125550100", "Beta", None),
        CompanyLineRow("+442079460000", None, "9"),
    ]
    assert (counts.accepted, counts.invalid) == (3, 3)
    assert [r.line for r in counts.rejections] == [5, 6, 7]
    assert counts.columns == {"company", "ivr_path"}

    only_numbers = CsvCounts()
    assert list(scan_company_lines(["phone", "4155552671"], only_numbers)) == [
        CompanyLineRow("+14155552671", None, None)
    ]
    assert only_numbers.columns == frozenset()


def test_company_line_files_need_a_header_with_number() -> None:
    with pytest.raises(FileFormatError, match="number,company,ivrPath"):
        list(scan_company_lines(["+14155552671,Acme,1"], CsvCounts()))


# -- the loaders, called directly --------------------------------------------------------------


def rows_of(url: str, sql: str) -> list[tuple[Any, ...]]:
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        conn = sqlite3.connect(parsed.database or "")
        try:
            return [tuple(row) for row in conn.execute(sql).fetchall()]
        finally:
            conn.close()
    with psycopg.connect(parsed.set(drivername="postgresql").render_as_string(False)) as pg:
        return [tuple(row) for row in pg.execute(sql).fetchall()]


def listed(url: str, list_name: str) -> set[int]:
    found = rows_of(url, f"SELECT number FROM dnc_numbers WHERE list_name = '{list_name}'")
    return {int(row[0]) for row in found}


@pytest.mark.parametrize("chunk", [1, 7, 1 << 20])
def test_dnc_loader_in_small_batches_ranges_and_read_chunks(
    database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    """Batches of 3 numbers and ranges of 4, with repeats falling on range boundaries; read in
    chunks shorter than a line, too: the same rows and counts as in one piece."""
    monkeypatch.setattr(dncload, "READ_CHUNK", chunk)
    numbers = [14155550000 + i for i in (5, 1, 9, 1, 1, 3, 7, 2, 2, 8, 4, 6, 9, 10, 11)]
    path = tmp_path / "dnc.txt"
    path.write_text("number\n" + "\n".join(f"+{n}" for n in numbers) + "\nbad\n4155550001")
    phases: list[str] = []

    def progress(phase: str, done: int, total: int) -> None:
        if not phases or phases[-1] != phase:
            phases.append(phase)
        if phase == "reading":
            assert 0 < done <= total == path.stat().st_size

    report = dncload.import_dnc(
        database_url, path, list_name="small", batch_size=3, range_size=4, progress=progress
    )
    assert listed(database_url, "small") == set(numbers)
    assert (report.counts.lines, report.counts.accepted, report.counts.invalid) == (18, 16, 1)
    assert report.imported == len(set(numbers))
    assert report.already_listed == 16 - len(set(numbers))
    assert phases[0] == "reading"
    if make_url(database_url).get_backend_name() == "sqlite":
        assert phases == ["reading", "sorting", "writing"]

    removal = tmp_path / "removal.txt"
    removal.write_text("+14155550001\n4155550002\n4155550002\n4155550099\n")
    removed = dncload.import_dnc(
        database_url, removal, list_name="small", remove=True, batch_size=1, range_size=1
    )
    assert (removed.removed, removed.not_listed, removed.imported) == (2, 2, 0)
    assert listed(database_url, "small") == set(numbers) - {14155550001, 14155550002}


def test_dnc_loader_keeps_memory_bounded_on_a_line_without_end(
    database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(dncload, "READ_CHUNK", 64)
    monkeypatch.setattr(dncload, "MAX_LINE", 256)
    path = tmp_path / "dnc.txt"
    path.write_bytes(b"4155552671\n" + b"\x00\xff" * 5_000 + b"7\n2125550100")
    with path.open("rb") as handle:
        blocks = list(dncload._read_blocks(handle))
    assert max(len(block) for block in blocks) < 256 + 2 * 64
    report = dncload.import_dnc(database_url, path, list_name="long")
    assert (report.counts.lines, report.counts.invalid, report.imported) == (3, 1, 2)
    assert listed(database_url, "long") == {14155552671, 12125550100}


def test_dnc_loader_refuses_a_list_name_out_of_bounds(database_url: str, tmp_path: Path) -> None:
    path = tmp_path / "dnc.txt"
    path.write_text("4155552671\n")
    for name in ("", "x" * 65):
        with pytest.raises(ValueError, match="list name"):
            dncload.import_dnc(database_url, path, list_name=name)
    assert listed(database_url, "") == set()


def test_upserts_start_a_new_batch_when_a_key_repeats(database_url: str, tmp_path: Path) -> None:
    path = tmp_path / "blocks.csv"
    path.write_text(
        "prefix,category,carrier\n415555,wireless,A\n415555,wireless,A\n415555,voip,B\n"
    )
    report = loaders.import_number_blocks(database_url, path)
    assert (report.imported, report.unchanged, report.updated) == (1, 1, 1)
    assert rows_of(database_url, "SELECT prefix, category, carrier FROM number_blocks") == [
        ("415555", "voip", "B")
    ]


# -- the command, on SQLite and PostgreSQL -----------------------------------------------------


@dataclass
class Cli:
    """``dialscore`` bound to a data directory and database, with a way to read its rows."""

    env: dict[str, str]
    cwd: Path
    url: str

    def ok(self, *args: str) -> dict[str, Any]:
        return cli_json(list(args), env=self.env, cwd=self.cwd)

    def error(self, *args: str) -> str:
        return cli_error(list(args), env=self.env, cwd=self.cwd)

    def rows(self, sql: str) -> list[tuple[Any, ...]]:
        return rows_of(self.url, sql)

    def file(self, name: str, text: str) -> str:
        path = self.cwd / name
        path.write_text(text)
        return str(path)


@pytest.fixture(params=DATABASES)
def cli(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Cli]:
    """SQLite: nothing prepared (the command migrates it). PostgreSQL: a fresh database
    brought up to date with ``dialscore migrate``."""
    data_dir = tmp_path / "var"
    if request.param == "sqlite":
        yield Cli(base_env(data_dir), tmp_path, f"sqlite:///{data_dir / 'dialscore.db'}")
        return
    with fresh_postgres_database() as url:
        env = base_env(data_dir, DATABASE_URL=url)
        assert cli_json(["migrate"], env=env, cwd=tmp_path) == {"migrated": True}
        yield Cli(env, tmp_path, url)


DNC_FILE = """areacode,number
415,5552671
212,5550100
# additions of 2026-11
+14155552672
14155552673
(646) 555-0199
+44 20 7946 0000
12345
415,5552671
"""


def test_dnc_import_reimport_second_list_and_removal(cli: Cli) -> None:
    path = cli.file("national.txt", DNC_FILE)
    first = cli.ok("import", "dnc", path)
    numbers = {
        14155552671,
        12125550100,
        14155552672,
        14155552673,
        16465550199,
        442079460000,
    }
    assert (
        first["file"] == str(Path(path).resolve())
        and first["list"] == "national"
        and first["remove"] is False
    )
    assert (first["read"], first["skipped"], first["numbers"], first["invalid"]) == (10, 2, 7, 1)
    assert (first["imported"], first["alreadyListed"], first["removed"]) == (6, 1, 0)
    assert first["invalidExamples"] == [
        {"line": 9, "text": "12345", "reason": first["invalidExamples"][0]["reason"]}
    ]
    assert first["seconds"] >= 0 and first["perSecond"] >= 0
    assert {n for (n,) in cli.rows("SELECT number FROM dnc_numbers")} == numbers

    again = cli.ok("import", "dnc", path, "--list", "national")
    assert (again["numbers"], again["imported"], again["alreadyListed"]) == (7, 0, 7)
    assert cli.rows("SELECT COUNT(*) FROM dnc_numbers") == [(6,)]

    internal = cli.ok("import", "dnc", path, "--list", "internal")
    assert (internal["list"], internal["imported"]) == ("internal", 6)

    removal = cli.file("removals.txt", "4155552671\n+1 212 555 0100\n4155550000\n")
    removed = cli.ok("import", "dnc", removal, "--remove")
    assert removed["remove"] is True
    assert (removed["numbers"], removed["removed"], removed["notListed"]) == (3, 2, 1)
    assert (removed["imported"], removed["alreadyListed"]) == (0, 0)

    found = cli.rows("SELECT number, list_name FROM dnc_numbers")
    assert {n for n, name in found if name == "national"} == numbers - {14155552671, 12125550100}
    assert {n for n, name in found if name == "internal"} == numbers

    again_removed = cli.ok("import", "dnc", removal, "--remove", "--list", "national")
    assert (again_removed["removed"], again_removed["notListed"]) == (0, 3)


def test_dnc_import_prints_only_the_report(cli: Cli) -> None:
    path = cli.file("dnc.txt", "4155552671\n")
    result = run_cli(["import", "dnc", path], env=cli.env, cwd=cli.cwd)
    assert result.returncode == 0, result.describe()
    assert result.stdout.count("\n") == 1 and '"imported": 1' in result.stdout
    assert result.stderr == ""  # no progress bar when stderr is not a terminal


def test_dnc_import_errors(cli: Cli) -> None:
    missing = str(cli.cwd / "missing.txt")
    assert f"no such file: {missing}" in cli.error("import", "dnc", missing)
    assert "not a file" in cli.error("import", "dnc", str(cli.cwd))
    path = cli.file("dnc.txt", "4155552671\n")
    assert "--list" in cli.error("import", "dnc", path, "--list", " ")
    assert "--list" in cli.error("import", "dnc", path, "--list", "x" * 65)
    # The refused commands wrote nothing: the one row is this import's.
    assert cli.ok("import", "dnc", path)["imported"] == 1
    assert cli.rows("SELECT number, list_name FROM dnc_numbers") == [(14155552671, "national")]


def test_number_blocks_import_and_reimport_updates_categories(cli: Cli) -> None:
    path = cli.file(
        "blocks.csv",
        "npa,nxx,x,category,carrier\n"
        "415,555,,Wireless,T-Mobile\n"
        "415,556,2,ILEC,Pacific Bell\n"
        "212,555,,IPES,Bandwidth\n"
        "212,556,,paging,Metrocall\n",
    )
    first = cli.ok("import", "number-blocks", path)
    assert (first["read"], first["rows"], first["invalid"]) == (5, 3, 1)
    assert (first["imported"], first["updated"], first["unchanged"]) == (3, 0, 0)
    assert first["invalidExamples"][0]["line"] == 5
    assert "paging" in first["invalidExamples"][0]["reason"]
    expected = [
        ("212555", "voip", "Bandwidth"),
        ("415555", "wireless", "T-Mobile"),
        ("4155562", "landline", "Pacific Bell"),
    ]
    query = "SELECT prefix, category, carrier FROM number_blocks ORDER BY prefix"
    assert cli.rows(query) == expected

    again = cli.ok("import", "number-blocks", path)
    assert (again["imported"], again["updated"], again["unchanged"]) == (0, 0, 3)
    assert cli.rows(query) == expected

    # A newer report: one block ported to VoIP, one new; no carrier column leaves carriers.
    newer = cli.file("newer.csv", "prefix,category\n415555,voip\n212555,ipes\n646555,mobile\n")
    changed = cli.ok("import", "number-blocks", newer)
    assert (changed["imported"], changed["updated"], changed["unchanged"]) == (1, 1, 1)
    assert cli.rows(query) == [
        ("212555", "voip", "Bandwidth"),
        ("415555", "voip", "T-Mobile"),
        ("4155562", "landline", "Pacific Bell"),
        ("646555", "wireless", None),
    ]

    headless = cli.file("headless.csv", "415555,wireless,X\n")
    assert "header" in cli.error("import", "number-blocks", headless)
    assert len(cli.rows(query)) == 4


def test_company_lines_import_with_and_without_ivr_path(cli: Cli) -> None:
    path = cli.file(
        "lines.csv",
        "number,company,ivrPath\n"
        '+1 415 555 2671,Acme Inc.,"1,3,#"\n'
        "(212) 555-0100,Beta Corp,\n"
        "+44 20 7946 0000,Gamma Ltd,0\n"
        "555-0100,Nobody,\n",
    )
    first = cli.ok("import", "company-lines", path)
    assert (first["read"], first["rows"], first["invalid"], first["imported"]) == (5, 3, 1, 3)
    assert first["invalidExamples"][0]["line"] == 5
    query = "SELECT number, company, ivr_path FROM company_lines ORDER BY number"
    assert cli.rows(query) == [
        ("+12125550100", "Beta Corp", None),
        ("+14155552671", "Acme Inc.", "1,3,#"),
        ("+442079460000", "Gamma Ltd", "0"),
    ]

    update = cli.file("update.csv", "number,company,ivrPath\n4155552671,Acme Inc.,2\n")
    changed = cli.ok("import", "company-lines", update)
    assert (changed["imported"], changed["updated"], changed["unchanged"]) == (0, 1, 0)
    # Without an ivrPath column the known paths stay; an empty cell above cleared none.
    numbers_only = cli.file("numbers.csv", "number\n+14155552671\n+12125550199\n")
    added = cli.ok("import", "company-lines", numbers_only)
    assert (added["imported"], added["updated"], added["unchanged"]) == (1, 0, 1)
    assert cli.rows(query) == [
        ("+12125550100", "Beta Corp", None),
        ("+12125550199", None, None),
        ("+14155552671", "Acme Inc.", "2"),
        ("+442079460000", "Gamma Ltd", "0"),
    ]

    wrong = cli.file("wrong.csv", "phone_number_here,company\n+14155552671,Acme\n")
    assert "number,company,ivrPath" in cli.error("import", "company-lines", wrong)
