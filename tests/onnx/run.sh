#!/usr/bin/env bash
# tests/onnx/run.sh — the ONNX backend node suite as a benchmark (docs/onnx.md,
# "Conformance"): every test of /usr/share/libonnx-testdata/data/node through relaxc
# build and relax-run, per-test status, a per-op table and the totals.
# Usage: tests/onnx/run.sh [BIN_DIR (default build/bin)] [run.py options, e.g. --json OUT]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bin="${1:-build/bin}"
shift || true
exec /usr/bin/python3 "$here/run.py" --bin "$bin" --jobs 2 "$@"
