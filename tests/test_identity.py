"""Identity, pure: the normalisers behind the lookup keys (emails, LinkedIn URLs, company
names and domains, names), a contact's person, and the keys records are stored and looked up
under."""

from __future__ import annotations

import dataclasses

import pytest

from dialscore.identity import companies, keys
from dialscore.identity.addresses import email_key, linkedin_slug, normalise_email
from dialscore.identity.companies import (
    company_domain,
    company_linkedin_slug,
    company_name_key,
    domain_of,
)
from dialscore.identity.keys import (
    Keys,
    Person,
    company_identity_key,
    lookup_keys,
    person_from_fields,
    person_name_key,
    record_key_values,
    record_keys,
)
from dialscore.identity.names import fold, last_name_key, name_tokens

# -- email ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "email"),
    [
        ("jane.doe@acme.com", "jane.doe@acme.com"),
        ("  Jane.Doe@ACME.com  ", "jane.doe@acme.com"),
        ("mailto:jane@acme.com", "jane@acme.com"),
        ("Jane Doe <Jane@Acme.com>", "jane@acme.com"),
        ("jane+crm@acme.com", "jane@acme.com"),  # +tags: the same mailbox, any domain
        ("jane.doe+news+x@acme.com", "jane.doe@acme.com"),
        ("Jane.Doe@gmail.com", "janedoe@gmail.com"),  # Gmail ignores dots
        ("j.a.n.e.d.o.e+x@googlemail.com", "janedoe@gmail.com"),
        ("jane@acme.com.", "jane@acme.com"),
        ("jane_o'neil@acme.co.uk", "jane_o'neil@acme.co.uk"),
    ],
)
def test_emails_normalise(raw: str, email: str) -> None:
    assert normalise_email(raw) == email


def test_dots_are_kept_outside_gmail() -> None:
    assert normalise_email("j.smith@acme.com") != normalise_email("jsmith@acme.com")
    assert normalise_email("j.smith@yahoo.com") != normalise_email("jsmith@yahoo.com")


@pytest.mark.parametrize(
    "raw",
    [None, "", "   ", "jane", "jane@", "@acme.com", "jane@acme", "jane@@acme.com",
     "jane doe@acme.com", "a@b@c.com", "jane@.acme.com", "jane@acme..com", "+tag@acme.com",
     "...@gmail.com", "x" * 250 + "@acme.com"],
)  # fmt: skip
def test_what_is_not_an_email_normalises_to_none(raw: str | None) -> None:
    assert normalise_email(raw) is None


def test_role_addresses_are_no_lookup_key() -> None:
    assert normalise_email("Info@Acme.com") == "info@acme.com"
    for address in ("info@acme.com", "Sales@acme.com", "no-reply@acme.com", "hr+jobs@acme.com"):
        assert email_key(address) is None
    assert email_key("information.desk@acme.com") == "information.desk@acme.com"


# -- LinkedIn ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "https://www.linkedin.com/in/jane-doe-12a",
        "https://www.linkedin.com/in/jane-doe-12a/",
        "http://www.linkedin.com/in/jane-doe-12a",
        "www.linkedin.com/in/jane-doe-12a",
        "linkedin.com/in/jane-doe-12a",
        "https://linkedin.com/in/jane-doe-12a",
        "https://uk.linkedin.com/in/jane-doe-12a",
        "https://de.linkedin.com/in/jane-doe-12a/",
        "https://m.linkedin.com/in/jane-doe-12a",
        "https://www.linkedin.com/mwlite/in/jane-doe-12a",
        "HTTPS://WWW.LINKEDIN.COM/in/Jane-Doe-12A",
        "https://www.linkedin.com/in/jane-doe-12a?trk=public_profile",
        "https://www.linkedin.com/in/jane-doe-12a/?originalSubdomain=uk",
        "https://www.linkedin.com/in/jane-doe-12a#experience",
        "https://www.linkedin.com/in/jane-doe-12a/en",
        "https://www.linkedin.com/in/jane-doe-12a/details/experience/",
        "https://www.linkedin.com//in//jane-doe-12a//",
        "  https://www.linkedin.com/in/jane%2Ddoe%2D12a  ",
        "https://www.linkedin.com:443/in/jane-doe-12a",
    ],
)
def test_profile_url_variants_give_one_slug(url: str) -> None:
    assert linkedin_slug(url) == "jane-doe-12a"


def test_percent_encoded_and_plain_unicode_slugs_agree() -> None:
    plain = linkedin_slug("https://www.linkedin.com/in/jürgen-müller-7/")
    encoded = linkedin_slug("https://de.linkedin.com/in/j%C3%BCrgen-m%C3%BCller-7")
    decomposed = linkedin_slug("https://www.linkedin.com/in/ju%CC%88rgen-mu%CC%88ller-7")
    assert plain == encoded == decomposed == "jürgen-müller-7"


@pytest.mark.parametrize(
    ("url", "slug"),
    [
        # The profiles LinkedIn redirects these old public URLs to.
        (
            "https://sy.linkedin.com/pub/krzysztof-marzec/a7/576/b50?trk=biz_employee_pub",
            "krzysztof-marzec-b50576a7",
        ),
        ("https://uk.linkedin.com/pub/abdi-ahmed/100/384/6b0", "abdi-ahmed-6b0384100"),
        ("http://www.linkedin.com/pub/jane-doe/1/23/4/", "jane-doe-0040231"),
        ("https://www.linkedin.com/pub/jane-doe/A7/576/B50", "jane-doe-b50576a7"),
        ("https://www.linkedin.com/pub/jane-doe", "jane-doe"),
    ],
)
def test_old_pub_urls_give_the_profile_they_redirect_to(url: str, slug: str) -> None:
    assert linkedin_slug(url) == slug
    assert linkedin_slug(f"https://www.linkedin.com/in/{slug}") == slug


@pytest.mark.parametrize(
    "url",
    [
        None,
        "",
        "jane-doe",
        "https://www.linkedin.com/",
        "https://www.linkedin.com/in/",
        "https://www.linkedin.com/pub/dir/Jane/Doe",
        "https://www.linkedin.com/pub/jane-doe/xyz/576/b50",
        "https://www.linkedin.com/company/acme",
        "https://www.linkedin.com/feed/",
        "https://notlinkedin.com/in/jane-doe",
        "https://linkedin.com.evil.example/in/jane-doe",
        "https://www.linkedin.com/in/jane%20doe",
        "https://www.linkedin.com/in/%FF%FE",
    ],
)
def test_what_is_not_a_profile_url_has_no_slug(url: str | None) -> None:
    assert linkedin_slug(url) is None


@pytest.mark.parametrize(
    ("url", "slug"),
    [
        ("https://www.linkedin.com/company/acme-inc", "acme-inc"),
        ("https://uk.linkedin.com/company/Acme-Inc/about/?trk=x", "acme-inc"),
        ("linkedin.com/company/acme-inc/jobs", "acme-inc"),
        ("https://www.linkedin.com/company/1035/", "1035"),
        ("https://www.linkedin.com/sales/company/1035", "1035"),
        ("https://www.linkedin.com/showcase/acme-cloud/", "showcase/acme-cloud"),
        ("https://www.linkedin.com/school/acme-university", "school/acme-university"),
        ("https://www.linkedin.com/in/jane-doe", None),
        ("https://www.linkedin.com/company/", None),
        ("https://acme.com/company/acme", None),
    ],
)
def test_company_page_slugs(url: str, slug: str | None) -> None:
    assert company_linkedin_slug(url) == slug


# -- companies --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "Acme", "ACME", "Acme Inc", "Acme Inc.", "Acme, Inc.", "Acme Incorporated",
        "Acme LLC", "Acme L.L.C.", "Acme Corp.", "Acme Corporation", "Acme Ltd",
        "Acme Limited", "Acme GmbH", "Acme GmbH & Co. KG", "Acme S.A.", "Acme Pty Ltd",
        "Acme Holdings, Inc.", "The Acme Company", "Acme Sp. z o.o.", "Acme plc",
        "  acme  ", "acme.com", "Acme.com, Inc.", "Ácme",
    ],
)  # fmt: skip
def test_legal_suffixes_and_spellings_give_one_company_key(name: str) -> None:
    assert company_name_key(name) == "acme"


def test_company_keys_keep_what_tells_companies_apart() -> None:
    assert company_name_key("Smith & Jones LLC") == company_name_key("Smith and Jones")
    assert company_name_key("Smith & Jones") == "smith and jones"
    assert company_name_key("Acme Software") == "acme software"
    assert company_name_key("Inc.") == "inc"  # a name that is all suffix keeps it
    assert company_name_key("") is None
    assert company_name_key("  ,. ") is None


@pytest.mark.parametrize(
    ("value", "domain"),
    [
        ("https://www.acme.com/about?x=1", "acme.com"),
        ("http://acme.com", "acme.com"),
        ("acme.com", "acme.com"),
        ("WWW.ACME.COM/", "acme.com"),
        ("https://acme.com:8443/", "acme.com"),
        ("jane@Mail.Acme.co.uk", "mail.acme.co.uk"),
        ("acme", None),
        ("", None),
        (None, None),
    ],
)
def test_domains_of_websites_and_emails(value: str | None, domain: str | None) -> None:
    assert domain_of(value) == domain


def test_free_mail_and_shared_hosts_identify_no_company() -> None:
    assert company_domain("jane@gmail.com") is None
    assert company_domain("jane@yahoo.co.uk") is None
    assert company_domain("https://www.linkedin.com/company/acme") is None
    assert company_domain("https://acme.wordpress.com") is None
    assert company_domain("jane@acme.com") == "acme.com"


# -- names ------------------------------------------------------------------------------------


def test_folding_removes_accents_and_case() -> None:
    assert fold("Zoë Müller-Ørsted") == "zoe muller-orsted"
    assert fold("Łukasz Żółć") == "lukasz zołc".replace("ł", "l")
    assert fold("STRAßE") == "strasse"
    assert fold("Nguyễn Thị") == "nguyen thi"


def test_name_tokens_drop_titles_suffixes_and_apostrophes() -> None:
    assert name_tokens("Dr. Seán O'Brien Jr.") == ("sean", "obrien")
    assert name_tokens("O\u2019Brien") == ("obrien",)
    assert name_tokens("Mary-Jane") == ("mary", "jane")
    assert name_tokens("Jr.") == ("jr",)  # nothing else to keep
    assert name_tokens(None) == ()


def test_a_name_of_ascii_letters_and_digits_is_one_word_in_lower_case() -> None:
    assert name_tokens("Agent007") == ("agent007",)
    assert name_tokens("Dr") == ("dr",)
    assert name_tokens("Agent_007") == ("agent", "007")  # an underscore parts words
    assert name_tokens("Agent 007 Jr") == ("agent", "007")


@pytest.mark.parametrize("name", ["García-López", "Garcia Lopez", "GARCIA LOPEZ", "garcía lópez"])
def test_last_name_keys_fold_accents_spaces_and_hyphens(name: str) -> None:
    assert last_name_key(name) == "garcialopez"


def test_last_name_keys_of_nothing() -> None:
    assert last_name_key(None) is None
    assert last_name_key(" - ") is None


# -- people -----------------------------------------------------------------------------------


def test_person_from_api_fields() -> None:
    person = person_from_fields(
        {
            "firstName": " Jane ",
            "lastName": "Doe",
            "email": "jane@acme.com",
            "linkedInUrl": "https://www.linkedin.com/in/jane-doe",
            "companyAccount": "Acme Inc.",
            "website": "acme.com",
            "companyLinkedInUrl": "https://www.linkedin.com/company/acme",
            "phone": "+14155552671",
        }
    )
    assert person == Person(
        "Jane",
        "Doe",
        "jane@acme.com",
        "https://www.linkedin.com/in/jane-doe",
        "Acme Inc.",
        "acme.com",
        "https://www.linkedin.com/company/acme",
    )


def test_person_from_fields_ignores_other_types_and_reads_v1_company_info() -> None:
    person = person_from_fields(
        {
            "firstName": 7,
            "lastName": "",
            "email": None,
            "companyInfo": {"companyAccount": "Acme", "website": "acme.com"},
        }
    )
    assert person == Person(company="Acme", website="acme.com")
    own = person_from_fields({"companyAccount": "Beta", "companyInfo": {"companyAccount": "X"}})
    assert own.company == "Beta"
    assert person_from_fields({"companyInfo": "Acme"}) == Person()


def test_lookup_keys() -> None:
    keys = lookup_keys(
        Person(
            first_name="José",
            last_name="García-López",
            email="Jose.Garcia+crm@Acme.com",
            linkedin_url="https://uk.linkedin.com/in/jose-garcia/?trk=x",
        )
    )
    assert keys == Keys(
        email="jose.garcia@acme.com",
        linkedin="jose-garcia",
        last_name="garcialopez",
        companies=frozenset({"acme"}),  # the work address's domain
        initials=frozenset({"j"}),
        domains=frozenset({"acme.com"}),
    )
    assert lookup_keys(Person()) == Keys(None, None, None)
    assert lookup_keys(Person(email="sales@acme.com")).email is None


# -- record keys ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "person",
    [
        Person(company="Acme Software, Inc."),
        Person(company="The ACME Corp"),
        Person(website="https://www.acmesoftware.com/"),
        Person(email="jane@acme.co.uk"),
        Person(company_linkedin_url="https://de.linkedin.com/company/acme-software/"),
    ],
)
def test_company_keys_agree_across_kinds_of_company_evidence(person: Person) -> None:
    assert record_keys(person).company == "acme"
    assert "acme" in lookup_keys(person).companies


def test_record_keys_prefer_the_company_name_and_keep_its_domain() -> None:
    keys = record_keys(
        Person("Zoë", "Müller", email="zoe@gmail.com", company="Initech GmbH",
               website="www.initech.de")
    )  # fmt: skip
    assert (keys.company, keys.initial, keys.last_name) == ("init", "z", "muller")
    assert (keys.company_name, keys.company_domain) == ("initech", "initech.de")
    assert record_keys(Person(company_linkedin_url="linkedin.com/company/10007")).company is None


@pytest.mark.parametrize(
    "person",
    [
        Person("Ann", "Lee", "Ann.Lee@Acme.com", company="Acme, Inc."),
        Person("José", "García-López", website="https://www.acme.co.uk/about"),
        Person(
            "Dr. Ann",
            "O'Brien Jr.",
            email="ann@gmail.com",
            company_linkedin_url=("https://uk.linkedin.com/company/acme-inc/about/"),
        ),
        Person(None, "Lee", "info@getacme.com", "linkedin.com/pub/jane-doe/a7/576/b50"),
        Person("Ann", "Lee", " Ann.Lee@WWW.Acme.Co.UK "),
        Person("Ann", "Lee", "ann+crm@acme.com", company="Acme"),
        Person("Ann", "Lee", "Ann Lee <ann@acme.com>", company="Acme"),
        Person("Ann", "Lee", "ann@acme.wixsite.com", company="Acme"),
        Person("Ann", "Lee", "ann@acme", company="Acme"),
        Person("Ann", "Lee", "SALES@acme.com"),
        Person("Ann", "Lee", f"{'a' * 250}@acme.com"),
        Person(),
    ],
)
def test_record_key_values_are_record_keys_as_a_tuple(person: Person) -> None:
    keys = record_keys(person)
    assert record_key_values(*dataclasses.astuple(person)) == dataclasses.astuple(keys)
    # The work email's domain stands in for a missing website.
    if person.email == "Ann.Lee@Acme.com":
        assert keys.company_domain == "acme.com"


def test_the_large_memos_give_the_same_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """What an import's parse workers do first: the company and host memos widened, the
    keys unchanged (the memos are restored after the test)."""
    memos = [
        (keys, "_company_identity"),
        (keys, "_stored_company_key"),
        (keys, "_company_page"),
        (companies, "_host"),
        (companies, "_company_host"),
    ]
    for module, name in memos:
        monkeypatch.setattr(module, name, getattr(module, name))
    record = ("Ann", "Lee", "ann@acme.com", None, "Acme, Inc.", "https://www.acme.com/", None)
    before = record_key_values(*record)
    keys.use_large_memos()
    for module, name in memos:
        assert getattr(module, name).cache_info().maxsize == keys.LARGE_MEMO
    assert record_key_values(*record) == before
    assert keys._company_identity.cache_info().misses == 1
    # The website's host and the email's, both read through the widened memo.
    assert companies._host.cache_info().misses == 2


# -- contact identity -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("person", "key"),
    [
        (Person(company="Acme, Inc.", website="globex.com"), "name:acme"),
        (Person(website="https://www.acme.com/about", email="ann@globex.com"), "domain:acme.com"),
        (Person(website="https://acme.wordpress.com", email="ann@acme.com"), "domain:acme.com"),
        (Person(email="ann@gmail.com", company_linkedin_url="linkedin.com/company/acme-inc"),
         "page:acme-inc"),
        (Person(website="https://uk.linkedin.com/company/Acme-Inc/about"), "page:acme-inc"),
        (Person(email="ann@gmail.com"), None),
        (Person(company="!!!"), None),
    ],
)  # fmt: skip
def test_company_identity_keys(person: Person, key: str | None) -> None:
    assert company_identity_key(person) == key


def test_company_identity_keys_agree_with_the_record_keys() -> None:
    person = Person("Ann", "Lee", "ann@acme.co.uk", company_linkedin_url="linkedin.com/company/x")
    stored = record_keys(person)
    assert company_identity_key(person) == f"domain:{stored.company_domain}"
    named = Person(company="The Acme Company")
    assert company_identity_key(named) == f"name:{record_keys(named).company_name}"


def test_person_name_keys() -> None:
    assert person_name_key(Person("Dr. Zoë", "O'Brien Jr.")) == "zoe obrien"
    assert person_name_key(Person("Mary-Ann", "  ")) == "mary ann"
    assert person_name_key(Person()) == ""
