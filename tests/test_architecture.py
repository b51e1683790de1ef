"""The package map of docs/architecture.md holds: no package imports one above it or a
sibling of its layer, and no package has an import cycle between its modules."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_packages_keep_to_their_layers_and_have_no_cycles() -> None:
    linter = Path(sys.executable).with_name("lint-imports")
    result = subprocess.run(
        [str(linter), "pyproject.toml", "--no-cache", "--no-logo"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 kept, 0 broken" in result.stdout
