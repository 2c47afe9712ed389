#!/usr/bin/python3
"""bench_opt_levels.py — O3 is never slower than O2 (issue 13, item 4): every function of
the corpus and of the generators, built at O2 and O3, timed side by side.

Workloads:
  * every runnable e2e case (tests/e2e/cases.json, tests/models/cases.json): its
    module and function at the largest shape set of the case (inputs from relax-run's
    seed);
  * tests/models/gen_llama.py, one layer of hidden 1024, 16 heads, intermediate 2816:
    prefill s = 128, decode b = 1 and b = 16 over c = 512 cached positions;
  * tests/bench/bench_attention.py's nine formulations of attention's products at
    s = 128.
Each workload is run by relax-run --bench --profile (--repeat R, --min-repeat-ms M) at
O2 and O3, the two interleaved, --rounds times; a figure is the median over rounds of
relax-run's min_ms, and a kernel's figure the median of its mean per call (kernels are
matched by name, a specialized copy's _static suffix dropped; only kernels above 10%
of the call and 20 us are judged). Ratio = O3 / O2; above --limit (1.05) is a failure:
the exit status is 1 and the offenders are listed. Threads: --threads (1 by default:
on a shared machine a 2-thread OpenMP region waits for the busiest core; run with 2 on
a quiet one), OMP_NUM_THREADS and OPENBLAS_NUM_THREADS alike.

  bench_opt_levels.py [--rounds 3] [--repeat 10] [--min-repeat-ms 20] [--threads 1]
                      [--limit 1.05] [--only SUBSTRING] [--smoke] [--relaxc P] [--relax-run P]
--smoke: the e2e cases only, one round, no limit (a ctest that every workload builds
and runs at both levels).
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

import rxbench

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_attention  # noqa: E402

CASE_FILES = ("tests/e2e/cases.json", "tests/models/cases.json")


def run(cmd, env):
    r = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       check=False)
    return r.returncode, r.stdout, r.stderr


def e2e_workloads():
    """(name, module path, function, {var: n}) of every runnable e2e case."""
    out = []
    for cf in CASE_FILES:
        with open(os.path.join(rxbench.ROOT, cf)) as fh:
            cases = json.load(fh)["cases"]
        for c in cases:
            if "build_error" in c or "run_error" in c or "inputs" in c:
                continue
            shapes = c.get("shapes") or [{}]
            big = max(shapes, key=lambda s: sum(v for v in s.values() if isinstance(v, int)))
            fn = c.get("function", "main")
            out.append(("%s:%s" % (os.path.basename(c["module"]), fn),
                        os.path.join(rxbench.ROOT, c["module"]), fn, big))
    return out


def generated_workloads(tmp):
    cfg = rxbench.llama_config(layers=1, hidden=1024, heads=16, head_dim=64, intermediate=2816)
    llama = os.path.join(tmp, "llama1024.json")
    with open(llama, "w") as fh:
        json.dump(rxbench.llama_module(cfg), fh)
    out = [("llama1024:prefill s=128", llama, "prefill", {"s": 128}),
           ("llama1024:decode b=1 c=512", llama, "decode", {"b": 1, "c": 512}),
           ("llama1024:decode b=16 c=512", llama, "decode", {"b": 16, "c": 512})]
    forms = list(bench_attention.SCORES + bench_attention.CONTEXT)
    attn = os.path.join(tmp, "attention.json")
    with open(attn, "w") as fh:
        json.dump(bench_attention.module(forms, 16, 64), fh)
    out += [("attention:%s s=128" % f, attn, f, {"b": 1, "s": 128}) for f in forms]
    return out


def base_name(k):
    return re.sub(r"_static\d*$", "", k)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--min-repeat-ms", dest="min_ms", type=int, default=20)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--limit", type=float, default=1.05)
    ap.add_argument("--only", default="")
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--relaxc", default=os.path.join(rxbench.ROOT, "build", "bin", "relaxc"))
    ap.add_argument("--relax-run", dest="relax_run",
                    default=os.path.join(rxbench.ROOT, "build", "bin", "relax-run"))
    a = ap.parse_args()
    if a.smoke:
        a.rounds, a.repeat, a.min_ms = 1, 1, 0
    env = dict(os.environ, OMP_NUM_THREADS=str(a.threads), OPENBLAS_NUM_THREADS=str(a.threads))
    note, warn = rxbench.load_note()
    if warn and not a.smoke:
        print(warn)
    failures, bad = [], 0
    with tempfile.TemporaryDirectory() as tmp:
        works = e2e_workloads() + ([] if a.smoke else generated_workloads(tmp))
        works = [w for w in works if a.only in w[0]]
        arts = {}
        for _, mod, _, _ in works:
            for lv in (2, 3):
                if (mod, lv) in arts:
                    continue
                art = os.path.join(tmp, "m%d_O%d.rxa" % (len(arts), lv))
                rc, _, err = run([a.relaxc, "build", mod, "-o", art, "--opt-level", str(lv)], env)
                arts[(mod, lv)] = art if rc == 0 else None
                if rc:
                    print("build failed: %s O%d: %s" % (mod, lv, err.strip()))
                    bad += 1
        print("%-40s %10s %10s %8s" % ("workload", "O2 ms", "O3 ms", "O3/O2"))
        for name, mod, fn, shapes in works:
            if not arts[(mod, 2)] or not arts[(mod, 3)]:
                continue
            walls = {2: [], 3: []}
            kern = {2: {}, 3: {}}
            ok = True
            for _ in range(a.rounds):
                for lv in (2, 3):
                    cmd = [a.relax_run, arts[(mod, lv)], "--fn", fn, "--bench", "--profile",
                           "--repeat", str(a.repeat), "--min-repeat-ms", str(a.min_ms), "--seed", "3"]
                    for k, v in shapes.items():
                        cmd += ["--shape", "%s=%d" % (k, v)]
                    rc, out, err = run(cmd, env)
                    if rc:
                        print("run failed: %s O%d: %s" % (name, lv, err.strip().splitlines()[-1:]))
                        bad += 1
                        ok = False
                        break
                    j = json.loads(out.strip().splitlines()[-1])
                    walls[lv].append(j["min_ms"])
                    runs = max(j.get("profile_runs", 1), 1)
                    call_ms = j.get("profile_wall_ms", 0) / runs
                    for p in j.get("profile", []):
                        if p.get("kind") != "kernel":
                            continue
                        mean = p["total_ms"] / max(p["calls"], 1)
                        share = p["total_ms"] / runs / call_ms if call_ms > 0 else 0
                        kern[lv].setdefault(base_name(p["name"]), []).append((mean, share))
                if not ok:
                    break
            if not ok:
                continue
            w2, w3 = statistics.median(walls[2]), statistics.median(walls[3])
            ratio = w3 / w2 if w2 > 0 else 1.0
            flag = ratio > a.limit and not a.smoke
            print("%-40s %10.3f %10.3f %8.2f%s" % (name[:40], w2, w3, ratio, "  FAIL" if flag else ""))
            if flag:
                failures.append((name, ratio))
            for k in sorted(kern[3]):
                if k not in kern[2]:
                    continue
                m2 = statistics.median(x[0] for x in kern[2][k])
                m3 = statistics.median(x[0] for x in kern[3][k])
                share = max(statistics.median(x[1] for x in kern[2][k]),
                            statistics.median(x[1] for x in kern[3][k]))
                if share < 0.10 or max(m2, m3) < 0.02 or m2 <= 0:
                    continue
                kr = m3 / m2
                kflag = kr > a.limit and not a.smoke
                if kflag or not a.smoke:
                    print("    %-36s %10.3f %10.3f %8.2f%s" % (k[:36], m2, m3, kr, "  FAIL" if kflag else ""))
                if kflag:
                    failures.append(("%s %s" % (name, k), kr))
    print(json.dumps({"failures": [{"what": n, "o3_over_o2": round(r, 3)} for n, r in failures],
                      "errors": bad, "threads": a.threads, **note}))
    return 1 if failures or bad else 0


if __name__ == "__main__":
    sys.exit(main())
