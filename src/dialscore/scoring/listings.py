"""What the registries a number is checked against say of it, in a phone's reasons: how old
its do-not-call lists are (P188), and the FCC Reassigned Numbers Database's answer (P192)."""

from __future__ import annotations

from dialscore.scoring.evidence import ReassignedCheck

# The most days a do-not-call list may go without a fresh copy: the Telemarketing Sales Rule
# asks sellers to download the national registry at least every 31 days (16 CFR 310.4(b)(3)).
DNC_MAX_AGE_DAYS = 31


def dnc_age_reason(name: str, days: int) -> str:
    """How old the newest file of a do-not-call list a number is on is, and a warning when
    it is older than the rule allows (P188)."""
    age = f"do-not-call list {name}: newest file {days} day{'s' if days != 1 else ''} old"
    if days > DNC_MAX_AGE_DAYS:
        return f"{age}, older than the {DNC_MAX_AGE_DAYS} days the rule allows: import a fresh copy"
    return age


RND = "FCC Reassigned Numbers Database"


def reassigned_reason(check: ReassignedCheck) -> str:
    """What a phone's reasons say of the Reassigned Numbers Database's answer (P192)."""
    since = check.consent_date
    if not check.date_valid:
        return f"consent date not a date: {since!r}: not checked for reassignment"
    if check.answer == "yes":
        return f"reassigned since the consent date {since} ({RND})"
    if check.answer == "no":
        return f"not reassigned since the consent date {since} ({RND})"
    if check.answer == "no_data":
        return f"the Reassigned Numbers Database has no data for it since {since}: not checked"
    return f"the Reassigned Numbers Database did not answer: not checked since {since}"
