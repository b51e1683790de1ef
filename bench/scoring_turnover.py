"""World D of ``scoring_eval.py``: desks that change hands, team lines, mobiles that let a
second call through, and dialers that log some dispositions at random.

Built on assumptions the other worlds do not make (none of its settings was chosen by looking
at how the engine does on it):

- **Desks change hands.** People leave at 20-30 % a year (a rate per company). A direct line
  belongs to the desk, not the person: it goes to voicemail with the old greeting while the
  desk is empty (0-60 days), then rings the successor, who answers at a rate of their own.
  A caller asking for the one who left reports ``wrong_number`` less than half the time; a
  third of the time the call is logged ``connected`` (someone answered), the rest
  ``gatekeeper``. A fifth of the successors are contacts in the client's data too, on the same
  line. (World B's direct lines go dead, to reception or to a successor; here every one goes
  to a successor, and a connect on it may be someone else.)
- **Team lines.** A team of 2-8 people shares an ordinary fixed number (no dial tree, rarely in
  the directory, typed ``direct`` by vendors more often than ``hq``) that whoever is free picks
  up: the person asked for answers, or is put through, only part of the time, and a teammate
  who answers is logged ``connected`` or ``gatekeeper``. Only some of a team are in the
  client's data (``shared_with`` counts those).
- **Mobiles that silence unknown callers** (a quarter from the start, more over time) send a
  first call to voicemail but ring through on a second call within three minutes. Some
  campaigns redial a mobile at once after a miss; the truth judged is a single call.
- **Dialers log a share of dispositions at random**: 0-35 % per campaign, any outcome, and no
  systematic confusions (world B's dialers mislog systematically, 2 % at random).
- **Calls come in weekly waves** over the last 540 days (4 % of the contacts a week, one pass
  each, up to three numbers in slot order until one connects), half of which say whom a call
  was for. US office lines are mostly in VoIP carriers' blocks (40 %).

The true probability of a number for a contact is that of one call made now reaching that
contact: 0 on a desk that has changed hands, on a team line once they have left, and on a
number someone else holds.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

from dialscore.scoring.evidence import Call, NumberEvidence
from scoring_worlds import (
    CONNECTS,
    DAY,
    NOW,
    REPORTED_OUTCOMES,
    SLOTS,
    YEAR,
    SimContact,
    SimNumber,
    World,
    pick,
    real_number,
)

HISTORY_DAYS = 720.0
START = NOW - HISTORY_DAYS * DAY
# Who holds a line: a person's id, or one of these.
STRANGER = -1  # someone not in the client's data (a recycled mobile, a vendor's error)
VACANT = -2  # an empty desk: the old greeting answers
DEAD = -3
MAX_CHAIN = 8  # holders of one desk; bounds every loop, never reached in practice
SILENCED = {"voicemail": 0.55, "voicemail_name_match": 0.25, "no_answer": 0.10, "screened": 0.10}
MOBILE_MISSES = {"voicemail": 0.40, "voicemail_name_match": 0.25, "no_answer": 0.30, "busy": 0.05}
DIRECT_MISSES = {"voicemail": 0.40, "voicemail_name_match": 0.20, "no_answer": 0.35, "busy": 0.05}
VACANT_DESK = {"voicemail_name_match": 0.30, "voicemail": 0.30, "no_answer": 0.40}
UNANSWERED = {"voicemail": 0.60, "no_answer": 0.40}  # a team's or a successor's line
DEAD_LINE = {"disconnected": 0.70, "no_answer": 0.20, "busy": 0.10}
# What the caller logs when someone other than the person asked for answers.
SUCCESSOR_ANSWERS = {"wrong_number": 0.45, "connected": 0.35, "gatekeeper": 0.20}
TEAMMATE_ANSWERS = {"connected": 0.45, "gatekeeper": 0.40, "wrong_number": 0.15}
TEAMMATE_ANSWERS_LEFT = {"wrong_number": 0.40, "gatekeeper": 0.40, "connected": 0.20}
STRANGER_ANSWERS = {"wrong_number": 0.70, "connected": 0.30}
TEAM_SIZES = {1: 0.30, 2: 0.20, 3: 0.15, 4: 0.12, 5: 0.10, 6: 0.08, 8: 0.05}
SLOT_ORDER = {"direct": 0.0, "team": 0.5, "mobile": 1.0}


@dataclass(frozen=True)
class TurnoverSettings:
    name: str
    assumes: str
    countries: dict[str, float]
    leave_rate: tuple[float, float]  # per year, drawn per company
    vacancy_days: tuple[float, float]  # an empty desk, before the successor sits at it
    successor_in_data: float  # successors the client adds as contacts
    teams_per_company: dict[int, float]
    team_line: float  # teams of 2 or more that share a line
    in_data: float  # members of a team that are contacts in the client's data
    carry: dict[str, float]  # a record's lines: mobile, direct, team
    answer_team: tuple[float, float]  # someone picks up the team line
    transfer: float  # a teammate puts the caller through to the person asked for
    direct: tuple[float, float]  # a desk's holder answers
    mobile: tuple[float, float]  # a mobile's holder answers
    silencing_first: tuple[float, float]  # a silencing mobile lets a first call through
    silencing_share: float  # mobiles silencing unknown callers from the start
    silencing_rate: float  # per year, mobiles that start to
    mobile_dead_rate: float  # per year: a mobile given up
    recycled_rate: float  # per year: a given-up mobile handed to someone else
    stranger_answers: tuple[float, float]
    vendor_error: float  # a record's number someone else's from the start
    early_share: float  # contacts in the data before the history starts
    record_age_days: float
    directory_share: float  # team lines in the imported directory
    block_share: float
    voip_share: float  # US office lines in VoIP carriers' blocks
    ported: float
    hint_share: float
    hint_noise: float
    team_hint_hq: float  # team lines typed hq (the others direct)
    campaign_days: float
    wave_share: float  # contacts a weekly wave dials
    dials_per_pass: int
    skip_dead: float  # a rep skips a number last logged disconnected or wrong
    redial_share: float  # waves that redial a mobile at once after a miss
    random_log: tuple[float, float]  # dispositions logged at random, per wave
    named_share: float  # waves that say whom each call was for


WORLD_D = TurnoverSettings(
    name="D",
    assumes=(
        "desks change hands (leaving 20-30 %/yr, direct lines pass to successors who answer), "
        "team lines picked up by whoever is free, mobiles that silence a first call but ring "
        "on a second, dispositions logged at random (0-35 % per wave), weekly waves; US 50 %"
    ),
    countries={"US": 0.50, "GB": 0.30, "DE": 0.20},
    leave_rate=(0.20, 0.30),
    vacancy_days=(0.0, 60.0),
    successor_in_data=0.2,
    teams_per_company={1: 0.5, 2: 0.3, 3: 0.2},
    team_line=0.8,
    in_data=0.6,
    carry={"mobile": 0.55, "direct": 0.70, "team": 0.75},
    answer_team=(0.35, 0.65),
    transfer=0.2,
    direct=(0.06, 0.18),
    mobile=(0.15, 0.45),
    silencing_first=(0.0, 0.04),
    silencing_share=0.25,
    silencing_rate=0.15,
    mobile_dead_rate=0.04,
    recycled_rate=2.0,
    stranger_answers=(0.20, 0.50),
    vendor_error=0.03,
    early_share=0.3,
    record_age_days=270.0,
    directory_share=0.1,
    block_share=0.6,
    voip_share=0.4,
    ported=0.05,
    hint_share=0.5,
    hint_noise=0.15,
    team_hint_hq=0.4,
    campaign_days=540.0,
    wave_share=0.04,
    dials_per_pass=3,
    skip_dead=0.6,
    redial_share=0.4,
    random_log=(0.0, 0.35),
    named_share=0.5,
)


@dataclass
class Person:
    pid: int
    country: str
    joined: float
    left: float  # math.inf: still there at NOW
    contact: bool  # in the client's data
    added: float = math.inf  # into the client's data
    record_at: float = -math.inf  # when the vendor recorded the person's lines
    lines: list[Line] = field(default_factory=list)
    last: dict[str, str] = field(default_factory=dict)  # last logged outcome by number

    def present(self, when: float) -> bool:
        return self.joined <= when < self.left


@dataclass
class Team:
    desks: list[list[Person]]  # each desk's holders, in turn
    p_answer: float  # someone picks up the team line
    transfer: float  # a teammate who answers puts the caller through

    def present(self, when: float) -> list[Person]:
        return [p for desk in self.desks for p in desk if p.present(when)]

    def reaches(self, when: float) -> float:
        """The share of the calls answered that reach a person present at ``when``: they
        answer themselves, or a teammate puts the call through."""
        present = len(self.present(when))
        return 1 / present + (1 - 1 / present) * self.transfer


@dataclass(frozen=True)
class LoggedCall:
    at: float
    target: int  # the person the call was made to reach
    outcome: str  # as logged
    named: bool


@dataclass
class Line:
    e164: str
    kind: str  # mobile | direct | team
    block: str | None
    holders: list[tuple[float, int]]  # (since, holder), oldest first
    p_holder: dict[int, float] = field(default_factory=dict)  # a holder's answer rate
    team: Team | None = None
    silencing_from: float = math.inf  # mobile: silences unknown callers from then on
    p_first: float = 0.0  # silencing: a first call gets through
    p_stranger: float = 0.0
    in_directory: bool = False
    calls: list[LoggedCall] = field(default_factory=list)
    carriers: int = 0

    def holder(self, when: float) -> int:
        current = self.holders[0][1]
        for since, holder in self.holders:
            if since > when:
                break
            current = holder
        return current


def truth(line: Line, person: Person, when: float) -> tuple[str, float]:
    """The state a single call made at ``when`` to reach ``person`` on ``line`` meets, and its
    chance of reaching them."""
    if line.kind == "team":
        assert line.team is not None
        if not person.present(when):
            return "team, left", 0.0
        return "team", line.team.p_answer * line.team.reaches(when)
    holder = line.holder(when)
    if holder == DEAD:
        return "dead", 0.0
    if holder == VACANT:
        return "vacant desk", 0.0
    if holder == STRANGER:
        return "reassigned", 0.0
    if holder != person.pid:
        return "successor's", 0.0
    if line.kind == "mobile":
        if when >= line.silencing_from:
            return "silencing", line.p_first
        return "mobile", line.p_holder[holder]
    return "direct", line.p_holder[holder]


def outcome(rng: random.Random, line: Line, person: Person, when: float, second: bool) -> str:
    """How a call made at ``when`` to reach ``person`` on ``line`` ends; ``second``: the same
    caller rang the number less than three minutes before."""
    if line.kind == "team":
        assert line.team is not None
        if rng.random() >= line.team.p_answer:
            return pick(rng, UNANSWERED)
        if person.present(when):
            if rng.random() < line.team.reaches(when):
                return "right_party" if rng.random() < 0.4 else "connected"
            return pick(rng, TEAMMATE_ANSWERS)
        return pick(rng, TEAMMATE_ANSWERS_LEFT)
    holder = line.holder(when)
    if holder == DEAD:
        return pick(rng, DEAD_LINE)
    if holder == VACANT:
        return pick(rng, VACANT_DESK)
    if holder == STRANGER:
        if rng.random() < line.p_stranger:
            return pick(rng, STRANGER_ANSWERS)
        return pick(rng, UNANSWERED)
    silenced = line.kind == "mobile" and when >= line.silencing_from and not second
    p = line.p_first if silenced else line.p_holder[holder]
    if rng.random() < p:
        if holder != person.pid:  # the successor answers a call for the one who left
            return pick(rng, SUCCESSOR_ANSWERS)
        return "right_party" if rng.random() < 0.4 else "connected"
    if holder != person.pid:
        return pick(rng, UNANSWERED)
    if silenced:
        return pick(rng, SILENCED)
    return pick(rng, MOBILE_MISSES if line.kind == "mobile" else DIRECT_MISSES)


class _Builder:
    def __init__(self, rng: random.Random, world: TurnoverSettings) -> None:
        self.rng = rng
        self.world = world
        self.taken: set[str] = set()
        self.people: list[Person] = []
        self.order: list[Person] = []  # contacts in the order the client's data lists them

    def uniform(self, bounds: tuple[float, float]) -> float:
        return self.rng.uniform(*bounds)

    def block(self, kind: str, country: str) -> str | None:
        rng, world = self.rng, self.world
        if country != "US" or rng.random() >= world.block_share:
            return None
        if kind == "mobile":
            return "landline" if rng.random() < world.ported else "wireless"
        if rng.random() < world.voip_share:
            return "voip"
        return "wireless" if rng.random() < world.ported else "landline"

    def line(self, kind: str, country: str, holders: list[tuple[float, int]]) -> Line:
        numbering = "mobile" if kind == "mobile" else "fixed"
        return Line(
            e164=real_number(self.rng, country, numbering, self.taken),
            kind=kind,
            block=self.block(kind, country),
            holders=holders,
            p_stranger=self.uniform(self.world.stranger_answers),
        )

    def person(self, country: str, joined: float, leave_rate: float) -> Person:
        left = joined + self.rng.expovariate(leave_rate) * YEAR
        person = Person(
            len(self.people) + 1, country, joined, left if left < NOW else math.inf, False
        )
        self.people.append(person)
        return person

    def desk(self, country: str, leave_rate: float) -> list[Person]:
        """One desk's holders in turn: the first from before the history, each successor after
        an empty spell."""
        rng, world = self.rng, self.world
        first = self.person(country, START - rng.uniform(0, 1500) * DAY, leave_rate)
        holders = [first]
        while holders[-1].left < NOW and len(holders) < MAX_CHAIN:
            joined = holders[-1].left + self.uniform(world.vacancy_days) * DAY
            if joined >= NOW:
                break
            holders.append(self.person(country, joined, leave_rate))
        return holders

    def enlist(self, person: Person) -> None:
        """Makes the person a contact of the client's data, or not: a successor who took a
        desk during the history now and then, weeks after; anyone else more often, from a
        vendor's record made while they were there (up to ``record_age_days`` old)."""
        rng, world = self.rng, self.world
        if person.joined > START:
            if rng.random() >= world.successor_in_data or NOW - person.joined < 14 * DAY:
                return
            added = rng.uniform(person.joined + 7 * DAY, NOW - DAY)
            record_at = rng.uniform(person.joined, added)
        else:
            if rng.random() >= world.in_data:
                return
            if rng.random() < world.early_share:
                added = START - rng.uniform(0, 200) * DAY
            else:
                added = rng.uniform(START, NOW - DAY)
            record_at = max(person.joined, added - rng.uniform(0, world.record_age_days) * DAY)
            if record_at >= person.left:  # gone before the vendor recorded anyone there
                return
        person.added, person.record_at, person.contact = added, record_at, True

    def mobile(self, person: Person) -> Line:
        rng, world = self.rng, self.world
        since = person.record_at
        if rng.random() < world.vendor_error:
            holders = [(since, STRANGER)]
        else:
            holders = [(since, person.pid)]
            dies = since + rng.expovariate(world.mobile_dead_rate) * YEAR
            if dies < NOW:
                holders.append((dies, DEAD))
                recycled = dies + rng.expovariate(world.recycled_rate) * YEAR
                if recycled < NOW:
                    holders.append((recycled, STRANGER))
        line = self.line("mobile", person.country, holders)
        line.p_holder[person.pid] = self.uniform(world.mobile)
        if rng.random() < world.silencing_share:
            line.silencing_from = -math.inf
        else:
            line.silencing_from = since + rng.expovariate(world.silencing_rate) * YEAR
        line.p_first = self.uniform(world.silencing_first)
        return line

    def direct(self, desk: list[Person]) -> Line:
        """The desk's line: each holder in turn, empty between them."""
        holders: list[tuple[float, int]] = []
        for index, person in enumerate(desk):
            if index:
                holders.append((desk[index - 1].left, VACANT))
            holders.append((person.joined, person.pid))
        if desk[-1].left < NOW:  # no one at the desk yet
            holders.append((desk[-1].left, VACANT))
        line = self.line("direct", desk[0].country, holders)
        for person in desk:
            line.p_holder[person.pid] = self.uniform(self.world.direct)
        return line

    def company(self, room: int) -> None:
        rng, world = self.rng, self.world
        country = pick(rng, world.countries)
        leave_rate = self.uniform(world.leave_rate)
        staff: list[Person] = []
        for _ in range(int(pick(rng, {str(k): v for k, v in world.teams_per_company.items()}))):
            size = int(pick(rng, {str(k): v for k, v in TEAM_SIZES.items()}))
            desks = [self.desk(country, leave_rate) for _ in range(size)]
            team = Team(desks, self.uniform(world.answer_team), world.transfer)
            team_line = None
            if size >= 2 and rng.random() < world.team_line:
                team_line = self.line("team", country, [(START - 1500 * DAY, 0)])
                team_line.team = team
                team_line.in_directory = rng.random() < world.directory_share
            for desk in desks:
                direct = self.direct(desk)
                for person in desk:
                    self.enlist(person)
                    if not person.contact:
                        continue
                    kinds = [k for k, share in world.carry.items() if rng.random() < share]
                    kinds = [k for k in kinds if k != "team" or team_line is not None]
                    for kind in kinds or ["direct"]:
                        if kind == "mobile":
                            person.lines.append(self.mobile(person))
                        elif kind == "team":
                            assert team_line is not None
                            person.lines.append(team_line)
                        elif rng.random() < world.vendor_error:
                            stranger = self.line("direct", country, [(person.record_at, STRANGER)])
                            person.lines.append(stranger)
                        else:
                            person.lines.append(direct)
                    staff.append(person)
        rng.shuffle(staff)
        for person in staff[:room]:
            person.lines.sort(key=lambda line: SLOT_ORDER[line.kind] + rng.random() * 1.5)
            person.lines = person.lines[: len(SLOTS)]
            for line in person.lines:
                line.carriers += 1
            self.order.append(person)

    def waves(self) -> None:
        world = self.world
        t = NOW - world.campaign_days * DAY
        while t < NOW - DAY:
            self.wave(math.floor(t / DAY) * DAY)
            t += 7 * DAY
        for line in {id(line): line for p in self.order for line in p.lines}.values():
            line.calls.sort(key=lambda call: call.at)

    def wave(self, start: float) -> None:
        rng, world = self.rng, self.world
        at_random = self.uniform(world.random_log)
        named = rng.random() < world.named_share
        redial = rng.random() < world.redial_share
        for person in self.order:
            if person.added > start or rng.random() >= world.wave_share:
                continue
            at = start + rng.randint(0, 2) * DAY + rng.uniform(9, 17) * 3600
            if at >= NOW:
                continue
            for line in person.lines[: world.dials_per_pass]:
                last = person.last.get(line.e164)
                if last in ("disconnected", "wrong_number") and rng.random() < world.skip_dead:
                    continue
                tries = 2 if redial and line.kind == "mobile" else 1
                connected = False
                for attempt in range(tries):
                    happened = outcome(rng, line, person, at, second=attempt > 0)
                    logged = happened
                    if rng.random() < at_random:
                        logged = rng.choice(REPORTED_OUTCOMES)
                    line.calls.append(LoggedCall(at, person.pid, logged, named))
                    person.last[line.e164] = logged
                    at += rng.uniform(1, 3) * 60
                    if logged in CONNECTS:
                        connected = True
                        break
                if connected:
                    break
                at += rng.uniform(1, 5) * 60

    def hint(self, kind: str) -> str | None:
        rng, world = self.rng, self.world
        if rng.random() >= world.hint_share:
            return None
        hint = kind
        if kind == "team":  # vendors type a team line as the person's own more often than not
            hint = "hq" if rng.random() < world.team_hint_hq else "direct"
        if rng.random() < world.hint_noise:
            hint = rng.choice([h for h in ("mobile", "direct", "hq") if h != hint])
        return hint

    def contact(self, person: Person) -> SimContact:
        fields = {
            "firstName": f"First{person.pid}",
            "lastName": f"Last{person.pid}",
            "companyAccount": f"Company of {person.pid}",
        }
        numbers = []
        for slot, line in zip(SLOTS, person.lines, strict=False):
            fields[slot] = line.e164
            hint = self.hint(line.kind)
            if hint is not None:
                fields[f"{slot}Type"] = hint
            calls = tuple(
                Call(
                    c.outcome,
                    c.at,
                    None,
                    ("same" if c.target == person.pid else "other") if c.named else None,
                )
                for c in line.calls
            )
            evidence = NumberEvidence(
                block=line.block,
                calls=calls,
                shared_with=line.carriers - 1,
                company_line=line.in_directory,
            )
            state, p = truth(line, person, NOW)
            numbers.append(SimNumber(line.e164, person.country, state, p, evidence))
        return SimContact(fields, numbers)


def build_turnover(seed: int, contacts: int, world: TurnoverSettings) -> list[SimContact]:
    builder = _Builder(random.Random(f"{world.name}/{seed}"), world)
    for _ in range(contacts * 10):
        if len(builder.order) >= contacts:
            break
        builder.company(contacts - len(builder.order))
    builder.waves()
    return [builder.contact(p) for p in builder.order]


def turnover_world(settings: TurnoverSettings = WORLD_D) -> World:
    def build(seed: int, contacts: int) -> list[SimContact]:
        return build_turnover(seed, contacts, settings)

    return World(settings.name, settings.assumes, build)
