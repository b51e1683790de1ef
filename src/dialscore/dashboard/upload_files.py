"""Uploaded contact lists on disk, between the steps of the upload pages.

Each upload is a folder ``data_dir/uploads/<random id>/`` holding the file as it was sent
(``contacts.csv``), a small JSON note of its owner, name and chosen mapping, and once its
job started, its rejected rows (``rejected.csv``). Every step reads the folder again, so a
reload loses nothing; the file goes when its job starts, and the folder after a day."""

from __future__ import annotations

import hmac
import json
import re
import secrets
import shutil
import time
from dataclasses import dataclass
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

from starlette.concurrency import run_in_threadpool

from dialscore.config import Settings
from dialscore.dashboard import csvin
from dialscore.dashboard.web import PageNotFound
from dialscore.jobs.schemas import MAX_JOB_NAME
from dialscore.signin.schemas import WebUser

KEEP_SECONDS = 24 * 3600
_ID = re.compile(r"[A-Za-z0-9_-]{20,40}")


@dataclass
class Upload:
    """An uploaded file and what its owner chose so far."""

    id: str
    folder: Path
    meta: dict[str, Any]

    @property
    def source(self) -> Path:
        return self.folder / "contacts.csv"

    @property
    def rejected(self) -> Path:
        return self.folder / "rejected.csv"

    def save(self) -> None:
        temp = self.folder / "meta.json.tmp"
        temp.write_text(json.dumps(self.meta), encoding="utf-8")
        temp.replace(self.folder / "meta.json")

    async def table(self, settings: Settings, source: Path | None = None) -> csvin.Table:
        """The file read again, off the event loop: a large one takes seconds."""
        data = (source or self.source).read_bytes()
        return await run_in_threadpool(csvin.read_table, data, max_rows=settings.upload_max_rows)


def uploads_root(settings: Settings) -> Path:
    return settings.data_dir / "uploads"


def sweep(root: Path, now: float) -> None:
    """Removes uploads older than a day."""
    if not root.is_dir():
        return
    for folder in root.iterdir():
        try:
            if now - folder.stat().st_mtime > KEEP_SECONDS:
                shutil.rmtree(folder, ignore_errors=True)
        except FileNotFoundError:
            continue


def create(settings: Settings, user: WebUser, filename: str, data: bytes) -> Upload:
    root = uploads_root(settings)
    sweep(root, time.time())
    upload_id = secrets.token_urlsafe(18)
    folder = root / upload_id
    folder.mkdir(parents=True, mode=0o700)
    (folder / "contacts.csv").write_bytes(data)
    upload = Upload(
        upload_id,
        folder,
        {
            "user_id": user.principal.user_id,
            "client_id": user.principal.client_id,
            "filename": filename,
            "mapping": None,
        },
    )
    upload.save()
    return upload


def open_upload(settings: Settings, user: WebUser, upload_id: str) -> Upload:
    """The user's own upload; anyone else's, or one gone, is not found."""
    if not _ID.fullmatch(upload_id):
        raise PageNotFound()
    folder = uploads_root(settings) / upload_id
    try:
        meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        raise PageNotFound() from None
    if not hmac.compare_digest(str(meta.get("user_id")), user.principal.user_id):
        raise PageNotFound()
    if time.time() - (folder / "meta.json").stat().st_mtime > KEEP_SECONDS:
        raise PageNotFound()
    return Upload(upload_id, folder, meta)


def require_waiting(upload: Upload) -> None:
    """A step before the job: the file must still be there."""
    if upload.meta.get("started") or not upload.source.exists():
        raise PageNotFound()


def file_name(raw: str) -> str:
    """The job name a file's name gives: its last part, without characters a name cannot
    show or store (controls, NUL: P74)."""
    name = "".join(char for char in raw if char.isprintable())
    name = PureWindowsPath(PurePosixPath(name).name).name.strip()
    return name[:MAX_JOB_NAME] or "contacts.csv"
