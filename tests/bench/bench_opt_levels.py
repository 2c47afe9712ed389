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

Budget: every artifact is built first (relaxc, each under --build-timeout seconds, which
is also the C compiler's limit, RX_CC_TIMEOUT_S: an O3 unit compiles three ISA versions
of every kernel and took over relaxc's default 120 s on a loaded machine), then timed
(each relax-run under --run-timeout). A build or run that fails or times out is listed
as such in the output and in the final JSON line's "errors" (kind build_failed,
build_timeout, run_failed, run_timeout) and makes the exit status 1: no workload is
skipped silently (a function whose inputs have a data-dependent size, which relax-run's
seeded inputs cannot make, is listed in "skipped" as needs_inputs). --subset picks
workload groups (e2e, llama, attention), --only a
substring of the names; --lock PATH takes an exclusive flock on PATH for the timing
phase only (the shared benchmark lock: builds run outside it, at nice 19).

  bench_opt_levels.py [--rounds 3] [--repeat 10] [--min-repeat-ms 20] [--threads 1]
                      [--limit 1.05] [--subset e2e,llama,attention] [--only SUBSTRING]
                      [--build-timeout 900] [--run-timeout 300] [--lock PATH]
                      [--smoke] [--relaxc P] [--relax-run P]
--smoke: the e2e cases only, one round, no limit (a ctest that every workload builds
and runs at both levels).
"""
import argparse
import contextlib
import fcntl
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


def run(cmd, env, timeout, nice=0):
    """(exit status, stdout, stderr) of cmd (no shell), niced by nice; status None when it
    ran past timeout seconds (it is killed)."""
    try:
        r = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, check=False, timeout=timeout,
                           preexec_fn=(lambda: os.nice(nice)) if nice else None)
    except subprocess.TimeoutExpired:
        return None, "", "timed out after %d s" % timeout
    return r.returncode, r.stdout, r.stderr


@contextlib.contextmanager
def locked(path):
    """An exclusive flock on path for the block (nothing when path is empty)."""
    if not path:
        yield
        return
    with open(path, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


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


def llama_workloads(tmp):
    cfg = rxbench.llama_config(layers=1, hidden=1024, heads=16, head_dim=64, intermediate=2816)
    llama = os.path.join(tmp, "llama1024.json")
    with open(llama, "w") as fh:
        json.dump(rxbench.llama_module(cfg), fh)
    return [("llama1024:prefill s=128", llama, "prefill", {"s": 128}),
            ("llama1024:decode b=1 c=512", llama, "decode", {"b": 1, "c": 512}),
            ("llama1024:decode b=16 c=512", llama, "decode", {"b": 16, "c": 512})]


def attention_workloads(tmp):
    forms = list(bench_attention.SCORES + bench_attention.CONTEXT)
    attn = os.path.join(tmp, "attention.json")
    with open(attn, "w") as fh:
        json.dump(bench_attention.module(forms, 16, 64), fh)
    return [("attention:%s s=128" % f, attn, f, {"b": 1, "s": 128}) for f in forms]


GROUPS = {"e2e": lambda tmp: e2e_workloads(), "llama": llama_workloads,
          "attention": attention_workloads}


def base_name(k):
    return re.sub(r"_static\d*$", "", k)


def build_all(a, env, works, tmp, errors):
    """{(module, level): artifact path or None} for every module of works at O2 and O3."""
    arts = {}
    for _, mod, _, _ in works:
        for lv in (2, 3):
            if (mod, lv) in arts:
                continue
            art = os.path.join(tmp, "m%d_O%d.rxa" % (len(arts), lv))
            rc, _, err = run([a.relaxc, "build", mod, "-o", art, "--opt-level", str(lv)], env,
                             a.build_timeout, nice=19)
            ok = rc == 0 and "timed out" not in err
            arts[(mod, lv)] = art if ok else None
            if not ok:
                kind = "build_timeout" if rc is None or "timed out" in err else "build_failed"
                what = "%s O%d" % (os.path.basename(mod), lv)
                print("%s: %s: %s" % (kind, what, err.strip()[-300:]), flush=True)
                errors.append({"what": what, "kind": kind})
    return arts


def time_workload(a, env, name, art, fn, shapes, errors, skipped):
    """({level: [min_ms per round]}, {level: {kernel: [(mean ms, share)]}}), or None
    when a run failed (recorded in errors) or needs inputs of a data-dependent size
    (recorded in skipped)."""
    walls = {2: [], 3: []}
    kern = {2: {}, 3: {}}
    for _ in range(a.rounds):
        for lv in (2, 3):
            cmd = [a.relax_run, art[lv], "--fn", fn, "--bench", "--profile",
                   "--repeat", str(a.repeat), "--min-repeat-ms", str(a.min_ms), "--seed", "3"]
            for k, v in shapes.items():
                cmd += ["--shape", "%s=%d" % (k, v)]
            rc, out, err = run(cmd, env, a.run_timeout)
            if rc != 0 and "dimension of unknown size" in err:
                # a data-dependent shape: relax-run's seeded inputs cannot make one
                print("needs_inputs: %s: not timed (an input of data-dependent size)" % name,
                      flush=True)
                skipped.append({"what": name, "why": "needs_inputs"})
                return None
            if rc != 0:
                kind = "run_timeout" if rc is None else "run_failed"
                print("%s: %s O%d: %s" % (kind, name, lv, err.strip().splitlines()[-1:]),
                      flush=True)
                errors.append({"what": "%s O%d" % (name, lv), "kind": kind})
                return None
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
    return walls, kern


def judge(a, name, walls, kern, failures):
    """Prints the workload's line and its judged kernels; appends the offenders."""
    w2, w3 = statistics.median(walls[2]), statistics.median(walls[3])
    ratio = w3 / w2 if w2 > 0 else 1.0
    flag = ratio > a.limit and not a.smoke
    print("%-40s %10.3f %10.3f %8.2f%s" % (name[:40], w2, w3, ratio, "  FAIL" if flag else ""),
          flush=True)
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


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--min-repeat-ms", dest="min_ms", type=int, default=20)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--limit", type=float, default=1.05)
    ap.add_argument("--subset", default="e2e,llama,attention",
                    help="workload groups (comma list of e2e, llama, attention)")
    ap.add_argument("--only", default="")
    ap.add_argument("--build-timeout", dest="build_timeout", type=int, default=900,
                    help="seconds per relaxc build (also its C compiler's limit)")
    ap.add_argument("--run-timeout", dest="run_timeout", type=int, default=300,
                    help="seconds per relax-run")
    ap.add_argument("--lock", default="", help="flock this file while timing")
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--relaxc", default=os.path.join(rxbench.ROOT, "build", "bin", "relaxc"))
    ap.add_argument("--relax-run", dest="relax_run",
                    default=os.path.join(rxbench.ROOT, "build", "bin", "relax-run"))
    a = ap.parse_args()
    groups = ["e2e"] if a.smoke else [g for g in a.subset.split(",") if g]
    unknown = [g for g in groups if g not in GROUPS]
    if unknown:
        ap.error("unknown --subset group(s) %s (known: %s)" % (",".join(unknown), ",".join(GROUPS)))
    if a.smoke:
        a.rounds, a.repeat, a.min_ms = 1, 1, 0
    env = dict(os.environ, OMP_NUM_THREADS=str(a.threads), OPENBLAS_NUM_THREADS=str(a.threads),
               RX_CC_TIMEOUT_S=str(a.build_timeout))
    note, warn = rxbench.load_note()
    if warn and not a.smoke:
        print(warn)
    failures, errors, skipped = [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        works = [w for g in groups for w in GROUPS[g](tmp)]
        works = [w for w in works if a.only in w[0]]
        arts = build_all(a, env, works, tmp, errors)
        with locked(a.lock):
            print("%-40s %10s %10s %8s" % ("workload", "O2 ms", "O3 ms", "O3/O2"), flush=True)
            for name, mod, fn, shapes in works:
                art = {lv: arts[(mod, lv)] for lv in (2, 3)}
                if not art[2] or not art[3]:
                    print("%-40s %s" % (name[:40], "not timed: a build failed (above)"))
                    continue
                r = time_workload(a, env, name, art, fn, shapes, errors, skipped)
                if r:
                    judge(a, name, r[0], r[1], failures)
    print(json.dumps({"failures": [{"what": n, "o3_over_o2": round(r, 3)} for n, r in failures],
                      "errors": errors, "skipped": skipped, "threads": a.threads,
                      "subset": groups, **note}))
    return 1 if failures or errors else 0


if __name__ == "__main__":
    sys.exit(main())
