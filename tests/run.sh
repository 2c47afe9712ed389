#!/usr/bin/env bash
# tests/run.sh — the whole test suite on a fresh Debian 12 machine.
# Installs missing packages (as root), builds with clang, warnings as errors,
# ASan+UBSan and the libFuzzer targets, then runs every test through ctest.
set -euo pipefail
cd "$(dirname "$0")/.."

./deploy/packages.sh test

build=${RX_TEST_BUILD:-build-test}
CC=clang cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Debug \
  -DRX_SANITIZE=ON -DRX_WERROR=ON -DRX_FUZZ=ON >/dev/null
ninja -C "$build"

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
cd "$build"
ctest -j2 --output-on-failure --timeout 900
