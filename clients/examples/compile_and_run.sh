#!/bin/sh
# compile_and_run.sh — compile a Relax module on relaxd and run it locally, with the CLIs
# only: `relax compile -o` (the server compiles or answers from its cache; the artifact
# comes back verified against its SHA-256 id) and `relax-run` (the C runtime).
#
#   RELAX_SERVER=http://host:8080 RELAX_TOKEN=... \
#     compile_and_run.sh MODULE.json [OUT_DIR] [relax-run options, e.g. --shape n=128]
#
# Writes OUT_DIR/model.rxa and OUT_DIR/out0.npy, out1.npy, ... (OUT_DIR defaults to
# ./relax-out). Exits with the first failing command's status (1 failure, 2 bad usage).
set -eu

usage="usage: $0 MODULE.json [OUT_DIR] [relax-run options]"
if [ $# -ge 1 ] && [ "$1" = "--help" ]; then
    echo "$usage"
    exit 0
fi
if [ $# -lt 1 ]; then
    echo "$usage" >&2
    exit 2
fi
module=$1
shift
out_dir=./relax-out
if [ $# -ge 1 ]; then
    case $1 in
        -*) ;;
        *) out_dir=$1; shift ;;
    esac
fi
mkdir -p "$out_dir"

# Step 1: compile on the server and fetch the artifact (stdout: "<id>  cached|compiled ...").
relax compile "$module" --target "${RELAX_TARGET:-cpu}" -o "$out_dir/model.rxa"

# Step 2: run main with the C runtime; missing inputs get seeded random data.
relax-run "$out_dir/model.rxa" --out-dir "$out_dir" "$@"
ls "$out_dir"
