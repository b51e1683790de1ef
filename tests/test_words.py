"""The words the web app shows: every code has its words, and docs/dashboard.md's glossary is
made from the same file."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from dialscore.dashboard.words import parse, words
from dialscore.jobs.schemas import CONTACT_INPUT_FIELDS, JOB_TYPES
from dialscore.scoring.engine import PHONE_STATUSES

ROOT = Path(__file__).resolve().parent.parent


def _data() -> dict[str, Any]:
    text = resources.files("dialscore.dashboard").joinpath("data/words.toml").read_text("utf-8")
    return tomllib.loads(text)


def test_every_code_the_api_uses_has_words() -> None:
    w = words()
    assert set(w.job_types) == set(JOB_TYPES)
    for status in PHONE_STATUSES:
        shown = w.phone_status(status)
        assert shown and "p1" not in shown and " - " not in shown, status
    assert w.phone_status("p1 - h") == "High, switchboard"
    assert w.phone_status("na - auth") == "Not reachable, someone else's"
    assert w.phone_status(None) == "Not scored"
    assert w.lead_status("Needs Attention") == "No number to call"
    assert w.job_state("Finalized") == "Finished"
    assert w.job_type("lightning_scoring") == "Score (Lightning)"
    assert w.phone_type("Service Enriched Phone 2") == "Found by enrichment"
    assert w.phone_type("hq") == "Company main line"


def test_every_field_a_column_can_be_mapped_to_has_a_label_in_a_group() -> None:
    w = words()
    for name in CONTACT_INPUT_FIELDS:
        if name.startswith("phone") and name != "phoneExt":
            continue  # chosen per column as a phone of some type
        label, group = w.fields[name]
        assert label != name and group in w.field_groups, name
    assert w.field("contactCrmId") == "CRM contact ID"
    assert w.field("companyAccount") == "Company"


@pytest.mark.parametrize(
    ("table", "code"),
    [("job_types", "rescoring"), ("tiers", "p3"), ("fields", "companyAccount")],
)
def test_a_words_file_without_a_code_is_refused_naming_it(table: str, code: str) -> None:
    data = _data()
    del data[table][code]
    with pytest.raises(ValueError, match=code):
        parse(data)


def test_a_words_file_with_an_unknown_code_is_refused_naming_it() -> None:
    data = _data()
    data["lead_statuses"]["P4"] = {"label": "Lower", "sentence": "Lower still."}
    with pytest.raises(ValueError, match="P4"):
        parse(data)


def test_the_glossary_of_the_dashboard_document_is_made_from_the_words() -> None:
    checked = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "glossary.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert checked.returncode == 0, "run .venv/bin/python scripts/glossary.py" + checked.stderr
    doc = (ROOT / "docs" / "dashboard.md").read_text(encoding="utf-8")
    w = words()
    for term in (*w.lead_statuses.values(), *w.tiers.values(), *w.modifiers.values()):
        assert term.sentence in doc
    assert w.column("best_phone") in doc
