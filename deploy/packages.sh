#!/usr/bin/env bash
# deploy/packages.sh — installs the Debian packages relaxd needs that are missing.
# Usage: deploy/packages.sh [build|test|bench]   (test adds what the test suite needs,
# including PyTorch and ONNX with its node suite for tests/onnx;
# bench what the benchmarks compare against: wrk and nginx for bench_server.py, PyTorch
# CPU for bench_decoder_torch.py and bench_vs_ort.py, node for ONNX Runtime, which
# tests/bench/setup_ort.sh then installs from npm). Vulkan: the build needs the headers
# and the static shaderc/glslang/SPIRV-Tools libraries (GLSL -> SPIR-V in relaxc); test and
# bench add the loader with Mesa's lavapipe (Vulkan on the CPU), spirv-val and vulkaninfo;
# CLBlast (libclblast1: the runtime dlopens it, no header needed) for GEMMs on OpenCL)
# As root it runs apt-get; otherwise it only reports what is missing and fails.
set -euo pipefail

pkgs=(gcc make cmake ninja-build pkg-config libjansson-dev libdlpack-dev libopenblas-dev
      libopenblas0-openmp libsqlite3-dev libmicrohttpd-dev libcurl4-openssl-dev libssl-dev
      protobuf-c-compiler libprotobuf-c-dev libonnx-dev opencl-headers
      libvulkan-dev libshaderc-dev glslang-dev spirv-tools)
case "${1:-build}" in
  test)  pkgs+=(clang libclang-rt-14-dev check libsubunit-dev python3-numpy python3-jsonschema
                python3-onnx libonnx-testdata python3-torch ocl-icd-opencl-dev pocl-opencl-icd clinfo
                libvulkan1 mesa-vulkan-drivers vulkan-tools libclblast1) ;;
  bench) pkgs+=(clang libclang-rt-14-dev check libsubunit-dev python3-numpy python3-jsonschema
                python3-onnx libonnx-testdata wrk nginx-light python3-torch nodejs
                ocl-icd-opencl-dev pocl-opencl-icd clinfo libvulkan1 mesa-vulkan-drivers
                vulkan-tools libclblast1) ;;
esac

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
  echo "error: missing Debian packages: ${missing[*]} (run as root to install them)" >&2
  exit 1
fi
echo "installing: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
