"""Writes src/dialscore/compliance/us_area_codes.toml: the state of each US area code, as
libphonenumber's geocoding data names it for the first valid number of the code (P206).

The service reads the table instead of the geocoding data, which takes about 100 MiB in each
process that imports it. Run it again when the phonenumbers pin changes; ``--check`` fails
when the packaged table differs from what the pinned data gives (about 30 s).

    .venv/bin/python scripts/us_area_codes.py [--check]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import phonenumbers
from phonenumbers import geocoder

from dialscore.compliance.places import area_code_states, state_in_description

ROOT = Path(__file__).resolve().parent.parent
TABLE = ROOT / "src" / "dialscore" / "compliance" / "us_area_codes.toml"
HEADER = """\
# The state of each US area code (P206): what libphonenumber's geocoding data names for the
# first valid number of the code (exchanges 200 to 999, subscriber number 1234). Written by
# scripts/us_area_codes.py from phonenumbers {version}; do not edit by hand. A code of the US
# whose numbers name no state (toll-free, personal and other non-geographic codes) is absent.
"""


def first_valid_number(area_code: int) -> phonenumbers.PhoneNumber | None:
    """The first valid number of the US with this area code, exchanges in ascending order."""
    for exchange in range(200, 1000):
        number = phonenumbers.PhoneNumber(
            country_code=1, national_number=int(f"{area_code}{exchange}1234")
        )
        if phonenumbers.is_valid_number(number):
            return number if phonenumbers.region_code_for_number(number) == "US" else None
    return None


def states() -> dict[str, str]:
    """Each US area code ("212") whose first valid number names a state, with the state."""
    found = {}
    for area_code in range(200, 1000):
        number = first_valid_number(area_code)
        if number is None:
            continue
        state = state_in_description(geocoder.description_for_valid_number(number, "en"))
        if state is not None:
            found[str(area_code)] = state
    return found


def table_text(found: dict[str, str]) -> str:
    lines = [f'{code} = "{state}"' for code, state in sorted(found.items())]
    return HEADER.format(version=phonenumbers.__version__) + "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="compare, do not write")
    args = parser.parse_args()
    found = states()
    if args.check:
        packaged = {code[2:]: state for code, state in area_code_states().items()}
        if packaged != found:
            differ = sorted(set(packaged.items()) ^ set(found.items()))
            print(f"{TABLE} differs from the geocoding data: {differ[:10]}", file=sys.stderr)
            return 1
        print(f"{TABLE}: {len(found)} area codes, as the geocoding data names them")
        return 0
    TABLE.write_text(table_text(found), encoding="utf-8")
    print(f"wrote {TABLE}: {len(found)} area codes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
