"""How well the scoring engine's tiers predict connects, on seeded simulated worlds built on
different assumptions, so that no constant can be tuned to one world unseen; and whether it
meets ruling D29 on each of them.

For each world of ``--worlds`` and each seed of ``--seeds``, builds ``--contacts`` contacts
whose numbers have hidden true states (``scoring_worlds.py``: world A;
``scoring_lifecycle.py``: worlds B and C; ``scoring_turnover.py``: world D), scores them with
the pure engine at "now" from the evidence a client would have, then draws ``--later`` later
calls per number a contact carries from the hidden truth, and prints, for all numbers and for
numbers with at least 3 past calls:

- per tier (p1, p2, p3, na): the observed connect rate of the later calls, with counts and the
  tier's share of the numbers, against the bands p1 >= 20 %, p2 4-20 %, p3 < 4 %, na < 0.5 %;
- the AUC of the engine's ordering (tier, then probability; na lowest) against the later
  connects, next to the AUC of the true probabilities (the ceiling);
- Brier skill as a share of the attainable: (base rate - engine) / (base rate - truth);
- bestPhone's lift over ``phone`` as a share of an oracle's, in expected connects per contact
  of one dial (true probabilities).

Then a reliability table per world (all seeds pooled), with ``--plots DIR`` its diagram as
``DIR/scoring-reliability-<world>.png`` (needs matplotlib: ``pip install -e '.[bench]'``), a
summary table of every world and seed, and the D29 table: per world and seed, on all numbers,
the engine's AUC and bestPhone lift share beside the bound's (``scoring_bound.py``'s model,
fitted on the world's other seeds, on the same contacts and later calls), the tiers' observed
rates, and a verdict per condition. The exit status is 0 when every condition holds, 1 when
one fails, 3 when none fails but the AUC and the lift were not judged: ``--no-bound`` skips
the model (no scikit-learn needed), and one seed leaves no other seed to fit it on.

``--priors``, ``--screened-prior``, ``--disconnected-prior``, ``--p1-floor``, ``--p2-floor``,
``--prior-connects`` and ``--half-life`` replace the engine's constants inside this process
only; ``--fit-on`` names the worlds the constants were chosen on (the committed ones on A),
and the report calls the others held-out.

    python bench/scoring_eval.py [--worlds A,B,C,D] [--seeds 1,2,3] [--contacts 3000] [--no-bound]
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
    AUC_MARGIN,
    LIFT_MARGIN,
    TARGETS,
    TIERS,
    Figures,
    figures,
    mark,
    near,
    pct,
    reliability,
    reliability_lines,
    save_reliability,
)
from scoring_turnover import WORLD_D, turnover_world
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

WORLD_NAMES = ("A", "B", "C", "D")
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
    print(f"  ranking: AUC {auc} (true p {ceiling})")
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
        f"{pct(lift.share).strip()} of the oracle's lift"
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
) -> tuple[Run, list[SimContact]]:
    contacts = played(world, seed, args.contacts, args.later)
    numbers = [n for c in contacts for n in c.numbers]
    countries = Counter(n.country for n in numbers)
    mix = ", ".join(f"{k} {v * 100 / len(numbers):.0f} %" for k, v in sorted(countries.items()))
    called = sum(1 for n in numbers if n.past_calls) / len(numbers)
    known_numbers = [n for n in numbers if n.past_calls >= KNOWN]
    known_contacts = [c for c in contacts if all(n.past_calls >= KNOWN for n in c.numbers)]
    scale = client_rate_scale(contacts)
    print(
        f"\n== world {world.name}, seed {seed}{f' ({role})' if role else ''}: "
        f"{len(contacts)} contacts, {len(numbers)} numbers ({mix}); {called * 100:.0f} % with past "
        f"calls, {len(known_numbers) / len(numbers) * 100:.0f} % with >= {KNOWN}; rate "
        f"scales from its calls: mobiles {scale.mobile:.2f}, other lines {scale.other:.2f}"
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
    return Run(world.name, role, seed, everything, known), contacts


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
        f"{'p3 <4 %':>10}  {'na <0.5 %':>10}  {'p2 share':>8}  {'AUC/ceiling':>11}  "
        f"{'Brier skill':>11}  {'lift share':>10}"
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
                + f"  {pct(p2.share, 3):>8}  {auc:>11}  "
                f"{pct(f.brier.skill_share, 4):>11}  {pct(f.lift.share, 4):>10}"
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
    return {
        "A": world_a(settings),
        "B": life_world(WORLD_B),
        "C": life_world(WORLD_C),
        "D": turnover_world(WORLD_D),
    }


# -- D29 -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Bound:
    """The bound's figures on all numbers of one world and seed (``scoring_bound.py``)."""

    auc: float | None
    lift: float | None


@dataclass(frozen=True)
class Verdict:
    """D29 on one world and seed, all numbers: None where a condition cannot be judged."""

    run: Run
    bound: Bound | None

    @property
    def auc(self) -> bool | None:
        bound = None if self.bound is None else self.bound.auc
        return near(self.run.everything.auc, bound, AUC_MARGIN)

    @property
    def lift(self) -> bool | None:
        bound = None if self.bound is None else self.bound.lift
        return near(self.run.everything.lift.share, bound, LIFT_MARGIN)

    @property
    def tiers(self) -> bool:
        return self.run.everything.tiers_met

    @property
    def holds(self) -> bool:
        return self.tiers and self.auc is not False and self.lift is not False

    def failures(self) -> list[str]:
        f, b = self.run.everything, self.bound
        out = [
            f"{row.tier} {pct(row.rate).strip()} (band {TARGETS[row.tier][0]})"
            + (_d28_note(f.na_floor) if row.tier == "na" else "")
            for row in f.rows
            if row.met is False
        ]
        if self.auc is False and b is not None:
            out.append(f"AUC {_gap(f.auc, b.auc, 1, 4)} from the bound's")
        if self.lift is False and b is not None:
            out.append(f"lift share {_gap(f.lift.share, b.lift, 100, 2)} points from the bound's")
        return out


def _d28_note(floor: float | None) -> str:
    """What D28 alone leaves of na's band, said when na misses it."""
    if floor is None:
        return ""
    beyond = "" if TARGETS["na"][1](floor) else ", so no engine meets the band"
    return f"; D28 alone keeps it at {pct(floor).strip()} or more{beyond}"


def _gap(engine: float | None, bound: float | None, scale: float, digits: int) -> str:
    if engine is None or bound is None:
        return "-"
    return f"{(engine - bound) * scale:+.{digits}f}"


def _auc3(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def d29_lines(verdicts: Sequence[Verdict]) -> list[str]:
    """The D29 table; the gaps unrounded enough to show which side of the margin they fall."""
    head = (
        f"{'world':<12} {'seed':>4}  {'p1 >=20 %':>9}  {'p2 4-20 %':>9}  {'p3 <4 %':>9}  "
        f"{'na <0.5 %':>9}  tiers  {'AUC':>5}  {'bound':>5}  {'gap':>7}    {'lift':>6}  "
        f"{'bound':>6}  {'gap':>6}    D29"
    )
    lines = [head, "-" * len(head)]
    for v in verdicts:
        f, b = v.run.everything, v.bound
        bound_auc = None if b is None else b.auc
        bound_lift = None if b is None else b.lift
        cells = "  ".join(f"{_rate_cell(f, t):>9}" for t in TIERS)
        label = f"{v.run.world} {v.run.role}".strip()
        lines.append(
            f"{label:<12} {v.run.seed:>4}  {cells}    {mark(v.tiers)}  "
            f"{_auc3(f.auc):>5}  {_auc3(bound_auc):>5}  {_gap(f.auc, bound_auc, 1, 4):>7} "
            f"{mark(v.auc)}  {pct(f.lift.share, 4):>6}  {pct(bound_lift, 4):>6}  "
            f"{_gap(f.lift.share, bound_lift, 100, 2):>6} {mark(v.lift)}    {mark(v.holds)}"
        )
    return lines


# The exit status: every D29 condition judged and met; one failed; none failed, but the AUC
# and the lift were not judged (no bound).
HOLDS, FAILS, NOT_JUDGED = 0, 1, 3


def d29_status(verdicts: Sequence[Verdict], why_unjudged: str | None) -> int:
    if not all(v.holds for v in verdicts):
        return FAILS
    return NOT_JUDGED if why_unjudged else HOLDS


def d29_summary(verdicts: Sequence[Verdict], why_unjudged: str | None) -> list[str]:
    held = sum(v.holds for v in verdicts)
    status = d29_status(verdicts, why_unjudged)
    verdict = {HOLDS: "HOLDS", FAILS: "FAILS", NOT_JUDGED: "NOT JUDGED"}[status]
    lines = [
        f"D29 {verdict}: no condition fails on {held} of {len(verdicts)} worlds and seeds"
        + (f"; AUC and bestPhone lift not judged ({why_unjudged})" if why_unjudged else "")
    ]
    lines += [
        f"  {v.run.world} seed {v.run.seed}: {'; '.join(v.failures())}"
        for v in verdicts
        if not v.holds
    ]
    return lines


def _bounds(name: str, played_seeds: Sequence[tuple[int, list[SimContact]]]) -> dict[int, Bound]:
    """scoring_bound.py's model for each seed of one world, fitted on the world's other seeds,
    on the contacts and later calls the engine was judged on."""
    import scoring_bound  # needs scikit-learn; it imports this module, so not at the top

    seeds = [scoring_bound.describe(seed, contacts) for seed, contacts in played_seeds]
    return {
        r.seed: Bound(r.everything.auc_model, r.everything.lift_model)
        for r in scoring_bound.bounds(name, seeds)
    }


def _no_bound(args: argparse.Namespace) -> str | None:
    """Why the bound is not fitted in this run, if it is not."""
    if args.no_bound:
        return "--no-bound"
    if len(args.seeds) < 2:
        return "one seed; the bound judges each seed by a model fitted on the others"
    import scoring_bound

    if not scoring_bound.available():
        raise SystemExit(f"scoring_eval.py: {scoring_bound.NEEDS}, or run it with --no-bound")
    return None


# -- the run -------------------------------------------------------------------------------------


def run(args: argparse.Namespace) -> int:
    """The whole report; its exit status (``d29_status``)."""
    started = time.perf_counter()
    unjudged = _no_bound(args)
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
    runs: list[Run] = []
    bounds: dict[tuple[str, int], Bound] = {}
    bound_time = 0.0
    for name in args.worlds:
        world = worlds[name]
        role = "" if not fit_on else "fit" if name in fit_on else "held-out"
        played_seeds: list[tuple[int, list[SimContact]]] = []
        for seed in args.seeds:
            result, contacts = run_one(world, seed, args, role)
            runs.append(result)
            played_seeds.append((seed, contacts))
        pooled = [n for _, contacts in played_seeds for c in contacts for n in c.numbers]
        bins = reliability(pooled)
        print(f"\nreliability, world {name}, seeds {', '.join(map(str, args.seeds))} pooled:")
        print(*reliability_lines(bins), sep="\n")
        if args.plots is not None:
            path = args.plots / f"scoring-reliability-{name}.png"
            note = f"seeds {', '.join(map(str, args.seeds))}, {len(pooled)} numbers"
            save_reliability(path, name, note + (f" ({role})" if role else ""), bins, _floors())
            print(f"  diagram: {path}")
        if unjudged is None:
            fitting = time.perf_counter()
            for seed, bound in _bounds(name, played_seeds).items():
                bounds[(name, seed)] = bound
            bound_time += time.perf_counter() - fitting
    print("\nsummary (✓/✗ against the tiers' bands; AUC/ceiling: the engine's and the true p's)")
    print(*summary_lines(runs), sep="\n")
    verdicts = [Verdict(r, bounds.get((r.world, r.seed))) for r in runs]
    print(
        f"\nD29, all numbers (✓/✗: every tier in band; the engine's AUC no more than "
        f"{AUC_MARGIN} below the bound's; its bestPhone share of the oracle's lift no more than "
        f"{LIFT_MARGIN * 100:.0f} points below the bound's pick's. The bound: scoring_bound.py's "
        f"model, fitted on the world's other seeds)"
    )
    print(*d29_lines(verdicts), sep="\n")
    print(*d29_summary(verdicts, unjudged), sep="\n")
    fitted = f" (the bound's models {bound_time:.1f} s)" if unjudged is None else ""
    print(f"\n{time.perf_counter() - started:.1f} s{fitted}")
    return d29_status(verdicts, unjudged)


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
    parser.add_argument(
        "--worlds", type=_names, default=list(WORLD_NAMES), help=f"({','.join(WORLD_NAMES)})"
    )
    parser.add_argument("--seeds", type=_seeds, default=[1, 2, 3], help="(1,2,3)")
    parser.add_argument("--contacts", type=int, default=3000, help="per world and seed (3000)")
    parser.add_argument("--later", type=int, default=5, help="later calls per number (5)")
    parser.add_argument(
        "--fit-on",
        type=_names,
        default=["A"],
        help="worlds the engine's constants were chosen on, or none (A: the committed ones)",
    )
    parser.add_argument(
        "--no-bound",
        action="store_true",
        help="skip scoring_bound.py's model: D29's AUC and lift conditions are not judged",
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
    return run(args)


if __name__ == "__main__":
    # scoring_bound.py imports this module by name: the same module, not a second copy of it
    sys.modules.setdefault("scoring_eval", sys.modules[__name__])
    sys.exit(main())
