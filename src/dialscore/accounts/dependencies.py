"""FastAPI dependencies that authenticate a request."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request, Security
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from dialscore.accounts import service
from dialscore.accounts.schemas import Principal
from dialscore.kit.clock import utcnow
from dialscore.kit.deps import get_state

# Documents the scheme in the OpenAPI document; the header itself is read below, so that a
# missing or malformed one answers 401 with the service's own message.
bearer = HTTPBearer(
    scheme_name="bearerAuth",
    bearerFormat="JWT",
    description="An API key: `Authorization: Bearer <API key>`",
    auto_error=False,
)


async def authenticated(
    request: Request,
    _: Annotated[HTTPAuthorizationCredentials | None, Security(bearer)],
) -> Principal:
    # The rate limiter in front of /api has already authenticated the request.
    cached: Principal | None = getattr(request.state, "principal", None)
    if cached is not None:
        return cached
    failure: Exception | None = getattr(request.state, "auth_error", None)
    if failure is not None:
        raise failure
    state = get_state(request)
    principal = await service.authenticate_and_record(
        state.db,
        secret=state.settings.resolved_secret_key,
        authorization=request.headers.get("authorization"),
        now=utcnow(),
    )
    request.state.principal = principal
    return principal


async def api_principal(principal: Annotated[Principal, Depends(authenticated)]) -> Principal:
    return service.require_api_access(principal)


CurrentPrincipal = Annotated[Principal, Depends(api_principal)]
