"""People's names, comparable across records: folding, name words, last-name keys and the
forms a given name takes (nicknames, spelling variants)."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping

# The longest name key kept (the width of the columns that hold them).
MAX_NAME_KEY = 200

# Given names and their short forms and spelling variants (formal name first).
NICKNAMES: Mapping[str, tuple[str, ...]] = {
    "abigail": ("abby", "abbie", "gail"),
    "albert": ("al", "bert", "bertie"),
    "alexander": ("alex", "alec", "al", "sandy", "sasha", "xander", "lex", "alexandre"),
    "alexandra": ("alex", "alexa", "sandra", "sandy", "sasha", "lexi", "ali"),
    "alexis": ("alex", "lexi"),
    "alfred": ("al", "alf", "fred", "freddie"),
    "allison": ("allie", "ally", "alison", "ali"),
    "amanda": ("mandy", "manda"),
    "andrew": ("andy", "drew", "andre", "andreas", "andres"),
    "angela": ("angie", "angelica"),
    "anthony": ("tony", "ant", "anton", "antonio"),
    "antonio": ("tony", "toni", "antonino"),
    "ann": ("anne", "annie", "nan", "nancy"),
    "arthur": ("art", "artie"),
    "barbara": ("barb", "barbie", "babs"),
    "benjamin": ("ben", "benny", "benji"),
    "beverly": ("bev",),
    "bradley": ("brad",),
    "cameron": ("cam",),
    "catherine": (
        "cathy", "cat", "kate", "katie", "kathy", "katherine", "kathryn", "katharine",
        "kat", "kay", "kitty", "caitlin", "katrina", "katarina", "cathryn",
    ),
    "charles": ("charlie", "chuck", "chas", "chaz", "carl", "carlos", "karl"),
    "charlotte": ("charlie", "lottie", "lotte"),
    "christian": ("chris", "christiaan", "kristian"),
    "christina": ("chris", "tina", "christy", "kristina", "cristina", "krista", "kristin"),
    "christine": ("chris", "christy", "kristine", "chrissy"),
    "christopher": ("chris", "kit", "topher", "cristopher", "kristopher", "cristobal"),
    "cynthia": ("cindy",),
    "daniel": ("dan", "danny", "dani"),
    "daniela": ("dani", "daniella", "danielle"),
    "david": ("dave", "davey", "davy"),
    "deborah": ("deb", "debbie", "debby", "debra"),
    "dennis": ("denny",),
    "dominic": ("dom", "dominick", "domenico"),
    "donald": ("don", "donnie"),
    "dorothy": ("dot", "dottie", "dolly"),
    "douglas": ("doug",),
    "edward": ("ed", "eddie", "eddy", "ted", "teddy", "ned", "eduardo", "edouard"),
    "eleanor": ("ellie", "nell", "nora", "elly"),
    "elizabeth": (
        "liz", "lizzie", "beth", "betty", "betsy", "eliza", "lisa", "libby", "elise",
        "elisabeth", "isabel", "elsa", "liza", "bess",
    ),
    "emily": ("em", "emmy", "emilie", "emilia"),
    "eric": ("erik", "rick", "ricky"),
    "eugene": ("gene",),
    "francis": ("frank", "frankie", "fran"),
    "franklin": ("frank", "frankie"),
    "frances": ("fran", "frannie", "francesca", "franziska"),
    "francisco": ("frank", "paco", "pancho", "cisco", "fran", "francesco", "franco"),
    "frederick": ("fred", "freddie", "freddy", "fritz", "frederic", "friedrich", "rick"),
    "gabriel": ("gabe", "gabi"),
    "gabriela": ("gabi", "gaby", "gabriella", "gabrielle"),
    "geoffrey": ("geoff", "jeff", "jeffrey", "jeffery"),
    "gerald": ("gerry", "jerry"),
    "gregory": ("greg", "gregg"),
    "harold": ("harry", "hal"),
    "henry": ("hank", "harry", "hal", "henri", "heinrich", "enrique", "enrico"),
    "isabella": ("bella", "izzy", "isabel", "isabelle", "isobel"),
    "jacob": ("jake", "jakob", "jacques", "jakub", "kuba"),
    "jacqueline": ("jackie", "jacky", "jacquelyn", "jaqueline"),
    "james": ("jim", "jimmy", "jamie", "jimbo", "diego", "jaime", "santiago"),
    "jennifer": ("jen", "jenny", "jenn", "jennie"),
    "jessica": ("jess", "jessie", "jessi"),
    "john": ("jon", "johnny", "jack", "jonny", "johann", "johannes", "hans", "juan", "jan",
             "giovanni", "ivan", "sean", "shaun", "shawn", "ian", "joao"),
    "jonathan": ("jon", "jonny", "johnny", "jonathon"),
    "joseph": ("joe", "joey", "jo", "jose", "josef", "giuseppe", "pepe", "beppe"),
    "joshua": ("josh",),
    "judith": ("judy", "judi", "jude"),
    "julia": ("julie", "jules", "giulia"),
    "katherine": ("kate", "katie", "kathy", "kat", "kathryn", "katharine", "kay"),
    "kathleen": ("kathy", "kate", "katie", "kath", "kay", "kathie", "kathlyn"),
    "kenneth": ("ken", "kenny"),
    "kimberly": ("kim", "kimmy", "kimberley"),
    "lawrence": ("larry", "laurence", "laurent", "lorenzo", "lars"),
    "leonard": ("len", "lenny", "leo", "leon"),
    "louis": ("lou", "louie", "luis", "luigi", "ludwig", "lewis"),
    "louise": ("lou", "lulu", "louisa", "luisa"),
    "margaret": ("maggie", "meg", "peggy", "marge", "margie", "greta", "margarita",
                 "marguerite", "margot", "molly", "daisy", "rita"),
    "mary": ("molly", "polly", "mae", "mamie"),
    "matthew": ("matt", "matty", "mathew", "matthias", "mateo", "matteo", "mathieu"),
    "michael": ("mike", "mikey", "mick", "mickey", "micky", "michel", "miguel", "michele",
                "mikhail", "misha", "mikael", "mikko"),
    "michelle": ("shelly", "michele", "chelle"),
    "natalie": ("nat", "natty", "nathalie", "natalia"),
    "nathan": ("nate", "nat"),
    "nathaniel": ("nate", "nat", "nathan"),
    "nicholas": ("nick", "nicky", "nico", "nicolas", "nicola", "nikolai", "niklas", "klaus"),
    "nicole": ("nikki", "nicky", "nichole", "nicolette"),
    "pamela": ("pam", "pammy"),
    "patricia": ("pat", "patty", "patsy", "trish", "tricia", "patrizia"),
    "patrick": ("pat", "paddy", "patrice", "patricio", "rick"),
    "peter": ("pete", "pedro", "pierre", "pietro", "piotr", "petr"),
    "philip": ("phil", "phillip", "felipe", "filippo", "philippe", "pip"),
    "raymond": ("ray", "raymundo", "ramon"),
    "rebecca": ("becky", "becca", "bex"),
    "richard": ("rich", "rick", "ricky", "dick", "richie", "rico", "ricardo", "riccardo"),
    "roberta": ("bobbie", "bobbi", "robbie", "berta"),
    "robert": ("rob", "bob", "bobby", "robbie", "bert", "roberto", "robin", "rupert"),
    "ronald": ("ron", "ronnie", "ronny"),
    "samantha": ("sam", "sammy", "sami"),
    "samuel": ("sam", "sammy", "samuele"),
    "sarah": ("sara", "sally", "sadie"),
    "stephanie": ("steph", "stefanie", "stephany", "stefania"),
    "stephen": ("steve", "steven", "stevie", "stefan", "esteban", "stefano", "etienne"),
    "susan": ("sue", "susie", "suzy", "suzanne", "susanne", "susanna"),
    "theodore": ("ted", "teddy", "theo"),
    "theresa": ("terry", "tess", "tessa", "teresa", "terri", "tracy"),
    "thomas": ("tom", "tommy", "thom", "tomas", "tommaso", "thomaz"),
    "timothy": ("tim", "timmy"),
    "valerie": ("val",),
    "victoria": ("vicky", "vicki", "tori", "viktoria"),
    "vincent": ("vince", "vinnie", "vincenzo", "vicente"),
    "walter": ("walt", "wally"),
    "william": ("will", "bill", "billy", "willy", "willie", "liam", "wilhelm", "guillermo",
                "guillaume", "wim"),
    "zachary": ("zach", "zack", "zak"),
}  # fmt: skip

_NAME_TITLES = frozenset({"dr", "mr", "mrs", "ms", "miss", "mx", "prof", "sir", "dame"})
_NAME_SUFFIXES = frozenset({"jr", "sr", "ii", "iii", "iv", "phd", "md", "esq", "mba", "cpa"})
# Particles of compound surnames, which alone do not make a surname agree.
SURNAME_PARTICLES = frozenset(
    {"van", "von", "der", "den", "de", "del", "della", "di", "da", "das", "dos", "du", "la",
     "le", "el", "al", "bin", "ben", "ter", "ten", "y", "e"}
)  # fmt: skip
_FOLD_EXTRA = str.maketrans(
    {"ø": "o", "đ": "d", "ł": "l", "æ": "ae", "œ": "oe", "þ": "th", "ð": "d", "\u0131": "i"}
)
# Straight and typographic apostrophes, and the accents typed for them: dropped from words.
APOSTROPHES = str.maketrans("", "", "'\u2019`\u00b4\u02bc")
WORD_SEPARATORS = re.compile(r"[\W_]+")
# Unicode's combining marks (accents once NFKD has split them from their letters).
_COMBINING = re.compile("[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]")


def fold(text: str) -> str:
    """Lower case without accents: "Zoë Müller-Ørsted" becomes "zoe muller-orsted"; letters
    that do not decompose (ø, ł, đ, æ, œ, þ) take their usual Latin spelling."""
    if text.isascii():
        return text.lower()
    decomposed = unicodedata.normalize("NFKD", text.casefold().translate(_FOLD_EXTRA))
    return _COMBINING.sub("", decomposed)


def name_tokens(name: str | None) -> tuple[str, ...]:
    """The folded words of a name, apostrophes dropped ("O'Brien" is "obrien"), titles and
    generational suffixes left out ("Dr.", "Jr.", "III")."""
    if not name:
        return ()
    if name.isascii() and name.isalnum():  # one word, folded by lowering it
        return (name.lower(),)
    words = [w for w in WORD_SEPARATORS.split(fold(name).translate(APOSTROPHES)) if w]
    while len(words) > 1 and words[0] in _NAME_TITLES:
        words.pop(0)
    while len(words) > 1 and words[-1] in _NAME_SUFFIXES:
        words.pop()
    return tuple(words)


def last_name_key(last_name: str | None) -> str | None:
    """The blocking key of a last name: folded, without spaces, hyphens or apostrophes, so
    that "García-López", "Garcia Lopez" and "GARCIA LOPEZ" share it."""
    if last_name and last_name.isascii() and last_name.isalpha():
        return last_name.lower()[:MAX_NAME_KEY]
    key = "".join(name_tokens(last_name))[:MAX_NAME_KEY]
    return key or None


def _nickname_index() -> dict[str, frozenset[str]]:
    forms: dict[str, set[str]] = {}
    for formal, short in NICKNAMES.items():
        forms.setdefault(formal, set()).add(formal)
        for nickname in short:
            forms.setdefault(nickname, set()).add(formal)
    return {name: frozenset(found) for name, found in forms.items()}


_GIVEN_NAME_FORMS = _nickname_index()
_SHORT_FORMS: Mapping[str, tuple[str, ...]] = {
    formal: (formal, *short) for formal, short in NICKNAMES.items()
}


def given_name_forms(name: str) -> frozenset[str]:
    """The formal names a folded given name may stand for: {"robert"} for "bob",
    {"alexander", "alexandra", "alexis"} for "alex", the name itself when unknown."""
    return _GIVEN_NAME_FORMS.get(name, frozenset({name}))


def short_forms(formal: str) -> tuple[str, ...]:
    """A formal given name and its short forms and variants ("robert", "rob", "bob", …);
    nothing for a name that is no formal one."""
    return _SHORT_FORMS.get(formal, ())
