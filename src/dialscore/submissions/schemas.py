"""The request models of submissions: the contract of POST /contacts/score and /enrich."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, Field, SkipValidation

from dialscore.jobs.schemas import MAX_CONTACTS, ContactInput, JobName, ScoringType
from dialscore.kit.envelope import NotNull, elements_of


class SubmissionRequest(BaseModel):
    """Up to 1000 contacts to score or enrich. The request is checked as a whole (D7, D8);
    each contact is then checked alone by the rules, so that one bad record is rejected with
    its reason while the others are accepted: the elements are documented as ContactInput
    but not validated as such here."""

    contacts: Annotated[list[SkipValidation[ContactInput]], NotNull] = Field(
        min_length=1, max_length=MAX_CONTACTS, json_schema_extra=elements_of(ContactInput)
    )
    scoringType: ScoringType | None = Field(
        default=None, description="lightning (the default) or core (D8)"
    )
    name: JobName | None = None
