"""When a number may be called and when it is worth it: a pure engine over packaged rules
(docs/compliance.md). No database, no network; the clock is passed in."""

from dialscore.compliance.best_hours import (
    LEARNING_PERIOD,
    BestHours,
    CallTally,
    learned_best_hours,
    prior_best_hours,
    tally_calls,
    tally_type,
)
from dialscore.compliance.places import number_zone
from dialscore.compliance.rules import CallWindow, Rules, RulesError, load_rules
from dialscore.compliance.verdict import (
    Bearings,
    PhoneFields,
    Verdict,
    assess,
    bearings,
    present,
    written,
)

__all__ = [
    "LEARNING_PERIOD",
    "Bearings",
    "BestHours",
    "CallTally",
    "CallWindow",
    "PhoneFields",
    "Rules",
    "RulesError",
    "Verdict",
    "assess",
    "bearings",
    "learned_best_hours",
    "load_rules",
    "number_zone",
    "present",
    "prior_best_hours",
    "tally_calls",
    "tally_type",
    "written",
]
