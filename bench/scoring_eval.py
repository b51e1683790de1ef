"""How well the scoring engine's tiers predict connects, on a seeded simulation.

Builds ``--contacts`` contacts with 1 to 4 numbers each (US, UK and German, valid and not
fictional). Every number has a hidden true state (mobile, landline, switchboard, dial tree,
screened, disconnected, reassigned) and a true connect probability drawn from ranges fixed
below, independently of the engine's priors. Past calls (0 to 12 over 180 days) are drawn
from the hidden state, with a little reporting noise, and scored with the pure engine at
"now" together with the evidence a client would have: number blocks for part of the US
numbers, type hints with some errors, company lines, shared numbers. Then ``--later`` later
calls per number are drawn from the hidden state and the script prints, for all numbers, for
numbers with no history and for numbers with at least 3 past calls:

- per assigned tier (p1, p2, p3, na), the observed connect rate (connected or right_party) of
  the later calls, with counts, against the targets p1 >= 20 %, p2 4-20 %, p3 < 4 %,
  na < 0.5 %;
- the Brier score of the engine's probability against the later calls' connects, next to a
  constant base-rate predictor and the true probabilities (the floor);
- the lift of dialling ``bestPhone`` over dialling ``phone`` (the first number): the ratio of
  their connect rates over the later calls (target >= 3x).

It also prints which hidden states land in which tier, and each prior next to the connect rate
of the numbers that got it. ``--priors``, ``--screened-prior``, ``--disconnected-prior``,
``--p1-floor``, ``--p2-floor``, ``--prior-connects`` and ``--half-life`` replace the engine's
constants inside this process only, to compare other settings on the same world; the engine's
file is never changed.

    python bench/scoring_eval.py [--contacts 5000] [--later 5] [--seed 1]
"""

from __future__ import annotations

import argparse
import random
import sys
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from dialscore.phones import LineType
from dialscore.scoring import engine
from dialscore.scoring.evidence import Call, NumberEvidence
from dialscore.scoring.numbers import (
    ParsedPhone,
    fictional_reason,
    parse_contact_phones,
    parse_phone,
)

DAY = 86_400.0
# "now" of the simulation: 2025-06-02 00:00 UTC; past calls fall in the 180 days before.
NOW = 1_748_822_400.0
HISTORY_DAYS = 180.0

# -- the hidden world ----------------------------------------------------------------------------
#
# True connect probabilities per state (a connect reaches the person: connected or right_party).
# Drawn uniformly per number from these ranges; they are rough industry figures for B2B cold
# calling and are deliberately not derived from the engine's PRIORS.
CONNECT_RANGE: dict[str, tuple[float, float]] = {
    "mobile": (0.15, 0.45),
    "landline": (0.05, 0.15),
    "switchboard": (0.01, 0.08),
    "dial_tree": (0.02, 0.08),
    "screened": (0.01, 0.05),
    "disconnected": (0.0, 0.0),
    "reassigned": (0.0, 0.0),
}
STATES = tuple(CONNECT_RANGE)
# Which state a number is in, by slot: data vendors tend to put the office line first.
FIRST_SLOT_MIX = {
    "mobile": 0.22,
    "landline": 0.26,
    "switchboard": 0.18,
    "dial_tree": 0.12,
    "screened": 0.06,
    "disconnected": 0.09,
    "reassigned": 0.07,
}
OTHER_SLOT_MIX = {
    "mobile": 0.36,
    "landline": 0.20,
    "switchboard": 0.10,
    "dial_tree": 0.07,
    "screened": 0.08,
    "disconnected": 0.10,
    "reassigned": 0.09,
}
NUMBERS_PER_CONTACT = {1: 0.35, 2: 0.35, 3: 0.20, 4: 0.10}
COUNTRIES = {"US": 0.70, "GB": 0.15, "DE": 0.15}
# What a call that does not connect ends as, per state.
MISSES: dict[str, dict[str, float]] = {
    "mobile": {"voicemail": 0.50, "voicemail_name_match": 0.20, "no_answer": 0.25, "busy": 0.05},
    "landline": {"voicemail": 0.45, "voicemail_name_match": 0.15, "no_answer": 0.35, "busy": 0.05},
    "switchboard": {"gatekeeper": 0.60, "voicemail": 0.15, "no_answer": 0.20, "busy": 0.05},
    "dial_tree": {"ivr": 0.70, "voicemail": 0.10, "no_answer": 0.10, "gatekeeper": 0.10},
    "screened": {"screened": 0.55, "voicemail": 0.25, "no_answer": 0.20},
    "disconnected": {"disconnected": 0.80, "no_answer": 0.15, "busy": 0.05},
    "reassigned": {"voicemail": 0.50, "no_answer": 0.50},
}
# A reassigned number is answered by its new owner this often (uniform per number); the caller
# then reports wrong_number. Disconnected and reassigned numbers were live before the change,
# which happened uniformly in the last CHANGE_DAYS days.
REASSIGNED_ANSWER = (0.10, 0.35)
CHANGE_DAYS = 365.0
# Share of numbers never called before; the others have 1 to 12 past calls.
NO_HISTORY = 0.35
MAX_PAST_CALLS = 12
# Reported outcomes that are wrong: replaced by any outcome (CRM dispositions are noisy).
REPORTED_OUTCOMES = (
    "connected",
    "right_party",
    "voicemail",
    "voicemail_name_match",
    "no_answer",
    "busy",
    "gatekeeper",
    "ivr",
    "screened",
    "wrong_number",
    "disconnected",
)
PORTED = 0.05  # US numbers whose block category is the other kind (ported)

US_AREA_CODES = (
    "201", "202", "206", "212", "213", "214", "303", "305", "312", "404", "415", "469",
    "503", "512", "602", "617", "646", "702", "713", "718", "720", "773", "805", "818",
    "858", "917", "949", "972",
)  # fmt: skip
US_TOLL_FREE = ("800", "833", "844", "855", "866", "877", "888")


@dataclass(frozen=True)
class WorldSettings:
    block_share: float  # US numbers whose number block is known
    voip_share: float  # US office lines whose block is a VoIP carrier's
    hint_share: float  # numbers given with a type hint
    hint_noise: float  # hints that are wrong
    noise: float  # reported outcomes that are wrong
    directory_share: float  # company lines found in the imported directory
    shared_share: float  # company lines other people of the company carry too
    first_mix: dict[str, float]  # the states of first numbers (``phone``)


@dataclass
class SimNumber:
    e164: str
    country: str
    state: str
    line: str  # mobile | fixed | toll_free
    p: float  # the true connect probability from now on
    p_other: float  # reassigned: chance its new owner answers
    before: str | None  # disconnected, reassigned: the live state before the change
    p_before: float
    changed_at: float | None
    ivr_path: str | None
    hint: str | None
    evidence: NumberEvidence = field(default_factory=NumberEvidence)
    later: list[int] = field(default_factory=list)  # 1 per later call that connected
    status: str = ""
    probability: float = 0.0
    kind: str = ""  # the line type the engine took its prior from

    @property
    def past_calls(self) -> int:
        return len(self.evidence.calls)

    @property
    def tier(self) -> str:
        return engine.split_status(self.status)[0]


@dataclass
class SimContact:
    fields: dict[str, str]
    numbers: list[SimNumber]
    best: SimNumber | None = None


def pick(rng: random.Random, weights: dict[str, float]) -> str:
    return rng.choices(list(weights), weights=list(weights.values()))[0]


def _line_for(rng: random.Random, state: str, country: str) -> str:
    if state == "mobile":
        return "mobile"
    if state == "landline":
        return "fixed"
    if state in ("switchboard", "dial_tree"):
        toll_free = (0.2 if state == "switchboard" else 0.3) if country == "US" else 0.1
        return "toll_free" if rng.random() < toll_free else "fixed"
    mobile_share = {"screened": 0.6, "disconnected": 0.5, "reassigned": 0.8}[state]
    return "mobile" if rng.random() < mobile_share else "fixed"


def _candidate(rng: random.Random, country: str, line: str) -> str:
    digits = "0123456789"

    def some(n: int) -> str:
        return "".join(rng.choice(digits) for _ in range(n))

    exchange = f"{rng.randint(2, 9)}{some(2)}"
    if country == "US":
        if line == "toll_free":
            return f"+1{rng.choice(US_TOLL_FREE)}{exchange}{some(4)}"
        return f"+1{rng.choice(US_AREA_CODES)}{exchange}{some(4)}"
    if country == "GB":
        if line == "mobile":
            return f"+447{rng.randint(4, 9)}{some(8)}"
        if line == "toll_free":
            return f"+44800{some(7)}"
        area = rng.choice(("20 7", "20 3", "20 8", "161", "113", "121", "131"))
        area = area.replace(" ", "")
        return f"+44{area}{some(10 - len(area))}"
    if line == "mobile":
        prefix = rng.choice(("151", "152", "157", "160", "170", "171", "172", "176", "178"))
        return f"+49{prefix}{some(8 if prefix.startswith('15') else 7)}"
    if line == "toll_free":
        return f"+49800{some(7)}"
    area = rng.choice(("30", "89", "40", "69", "221", "211"))
    return f"+49{area}{some(10 - len(area))}"


_EXPECTED_TYPES = {
    ("US", "mobile"): LineType.FIXED_LINE_OR_MOBILE,
    ("US", "fixed"): LineType.FIXED_LINE_OR_MOBILE,
    ("US", "toll_free"): LineType.TOLL_FREE,
    ("GB", "mobile"): LineType.MOBILE,
    ("GB", "fixed"): LineType.FIXED_LINE,
    ("GB", "toll_free"): LineType.TOLL_FREE,
    ("DE", "mobile"): LineType.MOBILE,
    ("DE", "fixed"): LineType.FIXED_LINE,
    ("DE", "toll_free"): LineType.TOLL_FREE,
}


def _parsed(raw: str) -> ParsedPhone:
    return parse_phone(raw, position=1, slot="phone", type_hint=None, country_hint=None)


def real_number(rng: random.Random, country: str, line: str, taken: set[str]) -> str:
    """A valid, non-fictional number of that country and line kind, not yet used."""
    for _ in range(500):
        raw = _candidate(rng, country, line)
        phone = _parsed(raw)
        if (
            phone.e164 is None
            or phone.e164 in taken
            or phone.number_type != _EXPECTED_TYPES[(country, line)]
            or fictional_reason(phone) is not None
            or (country == "US" and phone.e164[5:8] == "555")
            or len(set(phone.e164[-7:])) < 3
        ):
            continue
        taken.add(phone.e164)
        return phone.e164
    raise RuntimeError(f"could not generate a {country} {line} number")


def draw_outcome(rng: random.Random, state: str, p: float, p_other: float) -> str:
    if state == "reassigned" and rng.random() < p_other:
        return "wrong_number"
    if p > 0 and rng.random() < p:
        return "right_party" if rng.random() < 0.5 else "connected"
    return pick(rng, MISSES[state])


def _true_hint(number: SimNumber) -> str:
    if number.line == "mobile":
        return "mobile"
    if number.state in ("switchboard", "dial_tree"):
        return "hq"
    return "direct"


def _block(rng: random.Random, number: SimNumber, world: WorldSettings) -> str | None:
    if number.country != "US" or number.line == "toll_free" or rng.random() >= world.block_share:
        return None
    if number.line == "mobile":
        return "landline" if rng.random() < PORTED else "wireless"
    if rng.random() < world.voip_share:
        return "voip"
    return "wireless" if rng.random() < PORTED else "landline"


def _past_calls(rng: random.Random, number: SimNumber, world: WorldSettings) -> tuple[Call, ...]:
    if rng.random() < NO_HISTORY:
        return ()
    count = rng.randint(1, MAX_PAST_CALLS)
    times = sorted(NOW - rng.uniform(0, HISTORY_DAYS) * DAY for _ in range(count))
    calls = []
    for at in times:
        if number.changed_at is not None and at < number.changed_at:
            assert number.before is not None
            outcome = draw_outcome(rng, number.before, number.p_before, 0.0)
        else:
            outcome = draw_outcome(rng, number.state, number.p, number.p_other)
        if rng.random() < world.noise:
            outcome = rng.choice(REPORTED_OUTCOMES)
        path = number.ivr_path if outcome == "ivr" and rng.random() < 0.5 else None
        calls.append(Call(outcome, at, path))
    return tuple(calls)


def make_number(
    rng: random.Random, state: str, country: str, world: WorldSettings, taken: set[str]
) -> SimNumber:
    line = _line_for(rng, state, country)
    low, high = CONNECT_RANGE[state]
    number = SimNumber(
        e164=real_number(rng, country, line, taken),
        country=country,
        state=state,
        line=line,
        p=rng.uniform(low, high),
        p_other=rng.uniform(*REASSIGNED_ANSWER) if state == "reassigned" else 0.0,
        before=None,
        p_before=0.0,
        changed_at=None,
        ivr_path=f"{rng.randint(1, 9)},{rng.randint(1, 9)}" if state == "dial_tree" else None,
        hint=None,
    )
    if state in ("disconnected", "reassigned"):
        number.before = "mobile" if line == "mobile" else "landline"
        number.p_before = rng.uniform(*CONNECT_RANGE[number.before])
        number.changed_at = NOW - rng.uniform(0, CHANGE_DAYS) * DAY
    if rng.random() < world.hint_share:
        hint = _true_hint(number)
        if rng.random() < world.hint_noise:
            hint = rng.choice([h for h in ("mobile", "direct", "hq") if h != hint])
        number.hint = hint
    company_line = state in ("switchboard", "dial_tree") and rng.random() < world.directory_share
    shared = 0
    if state in ("switchboard", "dial_tree") and rng.random() < world.shared_share:
        shared = rng.randint(1, 5)
    number.evidence = NumberEvidence(
        block=_block(rng, number, world),
        calls=_past_calls(rng, number, world),
        shared_with=shared,
        company_line=company_line,
        directory_ivr_path=number.ivr_path if company_line and rng.random() < 0.5 else None,
    )
    return number


def build_world(rng: random.Random, contacts: int, world: WorldSettings) -> list[SimContact]:
    taken: set[str] = set()
    out = []
    slots = ("phone", "phone2", "phone3", "phone4")
    for i in range(contacts):
        country = pick(rng, COUNTRIES)
        count = int(pick(rng, {str(k): v for k, v in NUMBERS_PER_CONTACT.items()}))
        fields = {"firstName": f"First{i}", "lastName": f"Last{i}", "companyAccount": f"Co {i}"}
        numbers = []
        for slot in slots[:count]:
            state = pick(rng, world.first_mix if slot == "phone" else OTHER_SLOT_MIX)
            number = make_number(rng, state, country, world, taken)
            fields[slot] = number.e164
            if number.hint is not None:
                fields[f"{slot}Type"] = number.hint
            numbers.append(number)
        out.append(SimContact(fields, numbers))
    return out


def score_world(contacts: Sequence[SimContact]) -> None:
    """Scores every contact with the engine at NOW, as score_parsed does."""
    for contact in contacts:
        by_number = {n.e164: n for n in contact.numbers}
        entries = []
        for phone in parse_contact_phones(contact.fields):
            assert phone.e164 is not None, phone.raw
            number = by_number[phone.e164]
            score = engine.score_phone(phone, number.evidence, NOW)
            number.status, number.probability = score.status, score.probability
            number.kind = engine.line_type(phone, number.evidence)[0]
            if engine.split_status(score.status)[1] == "h":
                number.kind = "switchboard"
            entries.append(engine.phone_entry(phone, score))
        best = engine.best_phone(entries)
        contact.best = None if best is None else by_number[best["number"]]


def draw_later(rng: random.Random, contacts: Sequence[SimContact], later: int) -> None:
    for contact in contacts:
        for number in contact.numbers:
            number.later = [1 if rng.random() < number.p else 0 for _ in range(later)]


# -- metrics -------------------------------------------------------------------------------------

TIERS = ("p1", "p2", "p3", "na")
TARGETS: dict[str, tuple[str, Callable[[float], bool]]] = {
    "p1": (">= 20 %", lambda r: r >= 0.20),
    "p2": ("4-20 %", lambda r: 0.04 <= r < 0.20),
    "p3": ("< 4 %", lambda r: r < 0.04),
    "na": ("< 0.5 %", lambda r: r < 0.005),
}


def _pct(value: float) -> str:
    return f"{value * 100:5.1f} %"


def tier_table(numbers: Sequence[SimNumber]) -> list[str]:
    lines = ["  tier  numbers  share  later calls  connects  connect rate  mean p   target    met"]
    for tier in TIERS:
        group = [n for n in numbers if n.tier == tier]
        calls = sum(len(n.later) for n in group)
        connects = sum(sum(n.later) for n in group)
        if not group or not calls:
            lines.append(f"  {tier:<4}  {0:>7}      -")
            continue
        rate = connects / calls
        mean_p = sum(n.probability for n in group) / len(group)
        target, met = TARGETS[tier]
        lines.append(
            f"  {tier:<4}  {len(group):>7}  {_pct(len(group) / len(numbers))}  {calls:>11}  "
            f"{connects:>8}  {_pct(rate):>12}  {_pct(mean_p)}  {target:<8}  "
            f"{'yes' if met(rate) else 'NO'}"
        )
    return lines


def brier(numbers: Sequence[SimNumber]) -> tuple[float, float, float]:
    """The engine's, a constant base rate's and the true probabilities' Brier scores."""
    pairs = [(n, y) for n in numbers for y in n.later]
    if not pairs:
        return 0.0, 0.0, 0.0
    base = sum(y for _, y in pairs) / len(pairs)
    ours = sum((n.probability - y) ** 2 for n, y in pairs) / len(pairs)
    truth = sum((n.p - y) ** 2 for n, y in pairs) / len(pairs)
    return ours, base * (1 - base), truth


@dataclass(frozen=True)
class Lift:
    contacts: int
    phone_rate: float
    best_rate: float
    best_dialled: int
    oracle_rate: float
    per_contact: float

    @property
    def ratio(self) -> float:
        return self.best_rate / self.phone_rate if self.phone_rate else float("nan")


def _rate(numbers: Iterable[SimNumber]) -> float:
    calls = connects = 0
    for n in numbers:
        calls += len(n.later)
        connects += sum(n.later)
    return connects / calls if calls else 0.0


def lift(contacts: Sequence[SimContact]) -> Lift:
    """Dialling each contact's bestPhone (none when all its numbers are na or dnc) against
    dialling its first phone, over the later calls; the oracle dials the truly best number."""
    first = [c.numbers[0] for c in contacts]
    best = [c.best for c in contacts if c.best is not None]
    oracle = [max(c.numbers, key=lambda n: n.p) for c in contacts]
    first_connects = sum(sum(n.later) for n in first)
    best_connects = sum(sum(n.later) for n in best)
    return Lift(
        contacts=len(contacts),
        phone_rate=_rate(first),
        best_rate=_rate(best),
        best_dialled=len(best),
        oracle_rate=_rate(oracle),
        per_contact=best_connects / first_connects if first_connects else float("nan"),
    )


def report(title: str, contacts: Sequence[SimContact], numbers: Sequence[SimNumber]) -> None:
    calls = sum(len(n.later) for n in numbers)
    print(
        f"\n{title}: {len(numbers)} numbers, {calls} later calls, base rate {_pct(_rate(numbers))}"
    )
    if not numbers:
        return
    print(*tier_table(numbers), sep="\n")
    ours, base, truth = brier(numbers)
    skill = 1 - ours / base if base else 0.0
    print(
        f"  Brier {ours:.4f}  (constant base rate {base:.4f}, skill {skill * 100:+.1f} %; "
        f"true probabilities {truth:.4f})"
    )
    if not contacts:
        return
    for label, group in (
        ("all", contacts),
        (">= 2 numbers", [c for c in contacts if len(c.numbers) >= 2]),
    ):
        result = lift(group)
        print(
            f"  lift bestPhone/phone, {label} ({result.contacts} contacts): "
            f"{result.ratio:.2f}x per dial ({_pct(result.best_rate).strip()} vs "
            f"{_pct(result.phone_rate).strip()}; {result.contacts - result.best_dialled} "
            f"without bestPhone), {result.per_contact:.2f}x connects per contact; "
            f"oracle {result.oracle_rate / result.phone_rate:.2f}x"
        )


def prior_table(numbers: Sequence[SimNumber]) -> None:
    """Each prior against what numbers of that line type then did (no history: the prior is
    the whole estimate)."""
    print("  by the engine's line type: numbers, prior, observed connect rate")
    for kind, prior in engine.PRIORS.items():
        group = [n for n in numbers if n.kind == kind and n.tier != "na"]
        if group:
            print(
                f"    {kind:<14} {len(group):>6}  prior {_pct(prior)}  "
                f"observed {_pct(_rate(group))}"
            )


def state_matrix(numbers: Sequence[SimNumber]) -> None:
    counts = Counter((n.state, n.tier) for n in numbers)
    print("\nhidden state x assigned tier (numbers; true connect range)")
    print(f"  {'state':<13}" + "".join(f"{t:>7}" for t in TIERS) + "   range")
    for state in STATES:
        low, high = CONNECT_RANGE[state]
        row = "".join(f"{counts[(state, t)]:>7}" for t in TIERS)
        print(f"  {state:<13}{row}   {low * 100:.0f}-{high * 100:.0f} %")


# -- engine settings -----------------------------------------------------------------------------


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


def _disconnected_once(calls: Sequence[Call]) -> bool:
    """The latest outcome other than no answer or busy is a disconnected report."""
    for call in reversed(calls):
        if call.outcome == "disconnected":
            return True
        if call.outcome not in ("no_answer", "busy"):
            return False
    return False


def apply_engine_settings(args: argparse.Namespace) -> list[str]:
    """Replaces the engine's constants in this process only (the engine reads them per call);
    the changes, for the report. The engine's own file is left alone."""
    tried = []
    if args.priors:
        engine.PRIORS.update(_pairs(args.priors, engine.PRIORS, "--priors"))
        tried.append(f"priors {args.priors}")
    if args.screened_prior is not None:
        engine.PRIORS["screened"] = args.screened_prior
        tried.append(f"recently screened: prior {args.screened_prior:g}")
    if args.disconnected_prior is not None:
        engine.PRIORS["disconnected once"] = args.disconnected_prior
        tried.append(f"reported disconnected once: prior {args.disconnected_prior:g}")
    if args.p1_floor is not None:
        engine.P1_FLOOR = args.p1_floor
    if args.p2_floor is not None:
        engine.P2_FLOOR = args.p2_floor
    if args.prior_connects is not None:
        engine.PRIOR_CONNECTS = args.prior_connects
    if args.half_life is not None:
        engine.HALF_LIFE_DAYS = args.half_life
    return tried


def engine_settings(tried: Sequence[str]) -> str:
    priors = ", ".join(f"{k} {v:g}" for k, v in engine.PRIORS.items())
    text = (
        f"engine: P1_FLOOR {engine.P1_FLOOR:g}, P2_FLOOR {engine.P2_FLOOR:g}, "
        f"PRIOR_CONNECTS {engine.PRIOR_CONNECTS:g}, HALF_LIFE_DAYS {engine.HALF_LIFE_DAYS:g}; "
        f"PRIORS {priors}"
    )
    return text + "".join(f"\n  tried: {rule}" for rule in tried)


def run(args: argparse.Namespace) -> None:
    tried = apply_engine_settings(args)
    first_mix = dict(FIRST_SLOT_MIX)
    if args.first_mix:
        first_mix = {state: 0.0 for state in STATES}
        first_mix.update(_pairs(args.first_mix, STATES, "--first-mix"))
    world = WorldSettings(
        block_share=args.block_share,
        voip_share=args.voip_share,
        hint_share=args.hint_share,
        hint_noise=args.hint_noise,
        noise=args.noise,
        directory_share=0.3,
        shared_share=0.3,
        first_mix=first_mix,
    )
    rng = random.Random(args.seed)
    contacts = build_world(rng, args.contacts, world)
    score_world(contacts)
    draw_later(random.Random(args.seed + 1_000_003), contacts, args.later)

    numbers = [n for c in contacts for n in c.numbers]
    countries = Counter(n.country for n in numbers)
    mix = ", ".join(f"{k} {v * 100 / len(numbers):.0f} %" for k, v in sorted(countries.items()))
    print(
        f"{len(contacts)} contacts, {len(numbers)} numbers ({mix}); seed {args.seed}; "
        f"{args.later} later calls per number"
    )
    print(
        f"world: US blocks known {args.block_share:.0%}, US office lines in VoIP blocks "
        f"{args.voip_share:.0%}, type hints {args.hint_share:.0%} ({args.hint_noise:.0%} wrong), "
        f"reported outcomes wrong {args.noise:.0%}; first numbers "
        + ", ".join(f"{k} {v:g}" for k, v in first_mix.items() if v)
    )
    print(engine_settings(tried))

    report("all numbers", contacts, numbers)
    state_matrix(numbers)
    fresh = [c for c in contacts if all(n.past_calls == 0 for n in c.numbers)]
    report(
        "no history (first score; lift over contacts whose numbers have no calls)",
        fresh,
        [n for n in numbers if n.past_calls == 0],
    )
    prior_table([n for n in numbers if n.past_calls == 0])
    known = [c for c in contacts if all(n.past_calls >= 3 for n in c.numbers)]
    report(
        ">= 3 past calls (lift over contacts whose numbers all have >= 3)",
        known,
        [n for n in numbers if n.past_calls >= 3],
    )


def _fraction(text: str) -> float:
    value = float(text)
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError("must be between 0 and 1")
    return value


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--contacts", type=int, default=5000, help="contacts (5000)")
    parser.add_argument("--later", type=int, default=5, help="later calls per number (5)")
    parser.add_argument("--seed", type=int, default=1, help="random seed (1)")
    world = parser.add_argument_group("the simulated world")
    world.add_argument("--block-share", type=_fraction, default=0.6, help="(0.6)")
    world.add_argument("--voip-share", type=_fraction, default=0.2, help="(0.2)")
    world.add_argument("--hint-share", type=_fraction, default=0.5, help="(0.5)")
    world.add_argument("--hint-noise", type=_fraction, default=0.2, help="(0.2)")
    world.add_argument("--noise", type=_fraction, default=0.01, help="(0.01)")
    world.add_argument("--first-mix", help="states of first numbers, e.g. switchboard=0.6,...")
    tuning = parser.add_argument_group("engine constants, replaced in this process only")
    tuning.add_argument("--priors", help="e.g. mobile=0.3,unknown=0.1")
    tuning.add_argument("--p1-floor", type=float)
    tuning.add_argument("--p2-floor", type=float)
    tuning.add_argument("--prior-connects", type=float, help="the prior weighs N/prior calls")
    tuning.add_argument("--half-life", type=float, help="days")
    tuning.add_argument("--screened-prior", type=float, help="prior of recently screened numbers")
    tuning.add_argument("--disconnected-prior", type=float, help="prior after one disconnected")
    args: Any = parser.parse_args(argv)
    if not (1 <= args.contacts <= 1_000_000) or not (1 <= args.later <= 100):
        parser.error("--contacts must be 1..1000000 and --later 1..100")
    run(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
