"""The collector pacing of a running job: in effect while the job runs, undone after it
whatever happens, and never overriding what the program set."""

from __future__ import annotations

import gc

import pytest

from sparktide.datastream import StreamExecutionEnvironment
from sparktide.runtime.gc_pacing import YOUNG_GENERATION_THRESHOLD, paced_collection


def _job(fn: object) -> StreamExecutionEnvironment:
    env = StreamExecutionEnvironment.get_execution_environment(runtime="local")
    env.from_collection([1, 2, 3]).map(fn).print()  # type: ignore[arg-type]
    return env


def test_a_local_job_runs_paced_and_restores_the_collector(capsys: pytest.CaptureFixture) -> None:
    seen = []

    def look(v: int) -> int:
        seen.append((gc.get_threshold()[0], gc.get_freeze_count() > 0))
        return v * 10

    before = gc.get_threshold(), gc.get_freeze_count()
    _job(look).execute()
    assert capsys.readouterr().out.split() == ["10", "20", "30"]
    assert set(seen) == {(YOUNG_GENERATION_THRESHOLD, True)}
    assert (gc.get_threshold(), gc.get_freeze_count()) == before


def test_a_failing_job_restores_the_collector() -> None:
    def boom(v: int) -> int:
        raise RuntimeError("user failure")

    before = gc.get_threshold(), gc.get_freeze_count()
    with pytest.raises(RuntimeError, match="user failure"):
        _job(boom).execute()
    assert (gc.get_threshold(), gc.get_freeze_count()) == before


def test_disabled_thresholds_and_an_outer_freeze_are_left_alone() -> None:
    threshold = gc.get_threshold()
    try:
        gc.set_threshold(0)  # young collections off: stays off
        with paced_collection():
            assert gc.get_threshold()[0] == 0
        gc.set_threshold(50_000, *threshold[1:])  # already rarer than the pacing: kept
        with paced_collection(young=20_000):
            assert gc.get_threshold()[0] == 50_000
        gc.set_threshold(*threshold)
        gc.freeze()  # the program froze what it had: a job does not unfreeze it
        assert gc.get_freeze_count() > 0
        with paced_collection():
            pass
        assert gc.get_freeze_count() > 0  # unfreezing would have emptied it
    finally:
        gc.unfreeze()
        gc.set_threshold(*threshold)


def test_a_threshold_the_block_sets_is_kept() -> None:
    threshold = gc.get_threshold()
    try:
        with paced_collection():
            gc.set_threshold(1234)
        assert gc.get_threshold()[0] == 1234
    finally:
        gc.set_threshold(*threshold)


@pytest.mark.parametrize("young", [0, -1, 2.5, None])
def test_bad_young_threshold_is_named(young: object) -> None:
    pacing = paced_collection(young=young)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="young must be an int >= 1"):
        pacing.__enter__()
