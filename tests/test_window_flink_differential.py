"""Differential tests: sparktide's event-time windows against Apache Flink (PyFlink 2.3).

The cases (``tools/flink_watermarks/window_cases.py``) are keyed window jobs over randomized
out-of-order inputs with fixed seeds: tumbling (with and without offset), sliding (with
offsets) and session windows; reduce, aggregate, process, apply and reduce/aggregate followed
by a process function; allowed lateness with re-firings; late records to a side output or
dropped. The watermark after every record is ``max_ts - delay - 1`` (a punctuated generator:
``PerRecordWatermarks.java`` on Flink, the same in Python on sparktide), so with parallelism 1
and a bundle size of 1 Flink's output depends on the input only and is an exact oracle.

Compared per case and key, in order: every firing (its result, including the window, the
element count and the watermark seen by a process function, and the result's timestamp) and
every late record. Two documented PyFlink 2.3 deviations from Flink's Java WindowOperator are
allowed for (sparktide follows the Java operator, docs/semantics.md):

- a late firing (an element that arrives within the allowed lateness re-fires its window) is
  stamped by PyFlink with that element's timestamp instead of ``window.max_timestamp``;
- PyFlink emits late side-output records without a timestamp, so late records are compared by
  value only (see ``window_cases.group``).

A third one, PyFlink's merging of session windows' reducing/aggregating state, is avoided by
the input of those cases (see ``window_cases.py``).

Flink's output is recorded in ``tests/data/flink_windows/window_cases.json``
(``python tools/flink_watermarks/window_cases.py --runs 2`` re-records it after checking that
two PyFlink runs agree); the recorded comparison always runs. When a Python with apache-flink
(``$SPARKTIDE_PYFLINK_PYTHON`` or ``.venv-flink``) and ``javac`` are present, the watermark jar
is built, every case runs live on PyFlink in one job, and sparktide is compared with that too.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any
from unittest import mock

import pytest

from tool_modules import load_tool

REPO = Path(__file__).resolve().parents[1]


oracle = load_tool("flink_watermarks/window_cases.py")
CASES: list[dict[str, Any]] = oracle.make_cases()
BY_ID = {c["id"]: c for c in CASES}
IDS = list(BY_ID)

Outputs = dict[str, dict[str, dict[str, list[Any]]]]


@functools.cache
def _recording() -> tuple[dict[str, Any], list[dict[str, Any]], Outputs]:
    return oracle.read_recording()  # type: ignore[no-any-return]


@functools.cache
def _sparktide(
    parallelism: int = 1, watermark_every: int | None = None, backend: str = "hashmap"
) -> Outputs:
    with mock.patch.dict(os.environ, {"SPARKTIDE_STATE_BACKEND": backend}):
        return oracle.run_sparktide(  # type: ignore[no-any-return]
            CASES, parallelism=parallelism, watermark_every=watermark_every
        )


def _has_window(case: dict[str, Any]) -> bool:
    """Whether the payload of a firing is ``(key, start, end, ...)``."""
    return case["function"] in ("process", "apply", "reduce+process", "aggregate+process")


def differences(case: dict[str, Any], actual: dict[str, Any], flink: dict[str, Any]) -> list[str]:
    """What differs between sparktide's output of ``case`` and Flink's (empty: the same)."""
    problems: list[str] = []
    stamps: dict[str, set[int]] = {}
    for key, ts, _ in case["data"]:
        stamps.setdefault(key, set()).add(ts)
    for kind in ("main", "late"):
        want, got = flink[kind], actual[kind]
        for key in sorted(set(want) | set(got)):
            w, g = want.get(key, []), got.get(key, [])
            if kind == "late":
                if w != g:
                    problems.append(f"late records of key {key!r}: flink {w}, sparktide {g}")
                continue
            if [p for p, _ in w] != [p for p, _ in g]:
                problems.append(
                    f"firings of key {key!r} (payload, timestamp):\n  flink     {w}\n"
                    f"  sparktide {g}"
                )
                continue
            for (payload, flink_ts), (_, ts) in zip(w, g, strict=True):
                if _has_window(case) and ts != payload[2] - 1:
                    problems.append(f"{payload}: timestamp {ts}, not the window's max timestamp")
                if ts == flink_ts:
                    continue
                late_firing = case["lateness"] > 0 and flink_ts in stamps[key] and flink_ts < ts
                if not late_firing:
                    problems.append(f"{payload}: timestamp flink {flink_ts}, sparktide {ts}")
    return problems


def _describe(case: dict[str, Any]) -> str:
    config = {k: v for k, v in case.items() if k != "data"}
    return f"{config}\ninput [key, ts, value] in order: {case['data']}"


def _assert_same(case_id: str, actual: Outputs, flink: Outputs) -> None:
    case = BY_ID[case_id]
    problems = differences(case, actual[case_id], flink[case_id])
    assert not problems, "\n".join([_describe(case), *problems])


# ------------------------------------------------------------------------------------------------
# Against the recording


def test_recording_has_the_current_cases() -> None:
    header, cases, outputs = _recording()
    assert header["flink_version"].startswith("2.")
    assert cases == CASES, "the cases changed: re-record (see the module docstring)"
    assert set(outputs) == set(IDS)


def test_recording_exercises_every_path() -> None:
    _, _, outputs = _recording()
    firings = {i: sum(len(v) for v in outputs[i]["main"].values()) for i in IDS}
    late = {i: sum(len(v) for v in outputs[i]["late"].values()) for i in IDS}
    assert all(firings.values()), firings
    assert all(late[c["id"]] for c in CASES if c["late_tag"]), late
    refired = 0
    for case in CASES:
        if case["lateness"] and _has_window(case):
            for per_key in outputs[case["id"]]["main"].values():
                windows = [tuple(p[1:3]) for p, _ in per_key]
                refired += len(windows) - len(set(windows))
    assert refired > 0, "no window fired twice: allowed lateness is not exercised"


@pytest.mark.parametrize("case_id", IDS)
def test_matches_recorded_flink(case_id: str) -> None:
    _assert_same(case_id, _sparktide(), _recording()[2])


@pytest.mark.parametrize("case_id", IDS)
def test_record_by_record_rounds_match_recorded_flink(case_id: str) -> None:
    # one round per record: periodic emission between every two records changes nothing for
    # a punctuated generator
    _assert_same(case_id, _sparktide(watermark_every=1), _recording()[2])


def test_parallelism_3_matches_recorded_flink(state_backend: str) -> None:
    actual = _sparktide(parallelism=3, watermark_every=7, backend=state_backend)
    flink = _recording()[2]
    problems = [p for i in IDS for p in differences(BY_ID[i], actual[i], flink[i])]
    assert not problems, "\n".join(problems[:5])


# ------------------------------------------------------------------------------------------------
# Against PyFlink, live


@pytest.fixture(scope="module")
def live_flink(tmp_path_factory: pytest.TempPathFactory) -> Outputs:
    python = oracle.pyflink_python()
    if python is None:
        pytest.skip("no Python with apache-flink: set SPARKTIDE_PYFLINK_PYTHON")
    if oracle.builder().javac() is None:
        pytest.skip("javac not found: a JDK is needed to build the watermark strategy jar")
    jar = oracle.build(python, tmp_path_factory.mktemp("flink-watermarks"))
    return oracle.run_pyflink(python, jar, CASES)  # type: ignore[no-any-return]


def test_live_flink_equals_the_recording(live_flink: Outputs) -> None:
    _, _, recorded = _recording()
    differ = [i for i in IDS if live_flink[i] != recorded[i]]
    assert not differ, f"PyFlink's output now differs from the recording in {differ}"


@pytest.mark.parametrize("case_id", IDS)
def test_matches_live_flink(case_id: str, live_flink: Outputs) -> None:
    _assert_same(case_id, _sparktide(), live_flink)
