"""The pagination object of list responses."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import Query
from pydantic import BaseModel, Field


class Pagination(BaseModel):
    page: int = Field(ge=1)
    perPage: int = Field(ge=1)
    totalCount: int = Field(ge=0)
    totalPages: int = Field(ge=0)
    hasNextPage: bool
    hasPreviousPage: bool


# The upper bound keeps the row offset within a 64-bit integer on both databases.
MAX_PAGE = 1_000_000_000
MAX_LIMIT = 1000

PageQuery = Annotated[int, Query(ge=1, le=MAX_PAGE, description="Page number, from 1")]
LimitQuery = Annotated[
    int, Query(ge=1, le=MAX_LIMIT, description=f"Items per page, 1 to {MAX_LIMIT}")
]


@dataclass(frozen=True)
class PageRequest:
    page: int
    limit: int

    @property
    def offset(self) -> int:
        return (self.page - 1) * self.limit

    def describe(self, total: int) -> dict[str, int | bool]:
        total_pages = -(-total // self.limit)
        return {
            "page": self.page,
            "perPage": self.limit,
            "totalCount": total,
            "totalPages": total_pages,
            "hasNextPage": self.page < total_pages,
            "hasPreviousPage": self.page > 1,
        }
