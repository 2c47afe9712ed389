#!/usr/bin/env bash
# deploy/run.sh — installs what is missing, builds a release, starts the main job:
# the compilation server relaxd on 127.0.0.1:8080 with its cache in ./var.
# Configuration beyond the flags below: RELAXD_* variables or RELAXD_CONFIG=FILE
# (see deploy/relaxd.example.json); flags win over both.
set -euo pipefail
cd "$(dirname "$0")/.."

./deploy/packages.sh build
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF >/dev/null
ninja -C build
mkdir -p var
exec ./build/bin/relaxd --listen 127.0.0.1:8080 --data ./var
