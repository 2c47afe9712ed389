#!/usr/bin/env bash
# tests/bench/setup_ort.sh — installs ONNX Runtime (onnxruntime-node 1.30.0, CPU) from npm
# for tests/bench/bench_vs_ort.py, outside the repository.
#
#   tests/bench/setup_ort.sh [DIR]     (default: $RX_ORT_DIR, else ~/.cache/relaxd/ort-1.30.0)
#
# ONNXRUNTIME_NODE_INSTALL=skip: the CPU library ships inside the package, and without
# the flag its install script tries to download GPU binaries and fails. npm has been seen
# to leave node_modules/onnxruntime-common half extracted ("Cannot find module
# 'onnxruntime-common'"); then the package is fetched with `npm pack` and extracted over
# it. Ends by loading the module once. Needs node and npm (deploy/packages.sh bench).
set -euo pipefail
VERSION=1.30.0
DIR="${1:-${RX_ORT_DIR:-$HOME/.cache/relaxd/ort-$VERSION}}"
for tool in node npm; do
  command -v "$tool" >/dev/null || { echo "error: $tool not found (apt-get install nodejs npm)" >&2; exit 1; }
done
mkdir -p "$DIR"
cd "$DIR"
if ! node -e "require('./node_modules/onnxruntime-node')" 2>/dev/null; then
  [ -f package.json ] || echo '{"private": true}' > package.json
  ONNXRUNTIME_NODE_INSTALL=skip npm install --no-audit --no-fund "onnxruntime-node@$VERSION"
fi
if ! node -e "require('./node_modules/onnxruntime-node')" 2>/dev/null; then
  echo "repairing node_modules/onnxruntime-common"
  tgz=$(npm pack --silent "onnxruntime-common@$VERSION")
  rm -rf node_modules/onnxruntime-common
  mkdir -p node_modules/onnxruntime-common
  tar -xzf "$tgz" -C node_modules/onnxruntime-common --strip-components=1
  rm -f "$tgz"
fi
node -e "const o = require('./node_modules/onnxruntime-node'); \
  console.log('onnxruntime-node ' + require('./node_modules/onnxruntime-node/package.json').version + \
  ' in $DIR, backends: ' + o.listSupportedBackends().map(b => b.name).join(','))"
