"""The call verdict's documented parts of a phone entry (P177): today's window and the best
hours, as the OpenAPI document describes them."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class CallWindowOut(BaseModel):
    start: str = Field(pattern=r"^[0-2][0-9]:[0-5][0-9]$", description="Local time, HH:MM")
    end: str = Field(
        pattern=r"^[0-2][0-9]:[0-5][0-9]$", description="Local time, HH:MM (24:00: midnight)"
    )
    rule: str = Field(description="The rules that set the window (US, US-FL …)")
    source: str = Field(description="Their statute or regulation and section")


class BestCallHoursOut(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    days: list[Literal["mon", "tue", "wed", "thu", "fri", "sat", "sun"]]
    from_: str = Field(alias="from", description="Local hour the range starts, HH:00")
    to: str = Field(description="Local hour the range ends (not included), HH:00")
    expectedConnectRate: float = Field(ge=0, le=1)
    basedOnCalls: int = Field(
        ge=0, description="The client's reported calls it rests on; 0 for the prior"
    )
