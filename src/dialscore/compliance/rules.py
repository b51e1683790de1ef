"""Calling-time rules: the packaged rules file, an operator's file over it, and the window
the rules that apply to a number allow on a given day."""

from __future__ import annotations

import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, time
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, Final, Literal

import holidays
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    field_validator,
    model_validator,
)

WEEKDAYS: Final = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
PACKAGED: Final = "rules.toml"
# A country (ISO 3166-1 alpha-2), or a country and one of its subdivisions ("US-FL").
JurisdictionKey = Annotated[str, StringConstraints(pattern=r"^[A-Z]{2}(-[A-Z0-9]{1,3})?$")]


class RulesError(ValueError):
    """A rules file that cannot be used; the message names the file and the bad rule."""


class Hours(BaseModel):
    """A local window: calls at or after ``start`` and before ``end``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    start: time
    end: time

    @model_validator(mode="after")
    def _ordered(self) -> Hours:
        if self.end <= self.start:
            raise ValueError(f"end {self.end:%H:%M} is not after start {self.start:%H:%M}")
        return self


class HolidayRule(BaseModel):
    """Whether calls are allowed on the holidays of a calendar (the ``holidays`` package's)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    allowed: bool
    # "US": the federal holidays; "US-LA": the federal ones and Louisiana's.
    calendar: str = "US"

    @field_validator("calendar")
    @classmethod
    def _known_calendar(cls, value: str) -> str:
        country, _, subdivision = value.partition("-")
        try:
            holiday_dates(country, subdivision or None, 2026)
        except (NotImplementedError, KeyError, AttributeError) as error:
            raise ValueError(
                f"calendar {value!r} is not one the holidays package knows "
                "(a country code, or a country and subdivision such as US-LA)"
            ) from error
        return value


DayRule = Hours | bool


class Jurisdiction(BaseModel):
    """One jurisdiction's calling-time rules, with the law they come from."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1)
    source: str = Field(min_length=1)
    hours: Hours | None = None
    monday: DayRule | None = None
    tuesday: DayRule | None = None
    wednesday: DayRule | None = None
    thursday: DayRule | None = None
    friday: DayRule | None = None
    saturday: DayRule | None = None
    sunday: DayRule | None = None
    holidays: HolidayRule | None = None
    max_calls_per_24h: int | None = Field(default=None, ge=1)

    def day(self, weekday: int) -> DayRule | None:
        """The rule for a weekday (0 is Monday): its own, else None (``hours`` governs)."""
        rule: DayRule | None = getattr(self, WEEKDAYS[weekday])
        return rule


class RulesDocument(BaseModel):
    """A rules file as written."""

    model_config = ConfigDict(extra="forbid")

    version: str = Field(min_length=1)
    # An operator's file extends the packaged rules (its keys replace the packaged ones) or
    # replaces them whole.
    mode: Literal["extend", "replace"] = "extend"
    jurisdictions: dict[JurisdictionKey, Jurisdiction]


@dataclass(frozen=True, slots=True)
class Rules:
    """The rules in force: the packaged file, with an operator's file over it."""

    version: str
    jurisdictions: Mapping[str, Jurisdiction]
    # What verdicts worked out under these rules and nothing else (where a place's
    # jurisdictions and zone are, a day's window in a zone, best hours), kept for the next
    # number by dialscore.compliance.verdict (P172). Other rules start with their own.
    memo: dict[tuple[object, ...], object] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def applying(self, country: str | None, states: Sequence[str]) -> tuple[Applied, ...]:
        """The jurisdictions that apply to a number in ``country`` and ``states``, most
        specific first (a state's before its country's)."""
        if country is None:
            return ()
        found: list[Applied] = []
        for state in states:
            key = f"{country}-{state}"
            rule = self.jurisdictions.get(key)
            if rule is not None and all(key != seen.key for seen in found):
                found.append(Applied(key, rule))
        national = self.jurisdictions.get(country)
        if national is not None:
            found.append(Applied(country, national))
        return tuple(found)


@dataclass(frozen=True, slots=True)
class Applied:
    """A jurisdiction that applies to a number, by its key."""

    key: str
    rule: Jurisdiction


@dataclass(frozen=True, slots=True)
class CallWindow:
    """The local window of one day and the rule that sets it; ``start`` is None on a day
    calls are not allowed. ``end`` None: no limit up to midnight."""

    start: time | None
    end: time | None
    rule: str
    source: str

    @property
    def allowed(self) -> bool:
        return self.start is not None


def window_on(
    applied: Sequence[Applied], weekday: int, is_holiday: Callable[[str], bool]
) -> CallWindow | None:
    """The strictest window the ``applied`` jurisdictions allow on a day (``weekday``, 0 is
    Monday; ``is_holiday(calendar)`` tells whether the day is a holiday of a calendar). None
    when no jurisdiction applies."""
    if not applied:
        return None
    starts: list[tuple[time, Applied]] = []
    ends: list[tuple[time, Applied]] = []
    for each in applied:
        rule = each.rule
        holiday_rule = rule.holidays
        if (
            holiday_rule is not None
            and not holiday_rule.allowed
            and is_holiday(holiday_rule.calendar)
        ):
            return CallWindow(None, None, each.key, rule.source)
        day = rule.day(weekday)
        if day is False:
            return CallWindow(None, None, each.key, rule.source)
        hours = day if isinstance(day, Hours) else rule.hours
        if hours is not None:
            starts.append((hours.start, each))
            ends.append((hours.end, each))
    if not starts:
        return CallWindow(time(0, 0), None, ", ".join(a.key for a in applied), "no limit")
    # The latest start and the earliest end; of equal bounds, the most specific rule's.
    start = max(t for t, _ in starts)
    end = min(t for t, _ in ends)
    start_by = next(a for t, a in starts if t == start)
    end_by = next(a for t, a in ends if t == end)
    if start >= end:
        by = start_by if start_by is not end_by else end_by
        return CallWindow(None, None, f"{start_by.key}, {end_by.key}", by.rule.source)
    if start_by is end_by:
        return CallWindow(start, end, start_by.key, start_by.rule.source)
    return CallWindow(
        start,
        end,
        f"{start_by.key}, {end_by.key}",
        f"{start_by.rule.source}; {end_by.rule.source}",
    )


def call_cap(applied: Sequence[Applied]) -> tuple[int, Applied] | None:
    """The smallest number of calls in 24 hours the ``applied`` jurisdictions allow."""
    caps = [(a.rule.max_calls_per_24h, a) for a in applied if a.rule.max_calls_per_24h]
    if not caps:
        return None
    limit, by = min(caps, key=lambda pair: pair[0] or 0)
    assert limit is not None
    return limit, by


@lru_cache(maxsize=256)
def holiday_dates(country: str, subdivision: str | None, year: int) -> frozenset[date]:
    """The holidays of a country in a year and, with a subdivision, that subdivision's too
    (observed days included)."""
    dates = set(holidays.country_holidays(country, years=year))
    if subdivision is not None:
        dates |= set(holidays.country_holidays(country, subdiv=subdivision, years=year))
    return frozenset(dates)


def is_holiday(calendar: str, day: date) -> bool:
    """Whether ``day`` is a holiday of ``calendar`` ("US", "US-LA")."""
    country, _, subdivision = calendar.partition("-")
    return day in holiday_dates(country, subdivision or None, day.year)


def _describe(error: ValidationError, origin: str) -> str:
    lines = []
    for problem in error.errors():
        location = [str(part) for part in problem["loc"]]
        message = problem["msg"].removeprefix("Value error, ")
        if len(location) >= 2 and location[0] == "jurisdictions":
            field = ".".join(location[2:]) or "(the rule itself)"
            lines.append(f"rule {location[1]}, {field}: {message}")
        else:
            lines.append(f"{'.'.join(location) or '(the file)'}: {message}")
    return f"compliance rules {origin} refused: " + "; ".join(lines)


def parse_rules(text: str, origin: str) -> RulesDocument:
    """A rules file's text, checked; ``origin`` names it in errors."""
    try:
        raw: dict[str, Any] = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise RulesError(f"compliance rules {origin} is not valid TOML: {error}") from error
    try:
        return RulesDocument.model_validate(raw)
    except ValidationError as error:
        raise RulesError(_describe(error, origin)) from error


@lru_cache(maxsize=1)
def packaged_rules() -> RulesDocument:
    """The rules file in the package, read once."""
    text = resources.files("dialscore.compliance").joinpath(PACKAGED).read_text("utf-8")
    return parse_rules(text, f"file {PACKAGED} (packaged)")


@lru_cache(maxsize=1)
def packaged_in_force() -> Rules:
    """The packaged rules alone, one ``Rules`` for the process: what its memo keeps serves
    every job (P172)."""
    packaged = packaged_rules()
    return Rules(packaged.version, dict(packaged.jurisdictions))


def load_rules(path: str | Path | None = None) -> Rules:
    """The rules in force: the packaged ones, extended or replaced (``mode = "replace"``) by
    the operator's file at ``path`` (DIALSCORE_COMPLIANCE_RULES) when given."""
    if path is None:
        return packaged_in_force()
    packaged = packaged_rules()
    file = Path(path)
    try:
        text = file.read_text("utf-8")
    except OSError as error:
        raise RulesError(f"compliance rules file {file} cannot be read: {error}") from error
    operator = parse_rules(text, f"file {file}")
    if operator.mode == "replace":
        return Rules(operator.version, dict(operator.jurisdictions))
    return Rules(
        f"{packaged.version}+{operator.version}",
        {**packaged.jurisdictions, **operator.jurisdictions},
    )
