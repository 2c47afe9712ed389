#!/usr/bin/env python3
"""The module corpus runner (Python 3 standard library only).

    run_corpus.py RELAXC CORPUS_DIR [--update] [-k SUBSTRING]

CORPUS_DIR holds three kinds of cases:

  valid/NAME.json    a valid relax-json module. `relaxc check NAME.json` must exit 0 and
                     print exactly valid/NAME.txt (the golden text form). Then the output
                     of `relaxc check --json NAME.json` is fed back through
                     `relaxc check -` and must print the same text (round trip), and
                     `relaxc hash` of the module and of its --json form must be equal.
  invalid/NAME.json  an invalid module, with invalid/NAME.err: one expected error per
                     line, `PATH: SUBSTRING`. `relaxc check` must exit 1, the first line
                     of stderr must start with "error:", and for every .err line some
                     stderr line must start with PATH + ": " and contain SUBSTRING after
                     it. A line `error: SUBSTRING` checks the first stderr line instead.
                     A line `!PATH: SUBSTRING` says that NO stderr line may match (for
                     cascading errors that must not be reported). Lines starting with
                     '#' and blank lines are ignored.
  hash/NAME.a.json, hash/NAME.b.json, hash/NAME.expect
                     `relaxc hash` of a and b must be equal when NAME.expect says `same`
                     and differ when it says `different`.

--update writes missing or changed goldens (valid/NAME.txt) instead of failing on them,
printing a diff of each change. -k runs only the cases whose name contains SUBSTRING.

Prints one line per case (`ok valid/NAME` or `FAIL valid/NAME: ...` with details), then
`N passed, M failed`; exits 1 when any case failed, 2 on bad usage.
"""
import difflib
import glob
import os
import subprocess
import sys

TIMEOUT = 60  # seconds per relaxc run (sanitizer builds are slow)


class Result:
    def __init__(self, code, out, err):
        self.code, self.out, self.err = code, out, err

    def describe(self):
        if self.code is None:
            return "timed out after %ds" % TIMEOUT
        if self.code < 0:
            return "killed by signal %d" % -self.code
        return "exit %d" % self.code


def run(relaxc, args, stdin=None):
    try:
        p = subprocess.run([relaxc] + args, input=stdin, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=TIMEOUT)
    except subprocess.TimeoutExpired as e:
        return Result(None, e.stdout or b"", e.stderr or b"")
    return Result(p.returncode, p.stdout, p.stderr)


def text(b):
    return b.decode("utf-8", errors="replace")


def indent(s, limit=40):
    lines = s.rstrip("\n").split("\n")
    if len(lines) > limit:
        lines = lines[:limit] + ["... (%d more lines)" % (len(lines) - limit)]
    return "".join("    | " + l + "\n" for l in lines)


def diff(a, b, an, bn):
    d = difflib.unified_diff(a.splitlines(True), b.splitlines(True), an, bn)
    return "".join(l if l.endswith("\n") else l + "\n" for l in d)


def check_valid(relaxc, path, update):
    """Returns (ok, details)."""
    golden = path[:-5] + ".txt"
    r = run(relaxc, ["check", path])
    if r.code != 0:
        return False, "relaxc check: %s\n%s" % (r.describe(), indent(text(r.err)))
    out = text(r.out)
    problems = []
    notes = []
    if os.path.exists(golden):
        with open(golden, encoding="utf-8") as f:
            want = f.read()
        if out != want:
            if update:
                with open(golden, "w", encoding="utf-8") as f:
                    f.write(out)
                notes.append("golden updated:\n" + indent(diff(want, out, golden, "relaxc check"), 200))
            else:
                problems.append("output differs from golden %s:\n%s" % (
                    os.path.basename(golden), indent(diff(want, out, "golden", "relaxc check"))))
    elif update:
        with open(golden, "w", encoding="utf-8") as f:
            f.write(out)
        notes.append("golden written: %s" % golden)
    else:
        problems.append("no golden %s (run with --update to write it)" % os.path.basename(golden))

    # Round trip: the --json form must read back to the same module.
    rj = run(relaxc, ["check", "--json", path])
    if rj.code != 0:
        problems.append("relaxc check --json: %s\n%s" % (rj.describe(), indent(text(rj.err))))
    else:
        rt = run(relaxc, ["check", "-"], stdin=rj.out)
        if rt.code != 0:
            problems.append("round trip: relaxc check - of the --json output: %s\n%s" % (
                rt.describe(), indent(text(rt.err))))
        elif text(rt.out) != out:
            problems.append("round trip: text differs after check --json | check -:\n%s" %
                            indent(diff(out, text(rt.out), "check", "check --json | check -")))
        h1 = run(relaxc, ["hash", path])
        h2 = run(relaxc, ["hash", "-"], stdin=rj.out)
        if h1.code != 0 or h2.code != 0:
            problems.append("relaxc hash: %s / %s\n%s" % (h1.describe(), h2.describe(),
                                                          indent(text(h1.err + h2.err))))
        elif h1.out.strip() != h2.out.strip() or not h1.out.strip():
            problems.append("hash differs after the --json round trip: %s vs %s" % (
                text(h1.out).strip(), text(h2.out).strip()))
    details = "\n".join(problems + notes)
    return not problems, details


def read_err(path):
    """The .err expectations: list of (negated, path, substring)."""
    exps = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip() or line.startswith("#"):
                continue
            neg = line.startswith("!")
            if neg:
                line = line[1:]
            if ": " in line:
                p, s = line.split(": ", 1)
            elif line.endswith(":"):
                p, s = line[:-1], ""
            else:
                raise ValueError("%s:%d: expected `PATH: SUBSTRING`" % (path, n))
            exps.append((neg, p, s))
    return exps


def check_invalid(relaxc, path):
    errfile = path[:-5] + ".err"
    if not os.path.exists(errfile):
        return False, "no expectations file %s" % os.path.basename(errfile)
    try:
        exps = read_err(errfile)
    except ValueError as e:
        return False, str(e)
    if not exps:
        return False, "%s has no expectations" % os.path.basename(errfile)
    r = run(relaxc, ["check", path])
    err = text(r.err)
    lines = err.split("\n")
    problems = []
    if r.code != 1:
        problems.append("expected exit 1, got %s" % r.describe())
    if not lines[0].startswith("error:"):
        problems.append("first line of stderr does not start with \"error:\"")
    for neg, p, s in exps:
        if p == "error":
            found = lines[0].startswith("error: ") and s in lines[0][len("error: "):]
        else:
            prefix = p + ": "
            found = any(l.startswith(prefix) and s in l[len(prefix):] for l in lines[1:])
        if neg and found:
            problems.append("unexpected error line `%s: ...%s...`" % (p, s))
        elif not neg and not found:
            problems.append("no error line `%s: ...%s...`" % (p, s))
    if problems:
        return False, "\n".join(problems) + "\n  stderr:\n" + indent(err)
    return True, ""


def check_hash(relaxc, a):
    base = a[:-len(".a.json")]
    b, expect = base + ".b.json", base + ".expect"
    if not os.path.exists(b) or not os.path.exists(expect):
        return False, "missing %s or %s" % (os.path.basename(b), os.path.basename(expect))
    with open(expect, encoding="utf-8") as f:
        want = f.read().strip()
    if want not in ("same", "different"):
        return False, "%s must say `same` or `different`, says %r" % (os.path.basename(expect), want)
    ha, hb = run(relaxc, ["hash", a]), run(relaxc, ["hash", b])
    for name, h in (("a", ha), ("b", hb)):
        if h.code != 0:
            return False, "relaxc hash %s: %s\n%s" % (name, h.describe(), indent(text(h.err)))
        if not h.out.strip():
            return False, "relaxc hash %s printed nothing" % name
    ka, kb = text(ha.out).strip(), text(hb.out).strip()
    if (ka == kb) != (want == "same"):
        return False, "expected %s keys, got %s (%s)" % (
            want, "equal" if ka == kb else "different", ka if ka == kb else ka + " vs " + kb)
    return True, ""


def main(argv):
    args = [a for a in argv[1:]]
    update = "--update" in args
    args = [a for a in args if a != "--update"]
    filt = None
    if "-k" in args:
        i = args.index("-k")
        if i + 1 >= len(args):
            print(__doc__, file=sys.stderr)
            return 2
        filt = args[i + 1]
        del args[i:i + 2]
    if len(args) != 2 or args[0].startswith("-"):
        print(__doc__, file=sys.stderr)
        return 2
    relaxc, corpus = args
    if not (os.path.isfile(relaxc) and os.access(relaxc, os.X_OK)):
        print("error: %s is not an executable" % relaxc, file=sys.stderr)
        return 2

    cases = []
    for p in sorted(glob.glob(os.path.join(corpus, "valid", "*.json"))):
        cases.append(("valid/" + os.path.basename(p)[:-5], lambda p=p: check_valid(relaxc, p, update)))
    for p in sorted(glob.glob(os.path.join(corpus, "invalid", "*.json"))):
        cases.append(("invalid/" + os.path.basename(p)[:-5], lambda p=p: check_invalid(relaxc, p)))
    for p in sorted(glob.glob(os.path.join(corpus, "hash", "*.a.json"))):
        cases.append(("hash/" + os.path.basename(p)[:-7], lambda p=p: check_hash(relaxc, p)))
    # Stray files are mistakes too: a golden or .err whose module is gone.
    for p in sorted(glob.glob(os.path.join(corpus, "valid", "*.txt"))):
        if not os.path.exists(p[:-4] + ".json"):
            cases.append(("valid/" + os.path.basename(p)[:-4],
                          lambda p=p: (False, "golden %s has no module" % os.path.basename(p))))
    for p in sorted(glob.glob(os.path.join(corpus, "invalid", "*.err"))):
        if not os.path.exists(p[:-4] + ".json"):
            cases.append(("invalid/" + os.path.basename(p)[:-4],
                          lambda p=p: (False, "%s has no module" % os.path.basename(p))))
    if filt:
        cases = [c for c in cases if filt in c[0]]
    if not cases:
        print("error: no cases found under %s" % corpus, file=sys.stderr)
        return 1

    passed = failed = 0
    for name, fn in cases:
        try:
            ok, details = fn()
        except Exception as e:  # a bug in a case file must not stop the run
            ok, details = False, "runner error: %s: %s" % (type(e).__name__, e)
        if ok:
            passed += 1
            print("ok %s" % name)
        else:
            failed += 1
            print("FAIL %s" % name)
        if details:
            print(details.rstrip("\n"))
        sys.stdout.flush()
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
