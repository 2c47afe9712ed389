"""run_e2e.py — end-to-end numeric tests: relaxc build + relax-run against the NumPy oracle.

For each case of tests/e2e/cases.json (a module, a function, a list of symbolic-variable
assignments), Step 1 builds the module ONCE PER OPT LEVEL with `relaxc build M --target
cpu --opt-level L -o X.O<L>.rxa` (levels 0, 2 = the default, and 3 unless --opt-levels
says otherwise: O0 runs no optimization at all, O3 every pass); then for each
assignment Step 2 generates seeded inputs with NumPy and saves them as .npy, Step 3
runs, for each level, `relax-run X.O<L>.rxa --fn F --in NAME=FILE ... --shape VAR=N ...
--out-dir D` (argv lists, no shell), Step 4 evaluates the same function with
relax_numpy.py and compares each level's flattened outputs with it: same count, shape
and dtype; floats within rtol/atol, NaN where NaN; ints and bools exactly. Step 5
compares the levels' outputs with each other (the first level against every other):
ints and bools exactly, floats within twice the case's tolerance (each is within one
tolerance of the oracle, so two correct builds are within two of each other).
One line per run (`PASS`/`FAIL` + module, function, assignment, `O<L>`), one per
assignment for the agreement (`O0=O2=O3`), a summary line with the counts per opt level,
then exactly `N passed, M failed` (all lines); exit 1 when anything failed.

Float tolerances: by dtype (TOL below: a few ulps of rounding in elementwise math). A
case may widen them only with a `why`:
  * `reduction`: its outputs are sums of up to `terms` products each at most `scale`
    in magnitude; two correct f32/f16 implementations may accumulate in different
    orders (library GEMMs, float vs double intermediates), whose results differ by up
    to about eps(dtype) * terms * scale in absolute terms however small the result
    (cancellation), so atol becomes at least that;
  * `rtol` / `atol`: plain overrides, for what the reduction rule does not describe.
A tolerance field without `why` fails the case: a loosened check must say why.

Expected build errors: a case with `build_error` (a list of lines) is a module that
must not build for the CPU target; it passes when `relaxc build` fails and every listed
line occurs, exactly, as a line of its diagnostics (one PASS/FAIL line per case).

cases.json:
  {"cases": [{"module": "tests/e2e/modules/e2e_unary.json",   (relative to the repo)
              "function": "main",                              (default "main")
              "shapes": [{"n": 1, "m": 1}, {"n": 37, "m": 5}],
              "inputs": {"ib": {"low": 1, "high": 5},          (ints, inclusive)
                         "v":  {"flow": 0.5, "fhigh": 1.5}},   (floats)
              "reduction": {"terms": 64, "scale": 80},         (optional, with why)
              "rtol": 1e-4, "atol": 1e-5,                      (optional, with why)
              "why": "reason for a tolerance",
              "build_error": ["located diagnostic line", ...], (instead of running)
              "gpu_skip": "reason",                            (not built for GPU targets)
              "vulkan_skip": "reason",                         (not built for that target)
              "O3_skip": "reason",                             (not built at that opt level)
              "seed": 0, "skip": "reason"}]}                   (optional)

relaxc build is being written: when `relaxc --help` does not list `build`, the script
prints `relaxc build unavailable: ...` and exits 77 (ctest's SKIP_RETURN_CODE), or 1
with --require (for CI once it exists). --oracle-only evaluates every case with the
oracle alone (validates cases.json and the oracle; needs no build).

Usage: /usr/bin/python3 tests/e2e/run_e2e.py BUILD_DIR [--cases FILE] [--only SUBSTR]
           [--opt-levels 0,2,3] [--targets cpu,opencl] [--require] [--oracle-only]
           [--keep] [-v]

--targets builds each opt level for each target (default cpu; docs/gpu.md): the
variants are named O<L> for cpu and <target>-O<L> otherwise, every variant is checked
against the oracle and all of them agree with the first (Step 5), so `--targets
cpu,opencl --opt-levels 2` checks that the cpu and opencl builds of a module agree.
Cases with build_error are checked for cpu only.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import relax_numpy as rn  # noqa: E402

# Default tolerances by dtype (floats); ints and bools are compared exactly.
TOL = {"float16": (2e-2, 2e-2), "float32": (1e-4, 1e-5), "float64": (1e-9, 1e-12)}
SKIP = 77
LEVELS = (0, 2, 3)  # no optimization, the default, everything


def variants(opts):
    """The (label, target, opt level) of every build, in order."""
    return [("O%d" % lvl if t == "cpu" else "%s-O%d" % (t, lvl), t, lvl)
            for t in opts["targets"] for lvl in opts["levels"]]


LSAN_CRASH = "LeakSanitizer has encountered a fatal error"


def run(argv, timeout=600):
    """Runs argv (a list, no shell); returns (status, stdout, stderr). A run that only
    LeakSanitizer's tracer crashed at exit (it happens on a loaded machine and says
    nothing about the program) is repeated once."""
    for attempt in (0, 1):
        p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
        err = p.stderr.decode(errors="replace")
        if attempt or p.returncode == 0 or LSAN_CRASH not in err:
            return p.returncode, p.stdout.decode(errors="replace"), err


def build_available(relaxc):
    if not os.path.exists(relaxc):
        return "%s does not exist" % relaxc
    rc, out, err = run([relaxc, "--help"])
    if "build" not in out:
        return "`relaxc --help` lists no build command"
    return None


def first_line(s):
    s = s.strip()
    return s.splitlines()[0] if s else "(no message)"


def to_npy_value(v, what):
    """An oracle argument as what relax-run's --in takes."""
    if isinstance(v, np.ndarray):
        return v
    if isinstance(v, rn.Shape):
        return np.array(list(v), dtype=np.int64)
    if isinstance(v, rn.Prim):
        if isinstance(v.value, float):
            raise rn.OracleError("%s: float prim parameters cannot be passed to relax-run" % what)
        return np.array(int(v.value), dtype=np.int64)
    raise rn.OracleError("%s: %s arguments cannot be passed to relax-run" % (what, type(v).__name__))


def expected_array(v):
    """An oracle output in the form relax-run writes it."""
    if isinstance(v, np.ndarray):
        return v
    if isinstance(v, rn.Shape):
        return np.array(list(v), dtype=np.int64)
    if isinstance(v, rn.Prim):
        return np.array(v.value, dtype=np.int64) if not isinstance(v.value, float) else np.array(v.value)
    return None  # no array form (function values)


TOL_FIELDS = ("rtol", "atol", "reduction")


def float_tol(case, dtype):
    """(rtol, atol) for float outputs of dtype in case (see the file essay)."""
    r, a = TOL.get(dtype.name, (1e-4, 1e-5))
    r = case["rtol"] if case.get("rtol") is not None else r
    a = case["atol"] if case.get("atol") is not None else a
    red = case.get("reduction")
    if red:
        a = max(a, float(np.finfo(dtype).eps) * red["terms"] * red["scale"])
    return r, a


def tol_problem(case):
    """Why the case's tolerance fields are unacceptable, or None."""
    if any(k in case for k in TOL_FIELDS) and not case.get("why"):
        return "cases.json: %s without a \"why\"" % "/".join(k for k in TOL_FIELDS if k in case)
    red = case.get("reduction")
    if red is not None and not (isinstance(red, dict) and set(red) == {"terms", "scale"} and
                                all(isinstance(red[k], (int, float)) and red[k] > 0 for k in red)):
        return "cases.json: reduction must be {\"terms\": N, \"scale\": S}, both positive"
    return None


def compare(got, want, case, what, widen=1):
    """None when equal within the case's tolerance (times widen), else a one-line reason."""
    if got.shape != want.shape:
        return "%s: shape %s, expected %s" % (what, got.shape, want.shape)
    if got.dtype != want.dtype:
        return "%s: dtype %s, expected %s" % (what, got.dtype, want.dtype)
    if got.dtype.kind == "f":
        r, a = float_tol(case, got.dtype)
        r, a = r * widen, a * widen
        g, w = got.astype(np.float64), want.astype(np.float64)
        ok = np.isclose(g, w, rtol=r, atol=a, equal_nan=True)
        if not ok.all():
            i = np.unravel_index(np.argmin(ok), ok.shape) if ok.ndim else ()
            bad = int((~ok).sum())
            return "%s: %d of %d elements differ (rtol %g, atol %g); first at %s: %r vs %r" % (
                what, bad, ok.size, r, a, tuple(int(x) for x in i), g[i].item(), w[i].item())
        return None
    if not np.array_equal(got, want):
        ne = got != want
        i = np.unravel_index(np.argmax(ne), ne.shape) if ne.ndim else ()
        return "%s: %d elements differ; first at %s: %r vs %r" % (
            what, int(ne.sum()), tuple(int(x) for x in i), got[i].item(), want[i].item())
    return None


def case_inputs(m, case, fname, env, seed):
    """Seeded arguments of fname honouring the case's per-input ranges."""
    fn = m.funcs[fname]
    rng = np.random.default_rng(seed)
    ov = case.get("inputs", {})
    args = []
    for p in fn["params"]:
        o = ov.get(p["name"], {})
        what = "%s: %s" % (fname, p["name"])
        v = rn.gen_value(p.get("type"), env, rng, what, (o.get("low", -8), o.get("high", 8)),
                         body=fn["body"], name=p["name"])
        if isinstance(v, np.ndarray) and v.dtype.kind == "f" and ("flow" in o or "fhigh" in o):
            v = rng.uniform(o.get("flow", -1.0), o.get("fhigh", 1.0), size=v.shape).astype(v.dtype)
        args.append(v)
    return args


def label(case, fname, env):
    mod = os.path.splitext(os.path.basename(case["module"]))[0]
    return "%s %s {%s}" % (mod, fname, ", ".join("%s=%s" % kv for kv in sorted(env.items())))


def run_case(case, tools, tmp, opts, counts):
    path = os.path.join(ROOT, case["module"])
    fname = case.get("function", "main")
    shapes = case.get("shapes") or [{}]
    try:
        m = rn.Module.load(path)
        if fname not in m.funcs:
            raise rn.OracleError("no function %s" % fname)
    except (OSError, ValueError, rn.OracleError) as e:
        for env in shapes:
            report(False, label(case, fname, env), "cannot load module: %s" % e, counts)
        return
    if case.get("skip"):
        for env in shapes:
            print("SKIP %s: %s" % (label(case, fname, env), case["skip"]))
        return
    bad = tol_problem(case)
    if bad:
        for env in shapes:
            report(False, label(case, fname, env), bad, counts)
        return
    if case.get("build_error") is not None:
        expect_build_error(case, path, tools, tmp, opts, counts)
        return
    arts = {}  # opt level -> artifact, for the levels that built
    if not opts["oracle_only"]:
        # Step 1: build once per opt level.
        stem = os.path.splitext(os.path.basename(path))[0]
        for vl, tgt, lvl in variants(opts):
            why = case.get("gpu_skip") if tgt != "cpu" else None
            why = why or case.get("%s_skip" % tgt.split(",")[0]) or case.get("O%d_skip" % lvl)
            if why:
                for env in shapes:
                    print("SKIP %s %s: %s" % (label(case, fname, env), vl, why))
                continue
            art = os.path.join(tmp, "%s.%s.rxa" % (stem, vl))
            if not os.path.exists(art):
                t0 = time.time()
                rc, out, err = run([tools["relaxc"], "build", path, "--target", tgt,
                                    "--opt-level", str(lvl), "-o", art])
                if rc != 0:
                    for env in shapes:
                        report(False, "%s %s" % (label(case, fname, env), vl),
                               "relaxc build failed (%d): %s" % (rc, first_line(err)), counts, vl)
                    if os.path.exists(art):
                        os.unlink(art)
                    continue
                if opts["verbose"]:
                    print("built %s for %s in %.1fs" % (case["module"], vl, time.time() - t0))
            arts[vl] = art
        if not arts:
            return
    from check_oracle import signature_vars  # the lone variables relax-run knows
    sig = signature_vars(m.funcs[fname])
    for k, env in enumerate(shapes):
        tag = label(case, fname, env)
        try:
            # Step 2: inputs.
            seed = case.get("seed", 0) * 1000 + k
            args = case_inputs(m, case, fname, dict(env), seed)
            # Step 4 first: the oracle (a failing oracle is reported as such).
            try:
                want = m.run(fname, [a.copy() if isinstance(a, np.ndarray) else a for a in args])
            except rn.OracleError as e:
                report(False, tag, "oracle: %s" % e, counts)
                continue
            if opts["oracle_only"]:
                report(True, tag, "(oracle only, %d outputs)" % len(want), counts)
                continue
            # Step 3: relax-run, once per opt level, on the same input files.
            d = tempfile.mkdtemp(prefix="case-", dir=tmp)
            inputs = []
            for p, a in zip(m.funcs[fname]["params"], args):
                f = os.path.join(d, "in_%s.npy" % p["name"])
                np.save(f, to_npy_value(a, "%s: %s" % (fname, p["name"])), allow_pickle=False)
                inputs += ["--in", "%s=%s" % (p["name"], f)]
            for v in sig:
                if v in env:
                    inputs += ["--shape", "%s=%d" % (v, env[v])]
            got = {}  # variant -> outputs (index -> array), for the variants that passed
            for vl, art in arts.items():
                outs = run_level(tools, art, fname, inputs, os.path.join(d, "out-" + vl),
                                 want, case, "%s %s" % (tag, vl), counts, vl)
                if outs is not None:
                    got[vl] = outs
            # Step 5: the levels agree with each other.
            if len(got) > 1:
                agree(got, case, tag, counts)
            if not opts["keep"]:
                shutil.rmtree(d, ignore_errors=True)
        except Exception as e:  # noqa: BLE001 — one broken case must not stop the rest
            report(False, tag, "%s: %s" % (type(e).__name__, e), counts)


def run_level(tools, art, fname, inputs, out_dir, want, case, tag, counts, lvl):
    """Runs one artifact on the inputs and compares with the oracle's want (Steps 3-4);
    reports one line; returns the outputs (index -> array) when they matched, else None."""
    rc, out, err = run([tools["relax_run"], art, "--fn", fname, "--out-dir", out_dir] + inputs)
    if rc != 0:
        report(False, tag, "relax-run failed (%d): %s" % (rc, first_line(err)), counts, lvl)
        return None
    problems, outs = [], {}
    for i, w in enumerate(want):
        wa = expected_array(w)
        f = os.path.join(out_dir, "out%d.npy" % i)
        if wa is None:
            continue
        if not os.path.exists(f):
            problems.append("out%d.npy not written" % i)
            continue
        outs[i] = np.load(f, allow_pickle=False)
        why = compare(outs[i], wa, case, "out%d" % i)
        if why:
            problems.append(why)
    if os.path.exists(os.path.join(out_dir, "out%d.npy" % len(want))):
        problems.append("relax-run wrote more outputs than the oracle's %d" % len(want))
    report(not problems, tag, "; ".join(problems[:3]) + (
        " (+%d more)" % (len(problems) - 3) if len(problems) > 3 else ""), counts, lvl)
    return None if problems else outs


def agree(got, case, tag, counts):
    """Step 5: the first level's outputs against every other level's (twice the tolerance)."""
    levels = list(got)  # in variant order: the first is the reference
    base, problems = got[levels[0]], []
    for lvl in levels[1:]:
        for i in sorted(base):
            why = compare(got[lvl][i], base[i], case, "%s vs %s out%d" % (lvl, levels[0], i),
                          widen=2)
            if why:
                problems.append(why)
    report(not problems, "%s %s" % (tag, "=".join(levels)),
           "; ".join(problems[:3]), counts, "agree")


def expect_build_error(case, path, tools, tmp, opts, counts):
    """A case whose module must not build: relaxc fails with every listed line."""
    mod = os.path.splitext(os.path.basename(case["module"]))[0]
    tag = "%s (build error)" % mod
    want = case["build_error"]
    if not isinstance(want, list) or not want or not all(isinstance(x, str) for x in want):
        report(False, tag, "cases.json: build_error must be a non-empty list of lines", counts)
        return
    if opts["oracle_only"]:
        report(True, tag, "(not built: oracle only)", counts)
        return
    if "cpu" not in opts["targets"]:
        print("SKIP %s: build errors are checked for the cpu target" % tag)
        return
    for lvl in opts["levels"]:
        art = os.path.join(tmp, "%s.O%d.build-error.rxa" % (mod, lvl))
        rc, out, err = run([tools["relaxc"], "build", path, "--target", "cpu",
                            "--opt-level", str(lvl), "-o", art])
        lines = [ln.strip() for ln in err.splitlines()]
        ltag = "%s O%d" % (tag, lvl)
        if rc == 0:
            report(False, ltag, "relaxc build succeeded; expected: %s" % want[0], counts, "O%d" % lvl)
        elif os.path.exists(art):
            report(False, ltag, "relaxc build failed but wrote %s" % art, counts, "O%d" % lvl)
        else:
            missing = [x for x in want if x not in lines]
            report(not missing, ltag, "missing diagnostic: %s (got: %s)" % (
                missing[0], " | ".join(lines[:4])) if missing else "", counts, "O%d" % lvl)


def report(ok, tag, why, counts, kind=None):
    """One PASS/FAIL line; counts: [passed, failed, {kind: [passed, failed]}], kind an opt
    level, "agree" (levels against each other) or None (oracle-only and load errors)."""
    counts[0 if ok else 1] += 1
    counts[2].setdefault(kind, [0, 0])[0 if ok else 1] += 1
    print("%s %s%s" % ("PASS" if ok else "FAIL", tag, (": " + why) if why and not ok else (
        " " + why if why else "")))
    sys.stdout.flush()


def main(argv):
    opts = {"oracle_only": False, "keep": False, "verbose": False, "require": False,
            "levels": list(LEVELS), "targets": ["cpu"]}
    cases_path, only, build_dir = os.path.join(HERE, "cases.json"), None, None
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--cases" and i + 1 < len(argv):
            cases_path = argv[i + 1]
            i += 1
        elif a == "--opt-levels" and i + 1 < len(argv):
            try:
                opts["levels"] = sorted({int(x) for x in argv[i + 1].split(",")})
            except ValueError:
                opts["levels"] = []
            if not opts["levels"] or any(v not in (0, 1, 2, 3) for v in opts["levels"]):
                print("error: --opt-levels takes levels 0..3, comma-separated", file=sys.stderr)
                return 2
            i += 1
        elif a == "--targets" and i + 1 < len(argv):
            opts["targets"] = [t for t in argv[i + 1].split(",") if t]
            if not opts["targets"]:
                print("error: --targets takes target names, comma-separated", file=sys.stderr)
                return 2
            i += 1
        elif a == "--only" and i + 1 < len(argv):
            only = argv[i + 1]
            i += 1
        elif a in ("--oracle-only", "--keep", "--require"):
            opts[a[2:].replace("-", "_")] = True
        elif a == "-v":
            opts["verbose"] = True
        elif a in ("-h", "--help"):
            print(__doc__)
            return 0
        elif not a.startswith("-") and build_dir is None:
            build_dir = a
        else:
            print("error: bad argument %s (see --help)" % a, file=sys.stderr)
            return 2
        i += 1
    if build_dir is None and not opts["oracle_only"]:
        print("error: BUILD_DIR is required (see --help)", file=sys.stderr)
        return 2
    with open(cases_path) as f:
        cases = json.load(f)["cases"]
    if only:
        cases = [c for c in cases if only in c["module"] or only == c.get("function")]
    tools = {}
    if not opts["oracle_only"]:
        tools = {"relaxc": os.path.join(build_dir, "bin", "relaxc"),
                 "relax_run": os.path.join(build_dir, "bin", "relax-run")}
        why = build_available(tools["relaxc"])
        if why is None and not os.path.exists(tools["relax_run"]):
            why = "%s does not exist" % tools["relax_run"]
        if why is not None:
            print("relaxc build unavailable: %s" % why)
            print("0 passed, 0 failed")
            return 1 if opts["require"] else SKIP
    counts = [0, 0, {}]
    tmp = tempfile.mkdtemp(prefix="rx-e2e-")
    try:
        for c in cases:
            run_case(c, tools, tmp, opts, counts)
    finally:
        if opts["keep"]:
            print("kept %s" % tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    per = counts[2]
    if not opts["oracle_only"]:
        vls = [v[0] for v in variants(opts)]
        print("per variant: %s; %s agree: %d passed, %d failed" % (
            ", ".join("%s %d passed, %d failed" % (vl, per.get(vl, [0, 0])[0], per.get(vl, [0, 0])[1])
                      for vl in vls),
            "=".join(vls), per.get("agree", [0, 0])[0],
            per.get("agree", [0, 0])[1]))
    print("%d passed, %d failed" % (counts[0], counts[1]))
    return 1 if counts[1] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
