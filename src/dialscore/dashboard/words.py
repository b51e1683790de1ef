"""The words dialscore shows people (``data/words.toml``): labels of codes, field names and
result columns, for the pages, the results CSV and the glossary of docs/dashboard.md."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import cache
from importlib import resources
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from dialscore.enrichment.service import known_sources
from dialscore.jobs.schemas import CONTACT_INPUT_FIELDS, JOB_TYPES, PHONE_INPUT_FIELDS
from dialscore.scoring.engine import PHONE_STATUSES
from dialscore.scoring.numbers import ENRICHED_TYPE
from dialscore.submissions import rules


@dataclass(frozen=True)
class Term:
    label: str
    sentence: str


@dataclass(frozen=True)
class Words:
    kinds: dict[str, Term]
    scoring_types: dict[str, Term]
    job_types: dict[str, str]
    sources: dict[str, str]
    job_states: dict[str, Term]
    lead_statuses: dict[str, Term]
    tiers: dict[str, Term]
    modifiers: dict[str, Term]
    phone_types: dict[str, str]
    field_groups: list[str]
    phone_choices: dict[str, str]
    phone_group: str
    phone_country: str
    other_choices: str
    fields: dict[str, tuple[str, str]]
    mapping_choices: dict[str, str]
    rejection_reasons: dict[str, str]
    columns: dict[str, str]
    column_meanings: dict[str, str]
    deleting: Term
    deleting_done: str
    deleting_again: str
    body_removed: dict[str, Term]
    calling: dict[str, str]
    weekdays: tuple[str, ...]
    # What a plan does with the enrichment contacts for which nothing is found (P202).
    refunds: dict[str, str]
    # The enrichment sources by name, and the Account page's words on a client's own provider
    # keys and order of sources (P204).
    enrichment_names: dict[str, str]
    enrichment_settings: dict[str, str]
    # The Enrichment sources page's words, and its table's columns (P205).
    enrichment_sources: dict[str, str]
    enrichment_columns: dict[str, Term]

    # -- codes in words ---------------------------------------------------------------------

    def job_type(self, code: str) -> str:
        return self.job_types.get(code, code)

    def job_state(self, code: str) -> str:
        term = self.job_states.get(code)
        return term.label if term else code

    def lead_status(self, code: str | None) -> str:
        term = self.lead_statuses.get(code or "")
        return term.label if term else (code or "")

    def phone_status(self, code: str | None) -> str:
        """``p1 - h`` as "High, switchboard"; "Not scored" for none."""
        if not code:
            return "Not scored"
        tier, _, modifier = code.partition(" - ")
        words = self.tiers[tier].label if tier in self.tiers else tier
        if modifier:
            words += ", " + (
                self.modifiers[modifier].label if modifier in self.modifiers else modifier
            )
        return words

    def phone_type(self, code: str | None) -> str:
        if not code:
            return ""
        if code.startswith(ENRICHED_TYPE):
            return self.phone_types["enriched"]
        return self.phone_types.get(code, code)

    def rejection(self, reason: str) -> str:
        """A submission rule's reason in words; any other reason as it is."""
        return self.rejection_reasons.get(reason, reason)

    def field(self, name: str) -> str:
        found = self.fields.get(name)
        return found[0] if found else name

    def column(self, name: str, **values: Any) -> str:
        """A results CSV column's name: ``column("phone_status", n=2)``."""
        return self.columns[name].format(**values)

    # -- a phone's call verdict, as of the page (P177) --------------------------------------

    def callable_now(self, entry: dict[str, Any]) -> str:
        """Yes, No or Not known."""
        now = entry.get("callableNow")
        return self.calling["unknown" if now is None else ("yes" if now else "no")]

    def next_window(self, entry: dict[str, Any], now: datetime) -> str:
        """When a phone may be called, in its local time: "until 21:00 (their time)" when it
        may be now, "from 9:00 tomorrow (their time)" when not; "" when not known."""
        zone = _zone(entry.get("timeZone"))
        if zone is None:
            return ""
        window = entry.get("callWindow")
        if entry.get("callableNow") is True:
            if not window:
                return ""
            return self.calling["until"].format(time=_clock(window["end"]))
        text = entry.get("nextCallableAt")
        if not isinstance(text, str):
            return ""
        at = datetime.fromisoformat(text).astimezone(zone)
        today = now.astimezone(zone).date()
        if at.date() == today:
            day = self.calling["today"]
        elif at.date() == today + timedelta(days=1):
            day = self.calling["tomorrow"]
        else:
            day = self.calling["on"].format(
                weekday=self.weekdays[at.weekday()], date=f"{at.day} {at:%B}"
            )
        return self.calling["next"].format(time=f"{at.hour}:{at:%M}", day=day)

    def best_hours(self, entry: dict[str, Any]) -> str:
        """A phone's best hours in words: "Monday to Friday 17:00 to 19:00; …"; "" for none."""
        parts = []
        for hours in entry.get("bestCallHours") or ():
            days = [_DAY_CODES.index(day) for day in hours["days"]]
            if days == [0, 1, 2, 3, 4]:
                named = self.calling["workdays"]
            else:
                named = ", ".join(self.weekdays[day] for day in days)
            span = self.calling["hours"].format(start=hours["from"], end=hours["to"])
            parts.append(f"{named} {span}")
        if not parts:
            return ""
        return self.calling["best"].format(hours="; ".join(parts))

    def body_removed_term(self, reason: str | None, days: int | str) -> Term:
        """Why a delivery has no body any more (its ``bodyRemovedReason``), ``days`` being
        how long a finished delivery keeps it."""
        term = self.body_removed.get(reason or "", self.body_removed["retention"])
        return Term(term.label, term.sentence.format(days=days))


_DAY_CODES = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")


def _zone(name: Any) -> ZoneInfo | None:
    if not isinstance(name, str):
        return None
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return None


def _clock(text: str) -> str:
    """``09:00`` as 9:00, ``24:00`` as midnight's 24:00."""
    return text[1:] if text.startswith("0") else text


def _terms(table: dict[str, Any]) -> dict[str, Term]:
    return {code: Term(entry["label"], entry["sentence"]) for code, entry in table.items()}


def parse(data: dict[str, Any]) -> Words:
    """The words of a parsed words file, checked against the codes they name: a missing or
    unknown code is an error here, not a raw code on a page."""
    words = Words(
        kinds=_terms(data["kinds"]),
        scoring_types=_terms(data["scoring_types"]),
        job_types=dict(data["job_types"]),
        sources=dict(data["sources"]),
        job_states=_terms(data["job_states"]),
        lead_statuses=_terms(data["lead_statuses"]),
        tiers=_terms(data["tiers"]),
        modifiers=_terms(data["modifiers"]),
        phone_types=dict(data["phone_types"]),
        field_groups=list(data["field_groups"]),
        phone_choices={
            k: v
            for k, v in data["phone_choices"].items()
            if k not in ("group", "other_group", "country")
        },
        phone_group=data["phone_choices"]["group"],
        phone_country=data["phone_choices"]["country"],
        other_choices=data["phone_choices"]["other_group"],
        fields={name: (e["label"], e["group"]) for name, e in data["fields"].items()},
        mapping_choices=dict(data["mapping_choices"]),
        rejection_reasons=dict(data["rejection_reasons"]),
        columns={name: e["name"] for name, e in data["columns"].items()},
        column_meanings={name: e["holds"] for name, e in data["columns"].items()},
        deleting=Term(data["deleting"]["label"], data["deleting"]["sentence"]),
        deleting_done=data["deleting"]["done"],
        deleting_again=data["deleting"]["again"],
        body_removed=_terms(data["body_removed"]),
        calling={k: v for k, v in data["calling"].items() if k != "weekdays"},
        weekdays=tuple(data["calling"]["weekdays"]),
        refunds=dict(data["refunds"]),
        enrichment_names=dict(data["enrichment_names"]),
        enrichment_settings=dict(data["enrichment_settings"]),
        enrichment_sources={k: v for k, v in data["enrichment_sources"].items() if k != "columns"},
        enrichment_columns=_terms(data["enrichment_sources"]["columns"]),
    )
    _check(words)
    return words


def _same(what: str, found: set[str], expected: set[str]) -> None:
    if found != expected:
        missing, unknown = sorted(expected - found), sorted(found - expected)
        raise ValueError(f"words: {what}: missing {missing}, unknown {unknown}")


def _check(words: Words) -> None:
    _same("kinds", set(words.kinds), {"scoring", "enrichment"})
    _same("scoring types", set(words.scoring_types), {"lightning", "core"})
    _same("job types", set(words.job_types), set(JOB_TYPES))
    _same("sources", set(words.sources), {"app", "api"})
    _same("job states", set(words.job_states), {"Init", "Processing", "Finalized", "Not Enriched"})
    leads = {"P1", "P2", "P3", "Needs Attention", "No Numbers Found", "Uncontacted"}
    _same("lead statuses", set(words.lead_statuses), leads)
    parts = [status.partition(" - ") for status in PHONE_STATUSES]
    _same("tiers", set(words.tiers), {tier for tier, _, _ in parts})
    _same("modifiers", set(words.modifiers), {m for _, _, m in parts if m})
    _same("phone types", set(words.phone_types), {"mobile", "direct", "hq", "other", "enriched"})
    _same("phone choices", set(words.phone_choices), {"mobile", "direct", "hq", "other", "unknown"})
    # The phone slots, types and countries are chosen per column as phones of some type.
    offered = {f for f in CONTACT_INPUT_FIELDS if f not in PHONE_INPUT_FIELDS}
    _same("fields", set(words.fields), offered)
    groups = {group for _, group in words.fields.values()} | {words.phone_group}
    _same("field groups", set(words.field_groups), groups)
    _same("mapping choices", set(words.mapping_choices), {"extra", "ignore"})
    _same("rejection reasons", set(words.rejection_reasons), set(rules.REASONS))
    columns = {"lead_status", "best_phone", "best_phone_status", "rejected_reason"}
    phone_parts = ("", "_status", "_type", "_country", "_reasons", "_time_zone", "_callable_now")
    columns |= {f"phone{p}" for p in (*phone_parts, "_next_callable_at", "_best_call_hours")}
    _same("columns", set(words.columns), columns | {"column_status", "column_reasons"})
    _same("body removed", set(words.body_removed), {"retention", "job_erased"})
    calling = {"column", "yes", "no", "unknown", "until", "next", "today", "tomorrow", "on"}
    calling |= {"workdays", "hours", "best"}
    _same("calling", set(words.calling), calling)
    _same("refunds", set(words.refunds), {"label", "on", "off", "job_label", "job"})
    _same("enrichment names", set(words.enrichment_names), set(known_sources()))
    enrichment = {"own_key", "not_set", "not_asked", "key_saved", "key_removed", "key_none"}
    enrichment |= {"key_refused", "order_saved", "order_reset", "order_twice", "order_missing"}
    _same("enrichment settings", set(words.enrichment_settings), enrichment)
    _same("enrichment sources", set(words.enrichment_sources), {"own_key", "unfound", "total"})
    columns = {"source", "tried", "found", "charged", "refunded", "calls", "reached"}
    _same("enrichment source columns", set(words.enrichment_columns), columns)
    if len(words.weekdays) != 7:
        raise ValueError("words: calling: weekdays must name the 7 days, Monday first")


def _rows(pairs: list[tuple[str, str, str]]) -> list[str]:
    return [f"| {label} | `{code}` | {sentence} |" for label, code, sentence in pairs]


def glossary(w: Words) -> str:
    """The glossary of docs/dashboard.md, in Markdown: every word a page or a results column
    shows, with the code the API uses for it."""
    head = ["| shown as | code | meaning |", "|---|---|---|"]
    part: list[str] = ["### What a job does", "", *head]
    part += _rows([(t.label, k, t.sentence) for k, t in w.kinds.items()])
    part += _rows([(t.label, k, t.sentence) for k, t in w.scoring_types.items()])
    part += ["", "Job types: " + "; ".join(f"{v} (`{k}`)" for k, v in w.job_types.items()) + "."]
    part += ["", "### Job states", "", *head]
    part += _rows([(t.label, k, t.sentence) for k, t in w.job_states.items()])
    part += ["", "### Lead status, one per contact", "", *head]
    part += _rows([(t.label, k, t.sentence) for k, t in w.lead_statuses.items()])
    part += ["", "### Phone status, one per number: a level and at most one addition", "", *head]
    part += _rows([(t.label, k, t.sentence) for k, t in w.tiers.items()])
    part += _rows([(t.label, k, t.sentence) for k, t in w.modifiers.items()])
    part += ["", "Phone types: " + "; ".join(f"{v} (`{k}`)" for k, v in w.phone_types.items())]
    part[-1] += " (`Service Enriched Phone N` in the API)."
    part += ["", "### The columns of the results CSV", "", "| column | holds |", "|---|---|"]
    part += [f"| `{w.columns[name]}` | {text} |" for name, text in w.column_meanings.items()]
    part += ["", "### Deleting a job, and what a webhook delivery keeps", "", *head]
    part += _rows([(w.deleting.label, "DELETE /api/public/v2/jobs/{jobId}", w.deleting.sentence)])
    days = "`DIALSCORE_WEBHOOK_RETENTION_DAYS` (30 by default)"
    removed = [(code, w.body_removed_term(code, days)) for code in w.body_removed]
    part += _rows([(t.label, f"bodyRemovedReason: {code}", t.sentence) for code, t in removed])
    return "\n".join(part) + "\n"


@cache
def words() -> Words:
    """The package's words, read once."""
    text = resources.files("dialscore.dashboard").joinpath("data/words.toml").read_text("utf-8")
    return parse(tomllib.loads(text))
