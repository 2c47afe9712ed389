#!/bin/sh
# tests/gpu/run.sh — the CUDA device check, on a machine with an NVIDIA GPU and driver.
#
#   tests/gpu/run.sh PREPARED_DIR [BUILD_DIR]
#
# PREPARED_DIR is made on a build machine by tests/gpu/prepare.py (cuda artifacts, their
# inputs, the NumPy expected outputs, DLPack's header) and carried here. This script
# builds only what must run here, the runtime and relax-run (cmake -S runtime: no
# jansson, sqlite, microhttpd or Check), into BUILD_DIR (default build-gpu), then runs
# tests/gpu/check.py: every run of the manifest on cuda against NumPy, then the
# benchmarks. Exit status: check.py's (0 pass, 1 a mismatch, 77 no CUDA driver).
# Needs cmake, a C compiler, python3 with NumPy; ninja when present. Under 8 minutes
# on an H100 machine (docs/gpu.md "CUDA").
set -eu
if [ $# -lt 1 ]; then
    sed -n '2,13p' "$0"
    exit 2
fi
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DIR=$(cd "$1" && pwd)
BUILD=${2:-$ROOT/build-gpu}
PY=${RX_PYTHON:-python3}
GEN=""
if command -v ninja >/dev/null 2>&1; then GEN="-G Ninja"; fi
start=$(date +%s)
# shellcheck disable=SC2086
cmake -S "$ROOT/runtime" -B "$BUILD" $GEN -DCMAKE_BUILD_TYPE=Release -DRXRT_TESTS=OFF \
    -DRX_WERROR=OFF -DDLPACK_INCLUDE_DIR="$DIR/include" >"$BUILD.cmake.log" 2>&1 ||
    { cat "$BUILD.cmake.log"; exit 1; }
cmake --build "$BUILD" --target relax-run -j "${RX_GPU_JOBS:-8}" >"$BUILD.build.log" 2>&1 ||
    { tail -50 "$BUILD.build.log"; exit 1; }
echo "runtime built in $(( $(date +%s) - start )) s: $BUILD/bin/relax-run"
if command -v nvidia-smi >/dev/null 2>&1; then
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
fi
rc=0
"$PY" "$ROOT/tests/gpu/check.py" "$BUILD/bin/relax-run" "$DIR" ${RX_GPU_CHECK_ARGS:-} || rc=$?
echo "device check finished in $(( $(date +%s) - start )) s (exit $rc)"
exit $rc
