"""A number's hidden state, inferred from its reported calls. Pure.

A number is, at any time, in one of four states as seen from the person being scored:

- ``live``: it reaches the person, at a connect rate of its own, learnt from the calls
  (before any, the line type's: a mobile answers more often than a switchboard puts through);
- ``screening``: it rings through only to callers the person knows, and lets a few
  unknown ones through;
- ``dead``: disconnected or out of service;
- ``other``: it belongs to someone else now (reassigned, or the person has left the company
  whose line it is).

Numbers change state as time passes, at a rate per line type (a direct line is left behind
when its person changes jobs; a mobile is given up less often; a screening habit comes and
goes), and every reported call is evidence with a likelihood per state: a ``screened`` call
is likely from a screening phone but also happens on live ones, a ``wrong_number`` is likely
on someone else's number and now and then mislogged on a live one. The belief about the state
is carried forward through the calls in time order (a hidden Markov model filtered forward;
at most one change of state between two calls), and the estimate is the connect rate expected
from the belief at "now". docs/scoring.md explains it with the figures.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from dialscore.scoring.evidence import Call

DAY = 86_400.0
YEAR_DAYS = 365.0

CONNECTS = frozenset({"connected", "right_party"})
# Outcomes that say something about whose number it is: about someone else, they say only
# that the line is alive.
_ANSWERED = frozenset(
    {"connected", "right_party", "voicemail", "voicemail_name_match", "wrong_number"}
)
_LINE_ANSWERED = _ANSWERED | {"gatekeeper", "ivr"}
# Outcomes that say nothing about the state: a refusal to be called is handled as ``dnc``.
_NEUTRAL = frozenset({"dnc_request"})

# A live number's connect rate before any call, by line type; the calls move it as a
# beta-binomial mean in which this rate counts as PRIOR_CONNECTS connects' worth of calls
# (2 / rate calls: 8 for a mobile, 40 for a switchboard), so a low rate takes many calls to
# move.
LIVE_RATES: dict[str, float] = {
    "mobile": 0.25,
    "mobile (hint)": 0.23,
    "unknown": 0.12,
    "landline": 0.08,
    "voip": 0.08,
    "switchboard": 0.05,
    "special": 0.01,
}
# How many connects' worth of calls the line type's rate counts as: chosen on world A of
# bench/scoring_eval.py, where a number's few missed calls pulled its estimate below what such
# numbers connect at with 1 (bench/README.md, "D29").
PRIOR_CONNECTS = 2.0
# What a live number's calls teach about its rate fades with this half-life: habits change.
RATE_HALF_LIFE_DAYS = 365.0
# A screening phone lets this share of unknown callers through.
SCREENING_RATE = 0.05
# What the client's data holds before any call: mostly live numbers, some stale.
START = {"screening": 0.03, "dead": 0.03, "other": 0.04}
# How often a live number changes state, per year, by line type: to screening, dead, other.
LIVE_CHANGES: dict[str, tuple[float, float, float]] = {
    "mobile": (0.05, 0.05, 0.08),
    "mobile (hint)": (0.05, 0.05, 0.10),
    "unknown": (0.04, 0.06, 0.12),
    "landline": (0.02, 0.06, 0.15),
    "voip": (0.02, 0.08, 0.15),
    "switchboard": (0.01, 0.02, 0.12),
    "special": (0.01, 0.10, 0.10),
}
# A screening phone goes back to live, dead or other, per year; a dead number is given to
# someone else, per year.
SCREENING_CHANGES = (0.5, 0.05, 0.08)
DEAD_REASSIGNED = 0.3

# What a call that does not connect ends as, per state (each row sums to 1). A row has a
# little of everything: dialers mislog.
_LIVE_MISSES = {
    "voicemail": 0.40, "voicemail_name_match": 0.14, "no_answer": 0.30, "busy": 0.05,
    "gatekeeper": 0.03, "ivr": 0.02, "screened": 0.02, "wrong_number": 0.003,
    "disconnected": 0.01, "dnc_request": 0.027,
}  # fmt: skip
_SWITCHBOARD_MISSES = {
    "voicemail": 0.15, "voicemail_name_match": 0.05, "no_answer": 0.17, "busy": 0.04,
    "gatekeeper": 0.35, "ivr": 0.19, "screened": 0.01, "wrong_number": 0.005,
    "disconnected": 0.01, "dnc_request": 0.025,
}  # fmt: skip
_SCREENING_MISSES = {
    "voicemail": 0.22, "voicemail_name_match": 0.05, "no_answer": 0.17, "busy": 0.03,
    "gatekeeper": 0.01, "ivr": 0.01, "screened": 0.49, "wrong_number": 0.005,
    "disconnected": 0.005, "dnc_request": 0.01,
}  # fmt: skip
# Dead and other numbers: every outcome, connects included (mislogged, or the new owner).
_DEAD = {
    "connected": 0.004, "right_party": 0.001, "voicemail": 0.04,
    "voicemail_name_match": 0.002, "no_answer": 0.25, "busy": 0.06, "gatekeeper": 0.01,
    "ivr": 0.01, "screened": 0.01, "wrong_number": 0.01, "disconnected": 0.60,
    "dnc_request": 0.003,
}  # fmt: skip
_OTHER = {
    "connected": 0.03, "right_party": 0.004, "voicemail": 0.35,
    "voicemail_name_match": 0.004, "no_answer": 0.28, "busy": 0.04, "gatekeeper": 0.02,
    "ivr": 0.01, "screened": 0.02, "wrong_number": 0.23, "disconnected": 0.01,
    "dnc_request": 0.003,
}  # fmt: skip
# The live rates are scaled to the client's own calls (P90): by what its calls connected
# against what the model expected of them before each call, with this many expected connects
# on both sides (so that a few calls hardly move it), and within these bounds; mobiles apart
# from other lines (P212).
CALIBRATION_PRIOR_CONNECTS = 20.0
SCALE_BOUNDS = (0.5, 1.5)
MAX_LIVE_RATE = 0.9
# A call this soon after a call to the same number that did not connect is a redial (P213).
REDIAL_SECONDS = 600.0

# A call about someone else that reached anything: how likely per state (live, screening,
# dead, other); a dead line answers no one.
_ALIVE = (1.0, 1.0, 0.05, 1.0)


@dataclass(frozen=True)
class Belief:
    """How likely each state is at "now", and the connect rate it makes."""

    live: float
    screening: float
    dead: float
    other: float
    connect_rate: float


# Per outcome, its likelihood in the screening, dead and other states; in the live state it
# is the live rate for a connect, else (1 - rate) times the share of the live misses.
_STATE_ROWS = {
    outcome: (
        (1.0 - SCREENING_RATE) * _SCREENING_MISSES.get(outcome, 0.0)
        + (SCREENING_RATE / 2 if outcome in CONNECTS else 0.0),
        _DEAD[outcome],
        _OTHER[outcome],
    )
    for outcome in _DEAD
    if outcome not in _NEUTRAL
}
# Misses that teach about a live number's rate: the calls that rang through to no one.
_LIVE_MISS = frozenset(
    {"voicemail", "voicemail_name_match", "no_answer", "busy", "gatekeeper", "ivr"}
)


# The screening state's changes, as the share of those that leave it going each way.
_S_LEAVE = sum(SCREENING_CHANGES)
_S_BACK, _S_DEAD, _S_OTHER = (rate / _S_LEAVE for rate in SCREENING_CHANGES)
_KEEP_STATES = ("screening", "dead", "other")


def _about_someone_else(outcome: str) -> tuple[float, ...]:
    """A call about someone else says whether the line is alive, nothing more."""
    return _ALIVE if outcome in _LINE_ANSWERED else (1.0, 1.0, 1.0, 1.0)


def _share_about_person(call: Call, shared: bool) -> float:
    """How much the call is about the person scored: a call about someone else says only
    whether the line is alive; on a shared line, a call about no one in particular is as
    likely about this person as not. A line found disconnected is dead for everyone."""
    if call.outcome == "disconnected":
        return 1.0
    if call.person == "other":
        return 0.0
    if call.person is None and shared and call.outcome in _ANSWERED:
        return 0.5
    return 1.0


def is_mobile(kind: str) -> bool:
    """Whether a line type (a key of ``LIVE_RATES``) is a mobile's, known or hinted."""
    return kind.startswith("mobile")


@dataclass(frozen=True)
class RateScale:
    """The factors of the line types' live rates that a client's calls support (P90): one
    for mobiles, one for every other line (P212)."""

    mobile: float = 1.0
    other: float = 1.0

    def of(self, kind: str) -> float:
        return self.mobile if is_mobile(kind) else self.other


NO_SCALE = RateScale()


@dataclass
class Counts:
    """Calls against the model: how many connected, and how many the model expected to."""

    observed: float = 0.0
    expected: float = 0.0
    calls: int = 0

    def factor(self) -> float:
        """The factor for the live rates that these calls support (1 without calls)."""
        prior = CALIBRATION_PRIOR_CONNECTS
        low, high = SCALE_BOUNDS
        return min(high, max(low, (self.observed + prior) / (self.expected + prior)))


@dataclass
class Tally:
    """A client's calls against the model, each call predicted from the calls before it:
    those to mobiles and those to other lines apart."""

    mobile: Counts = field(default_factory=Counts)
    other: Counts = field(default_factory=Counts)

    def of(self, kind: str) -> Counts:
        return self.mobile if is_mobile(kind) else self.other

    @property
    def calls(self) -> int:
        return self.mobile.calls + self.other.calls

    @property
    def observed(self) -> float:
        return self.mobile.observed + self.other.observed

    @property
    def expected(self) -> float:
        return self.mobile.expected + self.other.expected

    def scale(self) -> RateScale:
        return RateScale(self.mobile.factor(), self.other.factor())


def live_rate(kind: str, scale: RateScale = NO_SCALE) -> float:
    """A live number's connect rate before any call: its line type's, scaled (P90)."""
    return min(MAX_LIVE_RATE, LIVE_RATES[kind] * scale.of(kind))


def _fresh(kind: str, scale: RateScale) -> Belief:
    """The belief about a number no one has called."""
    screening, dead, other = (START[state] for state in _KEEP_STATES)
    live = 1.0 - screening - dead - other
    rate = live * live_rate(kind, scale) + screening * SCREENING_RATE
    return Belief(live, screening, dead, other, rate)


def belief(
    kind: str,
    calls: Sequence[Call],
    now: float,
    *,
    shared: bool = False,
    scale: RateScale = NO_SCALE,
    tally: Tally | None = None,
) -> Belief:
    """The belief at ``now`` about a number of line type ``kind`` (a key of ``LIVE_RATES``)
    after ``calls`` (oldest first); ``shared``: other people carry the number too; ``scale``
    multiplies the line type's live rate. ``tally``, when given, counts each call wholly
    about the person, and no redial, against the connect rate the calls before it made.

    A redial (a call within ``REDIAL_SECONDS`` of one to the number that did not connect)
    says whether the line is alive, not whether a live or a screening phone answers it (a
    phone that silences a first call from an unknown number lets a second one through), and
    teaches nothing of the live rate, which is what one call meets (P213).

    The belief is four numbers (live, screening, dead, other) and the live rate's beta
    counts (a connects, b misses); it is written out with local variables rather than
    objects, as it runs for every number of every job (about twice as fast)."""
    if not calls:
        return _fresh(kind, scale)
    misses = _SWITCHBOARD_MISSES if kind == "switchboard" else _LIVE_MISSES
    to_screening, to_dead, to_other = LIVE_CHANGES[kind]
    leave = to_screening + to_dead + to_other
    # The rate's beta prior: PRIOR_CONNECTS connects in PRIOR_CONNECTS / rate calls.
    a0 = PRIOR_CONNECTS
    b0 = PRIOR_CONNECTS / live_rate(kind, scale) - PRIOR_CONNECTS
    a, b = a0, b0
    screening, dead, other = (START[state] for state in _KEEP_STATES)
    live = 1.0 - screening - dead - other
    at = calls[0].at if calls else now
    disconnected_on: set[int] = set()
    missed_at = -math.inf  # when the last call that did not connect was made
    for call in (*calls, None):
        # Time passes up to the call (or "now"): each state may change once, and what the
        # calls taught of the live rate fades.
        until = now if call is None else call.at
        days = (until - at) / DAY
        if days > 0.0:
            years = days / YEAR_DAYS
            left = live * (1.0 - math.exp(-leave * years))
            s_left = screening * (1.0 - math.exp(-_S_LEAVE * years))
            d_moved = dead * (1.0 - math.exp(-DEAD_REASSIGNED * years))
            live += s_left * _S_BACK - left
            screening += left * to_screening / leave - s_left
            dead += left * to_dead / leave + s_left * _S_DEAD - d_moved
            other += left * to_other / leave + s_left * _S_OTHER + d_moved
            keep = 0.5 ** (days / RATE_HALF_LIFE_DAYS)
            a = a0 + (a - a0) * keep
            b = b0 + (b - b0) * keep
            at = until
        if call is None:
            break
        outcome = call.outcome
        row = _STATE_ROWS.get(outcome)
        if row is None:  # says nothing about the state (dnc_request)
            continue
        if outcome == "disconnected":
            # A line found dead is retried the same day: one finding per UTC day.
            day = int(call.at // DAY)
            if day in disconnected_on:
                continue
            disconnected_on.add(day)
        # The outcome's likelihood in each state weighs the belief.
        rate = a / (a + b)
        connect = outcome in CONNECTS
        redial = call.at - missed_at < REDIAL_SECONDS
        missed_at = -math.inf if connect else call.at
        w_live = rate / 2 if connect else (1.0 - rate) * misses[outcome]
        w_screening, w_dead, w_other = row
        if redial:
            w_screening = w_live
        share = _share_about_person(call, shared)
        if tally is not None and share == 1.0 and not redial:
            counts = tally.of(kind)
            counts.calls += 1
            counts.expected += live * rate + screening * SCREENING_RATE
            counts.observed += connect
        if share < 1.0:
            x_live, x_screening, x_dead, x_other = _about_someone_else(outcome)
            w_live = share * w_live + (1.0 - share) * x_live
            w_screening = share * w_screening + (1.0 - share) * x_screening
            w_dead = share * w_dead + (1.0 - share) * x_dead
            w_other = share * w_other + (1.0 - share) * x_other
        live *= w_live
        screening *= w_screening
        dead *= w_dead
        other *= w_other
        total = live + screening + dead + other
        if total > 0.0:
            live, screening, dead, other = (
                live / total,
                screening / total,
                dead / total,
                other / total,
            )
        # What the call says of the live rate, as much as the number is live and the call
        # was about this person; a redial, nothing.
        if redial:
            continue
        if connect:
            a += share * live
        elif outcome in _LIVE_MISS:
            b += share * live
    rate = a / (a + b)
    return Belief(live, screening, dead, other, live * rate + screening * SCREENING_RATE)
