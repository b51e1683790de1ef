"""Writes the glossary of docs/dashboard.md from the words the web app shows
(src/dialscore/dashboard/data/words.toml), between its two marker lines.

    .venv/bin/python scripts/glossary.py [--check]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from dialscore.dashboard.words import glossary, words

DOC = Path(__file__).resolve().parent.parent / "docs" / "dashboard.md"
START = "<!-- glossary: written by scripts/glossary.py from dashboard/data/words.toml -->"
END = "<!-- end of glossary -->"


def with_glossary(text: str) -> str:
    """The document with its glossary section made anew."""
    before, _, rest = text.partition(START + "\n")
    _, found, after = rest.partition(END)
    if not found:
        raise SystemExit(f"{DOC}: the markers {START!r} and {END!r} are missing")
    return f"{before}{START}\n{glossary(words())}{END}{after}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the file is not current")
    args = parser.parse_args()
    text = DOC.read_text(encoding="utf-8")
    made = with_glossary(text)
    if args.check:
        return 0 if made == text else 1
    DOC.write_text(made, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
