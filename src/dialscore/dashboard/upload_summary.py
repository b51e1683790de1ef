"""What starting an upload would do, worked out from its table and mapping: the counts, the
cost and the rejected rows with their reasons, as the action page shows them."""

from __future__ import annotations

import dataclasses
from typing import Any

from dialscore.accounts.schemas import EffectivePlan
from dialscore.dashboard import csvin
from dialscore.dashboard.mapping import who_and_number
from dialscore.dashboard.words import words
from dialscore.jobs.schemas import Kind
from dialscore.submissions import service as submissions

SHOWN_ROWS = 200


def unscored(table: csvin.Table, mapping: list[str]) -> list[str]:
    """What the page says of each column of numbers that the job would not score."""
    return [
        f"{count:,} number{'s' if count != 1 else ''} in \u201c{name}\u201d will not be "
        "scored: choose a phone for the column to score them."
        for name, count in csvin.unscored_phone_columns(table, mapping)
    ]


def reasons(built: csvin.Contacts, by_rules: list[tuple[int, str]]) -> dict[int, str]:
    """Every rejected row's reason, by row index: its damage, or the rules' reason for its
    contact (with what was noticed in its cells)."""
    found = dict(built.rejected)
    for position, reason in by_rules:
        row = built.positions[position]
        note = built.notes.get(row)
        said = words().rejection(reason)
        found[row] = f"{said} ({note})" if note else said
    return dict(sorted(found.items()))


def summary(
    table: csvin.Table, mapping: list[str], plan: EffectivePlan, kind: Kind
) -> dict[str, Any]:
    """What starting would do, as the action page shows it (JSON, kept with the upload)."""
    built = csvin.build_contacts(table, mapping)
    estimate = submissions.estimate(plan, kind, built.contacts)
    rejected = reasons(built, estimate.rejected)
    warnings = [f for f in built.findings if not f.reject]
    return {
        "accepted": estimate.accepted,
        "phones": estimate.phones,
        "units": estimate.units,
        "cost": str(estimate.cost),
        "rows": len(table.rows),
        "blank_rows": table.blank_rows,
        "rejected": [
            dict(zip(("name", "number"), who_and_number(table.rows[i], mapping), strict=True))
            | {"row": i + 2, "reason": reason}
            for i, reason in list(rejected.items())[:SHOWN_ROWS]
        ],
        "rejected_count": len(rejected),
        "footer": len(table.footer),
        "unscored": unscored(table, mapping),
        "findings": [dataclasses.asdict(f) for f in warnings[:SHOWN_ROWS]],
        "warning_count": len(warnings),
    }
