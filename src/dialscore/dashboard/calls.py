"""The call outcomes pages of the web app."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter()
