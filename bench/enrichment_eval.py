"""How well identity resolution finds the right directory record, and refuses the wrong one.
No server: a seeded world run through the pure matcher (``dialscore.enrichment.matching``)
and the keys of ``dialscore.identity``.

- **The world.** ``--people`` (20000) directory records of people at ``--companies`` (2500)
  companies of very unequal size, names drawn with a long tail (a few names very common),
  some with accents, compound surnames and gendered pairs (Daniel/Daniela). Companies share
  words ("Summit", "Summit Partners"), have a domain, and a LinkedIn page (a vanity slug or a
  number). Each record shows what a data vendor would: work email (three address patterns,
  some personal mailboxes), LinkedIn URL, company name with a legal suffix, website,
  company page, each only sometimes.
- **The queries.** ``--queries`` (5000) enrichment contacts as clients send them, each
  rendering its person again with the variations of real data: nicknames (drawn from this
  bench's own list, not the matcher's table), typos (keyboard slips, dropped, doubled or
  swapped letters), accents dropped, case, middle initials, other legal suffixes, "The",
  "&"/"and", descriptive words dropped, websites and LinkedIn URLs in their variants (country
  subdomains, query strings, trailing slashes, percent-encoding, old ``/pub/`` URLs, mobile
  host, no scheme), Gmail dots and ``+tags``, another address of the person (work vs
  personal), a renamed LinkedIn profile. Kinds: people in the directory (70 %), namesakes of
  directory people at another company (15 %), and people not in the directory at directory
  companies (15 %: colleagues, whose names sometimes equal a directory colleague's).
- **Matching** as the directory source does it: a query known by its company page alone
  takes the company its records show; candidates by the lookup keys (normalised email,
  LinkedIn slug, company key with initial and last name, then the typo round), then
  ``best_match`` at ``--threshold`` (``DEFAULT_MIN_CONFIDENCE``).

Prints precision (right matches of all matches) and recall (right matches of the queries
whose person is in the directory) overall, by query kind and by variation, the same at other
thresholds, and the wrong matches' first examples.

    python bench/enrichment_eval.py [--people 20000] [--companies 2500] [--queries 5000]
                                    [--seed 1] [--threshold 0.9] [--examples 10]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from urllib.parse import quote

from dialscore.enrichment.matching import DEFAULT_MIN_CONFIDENCE, Match, best_match
from dialscore.identity.companies import dominant_domains
from dialscore.identity.keys import (
    Person,
    lookup_keys,
    page_only,
    record_keys,
    with_company_of_page,
)

# (name, gender) — gendered pairs and common names on purpose.


def _words(text: str) -> tuple[str, ...]:
    """Words separated by spaces; "_" stands for a space within one."""
    return tuple(word.replace("_", " ") for word in text.split())


FIRST_NAMES = _words(
    "James:m John:m Robert:m Michael:m William:m David:m Richard:m Joseph:m Thomas:m "
    "Charles:m Christopher:m Daniel:m Matthew:m Anthony:m Mark:m Donald:m Steven:m Paul:m "
    "Andrew:m Joshua:m Kenneth:m Kevin:m Brian:m George:m Timothy:m Ronald:m Edward:m "
    "Jason:m Jeffrey:m Ryan:m Jacob:m Gary:m Nicholas:m Eric:m Jonathan:m Stephen:m Larry:m "
    "Justin:m Scott:m Brandon:m Benjamin:m Samuel:m Gregory:m Alexander:m Frank:m Patrick:m "
    "Raymond:m Jack:m Dennis:m Jerry:m Tyler:m Aaron:m Jose:m Adam:m Nathan:m Henry:m "
    "Douglas:m Zachary:m Peter:m Kyle:m Walter:m Ethan:m Jeremy:m Harold:m Keith:m "
    "Christian:m Roger:m Noah:m Gerald:m Carl:m Terry:m Sean:m Austin:m Arthur:m Lawrence:m "
    "Jesse:m Dylan:m Bryan:m Joe:m Jordan:m Billy:m Bruce:m Albert:m Willie:m Gabriel:m "
    "Logan:m Alan:m Juan:m Wayne:m Roy:m Ralph:m Randy:m Eugene:m Vincent:m Russell:m "
    "Elijah:m Louis:m Bobby:m Philip:m Johnny:m Mario:m Julian:m Marco:m Luca:m Francesco:m "
    "Jürgen:m Søren:m Łukasz:m François:m Björn:m Raúl:m Ángel:m Håkon:m Zoltán:m Hiroshi:m "
    "Wei:m Ahmed:m Mohammed:m Rahul:m "
    "Mary:f Patricia:f Jennifer:f Linda:f Elizabeth:f Barbara:f Susan:f Jessica:f Sarah:f "
    "Karen:f Lisa:f Nancy:f Betty:f Margaret:f Sandra:f Ashley:f Kimberly:f Emily:f "
    "Donna:f Michelle:f Carol:f Amanda:f Dorothy:f Melissa:f Deborah:f Stephanie:f "
    "Rebecca:f Sharon:f Laura:f Cynthia:f Kathleen:f Amy:f Angela:f Shirley:f Anna:f "
    "Brenda:f Pamela:f Emma:f Nicole:f Helen:f Samantha:f Katherine:f Christine:f Debra:f "
    "Rachel:f Carolyn:f Janet:f Catherine:f Maria:f Heather:f Diane:f Ruth:f Julie:f "
    "Olivia:f Joyce:f Virginia:f Victoria:f Kelly:f Lauren:f Christina:f Joan:f Evelyn:f "
    "Judith:f Megan:f Andrea:f Cheryl:f Hannah:f Jacqueline:f Martha:f Gloria:f Teresa:f "
    "Ann:f Sara:f Madison:f Frances:f Kathryn:f Janice:f Jean:f Abigail:f Alice:f Julia:f "
    "Judy:f Sophia:f Grace:f Denise:f Amber:f Doris:f Marilyn:f Danielle:f Beverly:f "
    "Isabella:f Theresa:f Diana:f Natalie:f Brittany:f Charlotte:f Marie:f Kayla:f "
    "Alexis:f Lori:f Daniela:f Paula:f Alexandra:f Roberta:f Francesca:f Giulia:f Chloé:f "
    "Zoë:f Renée:f Mónica:f Inés:f Małgorzata:f Priya:f Mei:f Yuki:f Fatima:f Olga:f"
)
LAST_NAMES = _words(
    "Smith Johnson Williams Brown Jones Garcia Miller Davis Rodriguez Martinez Hernandez "
    "Lopez Gonzalez Wilson Anderson Thomas Taylor Moore Jackson Martin Lee Perez Thompson "
    "White Harris Sanchez Clark Ramirez Lewis Robinson Walker Young Allen King Wright "
    "Scott Torres Nguyen Hill Flores Green Adams Nelson Baker Hall Rivera Campbell Mitchell "
    "Carter Roberts Gomez Phillips Evans Turner Diaz Parker Cruz Edwards Collins Reyes "
    "Stewart Morris Morales Murphy Cook Rogers Gutierrez Ortiz Morgan Cooper Peterson Bailey "
    "Reed Kelly Howard Ramos Kim Cox Ward Richardson Watson Brooks Chavez Wood James Bennett "
    "Gray Mendoza Ruiz Hughes Price Alvarez Castillo Sanders Patel Myers Long Ross Foster "
    "Jimenez Powell Jenkins Perry Russell Sullivan Bell Coleman Butler Henderson Barnes "
    "Gonzales Fisher Vasquez Simmons Romero Jordan Patterson Alexander Hamilton Graham "
    "Reynolds Griffin Wallace Moreno West Cole Hayes Bryant Herrera Gibson Ellis Tran Medina "
    "Aguilar Stevens Murray Ford Castro Marshall Owens Harrison Fernandez McDonald Woods "
    "Washington Kennedy Wells Vargas Henry Chen Freeman Webb Tucker Guzman Burns Crawford "
    "Olson Simpson Porter Hunter Gordon Mendez Silva Shaw Snyder Mason Dixon Munoz Hunt "
    "Hicks Holmes Palmer Wagner Black Robertson Boyd Rose Stone Salazar Fox Warren Mills "
    "Meyer Rice Schmidt Garza Daniels Ferguson Nichols Stephens Soto Weaver Ryan Gardner "
    "Payne Grant Dunn Kelley Spencer Hawkins Arnold Pierce Hansen Peters Santos Hart "
    "O'Brien O'Connor McCarthy García Müller Schröder Kowalski Kowalska Nowak Søndergaard "
    "Dubois Lefèvre Rossi Ferrari Esposito Romano Yamamoto Tanaka Suzuki Wang Zhang Liu "
    "Singh Kumar Sharma Ivanov Petrov Nguyễn Papadopoulos Öztürk Jansen De_Vries "
    "Van_der_Berg García-López Smith-Jones Fernández_de_Castro Ó_Súilleabháin"
)
# This bench's own short forms (the matcher has its own table; these are drawn independently
# and include some it may not know).
SHORT_FORMS = {
    "James": ["Jim", "Jimmy", "Jamie"], "John": ["Johnny", "Jack", "Jon"],
    "Robert": ["Bob", "Rob", "Bobby", "Robbie", "Bert"], "Michael": ["Mike", "Mikey", "Mick"],
    "William": ["Bill", "Will", "Billy", "Liam"], "David": ["Dave", "Davey"],
    "Richard": ["Rick", "Rich", "Dick", "Richie"], "Joseph": ["Joe", "Joey"],
    "Thomas": ["Tom", "Tommy"], "Charles": ["Charlie", "Chuck", "Chas"],
    "Christopher": ["Chris", "Topher", "Kit"], "Daniel": ["Dan", "Danny"],
    "Matthew": ["Matt", "Matty"], "Anthony": ["Tony"], "Donald": ["Don", "Donnie"],
    "Steven": ["Steve", "Stevie"], "Andrew": ["Andy", "Drew"], "Joshua": ["Josh"],
    "Kenneth": ["Ken", "Kenny"], "Timothy": ["Tim", "Timmy"], "Ronald": ["Ron", "Ronnie"],
    "Edward": ["Ed", "Eddie", "Ted", "Ned"], "Jeffrey": ["Jeff"], "Jacob": ["Jake"],
    "Nicholas": ["Nick", "Nicky"], "Jonathan": ["Jon", "Jonny", "Nate"],
    "Stephen": ["Steve"], "Lawrence": ["Larry"], "Benjamin": ["Ben", "Benny"],
    "Samuel": ["Sam", "Sammy"], "Gregory": ["Greg"], "Alexander": ["Alex", "Sasha", "Xander"],
    "Frank": ["Frankie"], "Patrick": ["Pat", "Paddy"], "Raymond": ["Ray"],
    "Gerald": ["Jerry", "Gerry"], "Zachary": ["Zach", "Zack"], "Peter": ["Pete"],
    "Walter": ["Walt", "Wally"], "Harold": ["Harry", "Hal"], "Henry": ["Hank", "Harry"],
    "Douglas": ["Doug"], "Philip": ["Phil"], "Vincent": ["Vince", "Vinnie"],
    "Eugene": ["Gene"], "Louis": ["Lou"], "Gabriel": ["Gabe"], "Albert": ["Al", "Bert"],
    "Mary": ["Molly", "Polly", "Mae"], "Patricia": ["Pat", "Patty", "Trish", "Tricia"],
    "Jennifer": ["Jen", "Jenny", "Jenn"], "Elizabeth": ["Liz", "Beth", "Betty", "Eliza",
    "Lizzie", "Libby"], "Barbara": ["Barb", "Barbie"], "Susan": ["Sue", "Susie", "Suzy"],
    "Jessica": ["Jess", "Jessie"], "Margaret": ["Maggie", "Meg", "Peggy", "Marge"],
    "Kimberly": ["Kim"], "Deborah": ["Deb", "Debbie"], "Rebecca": ["Becky", "Becca"],
    "Cynthia": ["Cindy"], "Kathleen": ["Kathy", "Kate", "Katie"], "Pamela": ["Pam"],
    "Samantha": ["Sam", "Sammy"], "Katherine": ["Kate", "Katie", "Kathy", "Kat"],
    "Christine": ["Chris", "Chrissy"], "Catherine": ["Cathy", "Kate", "Cat"],
    "Victoria": ["Vicky", "Tori"], "Christina": ["Tina", "Chris"], "Judith": ["Judy"],
    "Jacqueline": ["Jackie"], "Abigail": ["Abby"], "Alexandra": ["Alex", "Sandra", "Lexi"],
    "Natalie": ["Nat"], "Theresa": ["Terry", "Tess"], "Frances": ["Fran"],
    "Roberta": ["Bobbie"], "Amanda": ["Mandy"], "Valerie": ["Val"], "Sara": ["Sarah"],
    "Ann": ["Anne", "Annie"], "Isabella": ["Bella", "Izzy"], "Daniela": ["Dani"],
}  # fmt: skip
WORDS = _words(
    "Acme Apex Summit Pinnacle Vertex Horizon Meridian Atlas Beacon Cascade Evergreen "
    "Frontier Harbor Keystone Liberty Nexus Orion Pioneer Quantum Redwood Sierra Titan "
    "Unity Vanguard Zenith Blue Red Green Silver Golden Iron Stone River Lake Ocean Bay "
    "North South East West Central Pacific Atlantic Prairie Mountain Valley Cedar Oak Pine "
    "Maple Willow Birch Falcon Eagle Hawk Lion Tiger Bear Wolf Fox Phoenix Dragon Delta "
    "Alpha Omega Sigma Nova Stellar Solar Lunar Astro Terra Aqua Vista Crest Peak Ridge "
    "Bridge Gate Point Path Way Forge Works Mill Foundry Hub Core Spark Bright Clear True "
    "Prime First Grand Royal Noble Civic Metro Urban Rural Coastal Global United Allied "
    "Premier Elite Superior Reliable Trusted Secure Rapid Swift Agile Smart Wise Bold "
    "Brave Quest Journey Voyage Venture Fusion Matrix Vector Signal Pulse Wave Flux Orbit "
    "Cobalt Indigo Crimson Scarlet Amber Ivory Onyx Jade Ruby Sapphire Emerald Granite "
    "Marble Copper Bronze Steel Carbon Helix Prism Lumen Radiant Aurora Boreal Tundra "
    "Mesa Canyon Harborview Lakeside Riverside Hillside Oakwood Elmwood Westfield Northgate "
    "Kingston Ashford Bradford Clifton Dover Easton Fairview Glendale Hampton Irving"
)
DESCRIPTORS = ("Software", "Systems", "Labs", "Group", "Partners", "Technologies",
               "Health", "Capital", "Consulting", "Logistics", "Media", "Energy", "Foods",
               "Bank", "Insurance", "Realty", "Dental", "Analytics")  # fmt: skip
SUFFIXES = ("Inc.", "Inc", ", Inc.", "Incorporated", "LLC", "L.L.C.", "Corp.", "Corp",
            "Corporation", "Ltd", "Limited", "Co.", "GmbH", "S.A.", "PLC", "")  # fmt: skip
KEYBOARD = "qwertyuiop asdfghjkl zxcvbnm"
# The directory repository's cap on candidates per lookup (enrichment.repository).
REPOSITORY_LIMIT = 200


def _keyboard_neighbours() -> dict[str, str]:
    rows = KEYBOARD.split()
    near: dict[str, str] = {}
    for r, row in enumerate(rows):
        for c, ch in enumerate(row):
            around = [row[c - 1] if c > 0 else "", row[c + 1] if c + 1 < len(row) else ""]
            for other in (r - 1, r + 1):
                if 0 <= other < len(rows) and c < len(rows[other]):
                    around.append(rows[other][c])
            near[ch] = "".join(around)
    return near


NEIGHBOURS = _keyboard_neighbours()


def strip_accents(text: str) -> str:
    table = str.maketrans({"ø": "o", "Ø": "O", "ł": "l", "Ł": "L", "æ": "ae", "ß": "ss"})
    decomposed = unicodedata.normalize("NFKD", text.translate(table))
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def ascii_slug(text: str) -> str:
    return "".join(ch for ch in strip_accents(text).lower() if ch.isalnum())


def typo(rng: random.Random, word: str) -> str:
    """One keyboard slip: a neighbouring key, a dropped, doubled or swapped letter."""
    if len(word) < 3:
        return word
    at = rng.randrange(1, len(word))  # first letters are seldom mistyped
    kind = rng.random()
    ch = word[at].lower()
    if kind < 0.35 and ch in NEIGHBOURS:
        swap = rng.choice(NEIGHBOURS[ch])
        return word[:at] + (swap.upper() if word[at].isupper() else swap) + word[at + 1 :]
    if kind < 0.6:
        return word[:at] + word[at + 1 :]
    if kind < 0.8:
        return word[:at] + word[at] + word[at:]
    if at + 1 < len(word):
        return word[:at] + word[at + 1] + word[at] + word[at + 2 :]
    return word[:at] + word[at] + word[at:]


@dataclass(frozen=True)
class Company:
    index: int
    base: str  # "Summit Partners"
    domain: str
    page: str  # LinkedIn company slug or number
    email_pattern: str  # "first.last" | "flast" | "first"


@dataclass(frozen=True)
class Human:
    """A person as they are."""

    index: int
    first: str
    gender: str
    last: str
    company: Company
    slug: str  # LinkedIn vanity slug, or an old /pub/ one: "name/a/bbb/ccc"
    personal_email: str
    work_email: str


@dataclass
class Query:
    person: Person
    truth: str | None
    kind: str
    tags: list[str] = field(default_factory=list)


def zipf_weights(count: int, exponent: float = 1.0) -> list[float]:
    return [1.0 / (rank**exponent) for rank in range(1, count + 1)]


class World:
    def __init__(self, rng: random.Random, people: int, companies: int) -> None:
        self.rng = rng
        first = [entry.split(":") for entry in FIRST_NAMES]
        rng.shuffle(first)
        self.first_names = [(name, gender) for name, gender in first]
        # Flatter than real name frequencies, whose long tail a few hundred names lack: the
        # most common names are still several times the median ones.
        self.first_weights = zipf_weights(len(first), 0.6)
        last = list(LAST_NAMES)
        rng.shuffle(last)
        self.last_names = last
        self.last_weights = zipf_weights(len(last), 0.5)
        # Identifiers belong to one person: a second "jane-doe" profile or jane.doe@ mailbox
        # gets a suffix, as LinkedIn and mail administrators do.
        self.taken: set[str] = set()
        self.companies = self._companies(companies)
        # Company sizes with a long tail: a few large employers, many small ones.
        self.company_weights = zipf_weights(len(self.companies), 0.75)
        self.people = [self.human(i) for i in range(people)]
        self.next_index = people

    def _companies(self, count: int) -> list[Company]:
        rng = self.rng
        taken: set[str] = set()
        found: list[Company] = []
        for index in range(count):
            words = [rng.choice(WORDS)]
            if rng.random() < 0.55:
                words.append(rng.choice(WORDS))
            if rng.random() < 0.45:
                words.append(rng.choice(DESCRIPTORS))
            base = " ".join(words)
            stem = "".join(w.lower() for w in words)
            domain = f"{stem}.com"
            while domain in taken:  # another company has it: as real firms do
                domain = rng.choice(
                    (f"{stem}{rng.choice(('hq', 'inc', 'group', 'usa', 'co'))}.com",
                     f"get{stem}.com", f"{stem}.{rng.choice(('io', 'net', 'co', 'us'))}")
                )  # fmt: skip
            taken.add(domain)
            page = (
                "-".join(w.lower() for w in words)
                if rng.random() < 0.75
                else str(10000 + index * 7)
            )
            if page in taken:
                page = f"{page}-{index}"
            taken.add(page)
            pattern = rng.choice(("first.last", "first.last", "flast", "first"))
            found.append(Company(index, base, domain, page, pattern))
        return found

    def unique(self, value: str, extend: str) -> str:
        while value in self.taken:
            value = extend.format(
                value=value, n=self.rng.randrange(2, 99), hex=self.rng.getrandbits(24)
            )
        self.taken.add(value)
        return value

    def unique_mailbox(self, local: str, domain: str) -> str:
        """A mailbox of its own: "jane.doe7@" when "jane.doe@" is someone else's (Gmail
        ignores dots: "janedoe@" is taken too)."""

        def key(name: str) -> str:
            return (name.replace(".", "") if domain == "gmail.com" else name) + "@" + domain

        name = local
        while key(name) in self.taken:
            name = f"{local}{self.rng.randrange(2, 99)}"
        self.taken.add(key(name))
        return f"{name}@{domain}"

    def human(
        self,
        index: int,
        company: Company | None = None,
        name: tuple[str, str, str] | None = None,
    ) -> Human:
        rng = self.rng
        if name is None:
            first, gender = rng.choices(self.first_names, self.first_weights)[0]
            last = rng.choices(self.last_names, self.last_weights)[0]
        else:
            first, gender, last = name
        if company is None:
            company = rng.choices(self.companies, self.company_weights)[0]
        base = f"{ascii_slug(first)}-{ascii_slug(last)}"
        roll = rng.random()
        if roll < 0.3:
            slug = base
        elif roll < 0.85:
            slug = f"{base}-{rng.getrandbits(32):08x}"[: len(base) + rng.choice((5, 7, 9))]
        elif roll < 0.93 and not first.isascii():
            slug = f"{first.lower()}-{last.lower().replace(' ', '-')}"
        else:  # an old public profile URL
            slug = f"{base}/{rng.getrandbits(8):x}/{rng.getrandbits(12):x}/{rng.getrandbits(12):x}"
        if "/" not in slug:
            slug = self.unique(slug, "{value}-{hex:x}")
        dots = "." if rng.random() < 0.5 else ""
        mailbox = rng.choice(("gmail.com", "gmail.com", "yahoo.com", "outlook.com"))
        personal = self.unique_mailbox(f"{ascii_slug(first)}{dots}{ascii_slug(last)}", mailbox)
        first_ascii, last_ascii = ascii_slug(first), ascii_slug(last)
        local = {
            "first.last": f"{first_ascii}.{last_ascii}",
            "flast": f"{first_ascii[:1]}{last_ascii}",
            "first": first_ascii,
        }[company.email_pattern]
        work = self.unique_mailbox(local, company.domain)
        return Human(index, first, gender, last, company, slug, personal, work)

    def work_email(self, human: Human) -> str:
        return human.work_email


# -- renderings -------------------------------------------------------------------------------


def render_first(rng: random.Random, human: Human, tags: list[str], rate: float) -> str:
    name = human.first
    if rng.random() < rate and name in SHORT_FORMS:
        name = rng.choice(SHORT_FORMS[name])
        tags.append("nickname")
    if rng.random() < rate * 0.5:
        name = f"{name} {rng.choice('ABCDEFGHJKLMNPRSTW')}."
        tags.append("middle initial")
    return name


def render_name(rng: random.Random, text: str, tags: list[str], rate: float, what: str) -> str:
    if not text.isascii() and rng.random() < 0.4:
        text = strip_accents(text)
        tags.append("accents dropped")
    if rng.random() < rate * 0.3:
        text = typo(rng, text)
        tags.append(f"typo in {what}")
    roll = rng.random()
    if roll < 0.04:
        text = text.upper()
    elif roll < 0.07:
        text = text.lower()
    return text


def render_company(rng: random.Random, company: Company, tags: list[str]) -> str:
    name = company.base
    words = name.split()
    if len(words) > 1 and words[-1] in DESCRIPTORS and rng.random() < 0.15:
        name = " ".join(words[:-1])
        tags.append("company word dropped")
    if rng.random() < 0.05:
        name = "The " + name
    suffix = rng.choice(SUFFIXES)
    if suffix.startswith(","):
        name += suffix
    elif suffix:
        name = f"{name} {suffix}"
    if rng.random() < 0.05:
        name = name.upper()
    return name


def render_website(rng: random.Random, domain: str) -> str:
    return rng.choice(
        (f"https://www.{domain}/", f"http://{domain}", domain, f"www.{domain}",
         f"https://{domain}/about-us", f"https://www.{domain}/?utm_source=crm")
    )  # fmt: skip


def render_company_page(rng: random.Random, page: str) -> str:
    host = rng.choice(("www", "www", "uk", "de", "ca"))
    tail = rng.choice(("", "/", "/about/", "/?trk=company_logo", "/jobs"))
    return f"https://{host}.linkedin.com/company/{page}{tail}"


def pub_parts(slug: str) -> tuple[str, str, str, str] | None:
    parts = slug.split("/")
    return (parts[0], parts[1], parts[2], parts[3]) if len(parts) == 4 else None


def render_linkedin(rng: random.Random, slug: str, tags: list[str], canonical: bool) -> str:
    pub = pub_parts(slug)
    if pub is not None:
        name, a, b, c = pub
        if canonical or rng.random() < 0.5:
            # The profile the /pub/ URL redirects to.
            return f"https://www.linkedin.com/in/{name}-{c.zfill(3)}{b.zfill(3)}{a}"
        tags.append("linkedin /pub/")
        return f"https://{rng.choice(('www', 'uk', 'fr'))}.linkedin.com/pub/{name}/{a}/{b}/{c}"
    if canonical:
        return f"https://www.linkedin.com/in/{slug}"
    text = slug
    if not slug.isascii() and rng.random() < 0.6:
        text = quote(slug)
        tags.append("linkedin percent-encoded")
    host = rng.choice(("https://www.", "https://uk.", "https://de.", "http://www.", "www.",
                       "", "https://m.", "https://ca."))  # fmt: skip
    tail = rng.choice(("", "/", "/?trk=public_profile", "/?originalSubdomain=uk", "/en",
                       "/details/experience/"))  # fmt: skip
    if rng.random() < 0.1:
        text = text.upper() if text.isascii() else text
    if host not in ("https://www.", "") or tail:
        tags.append("linkedin variant")
    return f"{host}linkedin.com/in/{text}{tail}"


def render_email(rng: random.Random, email: str, tags: list[str]) -> str:
    local, domain = email.split("@")
    if domain == "gmail.com" and rng.random() < 0.4:
        local = local.replace(".", "") if "." in local else local[:3] + "." + local[3:]
        tags.append("gmail dots")
    if rng.random() < 0.05:
        local += "+" + rng.choice(("crm", "news", "work"))
        tags.append("+tag")
    if rng.random() < 0.1:
        local = local.capitalize()
    return f"{local}@{domain}"


def directory_record(world: World, human: Human) -> Person:
    """What a data vendor holds about a person: canonical-ish, yet not always complete."""
    rng = world.rng
    tags: list[str] = []
    email = None
    if rng.random() < 0.8:
        email = human.personal_email if rng.random() < 0.1 else world.work_email(human)
    linkedin = (
        render_linkedin(rng, human.slug, tags, canonical=True) if rng.random() < 0.65 else None
    )
    first = human.first if rng.random() > 0.015 else typo(rng, human.first)
    last = human.last if rng.random() > 0.015 else typo(rng, human.last)
    return Person(
        first_name=first,
        last_name=last,
        email=email,
        linkedin_url=linkedin,
        company=render_company(rng, human.company, tags) if rng.random() < 0.95 else None,
        website=render_website(rng, human.company.domain) if rng.random() < 0.6 else None,
        company_linkedin_url=(
            render_company_page(rng, human.company.page) if rng.random() < 0.35 else None
        ),
    )


def query_of(
    world: World, human: Human, record: Person | None, tags: list[str], *, strong: bool = True
) -> Person:
    """An enrichment contact for this person, as a client's CRM holds it."""
    rng = world.rng
    email = linkedin = None
    if strong and rng.random() < 0.45:
        if record is not None and record.email and rng.random() < 0.88:
            email = render_email(rng, record.email, tags)
        else:
            # Another of the person's addresses (their work or their personal one).
            known = record.email if record is not None else None
            email = world.work_email(human) if known != world.work_email(human) else None
            if email is None or rng.random() < 0.5:
                email = human.personal_email
            email = render_email(rng, email, tags)
            if record is not None and record.email:
                tags.append("other email")
    if strong and rng.random() < 0.4:
        if rng.random() < 0.01:
            linkedin = f"https://www.linkedin.com/in/{ascii_slug(human.first)}{human.index}"
            tags.append("linkedin renamed")
        else:
            linkedin = render_linkedin(rng, human.slug, tags, canonical=False)
    company = website = page = None
    roll = rng.random()
    if roll < 0.8:
        company = render_company(rng, human.company, tags)
        if rng.random() < 0.35:
            website = render_website(rng, human.company.domain)
        if rng.random() < 0.15:
            page = render_company_page(rng, human.company.page)
    elif roll < 0.9:
        website = render_website(rng, human.company.domain)
        tags.append("company by website only")
    else:
        page = render_company_page(rng, human.company.page)
        tags.append("company by LinkedIn page only")
    first = render_name(rng, render_first(rng, human, tags, 0.12), tags, 0.1, "first name")
    last = render_name(rng, human.last, tags, 0.1, "last name")
    if rng.random() < 0.03:
        first = first[0] + "."
        tags.append("first initial only")
    return Person(first, last, email, linkedin, company, website, page)


def build_queries(world: World, records: list[Person], count: int) -> list[Query]:
    rng = world.rng
    queries: list[Query] = []
    for _ in range(count):
        roll = rng.random()
        if roll < 0.70:
            index = rng.randrange(len(world.people))
            human = world.people[index]
            tags: list[str] = []
            person = query_of(world, human, records[index], tags)
            kind = (
                "email" if person.email else "linkedin" if person.linkedin_url else "name+company"
            )
            queries.append(Query(person, str(index), kind, tags))
        elif roll < 0.85:
            # The same name at another company: another person, not in the directory.
            source = world.people[rng.randrange(len(world.people))]
            company = rng.choices(world.companies, world.company_weights)[0]
            while company.index == source.company.index:
                company = rng.choice(world.companies)
            other = world.human(
                world.next_index, company, (source.first, source.gender, source.last)
            )
            world.next_index += 1
            tags = []
            person = query_of(world, other, None, tags)
            queries.append(Query(person, None, "namesake elsewhere", tags))
        else:
            # A colleague of directory people who is not in the directory.
            company = rng.choices(world.companies, world.company_weights)[0]
            human = world.human(world.next_index, company)
            world.next_index += 1
            tags = []
            person = query_of(world, human, None, tags)
            queries.append(Query(person, None, "not in directory", tags))
    return queries


# -- evaluation -------------------------------------------------------------------------------


class Index:
    """Candidates by lookup key, as the directory's repository finds them: the same email,
    the same LinkedIn profile, or the same company key and last name; then, for a query
    none of those match, the same company key, first initial and last name's first letter
    (a typo in the rest of the last name) at the query's company (its name key or a domain;
    any, for a query that gives its company page only).
    Each way gives at most ``REPOSITORY_LIMIT`` records."""

    def __init__(self, records: Sequence[Person]) -> None:
        self.email: dict[str, list[int]] = defaultdict(list)
        self.linkedin: dict[str, list[int]] = defaultdict(list)
        self.company_last: dict[tuple[str, str], list[int]] = defaultdict(list)
        self.company_initial: dict[tuple[str, str], list[int]] = defaultdict(list)
        # Company names seen with several domains, as the import finds them.
        domains: dict[str, Counter[str]] = defaultdict(Counter)
        self.last_initial: list[str] = []
        self.companies: list[tuple[str | None, str | None]] = []
        # What the records with each company page show of its company, as the import finds.
        pages: dict[str, Counter[tuple[str | None, str | None]]] = defaultdict(Counter)
        for position, record in enumerate(records):
            stored = record_keys(record)
            self.last_initial.append((stored.last_name or " ")[0])
            self.companies.append((stored.company_name, stored.company_domain))
            if stored.company_page and (stored.company_name or stored.company_domain):
                pages[stored.company_page][(stored.company_name, stored.company_domain)] += 1
            if stored.company_name and stored.company_domain:
                domains[stored.company_name][stored.company_domain] += 1
            keys = lookup_keys(record)
            company, initial = stored.company, stored.initial
            if keys.email:
                self.email[keys.email].append(position)
            if keys.linkedin:
                self.linkedin[keys.linkedin].append(position)
            if company and keys.last_name:
                self.company_last[(company, keys.last_name)].append(position)
            if company and initial:
                self.company_initial[(company, initial)].append(position)
        self.pages = {
            page: min(seen.items(), key=lambda item: (-item[1], str(item[0])))[0]
            for page, seen in pages.items()
        }
        self.dominant_domains = dominant_domains(
            (name, domain, people)
            for name, seen in domains.items()
            for domain, people in seen.items()
        )

    @staticmethod
    def _capped(groups: list[list[int]]) -> list[int]:
        return [p for group in groups for p in group][:REPOSITORY_LIMIT]

    def candidates(self, person: Person) -> list[int]:
        keys = lookup_keys(person)
        found: dict[int, None] = {}
        if keys.email:
            found.update(dict.fromkeys(self.email.get(keys.email, ())[:REPOSITORY_LIMIT]))
        if keys.linkedin:
            found.update(dict.fromkeys(self.linkedin.get(keys.linkedin, ())[:REPOSITORY_LIMIT]))
        if keys.last_name:
            groups = [self.company_last.get((c, keys.last_name), []) for c in keys.companies]
            found.update(dict.fromkeys(self._capped(groups)))
        return list(found)

    def typo_candidates(self, person: Person) -> list[int]:
        keys = lookup_keys(person)
        start = (keys.last_name or " ")[0]
        page_only = not keys.company_name and not keys.domains

        def same_company(position: int) -> bool:
            name, domain = self.companies[position]
            return (
                page_only
                or (name is not None and name == keys.company_name)
                or (domain is not None and domain in keys.domains)
            )

        groups = [
            [
                p
                for p in self.company_initial.get((c, i), [])
                if self.last_initial[p] == start and same_company(p)
            ]
            for c in keys.companies
            for i in keys.initials
        ]
        return self._capped(groups)


@dataclass
class Tally:
    queries: int = 0
    in_directory: int = 0
    right: int = 0
    wrong: int = 0  # a match to another record (or to anyone, for a person not there)
    none: int = 0

    def add(self, truth: str | None, found: str | None) -> None:
        self.queries += 1
        self.in_directory += truth is not None
        if found is None:
            self.none += 1
        elif found == truth:
            self.right += 1
        else:
            self.wrong += 1

    def line(self, label: str) -> str:
        matched = self.right + self.wrong
        precision = f"{100 * self.right / matched:6.2f} %" if matched else "     - "
        recall = (
            f"{100 * self.right / self.in_directory:6.2f} %" if self.in_directory else "     - "
        )
        return (
            f"  {label:<32} {self.queries:6d} {self.in_directory:6d} {matched:6d} "
            f"{self.right:6d} {self.wrong:5d}  {precision}  {recall}"
        )


HEADER = (
    f"  {'':<32} {'queries':>6} {'in dir':>6} {'matched':>6} {'right':>6} {'wrong':>5}  "
    f"{'precision':>8}  {'recall':>7}"
)


def resolve(
    index: Index, records: Sequence[Person], query: Query, threshold: float, *, shared: bool = True
) -> tuple[str | None, Match | None, int]:
    page = page_only(query.person)
    if page in index.pages:
        query = replace(query, person=with_company_of_page(query.person, *index.pages[page]))
    positions = index.candidates(query.person)

    def best() -> tuple[int, Match] | None:
        return best_match(
            query.person,
            [records[p] for p in positions],
            min_confidence=threshold,
            dominant_domains=index.dominant_domains if shared else {},
        )

    found = best()
    if found is None:
        positions += [p for p in index.typo_candidates(query.person) if p not in positions]
        found = best()
    if found is None:
        return None, None, len(positions)
    return str(positions[found[0]]), found[1], len(positions)


def run(args: argparse.Namespace) -> None:
    started = time.perf_counter()
    world = World(random.Random(args.seed), args.people, args.companies)
    records = [directory_record(world, human) for human in world.people]
    queries = build_queries(world, records, args.queries)
    index = Index(records)
    built = time.perf_counter() - started
    sizes = Counter(h.company.index for h in world.people)
    kinds = Counter(q.kind for q in queries)
    print(
        f"{len(records)} directory people at {len(sizes)} companies (largest "
        f"{max(sizes.values())}, median {sorted(sizes.values())[len(sizes) // 2]}), "
        f"{len(queries)} queries "
        f"({', '.join(f'{k} {v}' for k, v in kinds.most_common())}); seed {args.seed}; "
        f"built in {built:.1f} s"
    )
    started = time.perf_counter()
    overall, by_kind, by_tag = Tally(), defaultdict(Tally), defaultdict(Tally)
    sweep = {t: Tally() for t in (0.8, 0.85, 0.9, 0.93, 0.95)}
    # What the rule against name+company matches under conflicting identifiers does: the same
    # queries, a miss retried without their email and LinkedIn URL.
    relaxed = Tally()
    # What reading a shared company name as its largest company does: the same queries without.
    unshared = Tally()
    wrong_examples: list[str] = []
    missed = Counter[str]()
    candidates = 0
    most = 0
    crowded = 0
    for query in queries:
        found, match, count = resolve(index, records, query, args.threshold)
        candidates += count
        most = max(most, count)
        crowded += count > REPOSITORY_LIMIT
        overall.add(query.truth, found)
        by_kind[query.kind].add(query.truth, found)
        for tag in set(query.tags) or {"no variation"}:
            by_tag[tag].add(query.truth, found)
        if found is not None and found != query.truth and len(wrong_examples) < args.examples:
            assert match is not None
            wrong_examples.append(
                f"  {query.kind}: {query.person}\n    matched {records[int(found)]} "
                f"({match.basis}, {match.confidence})"
            )
        if query.truth is not None and found is None:
            missed[query.kind] += 1
        for threshold, tally in sweep.items():
            low, _, _ = resolve(index, records, query, threshold)
            tally.add(query.truth, low)
        unshared.add(query.truth, resolve(index, records, query, args.threshold, shared=False)[0])
        if found is None and (query.person.email or query.person.linkedin_url):
            bare = Query(replace(query.person, email=None, linkedin_url=None), query.truth, "")
            retried, _, _ = resolve(index, records, bare, args.threshold)
            relaxed.add(query.truth, retried)
        else:
            relaxed.add(query.truth, found)
    seconds = time.perf_counter() - started
    print(
        f"threshold {args.threshold}; {candidates / len(queries):.1f} candidates per query "
        f"(most {most}; {crowded} queries over {REPOSITORY_LIMIT}) by email, LinkedIn and "
        f"company keys; {len(queries) * (1 + len(sweep)) / seconds:,.0f} queries/s"
    )
    print()
    print(HEADER)
    print(overall.line("all"))
    for kind in ("email", "linkedin", "name+company", "namesake elsewhere", "not in directory"):
        print(by_kind[kind].line(kind))
    print()
    print("by variation (a query can have several):")
    print(HEADER)
    for tag, tally in sorted(by_tag.items(), key=lambda item: -item[1].queries):
        print(tally.line(tag))
    print()
    print("by threshold:")
    print(HEADER)
    for threshold, tally in sweep.items():
        print(tally.line(f"min confidence {threshold}"))
    print()
    print(
        "without the rule that other profiles, or other addresses at one domain, forbid a "
        "name+company match:"
    )
    print(HEADER)
    print(relaxed.line("misses retried by name+company"))
    print()
    print("without reading a company name several companies bear as the largest of them:")
    print(HEADER)
    print(unshared.line("every company of the name"))
    matched = overall.right + overall.wrong
    precision = overall.right / matched if matched else 0.0
    recall = overall.right / overall.in_directory if overall.in_directory else 0.0
    print()
    print(
        f"precision {100 * precision:.2f} % (target >= 99.5 %: "
        f"{'met' if precision >= 0.995 else 'NOT met'}), recall {100 * recall:.2f} % "
        f"(target >= 95 %: {'met' if recall >= 0.95 else 'NOT met'})"
    )
    if wrong_examples:
        print("\nwrong matches (first few):")
        print("\n".join(wrong_examples))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--people", type=int, default=20_000, help="directory people (20000)")
    parser.add_argument("--companies", type=int, default=2_500, help="companies (2500)")
    parser.add_argument("--queries", type=int, default=5_000, help="queries (5000)")
    parser.add_argument("--seed", type=int, default=1, help="random seed (1)")
    parser.add_argument(
        "--threshold", type=float, default=DEFAULT_MIN_CONFIDENCE, help="min confidence"
    )
    parser.add_argument("--examples", type=int, default=10, help="wrong matches to show (10)")
    args = parser.parse_args()
    if args.people < 100 or args.companies < 10 or args.queries < 10:
        parser.error("--people >= 100, --companies >= 10, --queries >= 10")
    run(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
