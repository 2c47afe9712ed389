#!/usr/bin/env bash
# deploy/run.sh — installs what is missing, builds a release, starts the main job.
# Until the server exists (issue: relaxd), the main job is the offline compiler:
# it builds relaxc and shows its help.
set -euo pipefail
cd "$(dirname "$0")/.."

./deploy/packages.sh build
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF >/dev/null
ninja -C build
mkdir -p var
exec ./build/bin/relaxc --help
