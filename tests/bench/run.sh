#!/usr/bin/env bash
# tests/bench/run.sh — runs the benchmarks on a release build and prints their JSON lines.
#
# The only source of real numbers (ctest runs each benchmark once on a tiny input, as a
# test). Builds build-bench with CMAKE_BUILD_TYPE=Release and no sanitizers, then runs:
#   bench_frontend  parse + deduce + print of 10,000 bindings vs jansson alone
#   bench_transpose a 4096 x 4104 f32 transpose: the generated tile's loop nest vs 8 x 8
#                   AVX2 in-register transposes (plain, streaming stores), on 4 KiB and 2 MiB
#                   pages, each vs memcpy on the same pages (what bounds transpose_2d)
#   bench_vm        VM dispatch overhead per instruction: a 1,000-op chain vs the same
#                   kernels called directly from C
#   bench_mlp.py    2-layer MLP (512 -> 2048 -> 512) through relaxc + relax-run vs NumPy,
#                   n = 1, 32, 256. OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE are unset for
#                   this command only (they slow a current OpenBLAS; see the env notes).
#   bench_server.py relaxd's cache-hit POST /v1/compile and GET /v1/artifacts/<id> under wrk
#                   at 1, 16, 64 connections, 5 s each, vs nginx serving the same bytes
#                   (GET goal: >= 0.5x nginx's requests/s)
#   bench_agents.py dispatch latency submit -> an idle long-polling relax-agent starts the
#                   run, median and p95 over 50 jobs (goal p95 < 50 ms), and the statistics
#                   through an agent vs relax-run --bench on the same artifact (ratio)
#   bench_passes.py per-pass compile times of the 32-layer Llama module (7B shapes) at O2
#                   and O3, median of 5 builds (goal: graph-level passes < 1 s)
#   bench_ablation.py  paper Figure 17 on CPU: a 2-layer Llama decoder (hidden 512),
#                   prefill s=128 and decode b=1 c=127, as none / +fusion / +library /
#                   +planning: latency, speedup, peak memory
#   bench_decoder_torch.py  one decoder block (hidden 2048, intermediate 5632) vs PyTorch
#                   eager with 2 threads, prefill 128 and decode 1 (goal: relax/torch <= 0.8)
#   bench_memory.py paper Table 2 on CPU: a 4-layer Llama decoder (hidden 1024), activation
#                   memory of successive prefills (s = 128..1024) and decodes (b = 1..64)
#                   with and without static memory planning, against the lower bound
#   bench_gpu.py    the GPU targets: the cost of one more kernel in a call on opencl and
#                   vulkan (32 unfused vs 1 fused adds) vs the same on cpu, the global loads
#                   and stores per output of the generated softmax, rms_norm and matmul vs
#                   the minimum, compile time per target of a 32-layer decoder vs cpu, and
#                   CLBlast vs the generated tiles kernel on PoCL (bench_clblast)
#   bench_device    OpenCL and Vulkan launch overhead per kernel (launch + sync, queued
#                   launches) vs a CPU kernel call, and a 1 MiB upload + download vs two
#                   memcpy (PoCL and lavapipe here)
#   bench_kernels.py generated f32 elementwise kernels (4 MB and 64 MB) at O2 and O3 vs
#                   memcpy bandwidth (goal >= 0.7), and O3 matmuls (256^3, 512^3, 1024^3,
#                   1x4096x4096) with --lib none vs OpenBLAS, 2 threads (goal >= 0.9x)
#   bench_vs_ort.py a Llama-style decoder block (hidden 1024, 16 heads, intermediate 2816)
#                   written five ways, decode b=1/16 over 512 cached and prefill s=128/512,
#                   relax O2 and O3 vs ONNX Runtime 1.30 (npm, installed by setup_ort.sh)
#                   and PyTorch, 2 threads each (goal: relax/ORT <= 1.0)
#   bench_torch_blocks.py  blocks as popular model code writes them (HF GPT-2, HF Llama,
#                   ViT-S, T5 attention) exported by PyTorch: relax O2 vs ONNX Runtime on the
#                   same .onnx and PyTorch eager, 2 threads (goal: relax/ORT <= 1.0)
#   bench_fuzz.py   the three libFuzzer targets (relax-json reader, .rxa parser, relaxd's
#                   request path) to 1,000,000 executions each, with their counts; on its
#                   own build, build-fuzz-bench (clang, RelWithDebInfo, ASan+UBSan,
#                   -DRX_FUZZ=ON: ctest's Debug targets are several times slower), last
#   bench_onnx_import.py  relaxc import --weights params of a 32-layer ONNX decoder
#                   (hidden 1024, 1.6 GB of external-data weights) vs cp of the weights
#                   file; relaxc's peak RSS (docs/onnx.md)
#   bench_attention.py attention's two products in nine formulations (s = 512, 16 heads
#                   of 64) vs OpenBLAS sgemm of the same FLOPs, CPU time on 1 thread
#                   (goal >= 0.5x sgemm's rate)
#   bench_opt_levels.py every e2e case and the generators (a hidden-1024 decoder layer,
#                   attention's formulations) at O2 and O3 side by side, per function
#                   and per kernel (goal: O3 / O2 <= 1.05; above is a failure)
# Every benchmark checks its result against its reference and fails loudly if they differ.
set -euo pipefail
cd "$(dirname "$0")/../.."
./deploy/packages.sh bench  # the test set + wrk and nginx (bench_server.py), torch, node
./tests/bench/setup_ort.sh  # onnxruntime-node from npm, into $RX_ORT_DIR or ~/.cache
cmake -S . -B build-bench -G Ninja -DCMAKE_BUILD_TYPE=Release -DRX_SANITIZE=OFF >/dev/null
ninja -C build-bench bench_frontend bench_vm bench_device bench_clblast bench_memory_run bench_transpose relaxc relax-run relaxd relax-agent >/dev/null
./build-bench/bin/bench_frontend --bindings 10000 --repeat 20
./build-bench/bin/bench_vm --ops 1000 --repeat 25 --number 200
./build-bench/bin/bench_transpose --repeat 5
./build-bench/bin/bench_device --repeat 9 --number 500
/usr/bin/python3 tests/bench/bench_gpu.py --repeat 9 \
    --relaxc ./build-bench/bin/relaxc --relax-run ./build-bench/bin/relax-run \
    --bench-clblast ./build-bench/bin/bench_clblast
./build-bench/bin/bench_device --api vulkan --repeat 9 --number 500
env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE /usr/bin/python3 tests/bench/bench_mlp.py \
    --sizes 1,32,256 --repeat 10 \
    --relaxc ./build-bench/bin/relaxc --relax-run ./build-bench/bin/relax-run
/usr/bin/python3 tests/bench/bench_server.py ./build-bench/bin --duration 5 --connections 1,16,64
/usr/bin/python3 tests/bench/bench_passes.py --levels 2,3 --repeat 5 --relaxc ./build-bench/bin/relaxc
env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE /usr/bin/python3 tests/bench/bench_ablation.py \
    --repeat 10 --relaxc ./build-bench/bin/relaxc --relax-run ./build-bench/bin/relax-run
env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE /usr/bin/python3 tests/bench/bench_decoder_torch.py \
    --repeat 20 --relaxc ./build-bench/bin/relaxc --relax-run ./build-bench/bin/relax-run
/usr/bin/python3 tests/bench/bench_agents.py ./build-bench/bin --jobs 50 --rounds 5
/usr/bin/python3 tests/bench/bench_memory.py \
    --relaxc ./build-bench/bin/relaxc --runner ./build-bench/bin/bench_memory_run
env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE /usr/bin/python3 tests/bench/bench_kernels.py \
    --threads 2 --repeat 10 --relaxc ./build-bench/bin/relaxc --relax-run ./build-bench/bin/relax-run
env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE /usr/bin/python3 tests/bench/bench_vs_ort.py \
    --threads 2 --repeat 10 --relaxc ./build-bench/bin/relaxc --relax-run ./build-bench/bin/relax-run
env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE /usr/bin/python3 tests/bench/bench_torch_blocks.py \
    --threads 2 --repeat 10 --relaxc ./build-bench/bin/relaxc --relax-run ./build-bench/bin/relax-run
env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE /usr/bin/python3 tests/bench/bench_attention.py \
    --threads 1 --cpu --rounds 3 --relaxc ./build-bench/bin/relaxc --relax-run ./build-bench/bin/relax-run
/usr/bin/python3 tests/bench/bench_opt_levels.py --rounds 3 \
    --relaxc ./build-bench/bin/relaxc --relax-run ./build-bench/bin/relax-run
CC=clang cmake -S . -B build-fuzz-bench -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DRX_SANITIZE=ON -DRX_WERROR=ON -DRX_FUZZ=ON >/dev/null
ninja -C build-fuzz-bench fuzz_reader fuzz_rxa fuzz_http relaxc >/dev/null
/usr/bin/python3 tests/bench/bench_fuzz.py build-fuzz-bench
/usr/bin/python3 tests/bench/bench_onnx_import.py --relaxc ./build-bench/bin/relaxc \
    --layers 32 --hidden 1024 --repeat 3
