"""The pagination object of list responses."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel, Field


class Pagination(BaseModel):
    page: int = Field(ge=1)
    perPage: int = Field(ge=1)
    totalCount: int = Field(ge=0)
    totalPages: int = Field(ge=0)
    hasNextPage: bool
    hasPreviousPage: bool


MAX_PAGE = 1_000_000_000


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
