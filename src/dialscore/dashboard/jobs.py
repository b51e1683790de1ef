"""The jobs pages: the user's jobs, newest first."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from dialscore.dashboard.web import SignedIn, render
from dialscore.jobs import service
from dialscore.kit.deps import ReadSession
from dialscore.kit.pagination import PageRequest

router = APIRouter()


@router.get("/jobs", response_class=HTMLResponse)
async def list_jobs(request: Request, user: SignedIn, session: ReadSession) -> HTMLResponse:
    jobs, total = await service.list_jobs(
        session, user.principal, source="all", page=PageRequest(1, 50)
    )
    return render(request, "jobs.html", user, jobs=jobs, total=total)
