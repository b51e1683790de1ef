"""Screenshots of every page of the web app at 1440 px and 375 px wide, for docs/dashboard.md.

Starts the embedded service (``python -m dialscore serve`` on a free port of 127.0.0.1, SQLite
in a temporary data directory, as the benches do), signs up a team with the admin CLI, fills
it through the web app itself (an uploaded contact list, a job, a webhook, a key, a user, a
provider key, an enrichment job of the list over a small imported directory) and the API
(calls to the job's numbers), and saves ``docs/screenshots/<page>-<width>.png``. Needs
Playwright and Debian's Chromium (``/usr/bin/chromium``), as the browser tests do.

    .venv/bin/python scripts/screenshots.py [--out docs/screenshots] [--timeout 300]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import httpx
from playwright.sync_api import Page, expect, sync_playwright

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from embedded import Deadline, free_port, running_server, server_env  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
PASSWORD = "correct horse battery"
WIDTHS = {"1440": (1440, 900), "375": (375, 812)}
# A HubSpot contacts export as a sales team has it: a mobile column, an extension, a row
# the rules reject (no last name) and one a spreadsheet damaged.
CONTACTS = (
    "Record ID,First Name,Last Name,Email,Phone Number,Mobile Phone Number,Job Title,"
    "Company Name,City,State/Region,Country/Region,Lead Status\n"
    "51234567801,Ada,Lovelace,ada@engines.example,+1 415-555-2671 x254,+1 415-555-3190,"
    "VP Operations,Analytical Engines,San Francisco,California,United States,New\n"
    "51234567802,Grace,Hopper,grace@navy.example,(212) 555-0199,,Director of IT,Navy,"
    "New York,New York,United States,Open\n"
    "51234567803,Alan,Turing,alan@bletchley.example,+44 20 7946 0958,+44 7700 900123,"
    "Researcher,Bletchley,London,,United Kingdom,Open\n"
    "51234567804,Edsger,,edsger@tue.example,+31 20 123 4567,,Professor,Eindhoven,"
    "Eindhoven,,Netherlands,New\n"
    "51234567805,Barbara,Liskov,barbara@mit.example,,4.15555E+10,Professor,MIT,Cambridge,"
    "Massachusetts,United States,New\n"
)


# The operator's directory: Ada and Grace with a number the list does not have, so that an
# enrichment job of the list finds something (and nothing for the others).
DIRECTORY = (
    "firstName,lastName,email,company,phone,phoneType\n"
    "Ada,Lovelace,ada@engines.example,Analytical Engines,+1 415-555-7310,direct\n"
    "Grace,Hopper,grace@navy.example,Navy,+1 212-555-0143,mobile\n"
)


def import_directory(env: dict[str, str], cwd: Path) -> None:
    directory = cwd / "directory.csv"
    directory.write_text(DIRECTORY, encoding="utf-8")
    subprocess.run(
        [sys.executable, "-m", "dialscore", "import", "directory", str(directory)],
        env=env, cwd=cwd, capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip


def sign_up(env: dict[str, str], cwd: Path) -> tuple[str, str]:
    """A business client whose admin has ``PASSWORD``: (admin email, API key)."""
    email = "admin@acme.example"
    done = subprocess.run(
        [sys.executable, "-m", "dialscore", "admin", "create-client", "--name", "Acme",
         "--plan", "business", "--credits", "5000", "--email", email, "--password-stdin"],
        input=PASSWORD + "\n", env=env, cwd=cwd, capture_output=True, text=True, timeout=120,
        check=True,
    )  # fmt: skip
    created = json.loads(done.stdout.strip().splitlines()[-1])
    return email, str(created["apiKey"])


# Calls a dialer reports after the job: (number, calls that reached the person, others).
CALLS = (
    ("+14155553190", 7, 21),
    ("+14155552671", 4, 30),
    ("+442079460958", 1, 44),
    ("+12125550199", 0, 6),
)


def report_calls(base_url: str, api_key: str) -> None:
    calls = []
    for number, connects, others in CALLS:
        outcomes = ["connected"] * connects + ["no_answer", "voicemail", "busy"] * others
        calls += [{"number": number, "outcome": o} for o in outcomes[: connects + others]]
    httpx.post(
        f"{base_url}/api/public/v2/calls",
        json={"calls": calls},
        headers={"Authorization": f"Bearer {api_key}"},
        timeout=30,
    ).raise_for_status()


def shoot(page: Page, out: Path, name: str) -> None:
    for width, (w, h) in WIDTHS.items():
        page.set_viewport_size({"width": w, "height": h})
        page.screenshot(path=out / f"{name}-{width}.png", full_page=True)


def tour(page: Page, out: Path, email: str, api_key: str, data_dir: Path, base_url: str) -> None:
    page.goto("/app/sign-in")
    shoot(page, out, "sign-in")
    page.get_by_label("Email").fill(email)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("button", name="Sign out")).to_be_visible()

    upload = data_dir / "contacts.csv"
    upload.write_text(CONTACTS, encoding="utf-8")
    page.goto("/app/upload")
    shoot(page, out, "upload")
    page.get_by_label("Contact list (CSV)").set_input_files(upload)
    page.get_by_role("button", name="Continue").click()
    shoot(page, out, "upload-mapping")
    page.get_by_role("button", name="Continue").click()
    page.get_by_role("radio", name="Score").check()
    shoot(page, out, "upload-action")
    page.get_by_role("button", name="Start job").click()
    shoot(page, out, "upload-started")
    page.goto("/app/jobs")
    expect(page.get_by_text("Finished").first).to_be_visible(timeout=60_000)
    shoot(page, out, "jobs")
    page.get_by_role("link", name="contacts.csv").first.click()
    expect(page.get_by_role("link", name="Download results (CSV)")).to_be_visible()
    page.get_by_text("What the statuses mean").click()
    shoot(page, out, "job")

    page.goto("/app/webhooks")
    page.get_by_label("Name").fill("CRM")
    page.get_by_label("URL").fill("https://crm.example/hooks/dialscore")
    page.get_by_role("button", name="Create webhook").click()
    shoot(page, out, "webhooks")

    page.goto("/app/keys")
    page.get_by_label("Label").fill("CRM sync")
    page.get_by_role("button", name="Create key").click()
    shoot(page, out, "keys")
    page.goto("/app/users")
    shoot(page, out, "users")
    page.goto("/app/account")
    page.get_by_label("Your People Data Labs key").fill("pdl-demo-key-0000-9f2c")
    page.get_by_label("Your People Data Labs key").press("Enter")
    expect(page.get_by_text("•••• 9f2c")).to_be_visible()
    shoot(page, out, "account")
    # Removed again: the tour's enrichment job must not call the provider.
    page.get_by_role("button", name="Remove your People Data Labs key").click()
    expect(page.get_by_text("•••• 9f2c")).to_have_count(0)
    page.goto("/app/calls")
    shoot(page, out, "calls")
    report_calls(base_url, api_key)
    page.goto("/app/accuracy")
    shoot(page, out, "accuracy")

    # The same list again, to find more numbers: the directory knows two of its people.
    page.goto("/app/upload")
    page.get_by_label("Contact list (CSV)").set_input_files(upload)
    page.get_by_role("button", name="Continue").click()
    page.get_by_role("button", name="Continue").click()
    page.get_by_role("radio", name="Enrich", exact=True).check()
    page.get_by_role("button", name="Start job").click()
    # A new choice is priced first: started with the second press.
    page.get_by_role("button", name="Start job").click()
    page.goto("/app/jobs")
    expect(page.get_by_text("Finished")).to_have_count(2, timeout=60_000)
    page.goto("/app/enrichment-sources")
    shoot(page, out, "enrichment-sources")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots")
    parser.add_argument("--timeout", type=float, default=300.0)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    deadline = Deadline(args.timeout)
    with tempfile.TemporaryDirectory(prefix="dialscore-shots-") as temp:
        data_dir = Path(temp)
        env = server_env(data_dir / "var")
        email, api_key = sign_up(env, data_dir)
        import_directory(env, data_dir)
        port = free_port()
        with running_server(env, data_dir, port, deadline), sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM)
            base_url = f"http://127.0.0.1:{port}"
            context = browser.new_context(base_url=base_url)
            context.set_default_timeout(30_000)
            tour(context.new_page(), args.out, email, api_key, data_dir, base_url)
            browser.close()
    print(f"screenshots in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
