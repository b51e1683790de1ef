"""The top of a py-spy profile in collapsed stacks (``py-spy record --format raw``): modules and
functions by their share of the samples, cumulative (on the stack) and own (at its top).

    python bench/profile_top.py PROFILE.txt [PROFILE.txt ...] [--top 15] [--by cumulative|own]

Modules are grouped: ``dialscore`` by module (``dialscore.webhooks.delivery``), SQLAlchemy by
its parts (``sqlalchemy.orm``, ``sqlalchemy.engine``, ``sqlalchemy.sql`` ...), everything else
by its top package (``psycopg``, ``httpx``, ``httpcore``, ``json``, ``hmac``, ``asyncio`` ...).
A stack counts once for a module or function however often it appears in it, and from its
first frame outside what starts the process's threads and loops (``runpy``, ``typer``,
``dialscore.cli``, ``threading``, ``asyncio``, ``uvicorn`` ...): below it they are on every stack.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

FRAME = re.compile(r"^(?P<function>\S*) \((?P<file>.*?)(?::\d+)?\)$")
# SQLAlchemy's generated decorators: "<sqlalchemy generated _go() wrapper for a.b.Class.f>"
GENERATED = re.compile(r"wrapper for (?P<path>[\w.]+)>$")
# Packages shown by their first two parts instead of their first.
BY_PART = {"sqlalchemy", "dramatiq", "starlette", "fastapi", "uvicorn", "redis"}
# What starts and runs a process's threads and event loop: a stack is counted from its first
# frame outside these (its top frame always counts), or they would be on nearly every stack.
BASE_PACKAGES = {"runpy", "typer", "click", "asyncio", "threading", "uvicorn", "concurrent"}
BASE_MODULES = {"dialscore.__main__", "dialscore.cli", "dialscore.cli.server"}


@dataclass(frozen=True)
class Frame:
    module: str
    function: str


def frame_of(text: str) -> Frame:
    match = FRAME.match(text)
    if match is None:
        return Frame("<other>", text)
    file = match["file"]
    if generated := GENERATED.search(file):
        parts = generated["path"].split(".")
        module = ".".join(p for p in parts if not p[:1].isupper() and p != parts[-1])
        return Frame(module, match["function"])
    if file.startswith("<sqlalchemy generated"):  # a mapped class's __init__
        return Frame("sqlalchemy.orm", match["function"])
    if file.startswith("<"):  # <frozen importlib._bootstrap>
        return Frame(file.strip("<>").removeprefix("frozen "), match["function"])
    module = file.removesuffix(".py").replace("/", ".").removesuffix(".__init__")
    return Frame(module, match["function"])


def group_of(module: str) -> str:
    parts = module.split(".")
    if parts[0] == "dialscore":
        return module
    if parts[0] in BY_PART and len(parts) > 1:
        return ".".join(parts[:2]).rstrip("_").replace("._", ".")
    return parts[0].lstrip("_") or module


def above_base(frames: list[Frame]) -> list[Frame]:
    """The frames from the first one that is not the process's machinery (at least the top)."""
    for index, frame in enumerate(frames):
        if frame.module not in BASE_MODULES and frame.module.split(".")[0] not in BASE_PACKAGES:
            return frames[index:]
    return frames[-1:]


@dataclass
class Shares:
    samples: int
    modules_cumulative: Counter[str]
    modules_own: Counter[str]
    functions_cumulative: Counter[str]
    functions_own: Counter[str]


def read(path: Path) -> Shares:
    shares = Shares(0, Counter(), Counter(), Counter(), Counter())
    for line in path.read_text(errors="replace").splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not count_text.isdigit():
            continue
        count = int(count_text)
        # A sample of a thread holding the GIL without a Python frame has an empty stack.
        if stack:
            frames = above_base([frame_of(text) for text in stack.split(";")])
        else:
            frames = [Frame("(no Python frame)", "-")]
        functions = [f"{group_of(f.module)}:{f.function}" for f in frames]
        shares.samples += count
        for module in {group_of(f.module) for f in frames}:
            shares.modules_cumulative[module] += count
        for function in set(functions):
            shares.functions_cumulative[function] += count
        shares.modules_own[group_of(frames[-1].module)] += count
        shares.functions_own[functions[-1]] += count
    return shares


def top(
    title: str, cumulative: Counter[str], own: Counter[str], total: int, n: int, by: str
) -> str:
    ranked = (cumulative if by == "cumulative" else own).most_common(n)
    width = max((len(name) for name, _ in ranked), default=10)
    lines = [f"{title:<{width}}  cumulative    own"]
    for name, _ in ranked:
        lines.append(
            f"{name:<{width}}  {cumulative[name] / total:>9.1%}  {own[name] / total:>6.1%}"
        )
    return "\n".join(lines)


def summary(path: Path, n: int, by: str) -> str:
    shares = read(path)
    if shares.samples == 0:
        return f"{path}: no samples"
    total = shares.samples
    return "\n\n".join(
        [
            f"{path.name}: {total} samples, by {by} share",
            top("module", shares.modules_cumulative, shares.modules_own, total, n, by),
            top("function", shares.functions_cumulative, shares.functions_own, total, n, by),
        ]
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("profiles", type=Path, nargs="+", help="collapsed-stack files")
    parser.add_argument("--top", type=int, default=15, help="rows of each table (15)")
    parser.add_argument(
        "--by", choices=("cumulative", "own"), default="cumulative", help="the order of the rows"
    )
    args = parser.parse_args()
    for number, path in enumerate(args.profiles):
        if number:
            print()
        print(summary(path, args.top, args.by))
    return 0


if __name__ == "__main__":
    sys.exit(main())
