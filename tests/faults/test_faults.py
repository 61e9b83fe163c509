"""The fault suite's pytest form: the scenarios marked ``ci`` in ``scenarios.py`` on both
state backends, each ending with the reference output (nothing lost, duplicated or wrong) or
a refusal that names what is wrong. ``python -m tests.faults`` runs them all as a table."""

from __future__ import annotations

from typing import Any

import pytest

from faults.run import play
from faults.scenarios import BACKENDS, SCENARIOS, Scenario

CI = [s for s in SCENARIOS.values() if s.ci]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("scenario", CI, ids=[s.name for s in CI])
def test_a_fault_gives_the_reference_output_or_a_clear_refusal(
    spark: Any, scenario: Scenario, backend: str
) -> None:
    if backend not in scenario.backends:
        pytest.skip(f"{scenario.name} has no {backend} form")
    outcome = play(scenario, backend, spark)
    if outcome.skipped is not None:
        pytest.skip(outcome.skipped)
    assert outcome.correct, f"{scenario.name} ({scenario.what}) on {backend}: {outcome.cell()}"
