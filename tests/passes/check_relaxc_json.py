#!/usr/bin/python3
"""check_relaxc_json.py — `relaxc print IN --after PASS --json` agrees with the goldens.

passes_golden (golden.c) calls the driver in-process; this checks the command-line
path users and case authors take: for every pipeline-mode case of tests/passes
("isolated": false; isolated ones run a pass alone, which relaxc cannot), run
`relaxc print IN --after PASS --json` with the case's options, turn what it prints into
the text form the goldens hold (`passes_golden --print`) and compare it with the case's
.out.txt, line for line. Also: --json after a lowering stage is bad usage (exit 2).
One PASS/FAIL line per check, then `N passed, M failed`; exit 1 on failure.

Usage: /usr/bin/python3 tests/passes/check_relaxc_json.py RELAXC PASSES_GOLDEN [DIR]
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def run(argv):
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300)
    return p.returncode, p.stdout, p.stderr


def case_argv(opts):
    """relaxc options for a case's opts.json."""
    argv = ["--opt-level", str(opts.get("opt_level", 3))]
    for p in opts.get("disable", []):
        argv += ["--disable-pass", p]
    if "lib" in opts:
        argv += ["--lib", opts["lib"]]
    for p in opts.get("lib_disable", []):
        argv += ["--lib-disable", p]
    return argv


def main(argv):
    if not argv:
        print(__doc__)
        return 2
    if len(argv) < 2:
        print(__doc__)
        return 2
    relaxc, golden, root = argv[0], argv[1], argv[2] if len(argv) > 2 else HERE
    counts = [0, 0]

    def report(ok, tag, why=""):
        counts[0 if ok else 1] += 1
        print("%s %s%s" % ("PASS" if ok else "FAIL", tag, "" if ok else ": " + why))

    some_in = None
    with tempfile.TemporaryDirectory(prefix="rx-passes-json-") as tmp:
        for pas in sorted(os.listdir(root)):
            d = os.path.join(root, pas)
            if not os.path.isdir(d):
                continue
            for f in sorted(os.listdir(d)):
                if not f.endswith(".in.json"):
                    continue
                stem = os.path.join(d, f[:-len(".in.json")])
                tag = "%s/%s" % (pas, os.path.basename(stem))
                opts = {}
                if os.path.exists(stem + ".opts.json"):
                    with open(stem + ".opts.json") as fh:
                        opts = json.load(fh)
                if opts.get("isolated", True) or not os.path.exists(stem + ".out.txt"):
                    continue
                some_in = stem + ".in.json"
                rc, out, err = run([relaxc, "print", stem + ".in.json", "--after", pas, "--json"] +
                                   case_argv(opts))
                if rc != 0:
                    report(False, tag, "relaxc print failed (%d): %s" % (rc, err.strip()[:300]))
                    continue
                got = os.path.join(tmp, "got.json")
                with open(got, "w") as fh:
                    fh.write(out)
                rc, text, err = run([golden, "--print", got])
                with open(stem + ".out.txt") as fh:
                    want = fh.read()
                if rc != 0:
                    report(False, tag, "passes_golden --print failed: %s" % err.strip()[:300])
                else:
                    report(text == want, tag, "the printed module differs from %s.out.txt" % tag)
    if some_in:
        rc, out, err = run([relaxc, "print", some_in, "--after", "lower_vm", "--json"])
        report(rc == 2 and "graph-level" in err, "--json after lower_vm is bad usage",
               "exit %d: %s" % (rc, err.strip()[:200]))
    print("%d passed, %d failed" % tuple(counts))
    return 1 if counts[1] or not counts[0] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
