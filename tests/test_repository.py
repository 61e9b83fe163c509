"""The README's Quickstart commands are the ones CI and users run."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def quickstart_commands() -> list[str]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Quickstart", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```bash\n(.+?)\n```", section)


def test_quickstart_has_the_two_commands():
    job, tests = quickstart_commands()
    assert "examples/keyed_timers.py" in job or "sparktide demo" in job
    assert "pytest" in tests
    script = ROOT / job.rsplit(" ", 1)[-1]
    assert "sparktide demo" in job or script.exists()


def test_ci_runs_exactly_the_readme_test_command():
    _, tests = quickstart_commands()
    ci_lines = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert tests in ci_lines


def test_readme_python_examples_run():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.+?)\n```", readme, flags=re.S)
    assert len(blocks) >= 2
    for block in blocks:
        exec(compile(block, "README.md", "exec"), {})
