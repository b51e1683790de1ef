"""What the evidence allows: how well a model fitted to the hidden truth ranks numbers and
picks ``bestPhone`` when it sees only what the scoring engine sees.

For each world and seed, builds and scores the contacts as ``scoring_eval.py`` does (same
worlds, same later calls) and describes each number a contact carries by observable evidence
only, never its hidden state or true probability: the engine's line type, status and
estimate, slot, the contact's count of numbers, type hint, block, country, shared and
company-line flags, and its past calls (counts by outcome and by whom they were about, in the
last 30, 90, 365 days and ever; days since the first and the last; the last outcome). A
``HistGradientBoostingRegressor`` (fixed ``random_state``) fitted to the true probabilities of
the other seeds of the same world predicts the seed's numbers. Printed for the engine and the
model: the AUC against the later connects (all numbers; >= 3 past calls) beside the ceiling,
and the lift share of ``bestPhone`` or of the model's pick (its best predicted number that
the engine does not make ``na`` nor ``dnc``, as ``bestPhone`` excludes those).

    python bench/scoring_bound.py [--worlds A,B,C,D] [--seeds 1,2,3] [--contacts 3000] [--later 5]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace

from dialscore.scoring import engine
from dialscore.scoring.evidence import OUTCOMES
from scoring_eval import KNOWN, WORLD_NAMES, _names, _seeds, played, worlds
from scoring_metrics import (
    AUC_MARGIN,
    LIFT_MARGIN,
    TIER_RANK,
    auc,
    lift,
    mark,
    near,
    pct,
    ranking,
)
from scoring_worlds import DAY, NOW, SLOTS, SimContact, SimNumber, World

# One thread unless told otherwise: on a busy machine the model's OpenMP threads wait on each
# other for most of the run (same figures, a fraction of the time).
os.environ.setdefault("OMP_NUM_THREADS", "1")
try:
    import numpy as np
    from sklearn.ensemble import HistGradientBoostingRegressor
except ImportError:  # scoring_eval.py --no-bound runs without them
    np = None  # type: ignore[assignment]
NEEDS = "the bound needs scikit-learn and numpy: .venv/bin/pip install -e '.[bench]'"


def available() -> bool:
    """Whether the model can be fitted here (scikit-learn and numpy installed)."""
    return np is not None


KINDS = (
    "mobile",
    "mobile (hint)",
    "unknown",
    "unknown, later",
    "landline",
    "voip",
    "switchboard",
    "special",
)
MODIFIERS = (None, "h", "ivr", "sf", "dnc", "auth")
HINTS = (None, "mobile", "direct", "hq")
BLOCKS = (None, "wireless", "landline", "voip")
COUNTRIES = ("US", "GB", "DE")
PERSONS = (None, "same", "other")
WINDOWS = (30.0, 90.0, 365.0, float("inf"))  # days back from now


def _code(value: str | None, options: Sequence[str | None]) -> int:
    """The option's index; one past the last for anything else."""
    return options.index(value) if value in options else len(options)


def features(
    contact: SimContact, position: int, number: SimNumber
) -> tuple[list[int], list[float]]:
    """What the engine can see of one number of one contact: codes (categories) and values."""
    evidence, calls = number.evidence, number.evidence.calls
    tier, modifier = engine.split_status(number.status)
    last = calls[-1] if calls else None
    codes = [
        _code(number.kind, KINDS),
        _code(modifier, MODIFIERS),
        _code(contact.fields.get(f"{SLOTS[position]}Type"), HINTS),
        _code(evidence.block, BLOCKS),
        _code(number.country, COUNTRIES),
        _code(last.outcome, OUTCOMES) if last else len(OUTCOMES),  # no call: a code of its own
        _code(last.person, PERSONS) if last else len(PERSONS),
    ]
    values: list[float] = [
        position,
        len(contact.numbers),
        number.probability,
        TIER_RANK[tier],
        evidence.shared_with,
        evidence.company_line,
        evidence.directory_ivr_path is not None,
        len(evidence.dnc_lists),
        (NOW - calls[0].at) / DAY if calls else -1.0,
        (NOW - last.at) / DAY if last else -1.0,
    ]
    for window in WINDOWS:
        recent = [c for c in calls if NOW - c.at <= window * DAY]
        outcomes = Counter(c.outcome for c in recent)
        values += [outcomes[o] for o in OUTCOMES]
        values += [sum(1 for c in recent if c.person == who) for who in ("same", "other")]
    return codes, values


@dataclass
class Seed:
    """One world's contacts for one seed and its numbers' features (first ``codes``: categories)."""

    seed: int
    contacts: list[SimContact]
    numbers: list[SimNumber]
    rows: list[list[float]]
    codes: int


def describe(seed: int, built: list[SimContact]) -> Seed:
    """The features of one seed's contacts, played and scored (``scoring_eval.played``)."""
    numbers = [(c, i, n) for c in built for i, n in enumerate(c.numbers)]
    described = [features(c, i, n) for c, i, n in numbers]
    rows = [[*codes, *values] for codes, values in described]
    return Seed(seed, built, [n for _, _, n in numbers], rows, len(described[0][0]))


def load(world: World, seed: int, contacts: int, later: int) -> Seed:
    return describe(seed, played(world, seed, contacts, later))


def predict(train: Sequence[Seed], test: Seed) -> dict[int, float]:
    """The model fitted to the true p of ``train``: its predictions for ``test``, by ``id``."""
    x = np.array([row for s in train for row in s.rows], dtype=float)
    y = np.array([n.p for s in train for n in s.numbers])
    codes = list(range(test.codes))
    model = HistGradientBoostingRegressor(
        max_iter=300, learning_rate=0.05, categorical_features=codes, random_state=0
    )
    predicted = model.fit(x, y).predict(np.array(test.rows, dtype=float))
    return {id(n): float(p) for n, p in zip(test.numbers, predicted, strict=True)}


@dataclass(frozen=True)
class Group:
    """The engine's and the model's figures on one group of numbers of one seed."""

    auc_engine: float | None
    auc_model: float | None
    ceiling: float | None
    lift_engine: float | None
    lift_model: float | None


def dialable(number: SimNumber) -> bool:
    tier, modifier = engine.split_status(number.status)
    return tier != "na" and modifier != "dnc"


def judge(test: Seed, model: dict[int, float], least: int) -> Group:
    """The figures of the numbers of ``test`` with at least ``least`` past calls (bestPhone:
    of the contacts whose numbers all have); ``model``: the predictions by number ``id``."""
    numbers = [n for n in test.numbers if n.past_calls >= least]
    contacts = [c for c in test.contacts if all(n.past_calls >= least for n in c.numbers)]
    engine_auc, ceiling = ranking(numbers)
    model_auc = auc(((model[id(n)],), sum(n.later), len(n.later) - sum(n.later)) for n in numbers)
    picks = [
        max((n for n in c.numbers if dialable(n)), key=lambda n: model[id(n)], default=None)
        for c in contacts
    ]
    ours = theirs = lift(contacts)
    if contacts:  # the model's pick in place of bestPhone; a contact without one counts 0
        best = sum(n.p for n in picks if n is not None) / len(contacts)
        ours = replace(theirs, best=best, without_best=picks.count(None))
    return Group(engine_auc, model_auc, ceiling, theirs.share, ours.share)


# -- the run -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Result:
    world: str
    seed: int
    everything: Group
    known: Group
    trained_on: tuple[int, ...]  # the seeds the model was fitted on
    fitted_numbers: int


def bounds(world: str, seeds: Sequence[Seed]) -> list[Result]:
    """Each seed of one world judged by the model fitted on the world's other seeds."""
    results = []
    for test in seeds:
        train = [s for s in seeds if s is not test]
        model = predict(train, test)
        results.append(
            Result(
                world,
                test.seed,
                judge(test, model, 0),
                judge(test, model, KNOWN),
                tuple(s.seed for s in train),
                sum(len(s.rows) for s in train),
            )
        )
    return results


def _auc(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def group_line(label: str, g: Group) -> str:
    return (
        f"  {label:<16} AUC engine {_auc(g.auc_engine)}, model {_auc(g.auc_model)}, ceiling "
        f"{_auc(g.ceiling)}; lift share engine {pct(g.lift_engine).strip()}, model "
        f"{pct(g.lift_model).strip()}"
    )


def summary_lines(results: Sequence[Result]) -> list[str]:
    head = (
        f"{'world':<5} {'seed':>4}  {'numbers':<9}  {'AUC engine':>10}  {'AUC model':>10}  "
        f"{'ceiling':>7}  {'lift engine':>11}  {'lift model':>11}"
    )
    lines = [head, "-" * len(head)]
    for r in results:
        for group, g in (("all", r.everything), (f">={KNOWN} calls", r.known)):
            lines.append(
                f"{r.world:<5} {r.seed:>4}  {group:<9}  "
                f"{_auc(g.auc_engine):>8} {mark(near(g.auc_engine, g.auc_model, AUC_MARGIN))}  "
                f"{_auc(g.auc_model):>10}  "
                f"{_auc(g.ceiling):>7}  "
                f"{pct(g.lift_engine):>9} "
                f"{mark(near(g.lift_engine, g.lift_model, LIFT_MARGIN))}  "
                f"{pct(g.lift_model):>11}"
            )
    return lines


def run(args: argparse.Namespace) -> None:
    started = time.perf_counter()
    print(
        f"seeds {', '.join(map(str, args.seeds))}; {args.contacts} contacts per world and seed; "
        f"{args.later} later calls per number a contact carries; each seed judged by a model "
        f"fitted on the other seeds of its world"
    )
    results = []
    for name in args.worlds:
        world = worlds()[name]
        seeds = [load(world, seed, args.contacts, args.later) for seed in args.seeds]
        for test, result in zip(seeds, bounds(name, seeds), strict=True):
            results.append(result)
            known = sum(1 for n in test.numbers if n.past_calls >= KNOWN)
            print(
                f"\n== world {name}, seed {test.seed}: {len(test.numbers)} numbers, {known} with "
                f">= {KNOWN} past calls; model fitted on seeds "
                f"{', '.join(map(str, result.trained_on))} ({result.fitted_numbers} numbers)"
            )
            print(group_line("all numbers", result.everything))
            print(group_line(f">= {KNOWN} past calls", result.known))
    print(
        f"\nsummary (✓/✗: the engine's figure within D29's margin of the model's, AUC "
        f"{AUC_MARGIN}, lift share {LIFT_MARGIN * 100:.0f} points; ceiling: the AUC of the true "
        f"p; lift >={KNOWN} calls: the "
        f"contacts whose numbers all have >= {KNOWN})"
    )
    print(*summary_lines(results), sep="\n")
    print(f"\n{time.perf_counter() - started:.1f} s")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--worlds", type=_names, default=list(WORLD_NAMES), help=f"({','.join(WORLD_NAMES)})"
    )
    parser.add_argument("--seeds", type=_seeds, default=[1, 2, 3], help="(1,2,3), at least 2")
    parser.add_argument("--contacts", type=int, default=3000, help="per world and seed (3000)")
    parser.add_argument("--later", type=int, default=5, help="later calls per number (5)")
    args = parser.parse_args(argv)
    if not available():
        sys.exit(f"scoring_bound.py: {NEEDS}")
    if not (1 <= args.contacts <= 200_000) or not (1 <= args.later <= 100):
        parser.error("--contacts must be 1..200000 and --later 1..100")
    if not args.worlds or len(args.seeds) < 2:
        parser.error("name at least one world and two seeds (a seed is judged by the others)")
    run(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
