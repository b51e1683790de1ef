"""The cycle collector's settings for service processes."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from dialscore.kit.collector import YOUNG_ALLOCATIONS, tune_garbage_collector


@pytest.fixture
def collector() -> Iterator[None]:
    thresholds = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*thresholds)


def test_a_service_process_collects_less_often_and_freezes_its_start(collector: None) -> None:
    gc.unfreeze()
    assert gc.get_freeze_count() == 0
    tune_garbage_collector()
    assert gc.get_threshold()[0] == YOUNG_ALLOCATIONS > 700
    assert gc.get_freeze_count() > 0
    assert gc.isenabled()
