"""How well the scoring engine's tiers predict connects, on seeded simulated worlds built on
different assumptions, so that no constant can be tuned to one world unseen.

For each world of ``--worlds`` and each seed of ``--seeds``, builds ``--contacts`` contacts
whose numbers have hidden true states (``scoring_worlds.py``: world A;
``scoring_lifecycle.py``: worlds B and C), scores them with the pure engine at "now" from the
evidence a client would have, then draws ``--later`` later calls per number a contact carries
from the hidden truth, and prints, for all numbers and for numbers with at least 3 past calls:

- per tier (p1, p2, p3, na): the observed connect rate of the later calls, with counts and the
  tier's share of the numbers, against the targets p1 >= 20 %, p2 4-20 %, p3 < 4 %, na < 0.5 %;
- the AUC of the engine's ordering (tier, then probability; na lowest) against the later
  connects, next to the AUC of the true probabilities (the ceiling); target >= 0.75;
- Brier skill as a share of the attainable: (base rate - engine) / (base rate - truth);
- bestPhone's lift over ``phone`` as a share of an oracle's, in expected connects per contact
  of one dial (true probabilities); target >= 0.8.

Then a reliability table per world (all seeds pooled), with ``--plots DIR`` its diagram as
``DIR/scoring-reliability-<world>.png`` (needs matplotlib: ``pip install -e '.[bench]'``), and
a summary table of every world and seed.

``--priors``, ``--screened-prior``, ``--disconnected-prior``, ``--p1-floor``, ``--p2-floor``,
``--prior-connects`` and ``--half-life`` replace the engine's constants inside this process
only; ``--fit-on`` names the worlds the constants were chosen on (the committed ones on A),
and the report calls the others held-out.

    python bench/scoring_eval.py [--worlds A,B,C] [--seeds 1,2,3] [--contacts 3000]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import scoring_constants
from dialscore.scoring import engine
from scoring_lifecycle import WORLD_B, WORLD_C
from scoring_lifecycle_build import life_world
from scoring_metrics import (
    AUC_TARGET,
    LIFT_TARGET,
    TARGETS,
    TIERS,
    Figures,
    figures,
    mark,
    pct,
    reliability,
    reliability_lines,
    save_reliability,
)
from scoring_worlds import (
    DAY,
    FIRST_SLOT_MIX,
    NOW,
    STATES,
    US_AREA_CODES,
    WORLD_A,
    SimContact,
    SimNumber,
    World,
    WorldSettings,
    build_world,
    client_rate_scale,
    draw_later,
    score_world,
    world_a,
)

# scoring_speed.py builds its contacts with world A through this module.
__all__ = [
    "DAY",
    "FIRST_SLOT_MIX",
    "NOW",
    "US_AREA_CODES",
    "SimContact",
    "WorldSettings",
    "build_world",
    "main",
]

WORLD_NAMES = ("A", "B", "C")
KNOWN = 3  # past calls for a number to count as known


# -- world A's settings -------------------------------------------------------------------------


def _pairs(text: str, known: Iterable[str], flag: str) -> dict[str, float]:
    """``name=value,...`` with names from ``known``."""
    names = list(known)
    values = {}
    for part in text.split(","):
        name, _, value = part.partition("=")
        name = name.strip()
        if name not in names:
            raise SystemExit(f"{flag}: unknown name {name!r}; one of {', '.join(names)}")
        try:
            values[name] = float(value)
        except ValueError:
            raise SystemExit(f"{flag}: {part!r} is not name=number") from None
    return values


# -- one world, one seed -------------------------------------------------------------------------


@dataclass(frozen=True)
class Run:
    world: str
    role: str  # fit | held-out | "" (no world named)
    seed: int
    everything: Figures
    known: Figures


def _tier_lines(f: Figures) -> list[str]:
    lines = ["  tier  numbers  share  later calls  connects  connect rate  mean p   target"]
    for row in f.rows:
        if not row.numbers:
            lines.append(f"  {row.tier:<4}  {0:>7}      -")
            continue
        lines.append(
            f"  {row.tier:<4}  {row.numbers:>7}  {pct(row.share)}  {row.calls:>11}  "
            f"{row.connects:>8}  {pct(row.rate):>12}  {pct(row.mean_p)}  "
            f"{TARGETS[row.tier][0]:<8} {mark(row.met)}"
        )
    return lines


def print_figures(title: str, f: Figures) -> None:
    print(f"{title}: {f.numbers} numbers, {f.calls} later calls, base rate {pct(f.base_rate)}")
    if not f.numbers:
        return
    print(*_tier_lines(f), sep="\n")
    auc = "-" if f.auc is None else f"{f.auc:.3f}"
    ceiling = "-" if f.ceiling is None else f"{f.ceiling:.3f}"
    print(f"  ranking: AUC {auc} (true p {ceiling}; target >= {AUC_TARGET}) {mark(f.auc_met)}")
    b = f.brier
    print(
        f"  Brier {b.engine:.4f} (base rate {b.base:.4f}, true p {b.truth:.4f}): "
        f"skill {pct(b.skill_share).strip()} of the attainable"
    )
    lift = f.lift
    print(
        f"  bestPhone, {lift.contacts} contacts ({lift.without_best} without one, not dialled), "
        f"expected connects of one dial per contact (true p): {pct(lift.best).strip()}, "
        f"phone {pct(lift.phone).strip()}, oracle {pct(lift.oracle).strip()}: "
        f"{pct(lift.share).strip()} of the oracle's lift (target >= {LIFT_TARGET * 100:.0f} %) "
        f"{mark(f.lift_met)}"
    )


def state_matrix(numbers: Sequence[SimNumber]) -> None:
    counts = Counter((n.state, n.tier) for n in numbers)
    states = sorted({n.state for n in numbers}, key=lambda s: (s not in STATES, s))
    print("  hidden state now x assigned tier (numbers; mean true p)")
    print(f"    {'state':<13}" + "".join(f"{t:>7}" for t in TIERS) + "   mean p")
    for state in states:
        group = [n for n in numbers if n.state == state]
        row = "".join(f"{counts[(state, t)]:>7}" for t in TIERS)
        print(f"    {state:<13}{row}   {pct(sum(n.p for n in group) / len(group))}")


def prior_table(numbers: Sequence[SimNumber]) -> None:
    """What the engine expects of numbers without history, by the line type it saw, against
    their true probabilities: its priors, checked."""
    fresh = [n for n in numbers if not n.past_calls and n.tier != "na"]
    print("  no history, by the engine's line type: numbers, mean estimate, mean true p")
    for kind in sorted({n.kind for n in fresh}):
        group = [n for n in fresh if n.kind == kind]
        estimate = sum(n.probability for n in group) / len(group)
        truth = sum(n.p for n in group) / len(group)
        print(f"    {kind:<18} {len(group):>6}  estimate {pct(estimate)}  true {pct(truth)}")


def run_one(
    world: World, seed: int, args: argparse.Namespace, role: str
) -> tuple[Run, list[SimNumber]]:
    contacts = played(world, seed, args.contacts, args.later)
    numbers = [n for c in contacts for n in c.numbers]
    countries = Counter(n.country for n in numbers)
    mix = ", ".join(f"{k} {v * 100 / len(numbers):.0f} %" for k, v in sorted(countries.items()))
    called = sum(1 for n in numbers if n.past_calls) / len(numbers)
    known_numbers = [n for n in numbers if n.past_calls >= KNOWN]
    known_contacts = [c for c in contacts if all(n.past_calls >= KNOWN for n in c.numbers)]
    print(
        f"\n== world {world.name}, seed {seed}{f' ({role})' if role else ''}: "
        f"{len(contacts)} contacts, {len(numbers)} numbers ({mix}); {called * 100:.0f} % with past "
        f"calls, {len(known_numbers) / len(numbers) * 100:.0f} % with >= {KNOWN}; rate "
        f"scale from its calls {client_rate_scale(contacts):.2f}"
    )
    everything = figures(contacts, numbers)
    known = figures(known_contacts, known_numbers)
    print_figures("all numbers", everything)
    print_figures(
        f">= {KNOWN} past calls (bestPhone: contacts whose numbers all have >= {KNOWN})", known
    )
    if args.detail:
        state_matrix(numbers)
        prior_table(numbers)
    return Run(world.name, role, seed, everything, known), numbers


def played(world: World, seed: int, contacts: int, later: int) -> list[SimContact]:
    """One world's contacts for one seed, scored by the engine, with their later calls."""
    built = world.build(seed, contacts)
    score_world(built)
    draw_later(_later_rng(world.name, seed), built, later)
    return built


def _later_rng(world: str, seed: int) -> random.Random:
    # world A keeps the stream it always had, so its figures stay comparable with old runs
    return random.Random(seed + 1_000_003 if world == "A" else f"{world}/later/{seed}")


# -- the summary ---------------------------------------------------------------------------------


def _rate_cell(f: Figures, tier: str) -> str:
    row = next(r for r in f.rows if r.tier == tier)
    return f"{pct(row.rate)} {mark(row.met)}"


def summary_lines(runs: Sequence[Run]) -> list[str]:
    head = (
        f"{'world':<12} {'seed':>4}  {'numbers':<9}  {'p1 >=20 %':>10}  {'p2 4-20 %':>10}  "
        f"{'p3 <4 %':>10}  {'na <0.5 %':>10}  {'p2 share':>8}  {'AUC/ceiling':>13}  "
        f"{'Brier skill':>11}  {'lift share':>11}"
    )
    lines = [head, "-" * len(head)]
    for run in runs:
        label = f"{run.world} {run.role}".strip()
        for group, f in (("all", run.everything), (f">={KNOWN} calls", run.known)):
            p2 = next(r for r in f.rows if r.tier == "p2")
            auc = "-" if f.auc is None or f.ceiling is None else f"{f.auc:.2f}/{f.ceiling:.2f}"
            lines.append(
                f"{label:<12} {run.seed:>4}  {group:<9}  "
                + "  ".join(f"{_rate_cell(f, t):>10}" for t in TIERS)
                + f"  {pct(p2.share, 3):>8}  {auc:>11} {mark(f.auc_met)}  "
                f"{pct(f.brier.skill_share, 4):>11}  {pct(f.lift.share, 4):>9} {mark(f.lift_met)}"
            )
    return lines


# -- the run -------------------------------------------------------------------------------------


def _floors() -> list[float]:
    """The engine's tier floors, where it still has them (for the diagrams' guides)."""
    return [v for v in (getattr(engine, n, None) for n in ("P2_FLOOR", "P1_FLOOR")) if v]


def _worlds(args: argparse.Namespace) -> dict[str, World]:
    first_mix = dict(FIRST_SLOT_MIX)
    if args.first_mix:
        first_mix = {state: 0.0 for state in STATES}
        first_mix.update(_pairs(args.first_mix, STATES, "--first-mix"))
    settings = WorldSettings(
        block_share=args.block_share,
        voip_share=args.voip_share,
        hint_share=args.hint_share,
        hint_noise=args.hint_noise,
        noise=args.noise,
        directory_share=WORLD_A.directory_share,
        shared_share=WORLD_A.shared_share,
        first_mix=first_mix,
    )
    return worlds(settings)


def worlds(settings: WorldSettings = WORLD_A) -> dict[str, World]:
    """The worlds by name, world A with ``settings`` (by default as the flags leave it)."""
    return {"A": world_a(settings), "B": life_world(WORLD_B), "C": life_world(WORLD_C)}


def run(args: argparse.Namespace) -> None:
    started = time.perf_counter()
    done = scoring_constants.apply(args)
    worlds = _worlds(args)
    fit_on = set(args.fit_on)
    print(*scoring_constants.describe(done), sep="\n")
    if fit_on:
        held = [w for w in args.worlds if w not in fit_on]
        print(
            f"constants chosen on world {', '.join(sorted(fit_on))}; "
            f"held-out: {', '.join(held) or 'none of those run'}"
        )
    for name in args.worlds:
        print(f"world {name}: {worlds[name].assumes}")
    print(
        f"seeds {', '.join(map(str, args.seeds))}; {args.contacts} contacts per world and "
        f"seed; {args.later} later calls per number a contact carries"
    )
    runs = []
    for name in args.worlds:
        world = worlds[name]
        role = "" if not fit_on else "fit" if name in fit_on else "held-out"
        pooled: list[SimNumber] = []
        for seed in args.seeds:
            result, numbers = run_one(world, seed, args, role)
            runs.append(result)
            pooled.extend(numbers)
        bins = reliability(pooled)
        print(f"\nreliability, world {name}, seeds {', '.join(map(str, args.seeds))} pooled:")
        print(*reliability_lines(bins), sep="\n")
        if args.plots is not None:
            path = args.plots / f"scoring-reliability-{name}.png"
            note = f"seeds {', '.join(map(str, args.seeds))}, {len(pooled)} numbers"
            save_reliability(path, name, note + (f" ({role})" if role else ""), bins, _floors())
            print(f"  diagram: {path}")
    print("\nsummary (✓/✗ against the targets; AUC/ceiling: the engine's and the true p's)")
    print(*summary_lines(runs), sep="\n")
    print(f"\n{time.perf_counter() - started:.1f} s")


def _fraction(text: str) -> float:
    value = float(text)
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError("must be between 0 and 1")
    return value


def _names(text: str) -> list[str]:
    if text.strip().lower() == "none":
        return []
    names = [n.strip().upper() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in WORLD_NAMES]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"worlds are {', '.join(WORLD_NAMES)}")
    return list(dict.fromkeys(names))


def _seeds(text: str) -> list[int]:
    try:
        seeds = [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError("seeds are integers, e.g. 1,2,3") from None
    if not 1 <= len(seeds) <= 20:
        raise argparse.ArgumentTypeError("1 to 20 seeds")
    return list(dict.fromkeys(seeds))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--worlds", type=_names, default=list(WORLD_NAMES), help="(A,B,C)")
    parser.add_argument("--seeds", type=_seeds, default=[1, 2, 3], help="(1,2,3)")
    parser.add_argument("--contacts", type=int, default=3000, help="per world and seed (3000)")
    parser.add_argument("--later", type=int, default=5, help="later calls per number (5)")
    parser.add_argument(
        "--fit-on",
        type=_names,
        default=["A"],
        help="worlds the engine's constants were chosen on, or none (A: the committed ones)",
    )
    parser.add_argument("--plots", type=Path, help="write reliability diagrams (PNG) here")
    parser.add_argument(
        "--detail", action="store_true", help="hidden state x tier, priors against the truth"
    )
    world = parser.add_argument_group("world A")
    world.add_argument("--block-share", type=_fraction, default=WORLD_A.block_share)
    world.add_argument("--voip-share", type=_fraction, default=WORLD_A.voip_share)
    world.add_argument("--hint-share", type=_fraction, default=WORLD_A.hint_share)
    world.add_argument("--hint-noise", type=_fraction, default=WORLD_A.hint_noise)
    world.add_argument("--noise", type=_fraction, default=WORLD_A.noise)
    world.add_argument("--first-mix", help="states of first numbers, e.g. switchboard=0.6,...")
    scoring_constants.add_arguments(parser)
    args: Any = parser.parse_args(argv)
    if not (1 <= args.contacts <= 200_000) or not (1 <= args.later <= 100):
        parser.error("--contacts must be 1..200000 and --later 1..100")
    if not args.worlds:
        parser.error("--worlds: name at least one world")
    run(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
