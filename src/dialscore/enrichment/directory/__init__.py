"""The directory import: people the operator loads from a CSV or JSON Lines file, streamed
into ``directory_people`` in large batches with their lookup keys (re-importable).

**Columns** (CSV header names, and JSON Lines keys, compared without case, spaces, ``_``,
``-`` or ``.``): ``id`` (optional stable record id, at most 64 characters), ``firstName``,
``lastName``, ``email``, ``linkedInUrl``, ``company``, ``website``, ``companyLinkedInUrl``,
``title``; phones as ``phone``/``phoneType``, ``phone2``/``phone2Type``, … (any number, also
``phone1``), ``mobilePhone``, ``directPhone`` and ``hqPhone`` (typed by their name), or one
``phones`` column of ``number:type`` pairs separated by ``;`` (JSON Lines: a list of
``{"number": …, "type": …}`` objects or of strings). Other columns are ignored and named in
the report.

**Phones** are stored in E.164 (a number without ``+`` is read as a US number); a number that
is not valid, or carries an extension, is dropped and counted. Types are ``mobile``,
``direct``, ``hq`` or ``other`` (synonyms as in submissions); a number given twice is kept
once.

**Rows.** A row must be matchable: an email (not a role address such as ``info@``), a
LinkedIn profile URL, or a first and last name with a company (its name, website, a company
email or LinkedIn page). Other rows, and rows with a value longer than its column, are
invalid and reported with the first few quoted.

**Record identity**, which makes a re-import update records instead of adding them: the
``id`` column when the row has one; else a digest of the canonical LinkedIn slug (``li:…``);
else of the normalised email (``em:…``); else of the folded first and last name with the
company (``nc:…``). A record whose derived identity changes between imports (say, a LinkedIn
URL added to a row that had only an email) becomes a new record: give ``id`` for stable
re-imports. A re-imported record takes the file's values for every column; one given again
later in the same file, likewise (the later row wins).

**How.** The file is cut into blocks of whole lines (CSV: never inside a quoted field). A
large file is parsed in worker processes, which on SQLite also write what they parse, chunk by
chunk in file order; on PostgreSQL this process writes. Rows go through the driver (no ORM),
in transactions of at most ``BATCH_ROWS``: SQLite with one ``executemany`` of ``INSERT … ON
CONFLICT (id) DO UPDATE … WHERE`` the row changed (the indexed keys set after, where they
differ); PostgreSQL with ``COPY`` into a temporary table and one such ``INSERT … SELECT``.
Unchanged records keep their ``updated_at``. On SQLite, an import into an empty directory
appends the rows without any index, settles the records given again at its end and then
builds the indexes (an import stopped midway leaves them to the next import, which builds
them first).

**Where.** ``columns``: the names files give the columns, a CSV file's layout, the table's
columns; ``rows``: a record's row, its phones and identity, the counts of lines and phones;
``parsing``: a block of lines into rows; ``blocks``: a file's format and its blocks of whole
lines; ``companies``: the company tables; ``sqlite_writer`` and ``postgres_writer``: writing
batches; ``pool``: the worker processes, their turns and chunks; ``importer``:
``import_directory`` and its report."""

from dialscore.enrichment.directory.companies import COMPANY_TABLES_SQL
from dialscore.enrichment.directory.importer import DirectoryReport, import_directory
from dialscore.enrichment.directory.rows import DirectoryCounts

__all__ = ["COMPANY_TABLES_SQL", "DirectoryCounts", "DirectoryReport", "import_directory"]
