"""Webhook and callback URLs (P75): what is refused and why, and the normalised form stored,
echoed and called. Pure: nothing is resolved or called."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dialscore.kit.outbound import RefusedTarget, Target, normalise_url, parse_target


@pytest.mark.parametrize(
    ("url", "normalised"),
    [
        ("HTTPS://Hooks.Example.COM:443/In?a=b#top", "https://hooks.example.com/In?a=b"),
        ("https://example.com", "https://example.com/"),
        ("https://example.com:8443/h", "https://example.com:8443/h"),
        ("https://bücher.example/ü", "https://xn--bcher-kva.example/%C3%BC"),
        # Full-width letters, mapped by UTS 46 as browsers map them.
        ("https://\uff25\uff38\uff21\uff2d\uff30\uff2c\uff25.com/x", "https://example.com/x"),
        ("https://xn--bcher-kva.example/", "https://xn--bcher-kva.example/"),
        ("https://example.com/a b?q=1 2", "https://example.com/a%20b?q=1%202"),
        ("https://example.com./x", "https://example.com./x"),
        ("https://[2606:4700:0:0::1]:443/h", "https://[2606:4700::1]/h"),
        ("https://93.184.216.34/hook", "https://93.184.216.34/hook"),
        ("https://@example.com/x", "https://example.com/x"),
        ("http://localhost:80/x", "http://localhost/x"),
        ("http://localhost:443/x", "http://localhost:443/x"),
    ],
)
def test_the_stored_form(url: str, normalised: str) -> None:
    allow_private = url.startswith("http:")
    assert normalise_url(url, allow_private=allow_private) == normalised
    assert normalise_url(normalised, allow_private=allow_private) == normalised


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("https://example.com/x\r\nX-Injected: 1", "control characters (U+000D at position 21)"),
        ("https://example.com/\nx", "control characters (U+000A at position 20)"),
        ("https://exa\tmple.com/", "control characters (U+0009 at position 11)"),
        ("https://example.com/\x00", "control characters (U+0000 at position 20)"),
        ("https://example.com/\x7f", "control characters (U+007F at position 20)"),
        ("https://example.com/\x85", "control characters (U+0085 at position 20)"),
        ("https://example.com/\udc00", "lone surrogates"),
        ("https://user:pass@example.com/x", "user name or password"),
        ("https://user@example.com/x", "user name or password"),
        ("https://:pass@example.com/x", "user name or password"),
        ("https://example.com\\@evil.example/", "user name or password"),
        ("https://a..b/x", "invalid host name (Empty Label)"),
        ("https://" + "a" * 64 + ".com/x", "invalid host name (Label too long)"),
        ("https://" + ("a" * 60 + ".") * 5 + "com/", "invalid host name (Domain too long)"),
        ("https://-a.example/", "invalid host name"),
        ("https://ex_ample.example/", "invalid host name"),
        ("https://xn--zz.example/", "invalid host name"),
        ("https://%65xample.com/", "invalid host name"),
        ("https://example.com:0/", "not a valid URL"),
        ("https://example.com:99999/", "not a valid URL"),
        ("https://[::1/x", "not a valid URL"),
        ("https:///x", "must have a host"),
        ("http://example.com/", "must use https"),
        ("javascript:alert(1)", "must use https"),
        ("https://example.com/" + "a" * 2030, "longer than 2048 characters once normalised"),
        ("https://example.com/" + "é" * 700, "longer than 2048 characters once normalised"),
    ],
)
def test_what_is_refused_and_why(url: str, why: str) -> None:
    with pytest.raises(RefusedTarget) as refused:
        normalise_url(url, allow_private=False)
    assert str(refused.value).startswith("url ")
    assert why in str(refused.value)
    # The same rule holds at every call (a URL stored before the rules were).
    with pytest.raises(RefusedTarget):
        parse_target(url, allow_private=False)


def test_a_call_goes_to_the_normalised_url() -> None:
    target = parse_target("HTTPS://Bücher.Example:443/a b#x", allow_private=False)
    assert target == Target("https", "xn--bcher-kva.example", 443, "/a%20b")


_hosts = st.one_of(
    st.sampled_from(
        ["example.com", "EXAMPLE.com", "bücher.example", "a..b", "xn--zz.com", "ex_ample.com",
         "[::1]", "[2606:4700::1]", "127.0.0.1", "2130706433", "localhost", "a" * 64 + ".com",
         "-a.com", ""]
    ),
    st.text(alphabet=st.characters(codec="utf-8"), max_size=12),
)  # fmt: skip
_parts = st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=15)


@settings(max_examples=60)
@given(
    scheme=st.sampled_from(["https", "HTTPS", "http", "ftp", ""]),
    userinfo=st.sampled_from(["", "u@", "u:p@", "@"]),
    host=_hosts,
    port=st.sampled_from(["", ":443", ":80", ":8443", ":0", ":99999", ":x"]),
    path=_parts,
    query=_parts,
    fragment=_parts,
    allow_private=st.booleans(),
)
def test_a_normalised_url_is_safe_and_stays_as_it_is(
    scheme: str,
    userinfo: str,
    host: str,
    port: str,
    path: str,
    query: str,
    fragment: str,
    allow_private: bool,
) -> None:
    url = f"{scheme}://{userinfo}{host}{port}/{path}?{query}#{fragment}"
    try:
        normalised = normalise_url(url, allow_private=allow_private)
    except RefusedTarget as refused:
        assert str(refused).startswith("url ")
        return
    assert normalised.isascii() and normalised.isprintable()
    assert "#" not in normalised and len(normalised) <= 2048
    assert normalised.startswith(("https://", "http://") if allow_private else ("https://",))
    authority = normalised.split("/")[2]
    assert "@" not in authority and authority == authority.lower()
    assert not authority.endswith((":443", ":80")) or normalised.startswith(
        "http://" if authority.endswith(":443") else "https://"
    )
    assert normalise_url(normalised, allow_private=allow_private) == normalised


@given(st.text(max_size=60))
def test_any_text_is_normalised_or_refused_with_a_reason(text: str) -> None:
    try:
        normalise_url(text, allow_private=True)
    except RefusedTarget as refused:
        assert str(refused).startswith("url ")
