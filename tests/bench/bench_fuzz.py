#!/usr/bin/python3
"""The fuzz targets run to a million executions each, with their counts.

usage: bench_fuzz.py BUILD_DIR [--runs N] [--targets reader,rxa,http]

BUILD_DIR is a build configured with -DRX_FUZZ=ON (clang, the libFuzzer targets of
tests/fuzz); run.sh uses build-fuzz-bench, RelWithDebInfo with ASan+UBSan (build-test's
Debug targets work too, several times slower). Each target runs with -runs=N (default 1,000,000)
over its ctest corpus directory plus its seeds (the .rxa seeds are built first with
relaxc, as the ctest fixture does), on one core. Prints one JSON line per target:
{"bench": "fuzz", "target", "runs" (libFuzzer's stat::number_of_executed_units),
"seconds", "execs_per_s", "new_units" (corpus growth), "peak_rss_mb", "crashed" (a
sanitizer report, a deadly signal or a leak: the log tail is added), "interrupted"
(SIGINT: libFuzzer still prints its counts)} and exits 1 when any target crashed, was
interrupted or fell short of N executions. Not a ctest
test (minutes); ctest runs each target for RX_FUZZ_SECONDS.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))


def target_args(build, name):
    fz = os.path.join(build, "tests", "fuzz")
    mods = os.path.join(SRC, "tests", "modules")
    if name == "reader":
        return [os.path.join(fz, "corpus"), os.path.join(mods, "valid"),
                os.path.join(mods, "invalid")], ["-max_len=65536"]
    if name == "rxa":
        seeds = os.path.join(fz, "rxa_seeds")
        subprocess.run(["/usr/bin/python3", os.path.join(SRC, "tests", "fuzz", "make_rxa_seeds.py"),
                        os.path.join(build, "bin", "relaxc"), os.path.join(mods, "valid"), seeds],
                       check=True, capture_output=True)
        return [os.path.join(fz, "rxa_corpus"), seeds], ["-max_len=65536"]
    return [os.path.join(fz, "http_corpus"), os.path.join(SRC, "tests", "fuzz", "http_seeds")], \
        ["-max_len=16384", "-detect_leaks=0",
         "-dict=" + os.path.join(SRC, "tests", "fuzz", "http.dict")]


def run(build, name, runs):
    dirs, extra = target_args(build, name)
    for d in dirs:
        os.makedirs(d, exist_ok=True)
    exe = os.path.join(build, "bin", "fuzz_" + name)
    if not os.access(exe, os.X_OK):
        exe = os.path.join(build, "tests", "fuzz", "fuzz_" + name)
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1")
    t0 = time.time()
    p = subprocess.run([exe, "-runs=%d" % runs, "-print_final_stats=1", "-rss_limit_mb=2048",
                        "-timeout=10"] + extra + dirs, capture_output=True, text=True, env=env)
    dt = time.time() - t0
    log = p.stderr

    def stat(key):
        m = re.search(r"^stat::%s:\s+(\d+)" % key, log, re.M)
        return int(m.group(1)) if m else -1
    execs = stat("number_of_executed_units")
    o = {"bench": "fuzz", "target": name, "runs": execs, "seconds": round(dt, 1),
         "execs_per_s": round(execs / dt) if execs > 0 else 0, "new_units": stat("new_units_added"),
         "peak_rss_mb": stat("peak_rss_mb"),
         "crashed": bool(re.search(r"==ERROR|deadly signal|Test unit written to|-leak-", log)),
         "interrupted": "run interrupted" in log}
    if o["crashed"]:
        o["tail"] = log[-2000:]
    return o


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--runs", type=int, default=1000000)
    ap.add_argument("--targets", default="reader,rxa,http")
    a = ap.parse_args()
    bad = 0
    for name in a.targets.split(","):
        o = run(os.path.abspath(a.build), name, a.runs)
        print(json.dumps(o), flush=True)
        bad += o["crashed"] or o["interrupted"] or o["runs"] < a.runs
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
