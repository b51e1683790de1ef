"""What a running process has cost, read from ``/proc``, and py-spy profiles of it."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time of the process (all its threads) so far."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    # Fields after the command, which is in parentheses and may hold spaces.
    fields = stat[stat.rindex(")") + 2 :].split()
    utime, stime = int(fields[11]), int(fields[12])
    return (utime + stime) / CLOCK_TICKS


def status_kib(pid: int, field: str) -> int:
    """A ``kB`` field of ``/proc/<pid>/status`` (``VmHWM``: peak resident memory)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    return 0


def peak_mib(pid: int) -> float:
    return status_kib(pid, "VmHWM") / 1024


def py_spy() -> str:
    """The py-spy next to this interpreter, else on PATH."""
    beside = Path(sys.executable).with_name("py-spy")
    found = str(beside) if beside.exists() else shutil.which("py-spy")
    if found is None:
        raise FileNotFoundError("py-spy is not installed: pip install py-spy")
    return found


@contextmanager
def profiles(targets: dict[str, int], directory: Path | None) -> Iterator[list[Path]]:
    """``py-spy record`` of each ``{name: pid}`` while the block runs, as collapsed stacks
    (``--format raw``) in ``directory/<name>.txt``, 100 a second, of the thread holding the GIL
    (``--gil``: what runs Python, not what waits). py-spy pauses the process for each sample
    (``--nonblocking`` lost one sample in six to torn stacks). Nothing without a directory."""
    if directory is None:
        yield []
        return
    directory.mkdir(parents=True, exist_ok=True)
    recorders: list[tuple[subprocess.Popen[bytes], Path]] = []
    try:
        for name, pid in targets.items():
            output = directory / f"{name}.txt"
            log = (directory / f"{name}.py-spy.log").open("wb")
            command = [py_spy(), "record", "--pid", str(pid), "--format", "raw"]
            command += ["--output", str(output), "--gil", "--rate", "100"]
            recorder = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
            log.close()
            recorders.append((recorder, output))
        yield [output for _, output in recorders]
    finally:
        for recorder, _ in recorders:
            if recorder.poll() is None:
                recorder.send_signal(signal.SIGINT)  # py-spy writes its file on SIGINT
        for recorder, _ in recorders:
            try:
                recorder.wait(timeout=30)
            except subprocess.TimeoutExpired:
                recorder.kill()
                recorder.wait(timeout=10)
