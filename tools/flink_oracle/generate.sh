#!/usr/bin/env bash
# Regenerate tests/data/flink_key_groups.json from Apache Flink's own key-group code.
#
# Usage: tools/flink_oracle/generate.sh [FLINK] [OUTPUT]
#   FLINK   the pyflink package directory of an installed apache-flink (the one that holds lib/),
#           a directory of Flink jars, or a python interpreter that can import pyflink.
#           Default: $PYFLINK_PYTHON, else the first of python3/python that can import pyflink.
#   OUTPUT  default: tests/data/flink_key_groups.json in this repository.
# Needs a JDK (javac and java, 11 or newer). Example:
#   python3 -m venv /tmp/flinkvenv && /tmp/flinkvenv/bin/pip install apache-flink==2.3.0
#   tools/flink_oracle/generate.sh /tmp/flinkvenv/bin/python
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
flink="${1:-}"
output="${2:-$repo/tests/data/flink_key_groups.json}"

pyflink_dir_of() {
    "$1" -c 'import os, pyflink; print(os.path.dirname(pyflink.__file__))' 2>/dev/null
}

if [[ -z "$flink" ]]; then
    for candidate in ${PYFLINK_PYTHON:-} python3 python; do
        if command -v "$candidate" >/dev/null 2>&1 && dir="$(pyflink_dir_of "$candidate")"; then
            flink="$dir"
            break
        fi
    done
    if [[ -z "$flink" ]]; then
        echo "error: no python that can import pyflink found; pass the pyflink directory or a" \
            "python with apache-flink installed as the first argument" >&2
        exit 2
    fi
elif [[ -f "$flink" && -x "$flink" ]]; then
    if ! flink="$(pyflink_dir_of "$flink")"; then
        echo "error: $1 cannot import pyflink; install apache-flink into it first" >&2
        exit 2
    fi
fi

if [[ -d "$flink/lib" ]]; then
    jar_dir="$flink/lib"
else
    jar_dir="$flink"
fi
dist_jar="$(ls "$jar_dir"/flink-dist*.jar 2>/dev/null | head -n 1 || true)"
if [[ -z "$dist_jar" ]]; then
    echo "error: no flink-dist*.jar in $jar_dir; pass the pyflink directory of apache-flink" >&2
    exit 2
fi
version="$(basename "$dist_jar" .jar)"
version="${version#flink-dist-}"
version="${version#flink-dist_2.12-}"

build="$(mktemp -d)"
trap 'rm -rf "$build"' EXIT
javac -d "$build" -cp "$dist_jar" "$here/KeyGroupOracle.java"
mkdir -p "$(dirname "$output")"
java -cp "$build:$dist_jar" KeyGroupOracle "$version" > "$build/out.json"
mv "$build/out.json" "$output"
echo "wrote $output (Flink $version, $(wc -c < "$output") bytes)"
