"""Builds worlds B and C (``scoring_lifecycle.py`` says what they assume): companies, people
and their lines with their histories, then the client's campaigns, then each contact's view
of its numbers."""

from __future__ import annotations

import math
import random

from dialscore.scoring.evidence import Call, NumberEvidence
from scoring_lifecycle import (
    HINTS,
    MAX_CAMPAIGNS,
    MAX_CHANGES,
    MAX_SUCCESSORS,
    MOBILE_KINDS,
    ON_LEAVE,
    PEOPLE_PER_COMPANY,
    RATES,
    SLOT_ORDER,
    START,
    STRANGER,
    TIED_KINDS,
    LifeSettings,
    Line,
    LoggedCall,
    Person,
    Segment,
    logged,
    outcome,
    reach,
)
from scoring_worlds import (
    CONNECTS,
    DAY,
    NOW,
    SLOTS,
    YEAR,
    SimContact,
    SimNumber,
    World,
    pick,
    real_number,
)


class _Builder:
    """Builds one world: companies, people and lines with their histories, then campaigns."""

    def __init__(self, rng: random.Random, world: LifeSettings) -> None:
        self.rng = rng
        self.world = world
        self.taken: set[str] = set()
        self.people: dict[int, Person] = {}
        self.order: list[Person] = []  # contacts in the order the client's data lists them

    def uniform(self, bounds: tuple[float, float]) -> float:
        return self.rng.uniform(*bounds)

    def line(self, kind: str, country: str) -> Line:
        rng, world = self.rng, self.world
        toll_free = kind == "main" and country == "US" and rng.random() < world.toll_free_share
        numbering = "mobile" if kind in MOBILE_KINDS else "toll_free" if toll_free else "fixed"
        ivr = kind == "main" and rng.random() < world.ivr_share
        line = Line(
            e164=real_number(rng, country, numbering, self.taken),
            kind=kind,
            p_live=self.uniform(world.connect["mobile" if kind in MOBILE_KINDS else "direct"]),
            p_screen=self.uniform(world.connect["screened"]),
            p_stranger=self.uniform(world.stranger_answers),
            ivr_path=f"{rng.randint(1, 9)},{rng.randint(1, 9)}" if ivr else None,
            block=self.block(kind, country, numbering),
        )
        line.in_directory = kind == "main" and rng.random() < world.directory_share
        if line.in_directory and line.ivr_path and rng.random() < 0.6:
            line.directory_path = line.ivr_path
        return line

    def block(self, kind: str, country: str, numbering: str) -> str | None:
        rng, world = self.rng, self.world
        if country != "US" or numbering == "toll_free" or rng.random() >= world.block_share:
            return None
        # the category of the block the number was first allocated from
        if kind in MOBILE_KINDS:
            return "landline" if rng.random() < world.ported else "wireless"
        if rng.random() < world.voip_share:
            return "voip"
        return "wireless" if rng.random() < world.ported else "landline"

    def live(self, line: Line, since: float, holder: int, successors: list[Person]) -> None:
        """Runs the line's states from ``since`` to NOW (a continuous-time chain, with the
        holder's leaving as an event of its own)."""
        rng = self.rng
        status, t = "live", since
        line.segments = [Segment(since, status, holder)]
        for _ in range(MAX_CHANGES):
            rates = RATES[line.kind].get(status, {})
            total = sum(rates.values())
            change = t + rng.expovariate(total) * YEAR if total else math.inf
            person = self.people.get(holder)
            leaves = math.inf
            if person is not None and line.kind in TIED_KINDS and status in ("live", "screening"):
                leaves = person.left if person.left > t else math.inf
            if min(change, leaves) >= NOW:
                break
            if leaves < change:
                t, status = leaves, pick(rng, ON_LEAVE[line.kind])
                if status == "reassigned":
                    holder, status = self.successor(line, t, successors), "live"
            else:
                t, status = change, pick(rng, rates)
                if status == "reassigned":
                    holder, status = STRANGER, "live"
            line.segments.append(Segment(t, status, holder))

    def successor(self, line: Line, when: float, successors: list[Person]) -> int:
        """Who gets a line that went with a job after its holder left: someone the client
        does not know, or, for a direct line, sometimes a new contact of the same company."""
        rng, world = self.rng, self.world
        if (
            line.kind != "direct"
            or len(successors) >= MAX_SUCCESSORS
            or NOW - when < 14 * DAY
            or rng.random() >= world.successor_share
        ):
            return STRANGER
        left = self.people[line.segments[-1].holder]
        added = rng.uniform(when + 7 * DAY, NOW - DAY)
        person = self.person(left.company, left.country, joined=when, added=added, age=60.0)
        person.lines.append(line)
        successors.append(person)
        return person.pid

    def person(self, company: str, country: str, joined: float, added: float, age: float) -> Person:
        """A contact added to the client's data at ``added`` from a vendor's record up to
        ``age`` days older (and not from before they ``joined``)."""
        pid = len(self.people) + 1
        record_at = max(joined, added - self.rng.uniform(0, age) * DAY)
        left = record_at + self.rng.expovariate(self.world.leave_rate) * YEAR
        person = Person(
            pid=pid,
            company=company,
            country=country,
            joined=joined,
            left=left if left < NOW else math.inf,
            added=added,
            record_at=record_at,
            p_switchboard=self.uniform(self.world.connect["switchboard"]),
        )
        self.people[pid] = person
        return person

    def own_lines(
        self, person: Person, main: Line, kinds: list[str], successors: list[Person]
    ) -> None:
        """Gives a person the lines of ``kinds``, each starting at the vendor's record."""
        for kind in kinds:
            if kind == "main":
                person.lines.append(main)
                continue
            line = self.line(kind, person.country)
            holder = STRANGER if self.rng.random() < self.world.vendor_error else person.pid
            self.live(line, person.record_at, holder, successors)
            person.lines.append(line)

    def kinds(self) -> list[str]:
        chosen = [k for k, share in self.world.carry.items() if self.rng.random() < share]
        return chosen or ["direct"]

    def company(self, index: int, room: int) -> None:
        """A company and its contacts, at most ``room`` of them."""
        rng, world = self.rng, self.world
        name = f"Company {index}"
        country = pick(rng, world.countries)
        main = self.line("main", country)
        self.live(main, START - 400 * DAY, 0, [])
        size = int(pick(rng, {str(k): v for k, v in PEOPLE_PER_COMPANY.items()}))
        successors: list[Person] = []
        staff: list[Person] = []
        for _ in range(size):
            if rng.random() < world.early_share:
                added = START - rng.uniform(0, 200) * DAY
            else:
                added = rng.uniform(START, NOW - DAY)
            age = world.record_age_days
            person = self.person(name, country, joined=-math.inf, added=added, age=age)
            self.own_lines(person, main, self.kinds(), successors)
            staff.append(person)
        # a successor is made while the line it inherits runs, and gets its other lines
        # after; those (the main line, a personal mobile) pass to no one, so the list is final
        for person in list(successors):
            kinds = [k for k in ("main", "mobile") if rng.random() < world.carry[k]]
            self.own_lines(person, main, kinds, successors)
            staff.append(person)
        # cut before the lines count their carriers: those cut are not in the client's data
        staff = staff[:room]
        for person in staff:
            order = sorted(
                person.lines, key=lambda line: SLOT_ORDER[line.kind] + rng.random() * 1.5
            )
            person.lines = order[: len(SLOTS)]
            for line in person.lines:
                line.carriers += 1
        self.order.extend(staff)

    def campaigns(self) -> None:
        rng, world = self.rng, self.world
        t = max(START, NOW - world.campaign_days * DAY) + rng.uniform(0, 30) * DAY
        for _ in range(MAX_CAMPAIGNS):
            t = math.floor(t / DAY) * DAY
            if t >= NOW - DAY:
                break
            days = rng.randint(*world.campaign_length)
            self.campaign(t, days)
            t += (days + rng.uniform(*world.campaign_gap)) * DAY
        for line in {id(line): line for p in self.order for line in p.lines}.values():
            line.calls.sort(key=lambda call: call.at)

    def campaign(self, start: float, days: int) -> None:
        rng, world = self.rng, self.world
        sloppiness = self.uniform(world.sloppiness)
        named = rng.random() < world.named_share
        for person in self.order:
            if person.added > start or rng.random() >= world.target_share:
                continue
            passes = min(days, rng.randint(1, world.max_passes))
            for day in sorted(rng.sample(range(days), passes)):
                at = start + day * DAY + rng.uniform(9, 17) * 3600
                if at >= NOW or self.dial(person, at, sloppiness, named):
                    break

    def dial(self, person: Person, at: float, sloppiness: float, named: bool) -> bool:
        """One pass over the person's numbers; whether it reached them (as logged)."""
        rng, world = self.rng, self.world
        for line in person.lines[: world.dials_per_pass]:
            last = person.last.get(line.e164)
            if last in ("disconnected", "wrong_number") and rng.random() < world.skip_dead:
                continue
            reported = logged(rng, outcome(rng, line, person, at), sloppiness, world)
            path = line.ivr_path if reported == "ivr" and rng.random() < 0.5 else None
            line.calls.append(LoggedCall(at, person.pid, reported, path, named))
            person.last[line.e164] = reported
            at += rng.uniform(1, 5) * 60
            if reported in CONNECTS:
                return True
        return False

    def hint(self, kind: str) -> str | None:
        rng, world = self.rng, self.world
        if rng.random() >= world.hint_share:
            return None
        hint = HINTS[kind]
        if rng.random() < world.hint_noise:
            hint = rng.choice([h for h in ("mobile", "direct", "hq") if h != hint])
        return hint

    def contact(self, person: Person) -> SimContact:
        fields = {
            "firstName": f"First{person.pid}",
            "lastName": f"Last{person.pid}",
            "companyAccount": person.company,
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
                    c.path,
                    ("same" if c.target == person.pid else "other") if c.named else None,
                )
                for c in line.calls
            )
            evidence = NumberEvidence(
                block=line.block,
                calls=calls,
                shared_with=line.carriers - 1,
                company_line=line.in_directory,
                directory_ivr_path=line.directory_path,
            )
            state, p = reach(line, person, NOW)
            numbers.append(SimNumber(line.e164, person.country, state, p, evidence))
        return SimContact(fields, numbers)


def build_life(seed: int, contacts: int, world: LifeSettings) -> list[SimContact]:
    builder = _Builder(random.Random(f"{world.name}/{seed}"), world)
    for index in range(contacts):
        if len(builder.order) >= contacts:
            break
        builder.company(index, contacts - len(builder.order))
    builder.campaigns()
    return [builder.contact(p) for p in builder.order]


def life_world(settings: LifeSettings) -> World:
    def build(seed: int, contacts: int) -> list[SimContact]:
        return build_life(seed, contacts, settings)

    return World(settings.name, settings.assumes, build)
