"""The ``dialscore`` command answers ``--help`` (and a mistyped option) without loading what
only a command's run needs: the web framework, the server, the database layer, the password
hasher. Checked by the modules Python reports importing, not by a stopwatch."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

# What made ``dialscore --help`` take seconds when the command modules imported it.
HEAVY = {"fastapi", "starlette", "uvicorn", "sqlalchemy", "argon2", "psycopg", "dramatiq"}


def imported_by(cwd: Path, *args: str) -> tuple[set[str], str]:
    """The top-level packages ``python -m dialscore <args>`` imports, run in ``cwd`` on the
    data directory ``cwd/var``, and what it printed on stdout."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DIALSCORE_")}
    env["DIALSCORE_DATA_DIR"] = str(cwd / "var")
    completed = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "dialscore", *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    # Lines read "import time: <self us> | <cumulative us> | <indent><module>".
    modules = {
        line.rpartition("|")[2].strip().partition(".")[0]
        for line in completed.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }
    return modules, completed.stdout


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["admin", "--help"],
        ["admin", "set-password", "--help"],
        ["import", "--help"],
        ["serve", "--help"],
        ["admin", "create-client", "--no-such-option"],
    ],
)
def test_help_and_usage_errors_load_nothing_heavy(args: list[str], tmp_path: Path) -> None:
    modules, _ = imported_by(tmp_path, *args)
    # The report itself: the command ran and Python described its imports.
    assert {"dialscore", "typer"} <= modules, sorted(modules)
    assert not modules & HEAVY, sorted(modules & HEAVY)
    assert not (tmp_path / "var").exists()


def test_a_command_loads_what_it_runs_with(tmp_path: Path) -> None:
    # The counterpart: the same report names the heavy packages once a command does work, so
    # the test above would see them if the command modules imported them again.
    modules, output = imported_by(tmp_path, "admin", "failed-work")
    assert json.loads(output) == {"count": 0, "messages": []}
    assert {"sqlalchemy", "dialscore"} <= modules, sorted(modules)
