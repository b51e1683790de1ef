"""The engine's constants, replaced inside the bench's process only, to compare settings on
the worlds; the engine's files are never changed.

A constant is found by name in the scoring modules that exist (the engine, the line-state
model); the engine reads them when it scores, so a new value holds for the whole run.
Constants the modules derive at import time from others are not recomputed.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Sequence
from types import ModuleType

SCORING_MODULES = ("dialscore.scoring.engine", "dialscore.scoring.lines")
UNITS = frozenset({"DAY", "YEAR_DAYS"})  # not settings
# The flags of earlier versions of the bench, and the constants they set.
FLAGS = {
    "priors": "PRIORS",
    "screened_prior": "PRIORS.screened",
    "disconnected_prior": "PRIORS.disconnected once",
    "p1_floor": "P1_FLOOR",
    "p2_floor": "P2_FLOOR",
    "prior_connects": "PRIOR_CONNECTS",
    "half_life": "HALF_LIFE_DAYS",
}
Value = float | tuple[float, ...]


def modules() -> list[ModuleType]:
    found = []
    for name in SCORING_MODULES:
        try:
            found.append(importlib.import_module(name))
        except ModuleNotFoundError:
            continue
    return found


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _settable(value: object) -> bool:
    if _is_number(value):
        return True
    if isinstance(value, tuple):
        return bool(value) and all(_is_number(v) for v in value)
    if isinstance(value, dict):
        return bool(value) and all(_settable(v) and not isinstance(v, dict) for v in value.values())
    return False


def constants(module: ModuleType) -> dict[str, object]:
    return {
        name: value
        for name, value in vars(module).items()
        if name.isupper() and not name.startswith("_") and name not in UNITS and _settable(value)
    }


def _home(name: str) -> ModuleType:
    for module in modules():
        if name in constants(module):
            return module
    known = sorted({n for m in modules() for n in constants(m)})
    raise SystemExit(f"the engine has no constant {name}; it has {', '.join(known)}")


def _parse(text: str, current: object, target: str) -> Value:
    try:
        parts = tuple(float(p) for p in text.split("/"))
    except ValueError:
        raise SystemExit(f"{target}: {text!r} is not a number (or numbers joined by /)") from None
    if isinstance(current, tuple):
        if len(parts) != len(current):
            raise SystemExit(f"{target} holds {len(current)} numbers: a/b/c…")
        return parts
    if len(parts) != 1:
        raise SystemExit(f"{target} holds one number")
    return parts[0]


def assign(text: str) -> str:
    """``NAME=VALUE`` or ``NAME.key=VALUE``; VALUE a number, or numbers joined by ``/`` for
    a constant holding several. Returns what was set, for the report."""
    target, sep, value = text.partition("=")
    target = target.strip()
    if not sep or not target:
        raise SystemExit(f"--set: {text!r} is not NAME=VALUE or NAME.key=VALUE")
    name, dot, key = target.partition(".")
    module = _home(name)
    current = getattr(module, name)
    if dot:
        if not isinstance(current, dict):
            raise SystemExit(f"{name} is not a table; set it as {name}=VALUE")
        if key not in current:
            raise SystemExit(f"{name} has no {key!r}; it has {', '.join(map(str, current))}")
        current[key] = _parse(value, current[key], target)
    elif isinstance(current, dict):
        raise SystemExit(f"{name} is a table: set its entries, {name}.key=VALUE")
    else:
        setattr(module, name, _parse(value, current, target))
    return f"{target} = {value.strip()}"


def apply(args: argparse.Namespace) -> list[str]:
    """Applies the flags of earlier versions and every ``--set``; what was set."""
    done = []
    for flag, target in FLAGS.items():
        value = getattr(args, flag, None)
        if value is None:
            continue
        if flag == "priors":
            for part in str(value).split(","):
                key, _, number = part.partition("=")
                done.append(assign(f"{target}.{key.strip()}={number}"))
        else:
            done.append(assign(f"{target}={value}"))
    for group in args.set or ():
        for part in group.split(","):
            if part.strip():
                done.append(assign(part))
    return done


def _show(value: object) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} {_show(v)}" for k, v in value.items()) + "}"
    if isinstance(value, tuple):
        return "/".join(f"{v:g}" for v in value)
    assert isinstance(value, int | float)
    return f"{value:g}"


def describe(done: Sequence[str]) -> list[str]:
    lines = []
    for module in modules():
        shown = ", ".join(f"{k} {_show(v)}" for k, v in constants(module).items())
        lines.append(f"{module.__name__.rsplit('.', 1)[-1]}: {shown}")
    lines.extend(f"  set: {rule}" for rule in done)
    return lines


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "engine constants, replaced in this process only (the engine's files are not changed)"
    )
    group.add_argument(
        "--set",
        action="append",
        metavar="NAME=V[,NAME.key=V]",
        help="any constant the report's first lines show; V: a number, or a/b/c for several",
    )
    group.add_argument("--priors", help="PRIORS entries, e.g. mobile=0.3,unknown=0.1")
    group.add_argument("--p1-floor", type=float, help="P1_FLOOR")
    group.add_argument("--p2-floor", type=float, help="P2_FLOOR")
    group.add_argument("--prior-connects", type=float, help="PRIOR_CONNECTS")
    group.add_argument("--half-life", type=float, help="HALF_LIFE_DAYS")
    group.add_argument("--screened-prior", type=float, help="PRIORS['screened']")
    group.add_argument("--disconnected-prior", type=float, help="PRIORS['disconnected once']")
