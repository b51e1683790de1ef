"""What is known about one number besides its digits, gathered before scoring. Pure data."""

from __future__ import annotations

from dataclasses import dataclass, field

OUTCOMES = (
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
    "dnc_request",
)
BLOCK_CATEGORIES = ("wireless", "landline", "voip")
VERIFIED_LINE_TYPES = (
    "mobile",
    "landline",
    "voip",
    "toll_free",
    "premium",
    "shared_cost",
    "personal",
    "pager",
    "voicemail",
    "uan",
    "unknown",
)


@dataclass(frozen=True)
class Call:
    """One reported call to the number: its outcome and when (Unix seconds), and whom it
    was about: ``person`` is "same" when it was reported for the person being scored,
    "other" for someone else, None when no one known was named; ``named`` says whether
    it was reported with a contact at all (a contact whose name is not known is None)."""

    outcome: str
    at: float
    ivr_path: str | None = None
    person: str | None = None
    named: bool = False


@dataclass(frozen=True)
class Verification:
    """A verification provider's answer for the number (core scoring)."""

    provider: str
    line_type: str
    carrier: str | None = None
    valid: bool = True

    def __post_init__(self) -> None:
        if self.line_type not in VERIFIED_LINE_TYPES:
            raise ValueError(
                f"line_type {self.line_type!r} is not one of "
                f"{', '.join(sorted(VERIFIED_LINE_TYPES))}"
            )


# What the FCC Reassigned Numbers Database answers of a number since a date (P191).
REASSIGNED_ANSWERS = ("yes", "no", "no_data")


@dataclass(frozen=True)
class ReassignedCheck:
    """The FCC Reassigned Numbers Database asked about the number since the contact's consent
    date (P190): ``answer`` is one of REASSIGNED_ANSWERS, or None when the database did not
    answer; ``consent_date`` is the ISO date asked about, or, when ``date_valid`` is False,
    the value the contact gave, which is no date and was not asked about."""

    consent_date: str
    answer: str | None = None
    date_valid: bool = True

    def __post_init__(self) -> None:
        if self.answer is not None and self.answer not in REASSIGNED_ANSWERS:
            raise ValueError(f"answer {self.answer!r} is not one of {REASSIGNED_ANSWERS}")


@dataclass(frozen=True)
class NumberEvidence:
    # The carrier category of the number's imported NANP block.
    block: str | None = None
    # The do-not-call lists the number is on.
    dnc_lists: tuple[str, ...] = ()
    # Of those whose imports are recorded, each with the age in days of its newest import's
    # file when the number was scored (P188).
    dnc_file_ages: tuple[tuple[str, int], ...] = ()
    # Calls the client reported, oldest first.
    calls: tuple[Call, ...] = field(default_factory=tuple)
    # How many other people of the same company carry this number in the client's data.
    shared_with: int = 0
    # Whether anyone else in the client's data carries this number, of any company or none
    # (a contact without a name: any other contact).
    carried_by_others: bool = False
    # The number is a company's main line in the imported directory (with its dial tree).
    company_line: bool = False
    directory_ivr_path: str | None = None
    verification: Verification | None = None
    # The Reassigned Numbers Database's answer since this contact's consent date (P190).
    reassigned: ReassignedCheck | None = None


NO_EVIDENCE = NumberEvidence()
