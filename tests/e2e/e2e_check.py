"""e2e_check.py — what the small end-to-end scripts share (test_fold_e2e.py,
test_isa_exact_e2e.py, test_blas_lib.py): the build's programs, running one without a
shell, and PASS/FAIL lines with a final count.
"""

import os
import subprocess


def tools(build_dir):
    """(relaxc, relax-run) of a build directory."""
    bindir = os.path.join(build_dir, "bin")
    return os.path.join(bindir, "relaxc"), os.path.join(bindir, "relax-run")


def start(argv, doc):
    """(relaxc, relax-run, Checks) for a script run as `script.py BUILD_DIR`; None (after
    printing doc, the usage) when the arguments are wrong."""
    if len(argv) != 2:
        print(doc)
        return None
    return tools(argv[1]) + (Checks(),)


# LeakSanitizer's own failure: its tracer thread, which stops every thread to scan for
# leaks at exit, crashes now and then on a loaded machine ("Tracer caught signal 11").
# That says nothing about the program; such a run is repeated once (a leak, or any other
# failure, is reported as it is).
LSAN_CRASH = "LeakSanitizer has encountered a fatal error"


def run_status(argv, env=None):
    """(exit status, stdout, stderr) of argv, no shell, at most 300 s; a run that only
    LeakSanitizer's tracer crashed is repeated once."""
    for attempt in (0, 1):
        p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300,
                           env=env)
        err = p.stderr.decode()
        if attempt or p.returncode == 0 or LSAN_CRASH not in err:
            return p.returncode, p.stdout.decode(), err


def run(argv, env=None):
    """stdout of argv; RuntimeError with the end of stderr when it fails."""
    rc, out, err = run_status(argv, env)
    if rc != 0:
        raise RuntimeError("%s failed (%d): %s" % (argv[0], rc, err[-2000:]))
    return out


def run_fn(relax_run, rxa, fn, threads, out_dir, args, checks, what):
    """Runs function fn of artifact rxa (relax-run --fn, --threads, --out-dir out_dir,
    then args); True when it ran, else a FAIL line `what runs: <stderr's end>`."""
    rc, _, err = run_status([relax_run, rxa, "--fn", fn, "--threads", str(threads),
                             "--out-dir", out_dir] + args)
    if rc != 0:
        checks.check(False, what + " runs: " + err[-600:])
    return rc == 0


class Checks:
    """PASS/FAIL lines and their count."""

    def __init__(self):
        self.passed = self.failed = 0

    def check(self, ok, what):
        print(("PASS " if ok else "FAIL ") + what)
        self.passed, self.failed = self.passed + bool(ok), self.failed + (not ok)

    def done(self):
        """Prints `N passed, M failed`; the exit status (1 on a failure)."""
        print("%d passed, %d failed" % (self.passed, self.failed))
        return 1 if self.failed else 0
