"""Shared pieces of the Python integration tests (test_server.py, test_bench_api.py,
test_agents.py): where the binaries are, a scratch directory, child processes whose
JSON log lines are collected, a relaxd on an ephemeral port, and the case runner.

Every script is run as `python3 tests/integration/test_X.py BIN_DIR [SOURCE_DIR]`
(tests/CMakeLists.txt), so this module is importable from the script's own directory.
bin_dir() and src_dir() read those two arguments. scratch() makes the one temporary
directory of a run; at exit every process started through Proc is killed (if still
running) and the directory removed.

Proc starts a child with stdin and stdout closed and a thread that parses each stderr
line as JSON (anything else becomes {"raw": line}), so a test can wait for a log event
(wait_log), count events, or show the last lines in a failure message (tail). Relaxd is
a Proc running relaxd on 127.0.0.1 (port 0 unless told), found through its
{"event":"listening"} line, with request() for raw HTTP and json() for a parsed reply.
Each script subclasses Relaxd with its own protocol helpers.

case() runs one test function and prints "ok NAME" or "FAIL NAME: why"; summary()
prints "N passed, M failed" and gives the exit status. Python 3 standard library only.
"""
import atexit
import http.client
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

PROCS = []      # every child started through Proc, for the exit-time cleanup
PROC_OBJS = []  # the same as Proc objects (their logs), newest last
RESULTS = []    # True/False per case, in order
_SCRATCH = []   # the run's temporary directory (at most one)


def bin_dir():
    """The build's bin directory: the first argument (default build/bin)."""
    return os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/bin")


def src_dir():
    """The repository: the second argument (default two levels up from here)."""
    return os.path.abspath(sys.argv[2] if len(sys.argv) > 2 else
                           os.path.join(os.path.dirname(__file__), "..", ".."))


def _cleanup():
    for p in PROCS:
        if p.poll() is None:
            p.kill()
            p.wait()
    for d in _SCRATCH:
        shutil.rmtree(d, ignore_errors=True)


atexit.register(_cleanup)


def scratch(prefix):
    """The run's temporary directory, removed at exit."""
    if not _SCRATCH:
        _SCRATCH.append(tempfile.mkdtemp(prefix=prefix))
    return _SCRATCH[0]


def write_config(cfg, name):
    """cfg as JSON in a fresh owner-only file named name-N.json in the scratch directory."""
    path = os.path.join(scratch("rxtest-"), "%s-%d.json" % (name, len(PROCS)))
    with open(path, "w") as f:
        json.dump(cfg, f)
    os.chmod(path, 0o600)
    return path


def relu_matmul_module(d, name):
    """main(x: (n, d) f32, w: (d, d) f32) = relu(x @ w), relax-json v1: the agents' tests'
    module (NumPy: np.maximum(x @ w, 0))."""
    def tensor(n, shape):
        return {"name": n, "type": {"tensor": {"shape": shape, "dtype": "f32"}}}
    bindings = [{"var": "h", "value": {"op": "matmul", "args": ["x", "w"]}},
                {"var": "y", "value": {"op": "nn.relu", "args": ["h"]}}]
    main = {"kind": "relax", "params": [tensor("x", ["n", d]), tensor("w", [d, d])],
            "body": {"blocks": [{"dataflow": True, "bindings": bindings}], "result": "y"}}
    return {"format": "relax-json", "version": 1, "attrs": {"name": name}, "functions": {"main": main}}


class Proc:
    """A child process whose stderr (JSON log lines) is collected by a thread."""

    def __init__(self, argv, env=None):
        e = dict(os.environ)
        e.setdefault("ASAN_OPTIONS", "detect_leaks=1")
        e.update(env or {})
        self.argv = argv
        self.lines = []
        self.cv = threading.Condition()
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, env=e)
        PROCS.append(self.proc)
        PROC_OBJS.append(self)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for raw in self.proc.stderr:
            text = raw.decode("utf-8", "replace").rstrip("\n")
            try:
                obj = json.loads(text)
                if not isinstance(obj, dict):
                    obj = {"raw": text}
            except ValueError:
                obj = {"raw": text}
            with self.cv:
                self.lines.append(obj)
                self.cv.notify_all()

    def wait_log(self, pred, timeout, start=0):
        """The first log line from index start on with pred true, or None after timeout
        (or once the process has exited and all its output is read)."""
        end = time.time() + timeout
        with self.cv:
            while True:
                for o in self.lines[start:]:
                    if pred(o):
                        return o
                left = end - time.time()
                if left <= 0 or (self.proc.poll() is not None and not self.reader.is_alive()):
                    return None
                self.cv.wait(min(left, 0.1))

    def count(self, pred):
        with self.cv:
            return sum(1 for o in self.lines if pred(o))

    def tail(self, n=12, width=300):
        """The last n log lines, each cut to width characters (None: whole lines)."""
        with self.cv:
            return "\n".join(json.dumps(o)[:width] for o in self.lines[-n:])

    def stderr_text(self):
        return self.tail(20, None)

    def stop(self, sig=signal.SIGTERM, timeout=60):
        """Send sig and wait for the exit status; None (after SIGKILL) on timeout."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return None


class Relaxd(Proc):
    """relaxd on 127.0.0.1 with a fresh data directory (unless data is given)."""

    def __init__(self, args=(), config=None, data=None, env=None, port=0):
        tmp = scratch("rxtest-")
        self.data = data or tempfile.mkdtemp(prefix="data-", dir=tmp)
        argv = [os.path.join(bin_dir(), "relaxd"), "--listen", "127.0.0.1:%d" % port,
                "--data", self.data]
        if config is not None:
            argv += ["--config", write_config(config, "config")]
        super().__init__(argv + list(args), env)
        line = self.wait_log(lambda o: o.get("event") == "listening", 30)
        if not line:
            raise RuntimeError("relaxd did not start: %s" % self.stderr_text())
        self.host, port = line["address"].rsplit(":", 1)
        self.port = int(port)
        self.url = "http://127.0.0.1:%d" % self.port

    def request(self, method, path, body=None, headers=None, timeout=120, token=None):
        """(status, lower-cased headers, body bytes); a dict or list body is sent as JSON."""
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        h = dict(headers or {})
        if token:
            h["Authorization"] = "Bearer " + token
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
            h.setdefault("Content-Type", "application/json")
        c.request(method, path, body=body, headers=h)
        r = c.getresponse()
        data = r.read()
        c.close()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, data

    def json(self, method, path, body=None, headers=None, timeout=120, token=None):
        """request() with the reply parsed: (status, headers, JSON or {"raw": text})."""
        st, h, data = Relaxd.request(self, method, path, body, headers, timeout, token)
        try:
            return st, h, json.loads(data) if data else None
        except ValueError:
            return st, h, {"raw": data.decode("utf-8", "replace")}

    def metrics(self, headers=None, token=None):
        st, _, data = Relaxd.request(self, "GET", "/metrics", headers=headers, token=token)
        assert st == 200, "metrics: %d" % st
        return data.decode()

    def metric(self, series, headers=None, token=None):
        m = re.search(r"^%s (\S+)$" % re.escape(series), self.metrics(headers, token), re.M)
        assert m, "no metric %s" % series
        return float(m.group(1))


# LeakSanitizer's own failure at a process's exit ("Tracer caught signal 11": its
# tracer thread crashed while stopping the threads, which happens on a loaded machine).
# It says nothing about the program, so a case that failed only by it runs once more.
LSAN_CRASH = "LeakSanitizer has encountered a fatal error"


def _lsan_crashed(procs):
    """True when one of procs logged LeakSanitizer's own fatal error (a daemon stopped
    with expect(d.stop() == 0, ...) shows it only in its stderr)."""
    for p in procs:
        with p.cv:
            if any(LSAN_CRASH in o.get("raw", "") for o in p.lines):
                return True
    return False


def _exit_tails(procs):
    """The log tail of each of procs that exited non-zero (why a case's daemon failed)."""
    out = []
    for p in procs:
        rc = p.proc.poll()
        if rc not in (None, 0):
            out.append("\n  %s exited %s; its log ends:\n    %s"
                       % (os.path.basename(p.argv[0]), rc, p.tail(8).replace("\n", "\n    ")))
    return "".join(out)


def case(fn):
    """Run one test function; a failure is printed and counted, never raised."""
    name = fn.__name__[5:] if fn.__name__.startswith("test_") else fn.__name__
    t0 = time.time()
    for attempt in (0, 1):
        first = len(PROC_OBJS)
        try:
            fn()
            RESULTS.append(True)
            print("ok   %-30s %5.1fs%s" % (name, time.time() - t0,
                                          " (second run)" if attempt else ""), flush=True)
            break
        except Exception as e:  # one case's failure must not stop the others
            mine = PROC_OBJS[first:]
            if not attempt and (LSAN_CRASH in str(e) or _lsan_crashed(mine)):
                print("note %-30s LeakSanitizer's tracer crashed; running it again" % name,
                      flush=True)
                continue
            RESULTS.append(False)
            print("FAIL %-30s %s: %s%s" % (name, type(e).__name__, e, _exit_tails(mine)),
                  flush=True)
            break
    return fn


def expect(cond, msg):
    if not cond:
        raise AssertionError(msg)


def expect_error(st, body, status, code, needle=None):
    """An error reply: the status, {"error": {"code": code, "message": ...}}, and (if
    given) needle within the message."""
    expect(st == status, "status %s, want %d: %s" % (st, status, body))
    err = (body or {}).get("error", {})
    expect(err.get("code") == code and isinstance(err.get("message"), str),
           "error %s, want code %s" % (err, code))
    if needle:
        expect(needle in err["message"], "message %r lacks %r" % (err["message"], needle))


def wait_for(pred, timeout, what):
    """pred()'s first true value, polled every 20 ms; AssertionError after timeout."""
    end = time.time() + timeout
    while time.time() < end:
        v = pred()
        if v:
            return v
        time.sleep(0.02)
    raise AssertionError("timed out waiting for " + what)


def record(name, ok, detail):
    """Count and print a result checked outside case()."""
    RESULTS.append(bool(ok))
    print("%s %-30s %s" % ("ok  " if ok else "FAIL", name, detail), flush=True)


def summary(t0=None):
    """Print "N passed, M failed" (with the run's time if t0 is given); the exit status."""
    passed = sum(RESULTS)
    failed = len(RESULTS) - passed
    took = " (%.1f s)" % (time.time() - t0) if t0 is not None else ""
    print("%d passed, %d failed%s" % (passed, failed, took))
    return 1 if failed else 0
