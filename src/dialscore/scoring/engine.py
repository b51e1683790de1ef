"""The scoring engine: a phone's reachability status from the evidence about its number.

Pure: a contact's fields and the evidence gathered per number in, phone entries with
statuses, estimates and reasons, ``leadStatus`` and ``bestPhone`` out. The method is in
docs/scoring.md.

Each number gets an estimate of the probability that a call reaches the person:

1. its line type (mobile, landline, VoIP, switchboard …), taken from a verification
   provider, else the imported number block, else the numbering metadata, else the
   client's type hint (weaker, so a hinted mobile starts lower than a known one);
2. a belief about its hidden state (live, screening, dead, someone else's) carried through
   the reported calls in time order (``lines``), whose expected connect rate is the
   estimate;
3. cut into tiers at ``P1_FLOOR`` and ``P2_FLOOR``; under ``NA_FLOOR`` the number is ``na``.

Hard evidence overrides the estimate: invalid and fictional numbers, and numbers
disconnected on two different days are ``na``; a number reported as the wrong one for the
person in the last 180 days, and not found theirs since, is ``na - auth`` (D28), as is a number
the FCC Reassigned Numbers Database says was reassigned since the contact's consent date
(P192). Modifiers
add what a caller must know: on a do-not-call list (``dnc``), a dial tree (``ivr``), a
switchboard (``h``), screened (``sf``)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from dialscore.phones import LineType
from dialscore.scoring import lines
from dialscore.scoring.evidence import NO_EVIDENCE, Call, NumberEvidence
from dialscore.scoring.listings import dnc_age_reason, reassigned_reason
from dialscore.scoring.numbers import (
    EnrichedNumber,
    ParsedPhone,
    display_type,
    fictional_reason,
    parse_contact_phones,
    parse_phone,
)

# Reachability tier, optionally with one modifier (D15).
PHONE_STATUSES = (
    "p1", "p1 - h", "p1 - ivr", "p1 - dnc", "p1 - sf",
    "p2", "p2 - h", "p2 - ivr", "p2 - sf",
    "p3", "p3 - h", "p3 - ivr", "p3 - sf",
    "na", "na - h", "na - ivr", "na - auth", "na - dnc",
)  # fmt: skip

P1_FLOOR = 0.20
P2_FLOOR = 0.04
# Under this expected connect rate a number is not worth a call: na.
NA_FLOOR = 0.005
# The belief in a screening phone from which the status carries sf, and in a dead or someone
# else's number from which the reasons say so.
SF_SHARE = 0.3
STATE_NOTE_SHARE = 0.2
DAY = lines.DAY

CONNECTS = lines.CONNECTS
GATEKEEPER_CALLS_FOR_H = 2
HQ_HINT = "given as a company line"
# A screened call among the latest calls marks sf.
RECENT_CALLS = 5
DISCONNECTED_DAYS_FOR_NA = 2
# A wrong_number about the person this recent makes the number na - auth (D28); an older one
# is evidence for the line model only.
WRONG_NUMBER_DAYS = 180
# Calls about the person after a wrong_number that say the number is theirs after all.
_OWNERSHIP_CALLS = frozenset({"connected", "right_party", "voicemail_name_match"})
# A scale of the live rates this far from 1 is named in the reasons.
SCALE_NOTE = 0.05

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
    # The estimated connect probability (0 for na): the entry's connectRate.
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


def _reported_wrong(calls: Sequence[Call], now: float, alone: bool) -> float | None:
    """When the number was last reported as the wrong one for the person, within
    ``WRONG_NUMBER_DAYS`` and with no call since that found them there; else None (D28). A
    call is about the person when reported for them, or, on a number no one else in the
    client's data carries (``alone``), when reported for no contact at all."""
    since = now - WRONG_NUMBER_DAYS * DAY
    for call in reversed(calls):
        if call.at < since:
            return None
        if call.person == "same" or (alone and call.person is None and not call.named):
            if call.outcome == "wrong_number":
                return call.at
            if call.outcome in _OWNERSHIP_CALLS:
                return None
    return None


def wrong_number_report(evidence: NumberEvidence, now: float) -> float | None:
    """When a wrong number that makes the number ``na - auth`` for the person was reported
    (D28), if one was: about the person, or about no one on a number no one else carries."""
    alone = not (evidence.carried_by_others or evidence.shared_with)
    return _reported_wrong(evidence.calls, now, alone)


def _status(tier: str, modifier: str | None) -> str:
    if modifier == "dnc" and tier != "p1":
        tier = "na"  # D15 has no p2/p3 - dnc: a listed number is not to be dialled
    if modifier is None or modifier not in _ALLOWED[tier]:
        return tier
    return f"{tier} - {modifier}"


def _switchboard(
    phone: ParsedPhone, evidence: NumberEvidence, kind: str, gatekeepers: int
) -> list[str]:
    """What makes the number a switchboard (``h``), in words; empty when nothing does. A
    ``hq`` hint never overrides a line type found by a source above it (a mobile)."""
    found = []
    if phone.type_hint == "hq" and kind != "mobile":
        found.append(HQ_HINT)
    if evidence.company_line:
        found.append("a company's main line")
    if evidence.shared_with:
        others = evidence.shared_with
        found.append(f"shared with {others} other {'person' if others == 1 else 'people'}")
    if gatekeepers >= GATEKEEPER_CALLS_FOR_H:
        found.append(f"answered by a gatekeeper {gatekeepers} times")
    if kind == "switchboard" and not found:
        found.append("a company switchboard")
    return found


_NO_CALLS: Counter[str] = Counter()


def _state_notes(belief: lines.Belief) -> list[str]:
    notes = []
    if belief.screening >= STATE_NOTE_SHARE:
        notes.append(f"calls are likely screened ({_percent(belief.screening)})")
    if belief.dead >= STATE_NOTE_SHARE:
        notes.append(f"likely disconnected ({_percent(belief.dead)})")
    if belief.other >= STATE_NOTE_SHARE:
        notes.append(f"likely someone else's number now ({_percent(belief.other)})")
    return notes


def _scaled(scale: lines.RateScale, kind: str) -> str:
    """What the reasons say of a scale of the line type's live rate that differs from 1
    (P90, P212)."""
    factor = scale.of(kind)
    if abs(factor - 1.0) < SCALE_NOTE:
        return ""
    rates = "mobiles' rates" if lines.is_mobile(kind) else "the rates of lines other than mobiles"
    return f" ({rates} x {factor:.2f}, from this client's calls)"


def score_phone(
    phone: ParsedPhone,
    evidence: NumberEvidence,
    now: float,
    *,
    rate_scale: lines.RateScale = lines.NO_SCALE,
    tally: lines.Tally | None = None,
) -> PhoneScore:
    """The number's status, reasons and estimate; ``rate_scale`` multiplies the line types'
    live rates (P90); ``tally``, when given, counts the number's calls against the model."""
    score = _score_line(phone, evidence, now, rate_scale=rate_scale, tally=tally)
    check = evidence.reassigned
    if check is None or not phone.valid:
        return score
    reason = reassigned_reason(check)
    if check.answer == "yes":
        # Someone else's number since the consent was given: no consent covers them (P192).
        return PhoneScore("na - auth", (reason, *score.reasons), score.ivr_path, 0.0)
    return replace(score, reasons=(*score.reasons, reason))


def _score_line(
    phone: ParsedPhone,
    evidence: NumberEvidence,
    now: float,
    *,
    rate_scale: lines.RateScale,
    tally: lines.Tally | None,
) -> PhoneScore:
    """``score_phone`` from the number's line and calls alone."""
    if not phone.valid:
        return PhoneScore("na", ("not a valid phone number",), None, 0.0)
    reasons: list[str] = []
    fictional = fictional_reason(phone)
    verified = evidence.verification
    calls = evidence.calls

    # What the modifiers need of the calls, in one pass (this runs for every phone).
    counts = Counter(c.outcome for c in calls) if calls else _NO_CALLS
    # Modifiers, strongest first: dnc > ivr > h > sf. A path counts only from a dial tree.
    ivr_path = None
    if counts["ivr"]:
        ivr_path = next(
            (c.ivr_path for c in reversed(calls) if c.outcome == "ivr" and c.ivr_path), None
        )
    ivr_path = ivr_path or evidence.directory_ivr_path
    modifier: str | None = None
    if evidence.dnc_lists:
        modifier = "dnc"
        reasons.append(f"on do-not-call list {', '.join(sorted(evidence.dnc_lists))}")
        reasons.extend(dnc_age_reason(name, days) for name, days in evidence.dnc_file_ages)
    if counts["dnc_request"]:
        modifier = "dnc"
        reasons.append("the person asked not to be called")
    if counts["ivr"] or evidence.directory_ivr_path:
        modifier = modifier or "ivr"
        reasons.append("dial tree" + (f" (path {ivr_path})" if ivr_path else ""))

    if fictional is not None:
        return PhoneScore(_status("na", modifier), (fictional, *reasons), ivr_path, 0.0)
    if verified is not None and not verified.valid:
        reason = f"not a working number ({verified.provider})"
        return PhoneScore(_status("na", modifier), (reason, *reasons), ivr_path, 0.0)
    if _disconnected(calls):
        reason = "reported disconnected on two different days"
        return PhoneScore(_status("na", modifier), (reason, *reasons), ivr_path, 0.0)

    kind, source = line_type(phone, evidence)
    reasons.insert(0, source)
    switchboard = _switchboard(phone, evidence, kind, counts["gatekeeper"])
    # A line that reaches several people (a gatekeeper may answer one person's own line):
    # calls about no one in particular weigh half.
    shared = kind == "switchboard" or bool(evidence.shared_with or evidence.company_line)
    if switchboard:
        modifier = modifier or "h"
        reasons.extend(switchboard)
        shared = shared or HQ_HINT in switchboard
        # A client's hint alone names the modifier, not the prior: many numbers typed hq
        # are the person's own line (P89).
        if switchboard != [HQ_HINT]:
            kind = "switchboard"
    belief = lines.belief(kind, calls, now, shared=shared, scale=rate_scale, tally=tally)
    probability = belief.connect_rate
    if any(c.outcome == "screened" for c in calls[-RECENT_CALLS:]):
        # A caller must know, though one screened call is weak evidence of the rate.
        modifier = modifier or "sf"
        reasons.append("calls are screened")
    elif belief.screening >= SF_SHARE:
        modifier = modifier or "sf"
    reasons.extend(_state_notes(belief))
    if calls:
        connects = sum(counts[outcome] for outcome in CONNECTS)
        reasons.append(
            f"{len(calls)} reported call{'s' if len(calls) != 1 else ''}, {connects} connected: "
            f"estimated connect rate {_percent(probability)}{_scaled(rate_scale, kind)}"
        )
    else:
        reasons.append(
            f"no calls reported: expected connect rate {_percent(probability)}"
            f"{_scaled(rate_scale, kind)}"
        )
    if counts["wrong_number"]:
        # Someone else's number now, whatever the estimate (which the reasons still give, as
        # the tally still counts the calls): calling it is what consent rules forbid. No
        # modifier, not even dnc, as below; the list stays among the reasons.
        reported = wrong_number_report(evidence, now)
        if reported is not None:
            day = datetime.fromtimestamp(reported, UTC).date().isoformat()
            reason = f"reported a wrong number on {day}"
            return PhoneScore("na - auth", (reason, *reasons), ivr_path, 0.0)
    if probability < NA_FLOOR:
        if belief.other >= belief.dead:
            return PhoneScore("na - auth", tuple(reasons), ivr_path, 0.0)
        return PhoneScore(_status("na", modifier), tuple(reasons), ivr_path, 0.0)
    status = _status(_tier(probability), modifier)
    if status.startswith("na"):  # a listed number that is not p1 (see _status)
        probability = 0.0
    return PhoneScore(status, tuple(reasons), ivr_path, probability)


def connect_rate(score: PhoneScore | None) -> float | None:
    """The entry's ``connectRate`` (D17): the estimate to two decimals, None for ``na``."""
    if score is None or score.status.startswith("na"):
        return None
    return round(score.probability, 2)


def phone_entry(phone: ParsedPhone, score: PhoneScore | None) -> dict[str, Any]:
    return {
        "number": phone.number,
        "status": None if score is None else score.status,
        "type": display_type(phone),
        "country": phone.country,
        "region": phone.region,
        "position": phone.position,
        "ivrPath": None if score is None else score.ivr_path,
        "connectRate": connect_rate(score),
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
    """The number to dial first (D17): the best tier, then modifier; among equals, one
    callable now when the entries carry their verdicts (P177), then the connect rate, a
    mobile, the earlier position."""
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
            0 if entry.get("callableNow") is True else 1,
            -(entry.get("connectRate") or 0.0),
            0 if entry["type"] == "mobile" else 1,
            entry["position"],
        )
        candidates.append((rank, entry))
    if not candidates:
        return None
    entry = min(candidates, key=lambda c: c[0])[1]
    return {"number": entry["number"], "status": entry["status"], "ivrPath": entry["ivrPath"]}


def tally_calls(numbers: Iterable[tuple[str, NumberEvidence]], now: float) -> lines.Tally:
    """A client's reported calls against the model, number by number (P90): each number
    (E.164) with its evidence, as a contact's only phone with no hints."""
    tally = lines.Tally()
    for e164, evidence in numbers:
        if evidence.calls:
            phone = parse_phone(e164, position=1, slot="phone", type_hint=None, country_hint=None)
            score_phone(phone, evidence, now, tally=tally)
    return tally


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
    *,
    rate_scale: lines.RateScale = lines.NO_SCALE,
) -> ContactScore:
    """Scores already parsed numbers; ``notes`` adds reasons to numbers (by E.164)."""
    phones = []
    for phone in parsed:
        ev = evidence.get(phone.e164 or "", NO_EVIDENCE)
        score = score_phone(phone, ev, now, rate_scale=rate_scale)
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
