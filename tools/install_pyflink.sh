#!/usr/bin/env bash
# Install real PyFlink (apache-flink, runs on the machine's Java 17) into .venv-flink, the oracle
# that the parity and differential tests and the benchmarks compare sparktide against.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv-flink/bin/python ] || ! .venv-flink/bin/python -c "import pyflink" 2>/dev/null; then
  python3 -m venv .venv-flink
  .venv-flink/bin/pip install -q "apache-flink==2.3.0"
fi
echo "PyFlink ready: $(pwd)/.venv-flink/bin/python"
