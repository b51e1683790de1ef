"""Sales regions of D18: US for NANP numbers, EMEA and APAC by the number's country."""

from __future__ import annotations


def _codes(*groups: str) -> frozenset[str]:
    return frozenset(code for group in groups for code in group.split())


EMEA = _codes(
    # Europe
    "AD AL AT AX BA BE BG BY CH CY CZ DE DK EE ES FI FO FR GB GG GI GR HR HU IE IM IS IT JE",
    "LI LT LU LV MC MD ME MK MT NL NO PL PT RO RS RU SE SI SJ SK SM UA VA XK",
    # Middle East, Caucasus and Central Asia
    "AE AM AZ BH GE IL IQ IR JO KG KW KZ LB OM PS QA SA SY TJ TM TR UZ YE",
    # Africa
    "AO BF BI BJ BW CD CF CG CI CM CV DJ DZ EG EH ER ET GA GH GM GN GQ GW KE KM LR LS LY MA",
    "MG ML MR MU MW MZ NA NE NG RE RW SC SD SH SL SN SO SS ST SZ TD TG TN TZ UG YT ZA ZM ZW",
)

APAC = _codes(
    "AF AU BD BN BT CC CK CN CX FJ FM HK ID IN IO JP KH KI KP KR LA LK MH MM MN MO MV MY NC",
    "NF NP NR NU NZ PF PG PH PK PN PW SB SG TH TK TL TO TV TW VN VU WF WS",
)


def region_for(country_code: int, country: str | None) -> str | None:
    if country_code == 1:
        return "US"
    if country in EMEA:
        return "EMEA"
    if country in APAC:
        return "APAC"
    return None
