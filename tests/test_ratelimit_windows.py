"""Window arithmetic of the request rate limits: resets, boundaries, midnight (D25, D26)."""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given
from hypothesis import strategies as st

from dialscore.ratelimit.windows import TIERS, Decision, Tier, TierName, decide

SECOND, MINUTE, DAY = TIERS
# 2001-09-09 to 2286: plenty of midnights, month and year ends.
NOW_MS = st.integers(min_value=1_000_000_000_000, max_value=9_999_999_999_999)
LIMITS: dict[TierName, int] = {"second": 10, "minute": 600, "day": 25_000}


def ms(text: str) -> int:
    return int(datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp() * 1000)


def test_resets_of_a_known_instant() -> None:
    now = ms("2026-11-22T23:59:59.250")
    assert SECOND.reset(now) == ms("2026-11-23T00:00:00") // 1000
    assert MINUTE.reset(now) == ms("2026-11-23T00:00:00") // 1000
    assert DAY.reset(now) == ms("2026-11-23T00:00:00") // 1000
    later = ms("2026-11-23T00:00:00")
    assert [t.window(later) for t in TIERS] != [t.window(now) for t in TIERS]


def test_a_window_starts_exactly_on_its_boundary() -> None:
    boundary = ms("2026-11-22T10:15:00")
    assert SECOND.window(boundary - 1) + 1 == SECOND.window(boundary)
    assert MINUTE.window(boundary - 1) + 1 == MINUTE.window(boundary)
    assert DAY.window(boundary - 1) == DAY.window(boundary)
    assert MINUTE.reset(boundary) == boundary // 1000 + 60


@given(now=NOW_MS)
def test_reset_is_the_next_aligned_boundary(now: int) -> None:
    for tier in TIERS:
        reset = tier.reset(now)
        assert reset % tier.seconds == 0
        assert now < reset * 1000 <= now + tier.seconds * 1000
        assert tier.ttl_ms(now) == reset * 1000 - now


@given(now=NOW_MS)
def test_day_windows_end_at_midnight_utc(now: int) -> None:
    end = datetime.fromtimestamp(DAY.reset(now), tz=UTC)
    assert (end.hour, end.minute, end.second, end.microsecond) == (0, 0, 0, 0)
    assert end.date() > datetime.fromtimestamp(now / 1000, tz=UTC).date()


@given(now=NOW_MS, tier=st.sampled_from(TIERS))
def test_crossing_a_boundary_moves_to_the_next_window(now: int, tier: Tier) -> None:
    boundary = tier.reset(now) * 1000
    assert tier.window(boundary - 1) == tier.window(now)
    assert tier.window(boundary) == tier.window(now) + 1


@given(now=NOW_MS, tier=st.sampled_from(TIERS), step=st.integers(min_value=0, max_value=10**9))
def test_windows_never_go_backwards(now: int, tier: Tier, step: int) -> None:
    assert tier.window(now + step) >= tier.window(now)


def counts_strategy() -> st.SearchStrategy[dict[TierName, int]]:
    return st.fixed_dictionaries(
        {
            "second": st.integers(min_value=1, max_value=30),
            "minute": st.integers(min_value=1, max_value=1_000),
            "day": st.integers(min_value=1, max_value=40_000),
        }
    )


@given(now=NOW_MS, counts=counts_strategy())
def test_decision_follows_the_counts(now: int, counts: dict[TierName, int]) -> None:
    decision = decide(counts, LIMITS, now)
    over = [name for name in ("second", "minute", "day") if counts[name] > LIMITS[name]]
    assert decision.allowed == (not over)
    for state in decision.states:
        assert state.remaining == max(0, LIMITS[state.tier] - counts[state.tier]) >= 0
        assert state.limit == LIMITS[state.tier]
    if over:
        assert decision.blocked == over[-1]
        blocked = {s.tier: s for s in decision.states}[over[-1]]
        assert decision.retry_after == (blocked.reset * 1000 - now) / 1000
        assert (
            0 < decision.retry_after_header <= {"second": 1, "minute": 60, "day": 86_400}[over[-1]]
        )
    else:
        assert (decision.blocked, decision.retry_after) == (None, 0.0)


def test_most_restrictive_exceeded_tier_blocks() -> None:
    now = ms("2026-11-22T10:15:30.400")
    both = decide({"second": 11, "minute": 601, "day": 5}, LIMITS, now)
    assert (both.allowed, both.blocked) == (False, "minute")
    assert both.retry_after_header == 30
    second: Decision = decide(
        {"second": 11, "minute": 3, "day": 3},
        LIMITS,
        now,
    )
    assert (second.blocked, second.retry_after_header) == ("second", 1)
    assert second.retry_after == 0.6
