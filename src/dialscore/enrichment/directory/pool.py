"""The directory import's worker processes: parsing a file's blocks in order, and on SQLite
parsing and writing chunks of it, each worker writing its own in file order by turns."""

from __future__ import annotations

import multiprocessing
import os
import threading
from array import array
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from dialscore.enrichment.directory.blocks import Block, LineReader
from dialscore.enrichment.directory.columns import CsvLayout
from dialscore.enrichment.directory.companies import MAX_COMPANY_COUNTS, CompanyCounts
from dialscore.enrichment.directory.parsing import BlockResult, parse_block, parse_packed
from dialscore.enrichment.directory.rows import DirectoryCounts, Row, Writer, distinct
from dialscore.enrichment.directory.sqlite_writer import RepeatedIds, SqliteWriter
from dialscore.identity.keys import use_large_memos
from dialscore.kit.bulkload import Progress, connect

# Files from this size are parsed in worker processes (each costs about half a second to
# start, so small files are parsed in this process).
POOL_MIN_BYTES = 16 << 20
MAX_WORKERS = 4
# Blocks handed to the workers ahead of the writer: enough to keep them busy while it writes.
IN_FLIGHT_BLOCKS = 16
# A worker parses and writes a chunk of about this many blocks: a transaction of some 40 000
# rows of the bench's file, which holds the write lock for about a quarter of a second.
CHUNK_BLOCKS = 8
_NO_STOP = 1 << 62


def pool_size(size: int, workers: int | None) -> int:
    """How many worker processes parse a file of ``size`` bytes (``workers`` when given)."""
    if workers is not None:
        return workers
    if size < POOL_MIN_BYTES:
        return 0
    # A worker for each core: this process, which writes, spends most of its time in the
    # database, which lets go of the interpreter (on two cores, a million rows went in 18k
    # rows/s with two workers, 14k with one, 12k with three).
    return max(1, min(MAX_WORKERS, os.cpu_count() or 1))


def worker_context() -> multiprocessing.context.BaseContext:
    """Where the workers come from: forked from this process when it runs no other thread
    (the command does, unless it draws a progress bar), which takes milliseconds; else from
    a server process that has imported this module (started once, fresh: none of this
    process's threads or connections), which takes about a second the first time; spawned
    where there is no fork."""
    methods = multiprocessing.get_all_start_methods()
    if "fork" in methods and threading.active_count() == 1:
        return multiprocessing.get_context("fork")
    if "forkserver" not in methods:
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([__name__])
    return context


def _ready() -> None:
    """A worker's first task: its answer shows it has started."""


class BlockParser:
    """Parses a file's blocks in order: in ``workers`` processes (none: here), each CSV block
    once the header is known; a CSV block cut through a quoted field is parsed again joined
    with the next. Reads from ``reader``'s position, with ``layout`` when the header is
    known; counts the companies of the rows with ``count_companies``."""

    def __init__(
        self,
        reader: LineReader,
        block_bytes: int,
        layout: CsvLayout | None = None,
        *,
        count_companies: bool = True,
    ) -> None:
        self.kind = reader.kind
        self.blocks = reader.blocks(block_bytes)
        self.layout = layout
        self.count_companies = count_companies
        self.pending: deque[tuple[Block, Future[BlockResult] | None]] = deque()

    def results(self, workers: int) -> Iterator[tuple[BlockResult, int]]:
        """(parsed block, file position after it), in file order. Parsed here, a block is
        yielded before the next is read."""
        with ExitStack() as stack:
            pool = None
            ready: Future[None] | None = None
            if workers > 0:
                pool = stack.enter_context(
                    ProcessPoolExecutor(workers, worker_context(), initializer=use_large_memos)
                )
                # The first pool of a process waits a second or two for its server to
                # start; until a worker answers, blocks are parsed here.
                ready = pool.submit(_ready)
            for block in self.blocks:
                # A CSV file's blocks need its header, which the first one parsed here finds.
                if pool is None or not ready or not ready.done() or not self.knows_layout:
                    self.pending.append((block, None))
                else:
                    args = (self.kind, self.layout, block.first_line, block.data, block.final)
                    future = pool.submit(parse_packed, *args, self.count_companies)
                    self.pending.append((block, future))
                # Enough blocks in flight to keep the workers busy while a batch is written;
                # one to parse here is parsed at once.
                if len(self.pending) >= IN_FLIGHT_BLOCKS or self.pending[0][1] is None:
                    yield self._settle()
            while self.pending:
                yield self._settle()

    @property
    def knows_layout(self) -> bool:
        """Whether its blocks can be parsed anywhere: a CSV file's header has been read."""
        return self.kind != "csv" or self.layout is not None

    def _parse(self, block: Block) -> BlockResult:
        return parse_block(
            self.kind,
            self.layout,
            block.first_line,
            block.data,
            block.final,
            count_companies=self.count_companies,
        )

    def _settle(self) -> tuple[BlockResult, int]:
        block, future = self.pending.popleft()
        result = self._parse(block) if future is None else future.result()
        while not result.clean:
            if self.pending:
                following, later = self.pending.popleft()
                if later is not None:
                    later.cancel()
            else:
                following = next(self.blocks)
            block = Block(
                block.data + following.data, block.first_line, following.end, following.final
            )
            result = self._parse(block)
        if result.layout is not None:
            self.layout = result.layout
        return result, block.end


# -- workers that write their chunks (SQLite) -------------------------------------------------


class Turns:
    """Whose turn it is to write: the workers write their chunks in file order, each once the
    one before it is written, so that a record given again ends with its later row. From the
    chunk ``stop`` names on, none is written."""

    def __init__(self, context: multiprocessing.context.BaseContext) -> None:
        self.condition = context.Condition()
        # The next chunk to write, and the first not to write.
        self.state = context.Array("q", [0, _NO_STOP], lock=False)

    def wait(self, chunk: int) -> bool:
        """Waits until ``chunk`` may be written; False when it must not be (a chunk before it
        could not be written here, or the importing process gave up or ended)."""
        parent = multiprocessing.parent_process()
        with self.condition:
            while self.state[0] != chunk and chunk < self.state[1]:
                if not self.condition.wait(1.0) and parent is not None and not parent.is_alive():
                    return False
            return bool(chunk < self.state[1])

    def written(self, chunk: int) -> None:
        with self.condition:
            self.state[0] = chunk + 1
            self.condition.notify_all()

    def stop(self, chunk: int) -> None:
        # Waiters look again every second: a lock that a killed worker held must not keep
        # the importing process from failing.
        locked = self.condition.acquire(timeout=1.0)
        try:
            self.state[1] = min(self.state[1], chunk)
            if locked:
                self.condition.notify_all()
        finally:
            if locked:
                self.condition.release()


@dataclass
class ChunkWork:
    """What every chunk of one import shares, given to each worker when it starts."""

    url: str
    path: Path
    kind: str
    now: datetime
    deferred: bool
    batch_rows: int


@dataclass
class ChunkWritten:
    """A chunk's rows parsed, and written unless ``written`` is False: then the importing
    process goes on from the chunk's start itself."""

    counts: DirectoryCounts
    companies: CompanyCounts
    written: bool
    imported: int = 0
    updated: int = 0
    unchanged: int = 0
    appended: list[tuple[int, array[int]]] = field(default_factory=list)


# A worker's import, the turns, and its writer (its own connection), from its start to its end.
_chunk_work: tuple[ChunkWork, Turns, SqliteWriter] | None = None


def _start_chunk_worker(work: ChunkWork, turns: Turns) -> None:
    global _chunk_work
    use_large_memos()
    stack = ExitStack()
    conn = stack.enter_context(connect(work.url))
    multiprocessing.util.Finalize(stack, stack.close, exitpriority=10)
    assert conn.sqlite is not None
    _chunk_work = work, turns, SqliteWriter(conn.sqlite, work.now, deferred=work.deferred)


def write_chunk(
    chunk: int, start: int, length: int, first_line: int, final: bool, layout: CsvLayout | None
) -> ChunkWritten:
    """In a worker: parses a chunk of the file and writes its rows when its turn comes."""
    assert _chunk_work is not None
    work, turns, writer = _chunk_work
    try:
        with work.path.open("rb") as handle:
            handle.seek(start)
            data = handle.read(length)
        result = parse_block(
            work.kind, layout, first_line, data, final, count_companies=work.deferred
        )
    except BaseException:
        turns.stop(chunk)
        raise
    if not turns.wait(chunk) or not result.clean:
        # Cut through a quoted field (or a chunk before it was): this chunk and the later
        # ones are the importing process's to parse, joined as they must be.
        turns.stop(chunk)
        return ChunkWritten(result.counts, result.companies, written=False)
    writer.imported = writer.updated = writer.unchanged = 0
    writer.appended = []
    try:
        for batch in distinct(result.rows, work.batch_rows):
            writer.write(batch)
    except BaseException:
        turns.stop(chunk)
        raise
    turns.written(chunk)
    return ChunkWritten(
        result.counts,
        result.companies,
        written=True,
        imported=writer.imported,
        updated=writer.updated,
        unchanged=writer.unchanged,
        appended=writer.appended,
    )


@dataclass
class Tally:
    """What an import has parsed and written so far, here and in the workers."""

    counts: DirectoryCounts
    writer: Writer
    # The companies of an import into an empty directory, as its rows are parsed; None for
    # another import, or past MAX_COMPANY_COUNTS of them.
    companies: CompanyCounts | None
    # The ids appended to an empty directory: the workers' as their chunks come, this
    # process's own when it is done writing.
    ids: RepeatedIds = field(default_factory=RepeatedIds)

    def parsed(self, counts: DirectoryCounts, companies: CompanyCounts) -> None:
        self.counts.add(counts)
        if self.companies is not None:
            for key, people in companies.items():
                self.companies[key] = self.companies.get(key, 0) + people
            if len(self.companies) > MAX_COMPANY_COUNTS:
                self.companies = None

    def written(self, chunk: ChunkWritten) -> None:
        """Adds a chunk a worker parsed and wrote."""
        self.parsed(chunk.counts, chunk.companies)
        writer = self.writer
        writer.imported += chunk.imported
        writer.updated += chunk.updated
        writer.unchanged += chunk.unchanged
        self.ids.add(chunk.appended)

    def write(self, rows: list[Row]) -> None:
        """Writes a batch of rows with distinct ids from this process."""
        self.writer.write(rows)


def write_in_workers(
    work: ChunkWork,
    workers: int,
    reader: LineReader,
    block_bytes: int,
    tally: Tally,
    progress: Progress,
    size: int,
) -> BlockParser:
    """Has ``workers`` processes parse the file in chunks and write them, each its own in
    file order (SQLite); the first blocks, until the header is read and a worker has started,
    are parsed and written here. Returns the parser of what is left for this process: from a
    chunk cut through a quoted field, the rest of the file; else nothing.

    Parsed in the workers and written here, every row was packed, sent and unpacked, and its
    writing ran beside the parsing on the same two cores: a million rows took 37-38
    CPU-seconds, against 33-35 written by the workers."""
    # Small blocks here: the header is all this process needs.
    parser = BlockParser(reader, max(1, block_bytes // 16), count_companies=work.deferred)
    context = worker_context()
    turns = Turns(context)
    with ProcessPoolExecutor(
        workers, context, initializer=_start_chunk_worker, initargs=(work, turns)
    ) as pool:
        try:
            # Every worker starts now (a pool starts one when it is given a task and none is
            # idle), so that all are ready for the first chunks.
            ready = [pool.submit(_ready) for _ in range(workers)]
            here = parser.results(0)
            while not (ready[0].done() and parser.knows_layout):
                found = next(here, None)
                if found is None:
                    return parser
                result, position = found
                tally.parsed(result.counts, result.companies)
                for batch in distinct(result.rows, work.batch_rows):
                    tally.write(batch)
                progress("reading", position, size)
            pending: deque[tuple[Block, Future[ChunkWritten]]] = deque()
            chunks = 0
            chunk_bytes = block_bytes * CHUNK_BLOCKS
            while True:
                while len(pending) < 2 * workers:
                    # Smaller chunks towards the end, so that the workers finish together (a
                    # quarter at least: each transaction rewrites pages all over the id index).
                    left = (size - reader.position) // (2 * workers)
                    block = reader.read(max(chunk_bytes // 4, min(chunk_bytes, left)))
                    if block is None:
                        break
                    args = (block.start, len(block.data), block.first_line, block.final)
                    pending.append((block, pool.submit(write_chunk, chunks, *args, parser.layout)))
                    chunks += 1
                if not pending:
                    return BlockParser(reader, block_bytes, parser.layout)  # nothing left
                block, future = pending.popleft()
                written = future.result()
                if not written.written:
                    for _, later in pending:
                        later.cancel()
                    rest = LineReader(reader.handle, reader.kind, block.start, block.first_line)
                    return BlockParser(
                        rest, block_bytes, parser.layout, count_companies=work.deferred
                    )
                tally.written(written)
                progress("reading", block.end, size)
        except BaseException:
            turns.stop(0)
            raise
