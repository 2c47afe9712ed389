#!/usr/bin/env bash
# tests/bench/run.sh — runs the benchmarks on a release build and prints their JSON lines.
#
# The only source of real numbers (ctest runs each benchmark once on a tiny input, as a
# test). Builds build-bench with CMAKE_BUILD_TYPE=Release and no sanitizers, then runs:
#   bench_frontend  parse + deduce + print of 10,000 bindings vs jansson alone
#   bench_vm        VM dispatch overhead per instruction: a 1,000-op chain vs the same
#                   kernels called directly from C
#   bench_mlp.py    2-layer MLP (512 -> 2048 -> 512) through relaxc + relax-run vs NumPy,
#                   n = 1, 32, 256. OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE are unset for
#                   this command only (they slow a current OpenBLAS; see the env notes).
#   bench_server.py relaxd's cache-hit POST /v1/compile and GET /v1/artifacts/<id> under wrk
#                   at 1, 16, 64 connections, 5 s each, vs nginx serving the same bytes
#                   (GET goal: >= 0.5x nginx's requests/s)
# Every benchmark checks its result against its reference and fails loudly if they differ.
set -euo pipefail
cd "$(dirname "$0")/../.."
./deploy/packages.sh bench  # the test set + wrk and nginx (bench_server.py)
cmake -S . -B build-bench -G Ninja -DCMAKE_BUILD_TYPE=Release -DRX_SANITIZE=OFF >/dev/null
ninja -C build-bench bench_frontend bench_vm relaxc relax-run relaxd >/dev/null
./build-bench/bin/bench_frontend --bindings 10000 --repeat 20
./build-bench/bin/bench_vm --ops 1000 --repeat 25 --number 200
env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE /usr/bin/python3 tests/bench/bench_mlp.py \
    --sizes 1,32,256 --repeat 10 \
    --relaxc ./build-bench/bin/relaxc --relax-run ./build-bench/bin/relax-run
/usr/bin/python3 tests/bench/bench_server.py ./build-bench/bin --duration 5 --connections 1,16,64
