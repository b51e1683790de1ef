"""A realistic answer of the score report, for the document."""

from __future__ import annotations

from typing import Any


def _bucket(index: int, calls: int, connects: int, predicted: float | None) -> dict[str, Any]:
    return {
        "from": round(index / 10, 1),
        "to": round((index + 1) / 10, 1),
        "calls": calls,
        "connects": connects,
        "predicted": predicted,
        "observed": round(connects / calls, 4) if calls else None,
    }


REPORT_ANSWER: dict[str, Any] = {
    "data": {
        "since": "2026-08-22T09:30:00Z",
        "calls": 1184,
        "connects": 141,
        "tiers": [
            {
                "tier": "p1",
                "phones": 212,
                "calls": 431,
                "connects": 98,
                "predicted": 0.2287,
                "observed": 0.2274,
                "low": 0.1903,
                "high": 0.2693,
            },
            {
                "tier": "p2",
                "phones": 305,
                "calls": 602,
                "connects": 41,
                "predicted": 0.0955,
                "observed": 0.0681,
                "low": 0.0506,
                "high": 0.0911,
            },
            {
                "tier": "p3",
                "phones": 58,
                "calls": 97,
                "connects": 2,
                "predicted": 0.0123,
                "observed": 0.0206,
                "low": 0.0057,
                "high": 0.0721,
            },
            {
                "tier": "na",
                "phones": 31,
                "calls": 54,
                "connects": 0,
                "predicted": 0.0,
                "observed": 0.0,
                "low": 0.0,
                "high": 0.0664,
            },
        ],
        "buckets": [
            _bucket(0, 375, 11, 0.0421),
            _bucket(1, 378, 32, 0.1135),
            _bucket(2, 431, 98, 0.2287),
            *(_bucket(index, 0, 0, None) for index in range(3, 10)),
        ],
        "auc": 0.7123,
    }
}
