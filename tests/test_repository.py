"""The README's Quickstart commands are the ones CI and users run."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def quickstart_commands() -> list[str]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Quickstart", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```bash\n(.+?)\n```", section)


def test_quickstart_has_the_two_commands():
    job, tests = quickstart_commands()
    assert "examples/keyed_timers.py" in job or "sparktide demo" in job
    assert "pytest" in tests
    assert "ruff check" in tests and "mypy" in tests
    script = ROOT / job.rsplit(" ", 1)[-1]
    assert "sparktide demo" in job or script.exists()
    # the environment is activated (Spark's workers then run its Python) and the job runs
    # in-process first (seconds, no Java start), then on an embedded local Spark
    assert ". .venv/bin/activate && pip install" in job
    assert job.endswith("sparktide demo --runtime local --limit 20000 && sparktide demo")


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


_NUMBERS = {"two": 2, "three": 3, "four": 4, "five": 5, "six": 6}


def test_readme_counts_the_demo_jobs_that_exist():
    from sparktide.demo import jobs

    # the jobs module lists its jobs as "a. **...**", "b. **...**", ...
    listed = re.findall(r"^([a-z])\. \*\*", jobs.__doc__ or "", flags=re.M)
    assert listed == ["a", "b", "c", "d"][: len(listed)] and listed
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    said = re.findall(r"`sparktide demo` .*? runs (\w+) jobs", readme, flags=re.S)
    assert [_NUMBERS[word] for word in said] == [len(listed)]
    demo_doc = (ROOT / "docs" / "demo.md").read_text(encoding="utf-8")
    word = {n: w for w, n in _NUMBERS.items()}[len(listed)]
    assert f"runs {word} event-time jobs" in demo_doc
    assert (jobs.__doc__ or "").startswith(f"The {word} demo jobs")


def test_the_demo_output_folders_are_ignored_by_git():
    import shutil
    import subprocess

    from sparktide import cli

    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    folders = {Path(cli.DEFAULT_OUT).name, *re.findall(r"sparktide demo .*?--out (\S+)", readme)}
    assert len(folders) >= 2
    for folder in sorted(folders):
        probe = f"{folder}/windows.parquet"
        ignored = subprocess.run(["git", "check-ignore", "-q", probe], cwd=ROOT, check=False)
        assert ignored.returncode == 0, f"{probe} is not ignored by .gitignore"


def test_the_demo_default_day_is_the_one_the_readme_describes():
    from sparktide import cli
    from sparktide.demo.jobs import DemoSettings

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert DemoSettings().day == cli.DEFAULT_DAY
    assert DemoSettings().airport == cli.DEFAULT_AIRPORT
    assert f"The default day, {cli.DEFAULT_AIRPORT} on {cli.DEFAULT_DAY}" in readme
    assert "late" in readme.split(f"{cli.DEFAULT_AIRPORT} on {cli.DEFAULT_DAY}", 1)[1][:200]


def test_readme_explains_when_watermarks_arrive():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("### When watermarks arrive: rounds", 1)[1].split("\n#", 1)[0]
    assert "set_watermark_every" in section and "one watermark, at the end" in section


def test_docs_name_the_checkpoint_format_versions_the_code_writes_and_reads():
    from sparktide.spark.checkpoint_format import (
        CHECKPOINT_FORMAT_VERSION,
        MIGRATED_FORMAT_VERSIONS,
    )

    doc = (ROOT / "docs" / "spark.md").read_text(encoding="utf-8")
    said = re.findall(r"`CHECKPOINT_FORMAT_VERSION`, now (\d+)", doc)
    assert said == [str(CHECKPOINT_FORMAT_VERSION)]
    migrated = re.findall(r"format\s+versions ([\d, and]+) \(`MIGRATED_FORMAT_VERSIONS`\)", doc)
    assert len(migrated) == 1
    assert sorted(map(int, re.findall(r"\d+", migrated[0]))) == sorted(MIGRATED_FORMAT_VERSIONS)
