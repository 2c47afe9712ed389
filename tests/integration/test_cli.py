#!/usr/bin/python3
"""Integration tests of the `relax` CLI and the Python client against the real relaxd.

    /usr/bin/python3 tests/integration/test_cli.py [BUILD_DIR]     (default: <repo>/build)

Starts BUILD_DIR/bin/relaxd --listen 127.0.0.1:0 --data <tmp>, reads the port from its
{"event":"listening","address":"127.0.0.1:PORT"} stderr line, and runs the CLI
(BUILD_DIR/bin/relax), relax-run, the example script and clients/python/relaxd_client.py
against it. A few cases need a server that misbehaves on purpose (503 + Retry-After, a
corrupted artifact, a stall, recording the Authorization header); those use a small
in-process fake server, so they test the client alone.

When relaxd is not built (or does not start) every real-server case FAILS with that
reason — the suite never passes without the server. One line per case ("PASS name" /
"FAIL name: why"), then exactly "N passed, M failed"; exit status 0 only when all passed.
"""

import hashlib
import http.server
import json
import os
import queue
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
BUILD = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else os.path.join(REPO, "build")
BIN = os.path.join(BUILD, "bin")
RELAX = os.path.join(BIN, "relax")
RELAXD = os.path.join(BIN, "relaxd")
RELAX_RUN = os.path.join(BIN, "relax-run")
VALID = os.path.join(REPO, "tests", "modules", "valid", "fig08_sym_params.json")
INVALID = os.path.join(REPO, "tests", "modules", "invalid", "add_bad_broadcast.json")
EXAMPLE = os.path.join(REPO, "clients", "examples", "compile_and_run.sh")
sys.path.insert(0, os.path.join(REPO, "clients", "python"))

TMP = tempfile.mkdtemp(prefix="relax-cli-test-")
RESULTS = []


class Skip(Exception):
    pass


def env(**kw):
    e = {k: v for k, v in os.environ.items() if k not in ("RELAX_SERVER", "RELAX_TOKEN")}
    e.update({k: v for k, v in kw.items() if v is not None})
    return e


def relax(*args, server=None, timeout=300, **envkw):
    """Runs the CLI; returns CompletedProcess (text). server= sets RELAX_SERVER."""
    return subprocess.run([RELAX, *args], capture_output=True, text=True, timeout=timeout,
                          env=env(RELAX_SERVER=server, **envkw))


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def check(cond, msg):
    if not cond:
        raise AssertionError(msg)


def show(p):
    return f"exit {p.returncode}; stdout={p.stdout.strip()[:400]!r}; stderr={p.stderr.strip()[:600]!r}"


def case(name):
    def deco(fn):
        RESULTS.append((name, fn))
        return fn
    return deco


# ---------------------------------------------------------------- the real relaxd

class Relaxd:
    """relaxd on an ephemeral loopback port with a fresh data directory."""

    def __init__(self):
        self.proc = None
        self.url = None
        self.error = None
        self.log = []

    def start(self):
        if not os.access(RELAXD, os.X_OK):
            self.error = f"relaxd is not built ({RELAXD} missing)"
            return
        data = os.path.join(TMP, "relaxd-data")
        os.makedirs(data, exist_ok=True)
        try:
            self.proc = subprocess.Popen([RELAXD, "--listen", "127.0.0.1:0", "--data", data],
                                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                         stderr=subprocess.PIPE, text=True, env=env())
        except OSError as e:
            self.error = f"cannot start relaxd: {e}"
            return
        lines = queue.Queue()

        def drain():
            for line in self.proc.stderr:
                self.log.append(line)
                lines.put(line)
            lines.put(None)

        threading.Thread(target=drain, daemon=True).start()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                break
            if line is None:
                break
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            if isinstance(ev, dict) and ev.get("event") == "listening":
                self.url = "http://" + ev["address"]
                return
        self.stop()
        self.error = ("relaxd did not log a listening event within 30 s; its stderr: " +
                      "".join(self.log)[-800:].strip())

    def need(self):
        if not self.url:
            raise AssertionError(self.error or "relaxd not running")
        return self.url

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


RELAXD_SERVER = Relaxd()
STATE = {}  # facts passed between cases: the compiled id


# ---------------------------------------------------------------- the fake server

FAKE_BYTES = b"RXA fake artifact bytes\n" * 10
FAKE_ID = hashlib.sha256(FAKE_BYTES).hexdigest()


class Fake(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self):
        super().__init__(("127.0.0.1", 0), FakeHandler)
        self.reset()
        threading.Thread(target=self.serve_forever, daemon=True).start()
        self.url = "http://127.0.0.1:%d" % self.server_address[1]

    def handle_error(self, request, client_address):
        pass  # clients that give up (the timeout case) leave broken pipes behind

    def reset(self, **mode):
        self.mode = mode      # busy=N (503s before success), retry_after=S, corrupt, stall=S
        self.seen = []        # (method, path, Authorization header or None)


class FakeHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def reply(self, status, body, ctype="application/json", headers=()):
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
        elif isinstance(body, str):
            body = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def handle_any(self):
        srv, mode = self.server, self.server.mode
        n = int(self.headers.get("Content-Length") or 0)
        if n:
            self.rfile.read(n)
        srv.seen.append((self.command, self.path, self.headers.get("Authorization")))
        if mode.get("stall"):
            time.sleep(mode["stall"])
        if self.path == "/healthz":
            return self.reply(200, {"status": "ok"})
        if self.path == "/metrics":
            return self.reply(200, "# TYPE relaxd_cache_entries gauge\nrelaxd_cache_entries 2\n"
                              "relaxd_cache_bytes 4096\nrelaxd_cache_hits_total 5\n"
                              "relaxd_cache_misses_total 3\nrelaxd_queue_depth 1\n", "text/plain")
        if self.path == "/v1/compile" and self.command == "POST":
            posts = sum(1 for s in srv.seen if s[1] == "/v1/compile")
            if posts <= mode.get("busy", 0):
                return self.reply(503, {"error": {"code": "queue_full", "message": "compile queue is full"}},
                                  headers=[("Retry-After", str(mode.get("retry_after", 1)))])
            return self.reply(200, {"artifact": FAKE_ID, "cached": False, "key": "0" * 64,
                                    "size": len(FAKE_BYTES), "target": "cpu", "compile_ms": 7})
        if self.path.startswith("/v1/artifacts?prefix=") and "ids" in mode:
            p = self.path.split("=", 1)[1]
            return self.reply(200, {"artifacts": [i for i in mode["ids"] if i.startswith(p)],
                                    "more": False})
        if self.path == "/v1/artifacts/" + FAKE_ID:
            data = FAKE_BYTES[:-1] + b"?" if mode.get("corrupt") else FAKE_BYTES
            return self.reply(200, data, "application/octet-stream", [("ETag", '"%s"' % FAKE_ID)])
        return self.reply(404, {"error": {"code": "not_found", "message": "no such thing"}})

    do_GET = do_POST = do_HEAD = handle_any


FAKE = None


def fake(**mode):
    FAKE.reset(**mode)
    return FAKE.url


# ---------------------------------------------------------------- cases: no server needed

@case("help_and_version_exit_0")
def _():
    p = relax("--help")
    check(p.returncode == 0 and "usage: relax" in p.stdout, show(p))
    p = relax("--version")
    check(p.returncode == 0 and re.match(r"^relax \d+\.\d+", p.stdout), show(p))
    p = relax("compile", "--help")
    check(p.returncode == 0 and "usage: relax" in p.stdout, show(p))


@case("bad_usage_exit_2")
def _():
    for args in ([], ["frobnicate"], ["compile"], ["compile", "a.json", "b.json"],
                 ["compile", VALID, "--opt-level", "9"], ["compile", VALID, "--bogus"],
                 ["fetch", "0" * 64], ["fetch", "not-an-id", "-o", "x.rxa"], ["meta"],
                 ["status", "--async"], ["--timeout", "soon", "status"], ["compile", VALID, "-o"]):
        p = relax(*args)
        check(p.returncode == 2, f"relax {' '.join(args)}: " + show(p))
        check(args == [] or p.stderr.startswith("error: "), f"relax {' '.join(args)}: " + show(p))


@case("server_down_cannot_reach")
def _():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    url = f"http://127.0.0.1:{port}"
    for args in (["status"], ["compile", VALID], ["meta", "0" * 64]):
        p = relax(*args, "--server", url)
        check(p.returncode == 1, show(p))
        check(p.stderr.startswith(f"error: cannot reach relaxd at {url}: "), show(p))
        check(len(p.stderr.strip().splitlines()) == 1, "one line expected: " + show(p))


@case("module_file_errors_are_local")
def _():
    bad = os.path.join(TMP, "broken.json")
    with open(bad, "w") as f:
        f.write('{"format": "relax-json",\n  "version": }\n')
    p = relax("compile", bad, "--server", "http://127.0.0.1:9")  # never contacted
    check(p.returncode == 1 and p.stderr.startswith(f"error: {bad}:2:"), show(p))
    p = relax("compile", os.path.join(TMP, "missing.json"))
    check(p.returncode == 1 and "No such file" in p.stderr, show(p))


@case("token_from_env_and_flag (fake server)")
def _():
    url = fake()
    p = relax("status", server=url, RELAX_TOKEN="env-secret")
    check(p.returncode == 0, show(p))
    check(FAKE.seen and all(s[2] == "Bearer env-secret" for s in FAKE.seen), f"seen {FAKE.seen}")
    url = fake()
    p = relax("status", "--token", "flag-secret", server=url, RELAX_TOKEN="env-secret")
    check(p.returncode == 0 and all(s[2] == "Bearer flag-secret" for s in FAKE.seen), f"seen {FAKE.seen}")
    url = fake()
    p = relax("status", server=url)
    check(p.returncode == 0 and all(s[2] is None for s in FAKE.seen), f"seen {FAKE.seen}")
    check("cache: 2 entries, 4.0 KiB, 5 hits, 3 misses" in p.stdout and "queue: 1 jobs waiting" in p.stdout,
          show(p))


@case("503_retry_after_honored_and_bounded (fake server)")
def _():
    url = fake(busy=2, retry_after=1)
    t0 = time.monotonic()
    p = relax("compile", VALID, server=url)
    dt = time.monotonic() - t0
    check(p.returncode == 0 and p.stdout.startswith(FAKE_ID + "  compiled"), show(p))
    posts = [s for s in FAKE.seen if s[1] == "/v1/compile"]
    check(len(posts) == 3, f"{len(posts)} POSTs, expected 3")
    check(dt >= 1.9, f"Retry-After not honored: took {dt:.2f} s")
    url = fake(busy=1000, retry_after=0)
    p = relax("compile", VALID, server=url)
    check(p.returncode == 1 and p.stderr.startswith("error: compile queue is full (HTTP 503 queue_full)"), show(p))
    posts = [s for s in FAKE.seen if s[1] == "/v1/compile"]
    check(2 <= len(posts) <= 11, f"{len(posts)} POSTs: retries not bounded")


@case("corrupt_artifact_rejected_atomically (fake server)")
def _():
    d = os.path.join(TMP, "corrupt")
    os.makedirs(d)
    out = os.path.join(d, "out.rxa")
    with open(out, "w") as f:
        f.write("old")
    url = fake(corrupt=True)
    p = relax("compile", VALID, "-o", out, server=url)
    check(p.returncode == 1 and "failed verification" in p.stderr, show(p))
    check(open(out).read() == "old", "the old OUT was replaced")
    check(os.listdir(d) == ["out.rxa"], f"leftovers: {os.listdir(d)}")
    url = fake()
    p = relax("fetch", FAKE_ID, "-o", out, server=url)
    check(p.returncode == 0 and open(out, "rb").read() == FAKE_BYTES, show(p))
    check(os.listdir(d) == ["out.rxa"], f"leftovers: {os.listdir(d)}")


@case("timeout_bounds_the_wait (fake server)")
def _():
    url = fake(stall=4)
    t0 = time.monotonic()
    p = relax("status", "--timeout", "1", server=url)
    dt = time.monotonic() - t0
    check(p.returncode == 1 and "did not answer within 1 s" in p.stderr, show(p))
    check(dt < 3.5, f"took {dt:.2f} s")


# ---------------------------------------------------------------- cases: the real relaxd

@case("compile_then_cached")
def _():
    url = RELAXD_SERVER.need()
    p = relax("compile", VALID, server=url)
    check(p.returncode == 0, show(p))
    m = re.match(r"^([0-9a-f]{64})  compiled in \d+ ms \(\d+ bytes\)\n$", p.stdout)
    check(m, "first compile: " + show(p))
    STATE["id"] = m.group(1)
    p = relax("compile", VALID, server=url)
    check(p.returncode == 0 and p.stdout == f"{STATE['id']}  cached\n", "second compile: " + show(p))
    p = relax("compile", VALID, "--json", server=url)
    r = json.loads(p.stdout)
    check(r.get("artifact") == STATE["id"] and r.get("cached") is True, show(p))


@case("compile_-o_writes_verified_artifact_relax-run_runs")
def _():
    url = RELAXD_SERVER.need()
    out = os.path.join(TMP, "fig08.rxa")
    p = relax("compile", VALID, "-o", out, server=url)
    check(p.returncode == 0 and os.path.exists(out), show(p))
    aid = p.stdout.split()[0]
    check(sha256_file(out) == aid, "SHA-256 of the written file differs from the id")
    check(f"wrote {out}" in p.stderr, show(p))
    r = subprocess.run([RELAX_RUN, out, "--shape", "n=5"], capture_output=True, text=True, timeout=120)
    check(r.returncode == 0 and "out0" in r.stdout, "relax-run: " + show(r))


@case("async_compile_polls_job")
def _():
    url = RELAXD_SERVER.need()
    p = relax("compile", VALID, "--async", "--opt-level", "1", server=url)
    check(p.returncode == 0 and re.match(r"^[0-9a-f]{64}  (cached|compiled)", p.stdout), show(p))


@case("fetch_and_meta")
def _():
    url = RELAXD_SERVER.need()
    aid = STATE.get("id")
    check(aid, "no artifact id (compile_then_cached failed)")
    out = os.path.join(TMP, "fetched.rxa")
    p = relax("fetch", aid, "-o", out, server=url)
    check(p.returncode == 0 and sha256_file(out) == aid, show(p))
    p = relax("meta", aid, server=url)
    check(p.returncode == 0, show(p))
    check(isinstance(json.loads(p.stdout), dict), "meta is not a JSON object")
    check("\n  " in p.stdout, "meta is not pretty-printed")
    p = relax("fetch", "0" * 64, "-o", os.path.join(TMP, "none.rxa"), server=url)
    check(p.returncode == 1 and re.match(r"^error: .*\(HTTP 404", p.stderr), show(p))
    check(not os.path.exists(os.path.join(TMP, "none.rxa")), "a 404 wrote a file")
    p = relax("meta", "0" * 64, server=url)
    check(p.returncode == 1 and "(HTTP 404" in p.stderr, show(p))


@case("short_id_prefixes")
def _():
    url = RELAXD_SERVER.need()
    aid = STATE.get("id")
    check(aid, "no artifact id (compile_then_cached failed)")
    out = os.path.join(TMP, "short.rxa")
    p = relax("fetch", aid[:8], "-o", out, server=url)
    check(p.returncode == 0 and sha256_file(out) == aid, show(p))
    p = relax("meta", aid[:5], server=url)
    check(p.returncode == 0 and json.loads(p.stdout)["artifact"] == aid, show(p))
    other = "0123" if not aid.startswith("0123") else "4567"
    p = relax("meta", other, server=url)
    check(p.returncode == 1 and "no artifact on the server has an id starting with " + other
          in p.stderr, show(p))
    p = relax("meta", "abc", server=url)
    check(p.returncode == 2 and "prefix of at least 4" in p.stderr, show(p))
    # two candidates (the fake server lists them): an error naming both
    a, b = "abcd" + "1" * 60, "abcd" + "2" * 60
    p = relax("fetch", "abcd", "-o", out, server=fake(ids=[a, b]))
    check(p.returncode == 1 and "ambiguous" in p.stderr and a in p.stderr and b in p.stderr,
          show(p))


@case("bench_uploads_a_missing_rxa")
def _():
    url = RELAXD_SERVER.need()
    # an artifact built offline with options the server never compiled with: it lacks it
    rxa = os.path.join(TMP, "offline.rxa")
    r = subprocess.run([os.path.join(BIN, "relaxc"), "build", VALID, "-o", rxa, "--opt-level",
                        "1", "--lib", "none"], capture_output=True, text=True, timeout=120)
    check(r.returncode == 0, r.stderr)
    aid = sha256_file(rxa)
    p = relax("meta", aid, server=url)
    check(p.returncode == 1 and "(HTTP 404" in p.stderr, "the server already had it: " + show(p))
    p = relax("bench", rxa, "--no-wait", "--run-timeout", "5", server=url)
    check(p.returncode == 0 and ("uploaded %s: artifact %s" % (rxa, aid)) in p.stderr,
          show(p))
    check(re.fullmatch(r"[0-9a-f]{32}", p.stdout.strip()), "job id: " + show(p))
    out = os.path.join(TMP, "roundtrip.rxa")
    p = relax("fetch", aid, "-o", out, server=url)
    check(p.returncode == 0 and open(out, "rb").read() == open(rxa, "rb").read(), show(p))
    # the second time it is held: no upload
    p = relax("bench", rxa, "--no-wait", server=url)
    check(p.returncode == 0 and "uploaded" not in p.stderr, show(p))
    p = relax("cancel", p.stdout.strip(), server=url)
    # --timeout is the command's limit, never the job's: bench takes --run-timeout
    p = relax("--help")
    check("--run-timeout S" in p.stdout and "job's limits" in p.stdout and
          "--timeout and" not in p.stdout, "help: " + p.stdout)


@case("invalid_module_located_errors")
def _():
    url = RELAXD_SERVER.need()
    p = relax("compile", INVALID, server=url)
    check(p.returncode == 1, show(p))
    lines = p.stderr.rstrip("\n").split("\n")
    check(lines[0].startswith("error: ") and lines[0].endswith("(HTTP 400 invalid_module)"), show(p))
    located = [l for l in lines[1:] if re.match(r"^  \S[^:]*: .+", l)]
    check(located, "no '  path: message' lines: " + show(p))
    want = open(os.path.join(REPO, "tests", "modules", "invalid", "add_bad_broadcast.err")).read().split(":")[0]
    check(any(l.startswith("  " + want + ":") for l in located),
          f"no located line for {want}: " + show(p))
    p = relax("compile", INVALID, "--async", server=url)
    check(p.returncode == 1 and any(l.startswith("  " + want + ":") for l in p.stderr.splitlines()),
          "async: " + show(p))


@case("status_health_and_metrics")
def _():
    url = RELAXD_SERVER.need()
    p = relax("status", server=url)
    check(p.returncode == 0 and p.stdout.startswith(f"relaxd at {url}: ok\n"), show(p))
    check(re.search(r"^cache: .* entries, .*, .* hits, .* misses$", p.stdout, re.M), show(p))
    if "?" in p.stdout:
        import urllib.request
        names = sorted({l.split("{")[0].split()[0] for l in
                        urllib.request.urlopen(url + "/metrics", timeout=10).read().decode().splitlines()
                        if l and not l.startswith("#")})
        raise AssertionError("status shows '?': /metrics has none of the expected names "
                             f"(cache_entries, cache_bytes, cache_hits, cache_misses, queue_depth); "
                             f"it has {names}")


@case("example_script_compile_and_run")
def _():
    url = RELAXD_SERVER.need()
    e = env(RELAX_SERVER=url, PATH=BIN + os.pathsep + os.environ.get("PATH", ""))
    r = subprocess.run(["/bin/sh", EXAMPLE, VALID, os.path.join(TMP, "example-out"), "--shape", "n=5"],
                       capture_output=True, text=True, timeout=300, env=e)
    check(r.returncode == 0, show(r))
    check(os.path.exists(os.path.join(TMP, "example-out", "out0.npy")), "no out0.npy: " + show(r))


@case("python_client")
def _():
    url = RELAXD_SERVER.need()
    import relaxd_client as rc
    c = rc.Client(url)
    r = c.compile(VALID)
    check(r["artifact"] == STATE.get("id") and r["cached"] is True, f"result {r}")
    out = os.path.join(TMP, "py.rxa")
    check(c.fetch(r["artifact"], out) == os.path.getsize(out) and sha256_file(out) == r["artifact"], "fetch")
    check(isinstance(c.meta(r["artifact"]), dict), "meta")
    check(c.status()["status"] == "ok", "status")
    r2 = c.compile(VALID, async_=True, opt_level=1)
    check(re.match(r"^[0-9a-f]{64}$", r2["artifact"]), f"async result {r2}")
    try:
        c.compile(INVALID)
        raise AssertionError("invalid module accepted")
    except rc.RelaxdError as e:
        check(e.status == 400 and e.code == "invalid_module" and e.errors, f"{e!r} {e.errors}")
        check(str(e).endswith("(HTTP 400 invalid_module)"), str(e))
    try:
        rc.Client(FAKE.url.rsplit(":", 1)[0] + ":9").status()
        raise AssertionError("no error from a closed port")
    except rc.RelaxdError as e:
        check(str(e).startswith("cannot reach relaxd at "), str(e))
    FAKE.reset(busy=1, retry_after=0)
    os.environ["RELAX_TOKEN"] = "py-secret"
    try:
        check(rc.Client(FAKE.url).compile(VALID)["artifact"] == FAKE_ID, "fake compile")
    finally:
        del os.environ["RELAX_TOKEN"]
    check(all(s[2] == "Bearer py-secret" for s in FAKE.seen), f"seen {FAKE.seen}")


def main():
    global FAKE
    if not os.access(RELAX, os.X_OK):
        print(f"FAIL setup: relax is not built ({RELAX} missing)")
        print("0 passed, 1 failed")
        return 1
    FAKE = Fake()
    RELAXD_SERVER.start()
    if RELAXD_SERVER.error:
        print(f"note: {RELAXD_SERVER.error}")
    passed = failed = 0
    try:
        for name, fn in RESULTS:
            try:
                fn()
                print(f"PASS {name}")
                passed += 1
            except Exception as e:  # one line per case, whatever went wrong
                msg = str(e).replace("\n", "\\n")
                print(f"FAIL {name}: {type(e).__name__ + ': ' if not isinstance(e, AssertionError) else ''}{msg}")
                failed += 1
            sys.stdout.flush()
    finally:
        RELAXD_SERVER.stop()
        FAKE.shutdown()
        if RELAXD_SERVER.proc and RELAXD_SERVER.proc.returncode not in (0, None, -15):
            print(f"note: relaxd exited with status {RELAXD_SERVER.proc.returncode}; "
                  "stderr tail: " + "".join(RELAXD_SERVER.log)[-600:].replace("\n", "\\n"))
        shutil.rmtree(TMP, ignore_errors=True)
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
