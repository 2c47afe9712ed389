#!/usr/bin/env bash
# tests/bench/run.sh — runs the benchmarks on a release build and prints their JSON lines.
set -euo pipefail
cd "$(dirname "$0")/../.."
./deploy/packages.sh build
cmake -S . -B build-bench -G Ninja -DCMAKE_BUILD_TYPE=Release -DRX_SANITIZE=OFF >/dev/null
ninja -C build-bench bench_frontend >/dev/null
./build-bench/bin/bench_frontend --bindings 10000 --repeat 20
