"""Build ``PerRecordWatermarks.java`` into a jar that PyFlink can load with ``env.add_jars``.

The class is compiled against the jars that apache-flink ships (``pyflink/lib`` and
``pyflink/opt``), so it matches the installed Flink exactly. Needs ``javac`` (JDK 11 or newer);
the jar itself is written with :mod:`zipfile`. The jar name carries a hash of the source and of
the Flink jars it was compiled against, so a cache directory can be reused across runs.

Usage (stdlib only)::

    python tools/flink_watermarks/build.py                      # .venv-flink, jar into a tmp dir
    python tools/flink_watermarks/build.py --python /path/to/python --out build/
    python tools/flink_watermarks/build.py --pyflink-dir /path/to/site-packages/pyflink

It prints the path of the jar. From PyFlink::

    env.add_jars(jar.as_uri())
    from pyflink.java_gateway import get_gateway
    strategy = WatermarkStrategy(get_gateway().jvm.sparktide.flink.PerRecordWatermarks.of(delay))
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCES = (HERE / "PerRecordWatermarks.java",)
CLASS_NAME = "sparktide.flink.PerRecordWatermarks"
DEFAULT_PYTHON = HERE.parents[1] / ".venv-flink" / "bin" / "python"


def pyflink_dir(python: str | os.PathLike[str]) -> Path | None:
    """The ``pyflink`` package directory of ``python``, or None if it cannot import pyflink."""
    try:
        proc = subprocess.run(
            [str(python), "-c", "import os, pyflink; print(os.path.dirname(pyflink.__file__))"],
            capture_output=True,
            text=True,
            timeout=120,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode != 0 or not proc.stdout.strip():
        return None
    return Path(proc.stdout.strip().splitlines()[-1])


def flink_jars(pyflink: Path) -> list[Path]:
    """The jars apache-flink ships: ``lib/*.jar`` and ``opt/*.jar``."""
    jars = sorted((pyflink / "lib").glob("*.jar")) + sorted((pyflink / "opt").glob("*.jar"))
    if not any(j.name.startswith("flink-dist") for j in jars):
        raise FileNotFoundError(
            f"no flink-dist*.jar under {pyflink}/lib; pass the pyflink package directory of an "
            "installed apache-flink"
        )
    return jars


def javac() -> str | None:
    """The ``javac`` to use: ``$JAVA_HOME/bin/javac``, else the one on PATH, else None."""
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "javac").is_file():
        return str(Path(home) / "bin" / "javac")
    return shutil.which("javac")


def _fingerprint(jars: list[Path]) -> str:
    digest = hashlib.sha256()
    for source in SOURCES:
        digest.update(source.read_bytes())
    for jar in jars:
        digest.update(f"{jar.name}:{jar.stat().st_size}".encode())
    return digest.hexdigest()[:16]


def build_jar(pyflink: Path, out_dir: Path, javac_path: str | None = None) -> Path:
    """Compile the sources against ``pyflink``'s jars into ``out_dir``; return the jar's path.

    An existing jar with the same fingerprint is reused. Raises ``RuntimeError`` with javac's
    output when compilation fails, ``FileNotFoundError`` when javac or the Flink jars are missing.
    """
    compiler = javac_path or javac()
    if compiler is None:
        raise FileNotFoundError("javac not found: install a JDK (11 or newer) or set JAVA_HOME")
    jars = flink_jars(pyflink)
    out_dir.mkdir(parents=True, exist_ok=True)
    jar = out_dir / f"flink-watermarks-{_fingerprint(jars)}.jar"
    if jar.is_file():
        return jar
    with tempfile.TemporaryDirectory(prefix="flink-watermarks-") as tmp:
        classes = Path(tmp) / "classes"
        classpath = os.pathsep.join(str(j) for j in jars)
        cmd = [compiler, "--release", "11", "-nowarn", "-d", str(classes), "-cp", classpath]
        proc = subprocess.run(
            [*cmd, *(str(s) for s in SOURCES)], capture_output=True, text=True, timeout=300
        )
        if proc.returncode != 0:
            raise RuntimeError(f"javac failed:\n{proc.stdout}\n{proc.stderr}")
        partial = Path(tmp) / jar.name
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as zf:
            zf.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\r\n\r\n")
            for path in sorted(classes.rglob("*.class")):
                zf.write(path, path.relative_to(classes).as_posix())
        shutil.move(str(partial), jar)  # whole file or nothing, for concurrent builders
    return jar


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--python", help="a Python that can import pyflink (default: .venv-flink)")
    ap.add_argument("--pyflink-dir", help="the pyflink package directory (holds lib/ and opt/)")
    ap.add_argument("--out", help="directory for the jar (default: a new temporary directory)")
    args = ap.parse_args(argv)
    if args.pyflink_dir:
        pyflink: Path | None = Path(args.pyflink_dir)
    else:
        python = args.python or os.environ.get("SPARKTIDE_PYFLINK_PYTHON") or DEFAULT_PYTHON
        pyflink = pyflink_dir(python)
        if pyflink is None:
            print(f"error: {python} cannot import pyflink", file=sys.stderr)
            return 2
    out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="flink-watermarks-"))
    try:
        jar = build_jar(pyflink, out)  # type: ignore[arg-type]
    except (FileNotFoundError, RuntimeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(jar)
    return 0


if __name__ == "__main__":
    sys.exit(main())
