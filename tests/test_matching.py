"""Matching for enrichment, pure: names (nicknames, accents, typos), companies (near names,
domains, LinkedIn pages), and the match rules: strong identifiers, name+company, namesakes,
conflicts and the threshold."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dialscore.enrichment.matching import (
    DEFAULT_MIN_CONFIDENCE,
    Match,
    best_match,
    company_name_penalty,
    match,
)
from dialscore.enrichment.name_agreement import first_name_similarity, last_name_similarity
from dialscore.identity.companies import dominant_domains
from dialscore.identity.keys import (
    Person,
    lookup_keys,
    page_only,
    record_keys,
    with_company_of_page,
)
from dialscore.identity.names import given_name_forms

# -- companies --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b", "near"),
    [
        ("jp morgan", "jpmorgan", True),
        ("acme", "acme software", True),
        ("acme", "acme technologies international", True),
        ("ibm", "international business machines", True),
        ("accenture", "acenture", True),
        ("flux", "flux dental", True),  # the trade dropped
        ("summit", "summit capital", True),
        ("valley", "valley jade", True),  # a short form: allowed, at a cost
        ("acme software", "acme systems", False),
        ("acme", "acne", False),
        ("summit health", "pinnacle health", False),
        ("ab", "ab software", False),
    ],
)
def test_near_company_names(a: str, b: str, near: bool) -> None:
    assert (company_name_penalty(a, b) is not None) is near
    assert company_name_penalty(a, a) == 0.0


def test_a_prefix_costs_more_than_a_descriptive_word() -> None:
    descriptive = company_name_penalty("acme", "acme software")
    prefix = company_name_penalty("valley", "valley jade")
    assert descriptive is not None and prefix is not None and prefix > descriptive


@pytest.mark.parametrize(
    "trade", ["dental", "realty", "capital", "health", "logistics", "media", "studio"]
)
def test_a_trade_word_is_descriptive(trade: str) -> None:
    """ "Flux Dental" is "Flux" to its patients: the trade costs what "Software" does."""
    assert company_name_penalty("flux", f"flux {trade}") == company_name_penalty(
        "acme", "acme software"
    )
    candidate = Person("Ann", "Lee", company=f"Flux {trade.title()} LLC")
    assert sure(match(Person("Ann", "Lee", company="Flux Inc."), candidate), "name+company")
    # Another trade is another company.
    other = match(Person("Ann", "Lee", company="Flux Robotics"), candidate)
    assert other is None or other.confidence < DEFAULT_MIN_CONFIDENCE


# -- names ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("Bob", "Robert"), ("Rob", "Bobby"), ("Bill", "William"), ("Liam", "William"),
        ("Peggy", "Margaret"), ("Jim", "James"), ("Kate", "Katherine"), ("Kate", "Catherine"),
        ("Sasha", "Alexander"), ("Alex", "Alexandra"), ("Alex", "Alexander"),
        ("Sara", "Sarah"), ("Steve", "Stephen"), ("Steven", "Stephen"), ("Jon", "John"),
        ("Hank", "Henry"), ("Chuck", "Charles"), ("Molly", "Mary"), ("Kate", "Kathleen"),
        ("Katie", "Kathleen"), ("Kathy", "Kathleen"),
    ],
)  # fmt: skip
def test_nicknames_match_their_names(a: str, b: str) -> None:
    assert 0.9 < first_name_similarity(a, b) < 1.0
    assert first_name_similarity(b, a) == first_name_similarity(a, b)


def test_names_sharing_only_a_nickname_are_different() -> None:
    assert first_name_similarity("Alexander", "Alexandra") == 0.0
    assert first_name_similarity("Christopher", "Christine") == 0.0
    assert given_name_forms("alex") >= {"alexander", "alexandra"}
    assert given_name_forms("zebulon") == {"zebulon"}


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("José", "Jose", True),
        ("ZOË", "zoe", True),
        ("Jonathon", "Jonathan", True),
        ("Micheal", "Michael", True),  # transposition
        ("Katherine", "Katharine", True),
        ("Christpher", "Christopher", True),
        ("Stephanie", "Stepahnie", True),
        ("Amy", "Ann", False),  # short names: no typo allowed
        ("Jhon", "John", True),  # 4 letters: a swap of neighbours is a typo
        ("Mark", "Mary", False),  # … a changed letter makes another name
        ("Jake", "Jane", False),
        ("Daniel", "Daniela", False),  # gendered forms are different names
        ("Mario", "Maria", False),
        ("Christine", "Christina", False),
        ("Paul", "Paula", False),
        ("John", "Jane", False),
        ("Jonathan", "Jonas", False),
    ],
)
def test_first_names_with_accents_and_small_typos(a: str, b: str, same: bool) -> None:
    assert (first_name_similarity(a, b) > 0) is same


def test_middle_names_and_initials_agree_a_little_less() -> None:
    assert first_name_similarity("John Michael", "John") == pytest.approx(0.99)
    assert 0.9 < first_name_similarity("J.", "John") < first_name_similarity("Jon", "John")
    assert first_name_similarity("J.", "Mary") == 0.0
    assert first_name_similarity("Mary Ann", "Maryann") == 1.0


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("O'Brien", "OBrien", True),
        ("Smith-Jones", "Smith Jones", True),
        ("García López", "Garcia", True),  # one part of a compound surname
        ("Van der Berg", "Berg", True),
        ("Van der Berg", "Van Dyke", False),  # a shared particle is not enough
        ("Johnson", "Jonson", True),
        ("Schmidt", "Schmitt", True),
        ("Wang", "Wong", False),  # short surnames differing by a letter are other families
        ("Kowalski", "Kowalska", False),
        ("Smith", "Jones", False),
    ],
)
def test_last_names(a: str, b: str, same: bool) -> None:
    assert (last_name_similarity(a, b) > 0) is same


JANE = Person(
    first_name="Jane",
    last_name="Doe",
    email="jane.doe@acme.com",
    linkedin_url="https://www.linkedin.com/in/jane-doe-1a",
    company="Acme Inc.",
    website="https://www.acme.com",
    company_linkedin_url="https://www.linkedin.com/company/acme",
)


def sure(found: Match | None, basis: str) -> bool:
    return found is not None and found.basis == basis and found.confidence >= 0.9


def test_the_same_email_matches_whatever_else_is_missing() -> None:
    assert sure(match(Person(email="Jane.Doe+x@ACME.com"), JANE), "email")
    assert sure(match(Person(first_name="Janie", email="jane.doe@acme.com"), JANE), "email")
    found = match(Person(email="jane.doe@acme.com", linkedin_url=JANE.linkedin_url), JANE)
    assert found is not None and found.confidence > 0.99


def test_the_same_profile_matches_across_url_variants() -> None:
    query = Person(linkedin_url="uk.linkedin.com/in/Jane-Doe-1a/?trk=people")
    assert sure(match(query, JANE), "linkedin")
    # Work and personal addresses: another email does not undo the profile.
    with_gmail = Person(linkedin_url=JANE.linkedin_url, email="janedoe@gmail.com")
    assert sure(match(with_gmail, JANE), "linkedin")


def test_an_identifier_with_a_different_person_named_is_doubted() -> None:
    other = match(Person(first_name="Robert", last_name="Miles", email=JANE.email), JANE)
    assert other is not None and other.confidence < DEFAULT_MIN_CONFIDENCE
    first_only = match(Person(first_name="Robert", last_name="Doe", email=JANE.email), JANE)
    assert first_only is not None and first_only.confidence < DEFAULT_MIN_CONFIDENCE
    # A married name, a typo or a short form is no conflict.
    married = match(Person(first_name="Jane", last_name="Smith", email=JANE.email), JANE)
    assert married is not None and DEFAULT_MIN_CONFIDENCE <= married.confidence < 0.99
    for first in ("Jan", "Jnae", "J."):
        assert sure(match(Person(first_name=first, email=JANE.email), JANE), "email")
    # A renamed profile, with the same address: likely, less sure.
    renamed = match(Person(email=JANE.email, linkedin_url="linkedin.com/in/janedoe"), JANE)
    assert renamed is not None and DEFAULT_MIN_CONFIDENCE <= renamed.confidence < 0.99


@pytest.mark.parametrize(
    "company",
    [
        {"company": "ACME, Inc."},
        {"company": "The Acme Corporation"},
        {"company": "Acme"},
        {"website": "http://acme.com/contact"},
        {"website": "us.acme.com"},
        {"email": "jdoe@acme.com"},  # no conflict: the directory record here has no email
        {"company_linkedin_url": "https://de.linkedin.com/company/acme/about/"},
        {"company": "Acme Software"},
    ],
)
def test_name_and_company_match_by_any_company_evidence(company: dict[str, str]) -> None:
    candidate = Person("Jane", "Doe", company="Acme Inc.", website="acme.com",
                       company_linkedin_url="https://www.linkedin.com/company/acme")  # fmt: skip
    query = Person(first_name="Jane", last_name="Doe", **company)
    assert sure(match(query, candidate), "name+company")


def test_one_kind_of_company_evidence_can_stand_for_another() -> None:
    by_name = Person("Jane", "Doe", company="Acme Corp")
    assert sure(match(Person("Jane", "Doe", website="www.acme.com"), by_name), "name+company")
    page = Person("Jane", "Doe", company_linkedin_url="linkedin.com/company/acme-corp")
    assert sure(match(page, by_name), "name+company")
    numeric = Person("Jane", "Doe", company_linkedin_url="linkedin.com/company/1035")
    assert match(numeric, by_name) is None


@pytest.mark.parametrize(
    "query",
    [
        Person("Bobby", "Smith", company="Acme"),
        Person("ROBERT", "SMITH", company="acme inc"),
        Person("Robert J.", "Smith", company="Acme"),
        Person("Rbert", "Smith", company="Acme"),
        Person("Robert", "Smiht", company="Acme"),
        Person("Róbert", "Smith", company="Acme"),
    ],
)
def test_name_variations_match_at_the_same_company(query: Person) -> None:
    candidate = Person("Robert", "Smith", company="Acme LLC")
    assert sure(match(query, candidate), "name+company")


@pytest.mark.parametrize(
    "elsewhere",
    [
        Person("Jane", "Doe", company="Globex Corporation"),
        Person("Jane", "Doe", website="https://globex.com"),
        Person("Jane", "Doe", email="jane.doe@globex.com"),
        Person("Jane", "Doe", company_linkedin_url="https://www.linkedin.com/company/globex"),
        Person("Jane", "Doe", company="Acme Systems"),  # a namesake company is another one
        Person("Jane", "Doe", company="Acne"),
        Person("Jane", "Doe", company="Acme", website="https://globex.com",
               company_linkedin_url="https://www.linkedin.com/company/globex"),
    ],
)  # fmt: skip
def test_a_namesake_at_another_company_is_never_a_match(elsewhere: Person) -> None:
    candidate = Person(
        "Jane",
        "Doe",
        company="Acme Software",
        website="acme.com",
        company_linkedin_url="https://www.linkedin.com/company/acme",
    )
    found = match(elsewhere, candidate)
    assert found is None or found.confidence < DEFAULT_MIN_CONFIDENCE


WORDS = ["Globex", "Initech", "Umbrella", "Hooli", "Vandelay", "Soylent", "Wonka", "Tyrell",
         "Cyberdyne", "Stark", "Wayne", "Oscorp", "Aperture", "Monarch", "Nakatomi"]  # fmt: skip


@given(
    first=st.sampled_from(["Jane", "Robert", "José", "Zoë", "Li", "Mary Ann", "Bob"]),
    last=st.sampled_from(["Doe", "García-López", "O'Brien", "Nguyen", "Smith"]),
    companies=st.lists(st.sampled_from(WORDS), min_size=2, max_size=2, unique=True),
    suffixes=st.lists(st.sampled_from(["", " Inc.", " LLC", " GmbH", " Ltd"]), min_size=2,
                      max_size=2),
    with_website=st.booleans(),
)  # fmt: skip
def test_same_names_at_different_companies_never_match(
    first: str, last: str, companies: list[str], suffixes: list[str], with_website: bool
) -> None:
    one, other = companies
    query = Person(first, last, company=one + suffixes[0],
                   website=f"{one.lower()}.com" if with_website else None)  # fmt: skip
    candidate = Person(first, last, company=other + suffixes[1], website=f"{other.lower()}.com")
    assert match(query, candidate) is None
    # The same record at its own company does match.
    same = Person(first, last, company=one + suffixes[1])
    assert sure(match(query, same), "name+company")


def test_a_candidate_without_a_company_is_not_matched_by_name() -> None:
    assert match(Person("Jane", "Doe", company="Acme"), Person("Jane", "Doe")) is None
    assert match(Person("Jane", "Doe"), Person("Jane", "Doe", company="Acme")) is None
    # Free mail says nothing about the employer.
    gmail = Person("Jane", "Doe", email="jane.doe@gmail.com")
    assert match(gmail, Person("Jane", "Doe", website="gmail.com")) is None
    assert match(Person("Jane", "Doe", company="Acme"), Person("Jane", "Doe", email=None)) is None


def test_name_and_company_need_both_names() -> None:
    candidate = Person("Jane", "Doe", company="Acme")
    assert match(Person(last_name="Doe", company="Acme"), candidate) is None
    assert match(Person(first_name="Jane", company="Acme"), candidate) is None


def test_conflicting_strong_identifiers_forbid_a_name_and_company_match() -> None:
    candidate = Person(
        "Jane",
        "Doe",
        email="jane.doe@acme.com",
        linkedin_url="https://www.linkedin.com/in/jane-doe",
        company="Acme",
    )
    other_email = Person("Jane", "Doe", email="jdoe@acme.com", company="Acme")
    other_profile = Person("Jane", "Doe", linkedin_url="linkedin.com/in/jane-doe-2",
                           company="Acme")  # fmt: skip
    assert match(other_email, candidate) is None
    assert match(other_profile, candidate) is None
    # Without those identifiers the same name and company match.
    assert sure(match(Person("Jane", "Doe", company="Acme"), candidate), "name+company")
    # A role address is no identifier, so it does not conflict.
    assert sure(match(Person("Jane", "Doe", email="info@acme.com", company="Acme"), candidate),
                "name+company")  # fmt: skip


def test_a_personal_address_does_not_forbid_a_match_at_the_company() -> None:
    """Addresses at different domains can be one person's work and personal mailboxes."""
    candidate = Person("Jane", "Doe", email="jane.doe@acme.com", company="Acme")
    personal = match(Person("Jane", "Doe", email="janedoe77@gmail.com", company="Acme"), candidate)
    bare = match(Person("Jane", "Doe", company="Acme"), candidate)
    assert personal is not None and bare is not None
    assert personal.basis == "name+company"
    assert DEFAULT_MIN_CONFIDENCE <= personal.confidence < bare.confidence


def test_a_prefix_alone_is_not_enough_for_a_match() -> None:
    """ "Valley" may be short for "Valley Jade Capital", or another company."""
    candidate = Person("Teresa", "Bailey", company="Valley Inc")
    found = match(Person("Teresa", "Bailey", company="Valley Jade Capital Ltd"), candidate)
    assert found is None or found.confidence < DEFAULT_MIN_CONFIDENCE


def test_dominant_domains_name_the_largest_company_of_a_shared_name() -> None:
    counts = [("summit", "summit.com", 40), ("summit", "summitgroup.io", 3),
              ("acme", "acme.com", 9), ("tie", "b.com", 2), ("tie", "a.com", 2)]  # fmt: skip
    assert dominant_domains(counts) == {"summit": "summit.com", "tie": "a.com"}


def test_a_shared_company_name_reads_as_its_largest_company() -> None:
    dominant = {"summit": "summit.com"}
    minor = Person("Ann", "Lee", email="ann@summitgroup.io", company="Summit Inc.")
    major = Person("Ann", "Lee", website="https://summit.com", company="Summit LLC")
    by_name = Person("Ann", "Lee", company="Summit")
    assert match(by_name, minor, dominant_domains=dominant) is None
    assert match(by_name, minor) is not None  # without the directory's knowledge
    assert sure(match(by_name, major, dominant_domains=dominant), "name+company")
    # The minor company's own domain still shows it.
    with_domain = Person("Ann", "Lee", company="Summit", website="summitgroup.io")
    assert sure(match(with_domain, minor, dominant_domains=dominant), "name+company")
    # Matched by domain, a minor company is no question of names.
    assert match(with_domain, major, dominant_domains=dominant) is None


def test_a_longer_name_spelling_a_minor_company_domain_names_that_company() -> None:
    """ "Rural Dental" names the Rural at ruraldental.com, not the Rural most people of the
    name work at; "Rural" alone still reads as that one."""
    dominant = {"rural": "rural.com"}
    minor = Person("Jeff", "Porter", company="The Rural Inc.", website="www.ruraldental.com")
    by_longer_name = Person("Jeff", "Porter", company="Rural Dental Corp")
    by_page = Person("Jeff", "Porter", company_linkedin_url="linkedin.com/company/rural-dental")
    assert sure(match(by_longer_name, minor, dominant_domains=dominant), "name+company")
    assert sure(match(minor, by_longer_name, dominant_domains=dominant), "name+company")
    assert sure(match(by_page, minor, dominant_domains=dominant), "name+company")
    # The shared name alone, or a domain of the same name elsewhere, is not the minor company.
    by_shared_name = Person("Jeff", "Porter", company="Rural")
    assert match(by_shared_name, minor, dominant_domains=dominant) is None
    elsewhere = Person("Jeff", "Porter", company="Rural", website="rural.io")
    assert match(elsewhere, minor, dominant_domains=dominant) is None
    # A longer name that is itself shared reads as its own largest company.
    shared_too = {**dominant, "rural dental": "ruraldental.io"}
    assert match(by_longer_name, minor, dominant_domains=shared_too) is None


def test_a_record_without_a_first_name_is_no_name_match() -> None:
    """Not even at the same domain with the same last name, where a short first name's
    keyboard slip would be read."""
    lee = Person(None, "Lee", company="Acme", website="acme.com")
    ann = Person("Ann", "Lee", company="Acme", website="acme.com")
    assert match(lee, ann) is None
    assert match(ann, lee) is None
    assert match(Person("Ann", "Lee", email="ann@acme.com"), lee) is None


def test_weaker_agreements_add_up_below_the_threshold() -> None:
    candidate = Person("Robert", "Smith", company="Acme Software")
    exact = match(Person("Robert", "Smith", company="Acme Software"), candidate)
    nickname = match(Person("Bob", "Smith", company="Acme Software"), candidate)
    near_company = match(Person("Bob", "Smith", company="Acme"), candidate)
    two_typos = match(Person("Rbert", "Smiht", company="Acme Software"), candidate)
    initial = match(Person("R.", "Smith", company="Acme Software"), candidate)
    initial_near = match(Person("R.", "Smith", company="Acme"), candidate)
    assert exact is not None and nickname is not None and near_company is not None
    assert exact.confidence > nickname.confidence > near_company.confidence
    assert near_company.confidence >= DEFAULT_MIN_CONFIDENCE
    assert two_typos is not None and two_typos.confidence < DEFAULT_MIN_CONFIDENCE
    assert initial is not None and initial.confidence >= DEFAULT_MIN_CONFIDENCE
    assert initial_near is not None and initial_near.confidence < DEFAULT_MIN_CONFIDENCE


def test_best_match_applies_the_threshold() -> None:
    candidate = Person("Robert", "Smith", company="Acme Software")
    query = Person("Bob", "Smith", company="Acme")
    found = match(query, candidate)
    assert found is not None
    assert best_match(query, [candidate], min_confidence=found.confidence) == (0, found)
    assert best_match(query, [candidate], min_confidence=found.confidence + 0.001) is None
    assert best_match(query, [], min_confidence=0.1) is None


def test_best_match_prefers_the_strongest_and_refuses_a_tie_by_name() -> None:
    namesake_a = Person("Jane", "Doe", company="Acme", email="jane.doe@acme.com")
    namesake_b = Person("Jane", "Doe", company="Acme", email="jane.doe2@acme.com")
    by_name = Person("Jane", "Doe", company="Acme Inc")
    # Two Jane Does at Acme and nothing to tell them apart: no match.
    assert best_match(by_name, [namesake_a, namesake_b]) is None
    # The email tells.
    with_email = Person("Jane", "Doe", company="Acme", email="Jane.Doe2@acme.com")
    found = best_match(with_email, [namesake_a, namesake_b])
    assert found is not None and found[0] == 1 and found[1].basis == "email"
    # The exact name beats a nickname clearly enough.
    robert, bob = Person("Robert", "Smith", company="Acme"), Person("Bob", "Smith", company="Acme")
    chosen = best_match(Person("Robert", "Smith", company="Acme"), [bob, robert])
    assert chosen is not None and chosen[0] == 1
    # Duplicate records with the same email: the first.
    twice = best_match(Person(email="jane.doe@acme.com"), [namesake_a, namesake_a])
    assert twice is not None and twice[0] == 0


@pytest.mark.parametrize(
    ("query", "candidate"),
    [
        # The query's own address spells the name its typed one misspells.
        (Person("Angel", "Hughes", email="angela.hughes@gmail.com", company="Irving"),
         Person("Angela", "Hughes", company="Irving GmbH")),
        (Person("Triish", "Nelson", linkedin_url="linkedin.com/in/patricia-nelson",
                company="Acme Labs"),
         Person("Patricia", "Nelson", company="Acme Labs Inc.")),
        # The candidate's: jdoe@ and jane.doe77@ spell the last name, jane@ the first.
        (Person("Billy", "Adams", website="zenithsystems.com"),
         Person("Billy", "Adms", email="badams@zenithsystems.com", company="Zenith Systems")),
        (Person("Paul", "Liu", company="Willow Lake"),
         Person("Paul", "Lij", email="paul.liu2@willowlake.com", company="Willow Lake S.A.")),
        (Person("Alan", "Mitchell", company="Summit Hub"),
         Person("Alah", "Mitchell", email="alan@summithub.com", company="Summit Hub")),
        (Person("Jidy", "Tran", email="judithtran@yahoo.com", company="Pulse"),
         Person("Judith", "Tran", company="Pulse")),
    ],
)  # fmt: skip
def test_a_misspelt_name_reads_as_its_own_address_spells_it(
    query: Person, candidate: Person
) -> None:
    assert sure(match(query, candidate), "name+company")
    assert sure(match(candidate, query), "name+company")


def test_a_spelled_name_does_not_make_a_namesake_or_another_name_agree() -> None:
    candidate = Person("Angela", "Hughes", company="Irving GmbH")
    # Another company is another person, however the name is spelled.
    elsewhere = Person("Angel", "Hughes", email="angela.hughes@gmail.com", company="Globex")
    assert match(elsewhere, candidate) is None
    # An address that spells a name far from the typed one (another person's mailbox) or
    # does not spell the last name too says nothing about the first.
    assert match(Person("Mary", "Hughes", email="angela.hughes@gmail.com",
                        company="Irving"), candidate) is None  # fmt: skip
    assert match(Person("Angel", "Hughes", email="angela.smith@gmail.com",
                        company="Irving"), candidate) is None  # fmt: skip
    assert match(Person("Angel", "Hughes", company="Irving"), candidate) is None


def test_an_identifier_match_reads_a_misspelt_name_as_its_address_spells_it() -> None:
    record = Person("Douglas", "Mitchell", email="douglas.mitchell@wisehealth.com")
    found = match(Person("DougM.", "Mitchell", email="douglas.mitchell@wisehealth.com"), record)
    assert sure(found, "email")
    initial = match(Person("T.", "Young", email="anthony.young@pine.com"),
                    Person("Anthony", "Young", email="anthony.young@pine.com"))  # fmt: skip
    assert sure(initial, "email")
    other = match(Person("Mary", "Young", email="anthony.young@pine.com"),
                  Person("Anthony", "Young", email="anthony.young@pine.com"))  # fmt: skip
    assert other is not None and other.confidence < DEFAULT_MIN_CONFIDENCE


@pytest.mark.parametrize(
    ("typed", "real"),
    [("Noahh", "Noah"), ("Lri", "Lori"), ("Joqn", "Joan"), ("Alzn", "Alan"), ("Josee", "Jose")],
)
def test_a_short_first_name_slip_matches_at_the_same_company_domain(typed: str, real: str) -> None:
    candidate = Person(real, "Ross", email=f"{real.lower()}.ross@rapidbirch.com",
                       company="Rapid Birch")  # fmt: skip
    assert sure(match(Person(typed, "Ross", website="rapidbirch.com"), candidate), "name+company")
    # By the company's name alone it is not enough.
    by_name = match(Person(typed, "Ross", company="Rapid Birch"), candidate)
    assert by_name is None or by_name.confidence < DEFAULT_MIN_CONFIDENCE
    # Nor at another company.
    assert match(Person(typed, "Ross", website="globex.com"), candidate) is None


@pytest.mark.parametrize(
    ("typed", "real"), [("Diiaz", "Diaz"), ("Hartt", "Hart"), ("Col", "Cole"), ("Leee", "Lee")]
)
def test_a_short_last_name_slip_matches_at_the_same_company_page(typed: str, real: str) -> None:
    page = "https://www.linkedin.com/company/elite-scarlet"
    candidate = Person("Debra", real, company="Elite Scarlet", company_linkedin_url=page)
    query = Person("Debra", typed, company_linkedin_url=page)
    assert sure(match(query, candidate), "name+company")
    # Not with the first name differing too.
    assert match(Person("Debbie", typed, company_linkedin_url=page), candidate) is None


@pytest.mark.parametrize(
    ("a", "b"), [("Mark", "Mary"), ("Jake", "Jane"), ("Amy", "Ann"), ("Ted", "Tom"), ("Al", "Ali")]
)
def test_a_short_name_changed_by_more_than_a_slip_is_another_name(a: str, b: str) -> None:
    candidate = Person(b, "Ross", email=f"{b.lower()}@rapidbirch.com", company="Rapid Birch")
    assert match(Person(a, "Ross", website="rapidbirch.com"), candidate) is None


def test_query_company_keys_also_try_the_bare_name_of_a_domain_or_a_name() -> None:
    """A contact at getacme.com or "Acme Health" also looks under the "acme" key, where a
    record named "Acme" is stored; what records are stored under does not change."""
    assert {"geta", "acme"} <= lookup_keys(Person(website="https://getacme.com")).companies
    assert {"acme"} <= lookup_keys(Person(email="jane@acmehq.com")).companies
    assert {"hubh", "hub"} <= lookup_keys(Person(company="Hub Health S.A.")).companies
    assert record_keys(Person(website="https://getacme.com")).company == "geta"
    assert record_keys(Person(company="Hub Health S.A.")).company == "hubh"
    # Short or plain names keep their one key.
    assert lookup_keys(Person(website="gold.com")).companies == {"gold"}
    assert lookup_keys(Person(company="Health")).companies == {"heal"}
    # More keys find more candidates; a namesake among them is still refused.
    candidate = Person("Jane", "Doe", company="Acme", website="acme.com")
    other_domain = match(Person("Jane", "Doe", website="getacme.com"), candidate)
    assert other_domain is None or other_domain.confidence < DEFAULT_MIN_CONFIDENCE
    assert match(Person("Jane", "Doe", website="getglobex.com"), candidate) is None


@pytest.mark.parametrize(
    ("query", "candidate"),
    [
        (Person("Juan", "Boyd", company="Silver Group"),
         Person("Juan", "Boyd", website="https://www.silvergroup.com/")),
        (Person("Ann", "Lee", company_linkedin_url="linkedin.com/company/cascade-consulting"),
         Person("Ann", "Lee", company="Cascade Corp.")),
        (Person("Al", "Ortiz", email="aortiz@getacme.com"),
         Person("Al", "Ortiz", company="Acme Co.")),
        (Person("Ann", "Lee", company="Works Quantum Ltd"),
         Person("Ann", "Lee", website="https://getworksquantum.com/about-us")),
    ],
)  # fmt: skip
def test_a_company_spelled_with_what_companies_add_to_their_name_agrees(
    query: Person, candidate: Person
) -> None:
    assert sure(match(query, candidate), "name+company")
    assert sure(match(candidate, query), "name+company")


def test_companies_adding_different_words_to_one_name_are_different() -> None:
    dental = Person("Ann", "Lee", company="Acme Dental")
    robotics = Person("Ann", "Lee", company_linkedin_url="linkedin.com/company/acme-robotics")
    assert match(robotics, dental) is None
    systems = Person("Ann", "Lee", company="Acme Systems", website="acmesystems.com")
    software = Person("Ann", "Lee", company="Acme Software", website="getacme.com")
    assert match(systems, software) is None


def test_a_company_known_by_its_page_alone_takes_the_company_its_records_show() -> None:
    page = "https://www.linkedin.com/company/10007/about"
    by_page = Person("Ann", "Lee", company_linkedin_url=page)
    assert page_only(by_page) == "10007"
    assert record_keys(by_page).company_page == "10007"
    # A name, a website or a work address says more than a page: nothing is added.
    for known in (
        Person("Ann", "Lee", company="Acme", company_linkedin_url=page),
        Person("Ann", "Lee", website="acme.com", company_linkedin_url=page),
        Person("Ann", "Lee", email="ann@acme.com", company_linkedin_url=page),
    ):
        assert page_only(known) is None
        assert with_company_of_page(known, "globex", "globex.com") == known
    resolved = with_company_of_page(by_page, "acme", "acme.com")
    assert (resolved.company, resolved.website) == ("acme", "acme.com")
    record = Person("Ann", "Lee", company="Acme Inc.", email="ann.lee@acme.com")
    assert match(by_page, record) is None  # a number is no company name
    assert sure(match(resolved, record), "name+company")
    assert match(with_company_of_page(by_page, "globex", None), record) is None
