"""An uploaded contact list as its pages see it, and how long one is kept."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

# An upload not changed for a day is forgotten, started or not: its job keeps what it needs.
KEEP = timedelta(days=1)

State = Literal["waiting", "starting", "started"]
WAITING: State = "waiting"
STARTING: State = "starting"
STARTED: State = "started"


@dataclass(frozen=True)
class Upload:
    """An uploaded file's record, without the file itself.

    ``meta`` is what its pages read: what is stored (the mapping; once started, the job's
    id and counts), plus its ``filename`` and whether it ``started``."""

    id: str
    filename: str
    state: State
    meta: dict[str, Any]
    summaries: dict[str, Any]
    updated_at: datetime

    @property
    def waiting(self) -> bool:
        """Before its job: the file is there and its choices can change."""
        return self.state == WAITING
