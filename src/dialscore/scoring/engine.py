"""The scoring engine: a phone's reachability status from the evidence about its number.

Pure: a contact's fields and the evidence gathered per number in, phone entries with
statuses and reasons, ``leadStatus`` and ``bestPhone`` out. The method is in docs/scoring.md.

Each number gets an estimate of the probability that a call reaches the person:

1. a prior from its line type (mobile, landline, VoIP, switchboard …), taken from a
   verification provider, else the imported number block, else the numbering metadata, else
   the client's type hint (weaker, so a hinted mobile starts lower than a known one);
2. moved by the calls the client reported: a beta-binomial estimate in which the prior counts
   as ``PRIOR_CONNECTS`` connect's worth of calls (so a low prior takes many failed calls to
   move, a high one few) and each reported call weighs less the older it is (half-life
   ``HALF_LIFE_DAYS``), so recent calls count more;
3. cut into tiers at ``P1_FLOOR`` and ``P2_FLOOR``.

Hard evidence overrides the estimate: invalid and fictional numbers, numbers disconnected on
two different days and wrong numbers are ``na``. Modifiers add what a caller must know: on a
do-not-call list (``dnc``), a dial tree (``ivr``), a switchboard (``h``), screened (``sf``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from dialscore.phones import LineType
from dialscore.scoring.evidence import NO_EVIDENCE, Call, NumberEvidence
from dialscore.scoring.numbers import (
    EnrichedNumber,
    ParsedPhone,
    display_type,
    fictional_reason,
    parse_contact_phones,
)

# Reachability tier, optionally with one modifier (D15).
PHONE_STATUSES = (
    "p1", "p1 - h", "p1 - ivr", "p1 - dnc", "p1 - sf",
    "p2", "p2 - h", "p2 - ivr", "p2 - sf",
    "p3", "p3 - h", "p3 - ivr", "p3 - sf",
    "na", "na - h", "na - ivr", "na - auth", "na - dnc",
)  # fmt: skip

# Connect probability before any call, by line type (docs/scoring.md gives the sources).
PRIORS = {
    "mobile": 0.25,
    "mobile (hint)": 0.20,
    "unknown": 0.12,
    "landline": 0.08,
    "switchboard": 0.05,
    "voip": 0.08,
    "screened": 0.03,
    "special": 0.01,
    "disconnected once": 0.01,
}
P1_FLOOR = 0.20
P2_FLOOR = 0.04
# How many calls the prior is worth, and how fast a call's weight halves.
# The prior is worth this many connects: 1/prior calls (4 calls for a mobile, 20 for a
# switchboard).
PRIOR_CONNECTS = 1.0
HALF_LIFE_DAYS = 90.0
DAY = 86_400.0

CONNECTS = frozenset({"connected", "right_party"})
OWNERSHIP = frozenset({"right_party", "voicemail_name_match", "wrong_number"})
GATEKEEPER_CALLS_FOR_H = 2
DISCONNECTED_DAYS_FOR_NA = 2
RECENT_CALLS = 5

_SWITCHBOARD_TYPES = {LineType.TOLL_FREE, LineType.SHARED_COST}
_SPECIAL_TYPES = {
    LineType.PERSONAL_NUMBER,
    LineType.PAGER,
    LineType.UAN,
    LineType.VOICEMAIL,
    LineType.PREMIUM_RATE,
}
_VERIFIED = {
    "mobile": "mobile",
    "landline": "landline",
    "voip": "voip",
    "toll_free": "switchboard",
    "shared_cost": "switchboard",
    "premium": "special",
    "personal": "special",
    "pager": "special",
    "voicemail": "special",
    "uan": "special",
}
_BLOCKS = {"wireless": "mobile", "landline": "landline", "voip": "voip"}
# Which modifiers each tier allows (D15's list of statuses).
_ALLOWED = {
    "p1": {"h", "ivr", "dnc", "sf"},
    "p2": {"h", "ivr", "sf"},
    "p3": {"h", "ivr", "sf"},
    "na": {"h", "ivr", "auth", "dnc"},
}


@dataclass(frozen=True)
class PhoneScore:
    status: str
    reasons: tuple[str, ...]
    ivr_path: str | None
    # The estimated connect probability (0 for na); not part of the API.
    probability: float


def _percent(value: float) -> str:
    return f"{value * 100:.1f} %" if value < 0.1 else f"{value * 100:.0f} %"


def line_type(phone: ParsedPhone, evidence: NumberEvidence) -> tuple[str, str]:
    """The number's line type for the prior, and the reason naming its source."""
    verified = evidence.verification
    if verified is not None and verified.line_type in _VERIFIED:
        kind = _VERIFIED[verified.line_type]
        return kind, f"line type {verified.line_type.replace('_', '-')} ({verified.provider})"
    if evidence.block in _BLOCKS:
        kind = _BLOCKS[evidence.block]
        return kind, f"number block: {evidence.block}"
    number_type = phone.number_type
    if number_type == LineType.MOBILE:
        return "mobile", "mobile line (numbering plan)"
    if number_type == LineType.FIXED_LINE:
        return "landline", "fixed line (numbering plan)"
    if number_type in _SWITCHBOARD_TYPES:
        label = "toll-free" if number_type == LineType.TOLL_FREE else "shared-cost"
        return "switchboard", f"{label} number"
    if number_type == LineType.VOIP:
        return "voip", "VoIP number (numbering plan)"
    if number_type in _SPECIAL_TYPES:
        return "special", "personal, pager, premium or similar number (numbering plan)"
    # Fixed line or mobile: NANP numbers, where only number blocks tell them apart.
    if phone.type_hint == "mobile":
        return "mobile (hint)", "given as mobile; line type not confirmed"
    if phone.type_hint == "direct":
        return "landline", "given as a direct line; line type not confirmed"
    return "unknown", "line type unknown (mobile or fixed)"


def estimate(prior: float, calls: Sequence[Call], now: float) -> float:
    """The recency-weighted beta-binomial estimate of the connect probability."""
    connects = 0.0
    weight = 0.0
    for call in calls:
        age_days = max(0.0, now - call.at) / DAY
        w = 0.5 ** (age_days / HALF_LIFE_DAYS)
        weight += w
        if call.outcome in CONNECTS:
            connects += w
    strength = prior_calls(prior)
    return (prior * strength + connects) / (strength + weight)


def prior_calls(prior: float) -> float:
    """How many calls the prior is worth."""
    return PRIOR_CONNECTS / prior


def _tier(probability: float) -> str:
    if probability >= P1_FLOOR:
        return "p1"
    if probability >= P2_FLOOR:
        return "p2"
    return "p3"


def _disconnected(calls: Sequence[Call]) -> bool:
    """Disconnected on two different days, and nothing answered since."""
    days: set[int] = set()
    for call in reversed(calls):
        if call.outcome == "disconnected":
            days.add(int(call.at // DAY))
        elif call.outcome not in ("no_answer", "busy"):
            break
    return len(days) >= DISCONNECTED_DAYS_FOR_NA


def _disconnected_once(calls: Sequence[Call]) -> bool:
    """The latest call that reached anything found the line disconnected."""
    for call in reversed(calls):
        if call.outcome not in ("no_answer", "busy"):
            return call.outcome == "disconnected"
    return False


def _wrong_number(calls: Sequence[Call]) -> bool:
    """The latest word on whose number this is says: someone else's."""
    for call in reversed(calls):
        if call.outcome in OWNERSHIP:
            return call.outcome == "wrong_number"
    return False


def _status(tier: str, modifier: str | None) -> str:
    if modifier == "dnc" and tier != "p1":
        tier = "na"  # D15 has no p2/p3 - dnc: a listed number is not to be dialled
    if modifier is None or modifier not in _ALLOWED[tier]:
        return tier
    return f"{tier} - {modifier}"


def score_phone(phone: ParsedPhone, evidence: NumberEvidence, now: float) -> PhoneScore:
    if not phone.valid:
        return PhoneScore("na", ("not a valid phone number",), None, 0.0)
    reasons: list[str] = []
    fictional = fictional_reason(phone)
    verified = evidence.verification
    calls = evidence.calls

    # Modifiers, strongest first: dnc > ivr > h > sf. A path counts only from a dial tree.
    ivr_path = next(
        (c.ivr_path for c in reversed(calls) if c.outcome == "ivr" and c.ivr_path), None
    )
    ivr_path = ivr_path or evidence.directory_ivr_path
    modifier: str | None = None
    if evidence.dnc_lists:
        modifier = "dnc"
        reasons.append(f"on do-not-call list {', '.join(sorted(evidence.dnc_lists))}")
    if any(c.outcome == "dnc_request" for c in calls):
        modifier = "dnc"
        reasons.append("the person asked not to be called")
    if any(c.outcome == "ivr" for c in calls) or evidence.directory_ivr_path:
        modifier = modifier or "ivr"
        reasons.append("dial tree" + (f" (path {ivr_path})" if ivr_path else ""))
    switchboard = []
    if phone.type_hint == "hq":
        switchboard.append("given as a company line")
    if evidence.company_line:
        switchboard.append("a company's main line")
    if evidence.shared_with:
        others = evidence.shared_with
        switchboard.append(f"shared with {others} other {'person' if others == 1 else 'people'}")
    gatekeepers = sum(1 for c in calls if c.outcome == "gatekeeper")
    if gatekeepers >= GATEKEEPER_CALLS_FOR_H:
        switchboard.append(f"answered by a gatekeeper {gatekeepers} times")

    if fictional is not None:
        return PhoneScore(_status("na", modifier), (fictional, *reasons), ivr_path, 0.0)
    if verified is not None and not verified.valid:
        reason = f"not a working number ({verified.provider})"
        return PhoneScore(_status("na", modifier), (reason, *reasons), ivr_path, 0.0)
    if _wrong_number(calls):
        return PhoneScore("na - auth", ("reported as a wrong number", *reasons), ivr_path, 0.0)
    if _disconnected(calls):
        reason = "reported disconnected on two different days"
        return PhoneScore(_status("na", modifier), (reason, *reasons), ivr_path, 0.0)

    kind, source = line_type(phone, evidence)
    reasons.insert(0, source)
    if kind == "switchboard" and not switchboard:
        switchboard.append("a company switchboard")
    if switchboard:
        modifier = modifier or "h"
        reasons.extend(switchboard)
        kind = "switchboard"
    recent = calls[-RECENT_CALLS:]
    if any(c.outcome == "screened" for c in recent):
        modifier = modifier or "sf"
        reasons.append("calls are screened")
        kind = "screened"
    if _disconnected_once(calls):
        reasons.append("reported disconnected, nothing answered since")
        kind = "disconnected once"

    prior = PRIORS[kind]
    probability = estimate(prior, calls, now)
    if calls:
        connects = sum(1 for c in calls if c.outcome in CONNECTS)
        reasons.append(
            f"{len(calls)} reported call{'s' if len(calls) != 1 else ''}, {connects} connected: "
            f"estimated connect rate {_percent(probability)}"
        )
    else:
        reasons.append(f"no calls reported: expected connect rate {_percent(prior)}")
    status = _status(_tier(probability), modifier)
    if status.startswith("na"):  # a listed number that is not p1 (see _status)
        probability = 0.0
    return PhoneScore(status, tuple(reasons), ivr_path, probability)


def phone_entry(phone: ParsedPhone, score: PhoneScore | None) -> dict[str, Any]:
    return {
        "number": phone.number,
        "status": None if score is None else score.status,
        "type": display_type(phone),
        "country": phone.country,
        "region": phone.region,
        "position": phone.position,
        "ivrPath": None if score is None else score.ivr_path,
        "reasons": [] if score is None else list(score.reasons),
    }


# -- contact-level results (D16, D17) -----------------------------------------------------------

_TIER_RANK = {"p1": 0, "p2": 1, "p3": 2}
_MODIFIER_RANK = {None: 0, "sf": 1, "ivr": 2, "h": 3}


def split_status(status: str) -> tuple[str, str | None]:
    tier, _, modifier = status.partition(" - ")
    return tier, modifier or None


def lead_status(phones: list[dict[str, Any]]) -> str:
    if not phones:
        return "No Numbers Found"
    statuses = [p["status"] for p in phones]
    if any(s is None for s in statuses):
        return "Uncontacted"
    tiers = [split_status(s)[0] for s in statuses]
    best = min((_TIER_RANK[t] for t in tiers if t in _TIER_RANK), default=None)
    if best is None:
        return "Needs Attention"
    return ("P1", "P2", "P3")[best]


def best_phone(phones: list[dict[str, Any]]) -> dict[str, Any] | None:
    candidates = []
    for entry in phones:
        status = entry["status"]
        if status is None:
            continue
        tier, modifier = split_status(status)
        if tier not in _TIER_RANK or modifier == "dnc":
            continue
        rank = (
            _TIER_RANK[tier],
            _MODIFIER_RANK.get(modifier, len(_MODIFIER_RANK)),
            0 if entry["type"] == "mobile" else 1,
            entry["position"],
        )
        candidates.append((rank, entry))
    if not candidates:
        return None
    entry = min(candidates, key=lambda c: c[0])[1]
    return {"number": entry["number"], "status": entry["status"], "ivrPath": entry["ivrPath"]}


@dataclass(frozen=True)
class ContactScore:
    phones: list[dict[str, Any]]
    lead_status: str
    best_phone: dict[str, Any] | None


def unscored(phones: Sequence[ParsedPhone]) -> ContactScore:
    entries = [phone_entry(p, None) for p in phones]
    return ContactScore(entries, "Uncontacted", None)


def score_parsed(
    parsed: Sequence[ParsedPhone],
    evidence: Mapping[str, NumberEvidence],
    now: float,
    notes: Mapping[str, tuple[str, ...]] | None = None,
) -> ContactScore:
    """Scores already parsed numbers; ``notes`` adds reasons to numbers (by E.164)."""
    phones = []
    for phone in parsed:
        score = score_phone(phone, evidence.get(phone.e164 or "", NO_EVIDENCE), now)
        extra = notes.get(phone.e164 or "") if notes else None
        if extra:
            score = replace(score, reasons=(*score.reasons, *extra))
        phones.append(phone_entry(phone, score))
    return ContactScore(phones, lead_status(phones), best_phone(phones))


def score_contact(
    fields: dict[str, str],
    enriched: Sequence[EnrichedNumber] = (),
    evidence: Mapping[str, NumberEvidence] | None = None,
    *,
    now: float = 0.0,
) -> ContactScore:
    return score_parsed(parse_contact_phones(fields, enriched), evidence or {}, now)
