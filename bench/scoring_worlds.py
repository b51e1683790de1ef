"""The simulated worlds of ``scoring_eval.py``: what they share, and world A.

A world is a list of contacts, each carrying numbers in its phone slots. A ``SimNumber`` is
one number as one contact carries it: the evidence the engine is given about it from that
contact's point of view, and the hidden truth (the probability that a call made now to reach
that contact on that number connects). A number several contacts carry is one ``SimNumber``
per contact.

World A, the world the engine's constants were first chosen on: every number belongs to one
contact and has one hidden state for the whole history (or one change, to disconnected or
reassigned); past calls over 180 days; the colleagues of a shared line are a count only.
``scoring_lifecycle.py`` builds the worlds on other assumptions.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from dialscore.phones import LineType
from dialscore.scoring import engine
from dialscore.scoring.evidence import OUTCOMES, Call, NumberEvidence
from dialscore.scoring.lines import RateScale
from dialscore.scoring.numbers import (
    ParsedPhone,
    fictional_reason,
    parse_contact_phones,
    parse_phone,
)
from dialscore.scoring.service import CALIBRATION_DAYS, CALIBRATION_NUMBERS

DAY = 86_400.0
YEAR = 365.25 * DAY
# "now" of every world: 2025-06-02 00:00 UTC; past calls fall before it.
NOW = 1_748_822_400.0
CONNECTS = frozenset({"connected", "right_party"})
# What a client may report; noise replaces an outcome with any of these (all but the
# request not to be called, which is no answer to how the call went).
REPORTED_OUTCOMES = tuple(o for o in OUTCOMES if o != "dnc_request")
SLOTS = ("phone", "phone2", "phone3", "phone4")


@dataclass
class SimNumber:
    e164: str
    country: str
    state: str  # the hidden state from the contact's point of view, now
    p: float  # the true connect probability of a call made now to reach the contact
    evidence: NumberEvidence = field(default_factory=NumberEvidence)
    later: list[int] = field(default_factory=list)  # 1 per later call that connected
    status: str = ""
    probability: float = 0.0
    kind: str = ""  # the line type the engine took its prior from
    wrong_reported: bool = False  # na - auth by D28: a wrong number reported for the person

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


@dataclass(frozen=True)
class World:
    name: str
    assumes: str  # one line for the report
    build: Callable[[int, int], list[SimContact]]  # (seed, contacts) -> contacts


def pick(rng: random.Random, weights: dict[str, float]) -> str:
    return rng.choices(list(weights), weights=list(weights.values()))[0]


# -- numbers -------------------------------------------------------------------------------------

US_AREA_CODES = (
    "201", "202", "206", "212", "213", "214", "303", "305", "312", "404", "415", "469",
    "503", "512", "602", "617", "646", "702", "713", "718", "720", "773", "805", "818",
    "858", "917", "949", "972",
)  # fmt: skip
US_TOLL_FREE = ("800", "833", "844", "855", "866", "877", "888")


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
    """A valid, non-fictional number of that country and line kind (mobile, fixed,
    toll_free), not yet used."""
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


# -- scoring and the truth -----------------------------------------------------------------------


def client_rate_scale(contacts: Sequence[SimContact]) -> RateScale:
    """The scale of the live rates the service learns from the world's reported calls (P90,
    ``scoring.service.rate_scale``): the calls of the last year to its most recently called
    numbers, each number once, its calls as anyone sees them (not whom they were about)."""
    since = NOW - CALIBRATION_DAYS * DAY
    called: dict[str, NumberEvidence] = {}
    for contact in contacts:
        for number in contact.numbers:
            calls = number.evidence.calls
            if calls and calls[-1].at >= since and number.e164 not in called:
                unnamed = tuple(replace(call, person=None) for call in calls)
                called[number.e164] = replace(number.evidence, calls=unnamed, shared_with=0)
    recent = sorted(called, key=lambda e164: (-called[e164].calls[-1].at, e164))
    return engine.tally_calls(
        ((e164, called[e164]) for e164 in recent[:CALIBRATION_NUMBERS]), NOW
    ).scale()


def score_world(contacts: Sequence[SimContact]) -> None:
    """Scores every contact with the engine at NOW, as the service does: score_parsed with
    the world's rate scale."""
    scale = client_rate_scale(contacts)
    for contact in contacts:
        by_number = {n.e164: n for n in contact.numbers}
        entries = []
        for phone in parse_contact_phones(contact.fields):
            assert phone.e164 is not None, phone.raw
            number = by_number[phone.e164]
            score = engine.score_phone(phone, number.evidence, NOW, rate_scale=scale)
            number.status, number.probability = score.status, score.probability
            number.wrong_reported = (
                score.status == "na - auth"
                and engine.wrong_number_report(number.evidence, NOW) is not None
            )
            number.kind = engine.line_type(phone, number.evidence)[0]
            if engine.split_status(score.status)[1] == "h":
                number.kind = "switchboard"
            entries.append(engine.phone_entry(phone, score))
        best = engine.best_phone(entries)
        contact.best = None if best is None else by_number[best["number"]]


def draw_later(rng: random.Random, contacts: Sequence[SimContact], later: int) -> None:
    """The calls the scores are judged on: ``later`` per number a contact carries, each a
    connect with the number's true probability for that contact."""
    for contact in contacts:
        for number in contact.numbers:
            number.later = [1 if rng.random() < number.p else 0 for _ in range(later)]


# -- world A -------------------------------------------------------------------------------------
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
HISTORY_DAYS = 180.0
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
PORTED = 0.05  # US numbers whose block category is the other kind (ported)


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


WORLD_A = WorldSettings(
    block_share=0.6,
    voip_share=0.2,
    hint_share=0.5,
    hint_noise=0.2,
    noise=0.01,
    directory_share=0.3,
    shared_share=0.3,
    first_mix=dict(FIRST_SLOT_MIX),
)


@dataclass(frozen=True)
class _Hidden:
    """World A's hidden facts about a number, beyond its state and probability."""

    country: str
    line: str  # mobile | fixed | toll_free
    p_other: float  # reassigned: chance its new owner answers
    before: str | None  # disconnected, reassigned: the live state before the change
    p_before: float
    changed_at: float | None
    ivr_path: str | None


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


def draw_outcome(rng: random.Random, state: str, p: float, p_other: float) -> str:
    if state == "reassigned" and rng.random() < p_other:
        return "wrong_number"
    if p > 0 and rng.random() < p:
        return "right_party" if rng.random() < 0.5 else "connected"
    return pick(rng, MISSES[state])


def _true_hint(state: str, line: str) -> str:
    if line == "mobile":
        return "mobile"
    if state in ("switchboard", "dial_tree"):
        return "hq"
    return "direct"


def _block(rng: random.Random, hidden: _Hidden, world: WorldSettings) -> str | None:
    if hidden.country != "US" or hidden.line == "toll_free" or rng.random() >= world.block_share:
        return None
    if hidden.line == "mobile":
        return "landline" if rng.random() < PORTED else "wireless"
    if rng.random() < world.voip_share:
        return "voip"
    return "wireless" if rng.random() < PORTED else "landline"


def _past_calls(
    rng: random.Random, state: str, p: float, hidden: _Hidden, world: WorldSettings
) -> tuple[Call, ...]:
    if rng.random() < NO_HISTORY:
        return ()
    count = rng.randint(1, MAX_PAST_CALLS)
    times = sorted(NOW - rng.uniform(0, HISTORY_DAYS) * DAY for _ in range(count))
    calls = []
    for at in times:
        if hidden.changed_at is not None and at < hidden.changed_at:
            assert hidden.before is not None
            outcome = draw_outcome(rng, hidden.before, hidden.p_before, 0.0)
        else:
            outcome = draw_outcome(rng, state, p, hidden.p_other)
        if rng.random() < world.noise:
            outcome = rng.choice(REPORTED_OUTCOMES)
        path = hidden.ivr_path if outcome == "ivr" and rng.random() < 0.5 else None
        calls.append(Call(outcome, at, path))
    return tuple(calls)


def make_number(
    rng: random.Random, state: str, country: str, world: WorldSettings, taken: set[str]
) -> tuple[SimNumber, str | None]:
    """A world A number and its type hint (None: given without one)."""
    line = _line_for(rng, state, country)
    low, high = CONNECT_RANGE[state]
    e164 = real_number(rng, country, line, taken)
    p = rng.uniform(low, high)
    p_other = rng.uniform(*REASSIGNED_ANSWER) if state == "reassigned" else 0.0
    ivr_path = f"{rng.randint(1, 9)},{rng.randint(1, 9)}" if state == "dial_tree" else None
    before, p_before, changed_at = None, 0.0, None
    if state in ("disconnected", "reassigned"):
        before = "mobile" if line == "mobile" else "landline"
        p_before = rng.uniform(*CONNECT_RANGE[before])
        changed_at = NOW - rng.uniform(0, CHANGE_DAYS) * DAY
    hidden = _Hidden(country, line, p_other, before, p_before, changed_at, ivr_path)
    hint = None
    if rng.random() < world.hint_share:
        hint = _true_hint(state, line)
        if rng.random() < world.hint_noise:
            hint = rng.choice([h for h in ("mobile", "direct", "hq") if h != hint])
    company_line = state in ("switchboard", "dial_tree") and rng.random() < world.directory_share
    shared = 0
    if state in ("switchboard", "dial_tree") and rng.random() < world.shared_share:
        shared = rng.randint(1, 5)
    evidence = NumberEvidence(
        block=_block(rng, hidden, world),
        calls=_past_calls(rng, state, p, hidden, world),
        shared_with=shared,
        company_line=company_line,
        directory_ivr_path=ivr_path if company_line and rng.random() < 0.5 else None,
    )
    return SimNumber(e164=e164, country=country, state=state, p=p, evidence=evidence), hint


def build_world(rng: random.Random, contacts: int, world: WorldSettings) -> list[SimContact]:
    taken: set[str] = set()
    out = []
    for i in range(contacts):
        country = pick(rng, COUNTRIES)
        count = int(pick(rng, {str(k): v for k, v in NUMBERS_PER_CONTACT.items()}))
        fields = {"firstName": f"First{i}", "lastName": f"Last{i}", "companyAccount": f"Co {i}"}
        numbers = []
        for slot in SLOTS[:count]:
            state = pick(rng, world.first_mix if slot == "phone" else OTHER_SLOT_MIX)
            number, hint = make_number(rng, state, country, world, taken)
            fields[slot] = number.e164
            if hint is not None:
                fields[f"{slot}Type"] = hint
            numbers.append(number)
        out.append(SimContact(fields, numbers))
    return out


def world_a(settings: WorldSettings = WORLD_A) -> World:
    def build(seed: int, contacts: int) -> list[SimContact]:
        return build_world(random.Random(seed), contacts, settings)

    mix = ", ".join(f"{k} {v:g}" for k, v in settings.first_mix.items() if v)

    def share(value: float) -> str:
        return f"{value * 100:.0f} %"

    return World(
        "A",
        f"one state per number for its whole history (or one change to disconnected or "
        f"reassigned), 0-12 calls over 180 days; US blocks known {share(settings.block_share)}, "
        f"hints {share(settings.hint_share)} ({share(settings.hint_noise)} wrong), outcomes "
        f"wrong {share(settings.noise)}; first numbers {mix}",
        build,
    )
