"""Worlds B and C of ``scoring_eval.py``: numbers with a life of their own.

Where world A gives each number one state, these worlds follow people, companies and lines
over 600 days, and the evidence comes out of that history:

- **Lines change state in continuous time**, at rates per kind of line (per year, ``RATES``):
  a live line starts screening unknown callers (and sometimes stops), goes dead, and a dead
  number is given to someone else. A person leaves their company (``leave_rate``); their
  direct line then goes dead, is given to a successor (who may be in the client's data too,
  carrying the same number) or is forwarded to reception, and a work mobile goes dead or to a
  colleague. A personal mobile stays with its person. Some numbers are someone else's from
  the start (vendor errors).
- **Companies have main lines** carried by several of their contacts. A call to reach someone
  who has left reaches reception, which may say so: the caller reports ``wrong_number``
  about that person, which says nothing about the line for the colleagues still there.
- **Screening phones** answer "screened" most of the time but let some calls through.
- **Calls come in campaigns** of 1-5 days with long gaps; a campaign dials part of the
  contacts, each number in slot order until one connects, on one to three of its days.
- **Dialers mislog**: systematic confusions (voicemail logged as no_answer, connected as
  voicemail, a gatekeeper as connected, screening and disconnection not detected) scaled by
  each campaign's sloppiness, and a little random noise. Some campaigns do not say whom a
  call was for (``person`` None).
- **Hints and blocks are as the data vendor or the numbering authority first had them**: a
  reassigned or forwarded number keeps its ``mobile``/``direct`` hint and its block.

True connect probabilities come from the ranges in ``connect``, B2B cold-calling figures
chosen apart from the engine's constants. This module holds the assumptions and the rules a
call follows; ``scoring_lifecycle_build.py`` builds the worlds from them.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field, replace

from scoring_worlds import DAY, NOW, REPORTED_OUTCOMES, pick

HISTORY_DAYS = 600.0
START = NOW - HISTORY_DAYS * DAY
STRANGER = -1  # a holder who is not in the client's data
MOBILE_KINDS = frozenset({"mobile", "work_mobile"})
TIED_KINDS = frozenset({"direct", "work_mobile"})  # lines that go with the job
# Bounds that keep every loop finite; none is reached in practice.
MAX_CHANGES = 12
MAX_CAMPAIGNS = 60
MAX_SUCCESSORS = 4  # per company

# Changes of state per year. "reassigned": the number now rings someone else.
RATES: dict[str, dict[str, dict[str, float]]] = {
    "mobile": {
        "live": {"screening": 0.20, "dead": 0.06, "reassigned": 0.02},
        "screening": {"live": 0.10, "dead": 0.06},
        "dead": {"reassigned": 2.0},
    },
    "work_mobile": {
        "live": {"screening": 0.06, "dead": 0.03},
        "screening": {"live": 0.10, "dead": 0.03},
        "dead": {"reassigned": 1.5},
    },
    "direct": {
        "live": {"screening": 0.02, "dead": 0.03},
        "screening": {"live": 0.20, "dead": 0.03},
        "dead": {"reassigned": 0.5},
        "forwarded": {"dead": 0.3, "reassigned": 0.3},
    },
    "main": {"live": {"dead": 0.01}},
}
# What becomes of a line that goes with the job when its holder leaves.
ON_LEAVE = {
    "direct": {"dead": 0.45, "reassigned": 0.35, "forwarded": 0.20},
    "work_mobile": {"dead": 0.5, "reassigned": 0.5},
}
# How a call that does not connect ends, by the state the caller meets.
MISSES: dict[str, dict[str, float]] = {
    "mobile": {"voicemail": 0.40, "voicemail_name_match": 0.25, "no_answer": 0.30, "busy": 0.05},
    "direct": {"voicemail": 0.40, "voicemail_name_match": 0.20, "no_answer": 0.35, "busy": 0.05},
    "switchboard": {"gatekeeper": 0.55, "voicemail": 0.20, "no_answer": 0.20, "busy": 0.05},
    "screened": {"screened": 0.55, "voicemail": 0.25, "no_answer": 0.20},
    # reception answers for someone who has left, and may say so
    "departed": {"wrong_number": 0.35, "gatekeeper": 0.35, "voicemail": 0.15, "no_answer": 0.15},
    "reassigned": {"voicemail": 0.5, "no_answer": 0.5},
    "dead": {"disconnected": 0.70, "no_answer": 0.20, "busy": 0.10},
}
# Reported outcome -> what a dialer logs instead, and how often at sloppiness 1.
MISLOG = {
    "voicemail": ("no_answer", 0.25),
    "voicemail_name_match": ("voicemail", 0.50),
    "connected": ("voicemail", 0.06),
    "right_party": ("connected", 0.30),
    "screened": ("no_answer", 0.35),
    "gatekeeper": ("connected", 0.12),
    "wrong_number": ("no_answer", 0.15),
    "disconnected": ("no_answer", 0.25),
}
PEOPLE_PER_COMPANY = {1: 0.35, 2: 0.20, 3: 0.15, 4: 0.10, 5: 0.08, 6: 0.06, 8: 0.04, 12: 0.02}
HINTS = {"mobile": "mobile", "work_mobile": "mobile", "direct": "direct", "main": "hq"}
# Vendors list office lines first, mostly.
SLOT_ORDER = {"direct": 0.0, "main": 0.5, "work_mobile": 1.0, "mobile": 1.5}


@dataclass(frozen=True)
class LifeSettings:
    name: str
    assumes: str
    countries: dict[str, float]
    connect: dict[str, tuple[float, float]]  # mobile, direct, switchboard, screened
    stranger_answers: tuple[float, float]  # a reassigned number's new holder picks up
    leave_rate: float  # people leaving their company, per year
    early_share: float  # contacts in the client's data before the history starts
    record_age_days: float  # how old a vendor's record is when the client adds it
    carry: dict[str, float]  # how often a contact's record has each kind of line
    vendor_error: float  # numbers someone else's already when recorded
    successor_share: float  # reassigned direct lines whose new holder is in the data too
    ivr_share: float  # main lines behind a dial tree
    toll_free_share: float  # US main lines that are toll-free
    directory_share: float  # main lines in the imported directory
    block_share: float  # US numbers whose number block is known
    voip_share: float  # US office numbers in VoIP carriers' blocks
    ported: float  # US numbers whose block is the other kind
    hint_share: float
    hint_noise: float
    campaign_days: float  # campaigns run in this many last days
    campaign_length: tuple[int, int]  # days
    campaign_gap: tuple[float, float]  # days between campaigns
    target_share: float  # contacts a campaign dials
    max_passes: int  # days of a campaign a contact is dialled on
    dials_per_pass: int  # numbers tried per pass, in slot order, until a connect
    skip_dead: float  # callers skipping a number last logged disconnected or wrong
    named_share: float  # campaigns that say whom each call was for
    sloppiness: tuple[float, float]  # scales MISLOG per campaign
    noise: float  # logged outcomes replaced by any outcome


WORLD_B = LifeSettings(
    name="B",
    assumes=(
        "lines change state over 600 days (screening, dead, reassigned), people leave "
        "(direct lines dead/reassigned/forwarded), shared main lines, campaigns, mislogging "
        "dialers, stale hints and blocks; US 70 %"
    ),
    countries={"US": 0.70, "GB": 0.15, "DE": 0.15},
    connect={
        "mobile": (0.15, 0.45),
        "direct": (0.05, 0.15),
        "switchboard": (0.01, 0.08),
        "screened": (0.01, 0.10),
    },
    stranger_answers=(0.15, 0.45),
    leave_rate=0.18,
    early_share=0.3,
    record_age_days=365.0,
    carry={"mobile": 0.45, "work_mobile": 0.15, "direct": 0.55, "main": 0.55},
    vendor_error=0.05,
    successor_share=0.35,
    ivr_share=0.35,
    toll_free_share=0.25,
    directory_share=0.4,
    block_share=0.6,
    voip_share=0.25,
    ported=0.05,
    hint_share=0.55,
    hint_noise=0.2,
    campaign_days=HISTORY_DAYS,
    campaign_length=(1, 5),
    campaign_gap=(20.0, 90.0),
    target_share=0.3,
    max_passes=3,
    dials_per_pass=3,
    skip_dead=0.5,
    named_share=0.65,
    sloppiness=(0.3, 1.3),
    noise=0.02,
)
WORLD_C = replace(
    WORLD_B,
    name="C",
    assumes=(
        "as B, but mostly UK and German numbers, most numbers never called (campaigns only "
        "in the last 150 days), hints on most numbers and 45 % of them wrong, few calls named, "
        "lower connect rates, faster churn"
    ),
    countries={"GB": 0.45, "DE": 0.35, "US": 0.20},
    connect={
        "mobile": (0.10, 0.35),
        "direct": (0.04, 0.12),
        "switchboard": (0.01, 0.06),
        "screened": (0.01, 0.08),
    },
    leave_rate=0.25,
    carry={"mobile": 0.65, "work_mobile": 0.10, "direct": 0.45, "main": 0.50},
    block_share=0.3,
    hint_share=0.8,
    hint_noise=0.45,
    campaign_days=150.0,
    target_share=0.12,
    named_share=0.2,
)


@dataclass(frozen=True)
class Segment:
    start: float
    status: str  # live | screening | dead | forwarded
    holder: int  # a person's id, or STRANGER; a main line's is the company's (0)


@dataclass(frozen=True)
class LoggedCall:
    at: float
    target: int  # the person the call was made to reach
    outcome: str  # as logged
    path: str | None
    named: bool  # the client said whom the call was for


@dataclass
class Line:
    e164: str
    kind: str  # mobile | work_mobile | direct | main
    p_live: float
    p_screen: float
    p_stranger: float
    ivr_path: str | None
    block: str | None
    segments: list[Segment] = field(default_factory=list)
    calls: list[LoggedCall] = field(default_factory=list)
    carriers: int = 0
    in_directory: bool = False
    directory_path: str | None = None

    def at(self, when: float) -> Segment:
        for segment in reversed(self.segments):
            if segment.start <= when:
                return segment
        return self.segments[0]


@dataclass
class Person:
    pid: int
    company: str
    country: str
    joined: float
    left: float  # math.inf: still there at NOW
    added: float  # into the client's data
    record_at: float  # when the vendor recorded the person's numbers
    p_switchboard: float
    lines: list[Line] = field(default_factory=list)
    last: dict[str, str] = field(default_factory=dict)  # last logged outcome by number

    def present(self, when: float) -> bool:
        return self.joined <= when < self.left


def reach(line: Line, person: Person, when: float) -> tuple[str, float]:
    """What a call made at ``when`` to reach ``person`` on ``line`` meets, and its chance of
    reaching them."""
    segment = line.at(when)
    if segment.status == "dead":
        return "dead", 0.0
    if line.kind == "main":
        if person.present(when):
            return ("dial_tree" if line.ivr_path else "switchboard"), person.p_switchboard
        return "departed", 0.0
    if segment.status == "forwarded":
        return "departed", 0.0
    if segment.holder != person.pid:
        return "reassigned", 0.0
    if segment.status == "screening":
        return "screened", line.p_screen
    return ("mobile" if line.kind in MOBILE_KINDS else "direct"), line.p_live


def outcome(rng: random.Random, line: Line, person: Person, when: float) -> str:
    """How a call made at ``when`` to reach ``person`` on ``line`` ends."""
    state, p = reach(line, person, when)
    if state == "reassigned" and rng.random() < line.p_stranger:
        return "wrong_number"
    if p > 0 and rng.random() < p:
        return "right_party" if rng.random() < 0.4 else "connected"
    # behind a dial tree, a caller who gets nowhere is often stuck in it
    if line.ivr_path and state in ("dial_tree", "departed") and rng.random() < 0.5:
        return "ivr"
    return pick(rng, MISSES["switchboard" if state == "dial_tree" else state])


def logged(rng: random.Random, happened: str, sloppiness: float, world: LifeSettings) -> str:
    """What the dialer logs for a call that ended as ``happened``."""
    if rng.random() < world.noise:
        return rng.choice(REPORTED_OUTCOMES)
    confusion = MISLOG.get(happened)
    if confusion is not None and rng.random() < confusion[1] * sloppiness:
        return confusion[0]
    return happened
