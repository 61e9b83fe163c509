"""Port a PyFlink program to sparktide by rewriting its imports, and nothing else.

:func:`rewrite_imports` renames the modules of ``import`` and ``from ... import`` statements
(``pyflink`` -> ``sparktide``, or any other mapping of module prefixes) on the lines those
statements span; strings, comments and code elsewhere stay as they are (an example that prints
the word ``pyflink`` keeps printing it).

Usage (writes ``examples/pyflink/<example>.py`` for every shipped example, from the installed
PyFlink)::

    python tools/pyflink_oracle/ports.py [--python PYFLINK_PYTHON]

>>> print(rewrite_imports('from pyflink.common import Types\\nprint("pyflink")\\n'))
from sparktide.common import Types
print("pyflink")
<BLANKLINE>
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PORTS = REPO / "examples" / "pyflink"

PYFLINK_TO_SPARKTIDE = {"pyflink": "sparktide"}


def rewrite_imports(source: str, renames: dict[str, str] | None = None) -> str:
    """``source`` with the modules of its import statements renamed by prefix (``renames``:
    module prefix -> new prefix, the longest matching prefix wins; default pyflink ->
    sparktide)."""
    renames = PYFLINK_TO_SPARKTIDE if renames is None else renames
    prefixes = sorted(renames, key=len, reverse=True)
    pattern = re.compile(
        r"(?<![\w.])(" + "|".join(re.escape(p) for p in prefixes) + r")(?=[\s.,)]|$)"
    )
    lines = source.splitlines(keepends=True)
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        end = node.end_lineno or node.lineno
        for i in range(node.lineno - 1, end):
            lines[i] = pattern.sub(lambda m: renames[m.group(1)], lines[i])
    return "".join(lines)


def shipped_examples(examples_dir: Path) -> list[str]:
    """The shipped examples, as paths relative to ``examples/datastream``."""
    return sorted(
        p.relative_to(examples_dir).as_posix()
        for p in examples_dir.rglob("*.py")
        if p.name != "__init__.py"
    )


def main(argv: list[str] | None = None) -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from record import pyflink_python, shipped_examples_dir

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", help="a Python with apache-flink installed")
    args = parser.parse_args(argv)
    python = pyflink_python(args.python)
    if python is None:
        parser.error("no Python with apache-flink; pass --python or set SPARKTIDE_PYFLINK_PYTHON")
    source_dir = shipped_examples_dir(python)
    for relative in shipped_examples(source_dir):
        target = PORTS / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        text = (source_dir / relative).read_text(encoding="utf-8")
        target.write_text(rewrite_imports(text), encoding="utf-8")
        print(f"{relative} -> {target.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
