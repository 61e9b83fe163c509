"""The repository's tools (scripts under ``tools/``, not a package) as modules for the tests:
one module object per tool, whichever test file loads it first."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

TOOLS = Path(__file__).resolve().parents[1] / "tools"


def load_tool(relative: str) -> ModuleType:
    """``tools/<relative>`` as a module, e.g. ``load_tool("pyflink_oracle/record.py")``."""
    name = "tools_" + relative.removesuffix(".py").replace("/", "_")
    if name in sys.modules:
        return sys.modules[name]
    path = TOOLS / relative
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module
