#!/usr/bin/python3
"""Integration tests of remote benchmarking: the real relaxd and real relax-agent processes.

usage: test_agents.py BIN_DIR [SOURCE_DIR]

BIN_DIR holds relaxd, relax-agent, relax, relax-run (the build's bin/). relaxd runs on
127.0.0.1 with a fresh data directory and short agent periods (heartbeat 200 ms, lease
1.5 s, long poll 3 s), found through its {"event":"listening"} log line; two agents
("lab-a", "lab-b") register with it, each with its own artifact cache. Artifacts are
compiled through the server (POST /v1/compile) from a small relax-json module,
main(x: (n, 64) f32, w: (64, 64) f32) = relu(x @ w), whose results NumPy checks.

Cases: a benchmark with sane statistics (and the same kernels/peak_bytes as
`relax-run --bench` on the same artifact); two agents sharing a queue; an agent
SIGKILLed mid-job (its job re-runs on the other agent: attempts 2); SIGTERM of idle and
busy agents (exit 0 at once; a busy one's job is re-queued as agent_shutdown); a running
job cancelled (the agent hears it on its heartbeat and reports nothing); --once; a server
restart with queued and running jobs (agents re-register, everything finishes); a
target no agent has (queue_timeout, message naming it); bad agent tokens (exit 1 with
a clear error); a corrupting proxy between one agent and relaxd (corrupt_artifact); the
correctness check passing and failing (check_failed, max_abs_error); and the `relax`
CLI (bench, agents, jobs, cancel) plus the Python client end to end.

One line per case ("ok NAME" / "FAIL NAME: why"), then "N passed, M failed"; exit 1 on
any failure. Every process started here is stopped here. Python 3 standard library and
NumPy (/usr/bin/python3).
"""
import base64
import hashlib
import http.client
import http.server
import io
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np

import rxtest
from rxtest import Proc, case, expect

BIN = rxtest.bin_dir()
SRC = rxtest.src_dir()
RELAXD = os.path.join(BIN, "relaxd")
AGENT = os.path.join(BIN, "relax-agent")
RELAX = os.path.join(BIN, "relax")
RELAX_RUN = os.path.join(BIN, "relax-run")
sys.path.insert(0, os.path.join(SRC, "clients", "python"))
TMP = rxtest.scratch("relax-agents-it-")
T0 = time.time()

HEARTBEAT_MS, LEASE_MS, POLL_MS = 200, 1500, 3000
AGENT_TOKEN = "agent-token-0123456789abcdef"
CLIENT_TOKEN = "client-token-0123456789abcdef"
D = 64  # the module's inner dimension


def module(name="agents_it"):
    """main(x: (n, D) f32, w: (D, D) f32) = relu(x @ w), relax-json v1."""
    return rxtest.relu_matmul_module(D, name)


def npy_b64(a):
    buf = io.BytesIO()
    np.save(buf, np.ascontiguousarray(a), allow_pickle=False)
    return base64.b64encode(buf.getvalue()).decode()


class Relaxd(rxtest.Relaxd):
    """relaxd (rxtest.Relaxd) with short agent periods; request() gives (status, JSON)."""

    def __init__(self, data=None, port=0, config=None):
        cfg = {"agent_heartbeat_ms": HEARTBEAT_MS, "agent_lease_ms": LEASE_MS, "agent_poll_ms": POLL_MS}
        cfg.update(config or {})
        super().__init__(config=cfg, data=data, port=port)

    def request(self, method, path, body=None, token=None, timeout=60):
        st, _, obj = self.json(method, path, body, timeout=timeout, token=token)
        return st, obj

    def compile(self, mod, target="cpu"):
        st, body = self.request("POST", "/v1/compile", {"module": mod, "target": target})
        expect(st == 200, "compile: %s %s" % (st, body))
        return body["artifact"]

    def submit(self, **kw):
        st, body = self.request("POST", "/v1/benchmarks", kw)
        expect(st == 202, "submit: %s %s" % (st, body))
        return body["job"]

    def job(self, jid):
        st, body = self.request("GET", "/v1/benchmarks/" + jid)
        expect(st == 200, "job %s: %s %s" % (jid, st, body))
        return body

    def wait_job(self, jid, timeout, states=("done", "failed", "cancelled")):
        end = time.time() + timeout
        while True:
            j = self.job(jid)
            if j["status"] in states:
                return j
            if time.time() > end:
                raise AssertionError("job %s still %s after %.0f s: %s" % (jid, j["status"], timeout, j))
            time.sleep(0.05)

    def log_for(self, jid):
        """relaxd's log lines about job jid (for failure messages)."""
        with self.cv:
            return "\n".join(json.dumps(o)[:400] for o in self.lines if jid in json.dumps(o)
                             and o.get("event") != "request")

    def agents(self):
        st, body = self.request("GET", "/v1/agents")
        expect(st == 200, "agents: %s %s" % (st, body))
        return {a["name"]: a for a in body["agents"]}


class Agent(Proc):
    def __init__(self, server_url, name, labels=(), token=None, cache=None, extra=()):
        self.cache = cache or tempfile.mkdtemp(prefix="cache-%s-" % name, dir=TMP)
        argv = [AGENT, "--server", server_url, "--name", name, "--cache-dir", self.cache]
        for l in labels:
            argv += ["--label", l]
        argv += list(extra)
        env = {"RELAX_AGENT_TOKEN": token} if token else {}
        env["OPENBLAS_NUM_THREADS"] = "1"  # steadier timings on a small shared machine
        super().__init__(argv, env)
        self.name = name

    def registered(self, timeout=15, nth=1):
        ok = self.wait_log(lambda o: o.get("event") == "registered", timeout)
        if ok and nth > 1:
            end = time.time() + timeout
            while self.count(lambda o: o.get("event") == "registered") < nth and time.time() < end:
                time.sleep(0.05)
            ok = self.count(lambda o: o.get("event") == "registered") >= nth
        expect(ok, "agent %s did not register: %s" % (self.name, self.tail()))


# ---- the cases ----

S = {}  # shared state: server, agents, artifact, slow repeat


def bench_body(**kw):
    b = {"artifact": S["art"], "function": "main", "shapes": {"n": 256}, "repeat": 5}
    b.update(kw)
    return b


def wait_running(jid, timeout=15):
    j = S["d"].wait_job(jid, timeout, ("running", "done", "failed", "cancelled"))
    expect(j["status"] == "running", "job %s not running: %s" % (jid, j))
    return j


def test_bad_token_refused():
    d = Relaxd(config={"tokens": [{"token": AGENT_TOKEN, "role": "agent"},
                                  {"token": CLIENT_TOKEN, "role": "client"}]})
    try:
        for tok, status in (("wrong-token-0123456789abcdef", "401"), (CLIENT_TOKEN, "403"), (None, "401")):
            a = Agent(d.url, "bad-tok", token=tok)
            t0 = time.time()
            try:
                rc = a.proc.wait(10)
            except subprocess.TimeoutExpired:
                rc = a.stop()
            a.reader.join(5)
            err = [o["raw"] for o in a.lines if "raw" in o and o["raw"].startswith("error: ")]
            expect(rc == 1, "token %s: exit %s, want 1: %s" % (tok, rc, a.tail()))
            expect(len(err) == 1 and "refused the agent's token" in err[0] and status in err[0],
                   "token %s: error line %s" % (tok, err))
            expect(time.time() - t0 < 5, "took %.1f s to give up" % (time.time() - t0))
        good = Agent(d.url, "good-tok", token=AGENT_TOKEN)
        good.registered()
        expect(good.stop() == 0, "good agent exit: %s" % good.tail())
    finally:
        d.stop()


def test_statistics_like_relax_run():
    d = S["d"]
    jid = d.submit(**bench_body(repeat=7, number=2))
    j = d.wait_job(jid, 30)
    expect(j["status"] == "done", "job: %s" % j)
    r = j["result"]
    expect(r["min_ms"] <= r["median_ms"] <= r["max_ms"] and r["min_ms"] > 0 and r["stddev_ms"] >= 0,
           "statistics %s" % r)
    expect(r["repeat"] == 7 and r["number"] == 2 and r["kernels"] > 0 and r["load_ms"] >= 0, "result %s" % r)
    expect(j["agent"] in ("lab-a", "lab-b") and j["attempts"] == 1, "agent/attempts %s" % j)
    expect(isinstance(j.get("queue_ms"), (int, float)) and isinstance(j.get("run_ms"), (int, float)),
           "queue_ms/run_ms %s" % j)
    # the same artifact through relax-run --bench locally: same kernels and peak bytes
    st, raw = None, None
    c = http.client.HTTPConnection("127.0.0.1", d.port, timeout=60)
    c.request("GET", "/v1/artifacts/" + S["art"])
    resp = c.getresponse()
    raw = resp.read()
    c.close()
    path = os.path.join(TMP, "art.rxa")
    with open(path, "wb") as f:
        f.write(raw)
    p = subprocess.run([RELAX_RUN, path, "--shape", "n=256", "--bench", "--repeat", "7", "--number", "2"],
                       capture_output=True, text=True, timeout=120)
    expect(p.returncode == 0, "relax-run: %s" % p.stderr)
    local = json.loads(p.stdout)
    expect(set(local) | {"load_ms"} == set(r) and local["kernels"] == r["kernels"] and
           local["peak_bytes"] == r["peak_bytes"] and local["repeat"] == 7,
           "relax-run %s vs agent %s" % (local, r))


def test_correctness_check():
    d = S["d"]
    rng = np.random.default_rng(7)
    x = rng.standard_normal((33, D)).astype(np.float32)
    w = rng.standard_normal((D, D)).astype(np.float32)
    want = np.maximum(x @ w, 0).astype(np.float32)
    inputs = {"x": npy_b64(x), "w": npy_b64(w)}
    jid = d.submit(**bench_body(shapes={}, repeat=3, inputs=inputs, expected=[npy_b64(want)],
                                tolerance={"rtol": 1e-4, "atol": 1e-4}))
    j = d.wait_job(jid, 30)
    expect(j["status"] == "done" and j["result"]["check"] == "passed", "check: %s" % j)
    expect(j["result"]["max_abs_error"] < 1e-3, "max_abs_error %s" % j["result"])
    bad = want.copy()
    bad[5, 7] += 0.5
    jid = d.submit(**bench_body(shapes={}, repeat=3, inputs=inputs, expected=[npy_b64(bad)],
                                tolerance={"rtol": 1e-4, "atol": 1e-4}))
    j = d.wait_job(jid, 30)
    expect(j["status"] == "failed" and j["error"]["code"] == "check_failed", "bad check: %s" % j)
    expect("output 0 [5, 7]" in j["error"]["message"], "message %s" % j["error"])
    r = j.get("result") or {}
    expect(abs(r.get("max_abs_error", 0) - 0.5) < 1e-3 and r.get("check") == "failed" and r.get("median_ms", 0) > 0,
           "result of a failed check %s" % r)
    # an input of the wrong shape: the VM's message, code shape_error
    jid = d.submit(**bench_body(shapes={}, inputs={"x": npy_b64(x[:, :10]), "w": inputs["w"]}))
    j = d.wait_job(jid, 30)
    expect(j["status"] == "failed" and j["error"]["code"] == "shape_error" and
           "got (33, 10)" in j["error"]["message"], "shape error: %s" % j)


def test_two_agents_share_a_queue():
    d = S["d"]
    repeat = max(3, int(0.1 / max(S["call_ms"] / 1e3, 1e-6)))  # ~100 ms per job
    jobs = [d.submit(**bench_body(repeat=repeat)) for _ in range(8)]
    done = [d.wait_job(j, 60) for j in jobs]
    expect(all(j["status"] == "done" for j in done), "not all done: %s" % [j["status"] for j in done])
    names = {j["agent"] for j in done}
    expect(names == {"lab-a", "lab-b"}, "agents used: %s" % names)
    ag = d.agents()
    expect(ag["lab-a"]["jobs_done"] > 0 and ag["lab-b"]["jobs_done"] > 0, "jobs_done %s" % ag)


def test_unavailable_target_times_out():
    d = S["d"]
    kind = S["other_kind"]
    jid = d.submit(**bench_body(artifact=S["art_other"], queue_timeout_s=1))
    j = d.job(jid)
    expect(j["status"] == "queued" and j.get("position") == 0 and j["target"] == kind,
           "queued: %s" % j)
    j = d.wait_job(jid, 10)
    expect(j["status"] == "failed" and j["error"]["code"] == "queue_timeout", "job %s" % j)
    msg = j["error"]["message"]
    expect(kind in msg and "lab-a" in msg, "message %s" % msg)


def test_cancel_running_job():
    d = S["d"]
    jid = d.submit(**slow_body())
    j = wait_running(jid)
    ag = S["a"] if j["agent"] == "lab-a" else S["b"]
    mark = len(ag.lines)
    st, body = d.request("POST", "/v1/benchmarks/%s/cancel" % jid, {})
    expect(st == 200 and body["status"] == "cancelled", "cancel: %s %s" % (st, body))
    # the agent hears cancel=true on its next heartbeat, kills the run, reports nothing
    expect(ag.wait_log(lambda o: o.get("event") == "job_dropped" and o.get("job") == jid, 3, mark),
           "no job_dropped: %s" % ag.tail())
    expect(not ag.wait_log(lambda o: o.get("event") == "job_end" and o.get("job") == jid, 0.3, mark),
           "a cancelled job was reported")
    # and it takes the next job
    j2 = d.wait_job(d.submit(**bench_body(labels=[])), 15)
    expect(j2["status"] == "done", "next job %s" % j2)
    expect(d.job(jid)["status"] == "cancelled", "still cancelled")


def test_once():
    d = S["d"]
    a = Agent(d.url, "lab-once", labels=["once"], extra=["--once"])
    try:
        a.registered()
        j = d.wait_job(d.submit(**bench_body(labels=["once"])), 15)
        expect(j["status"] == "done" and j["agent"] == "lab-once", "job %s" % j)
        rc = a.proc.wait(10)
        expect(rc == 0, "--once exit %s: %s" % (rc, a.tail()))
    finally:
        a.stop()


class CorruptingProxy:
    """Forwards HTTP to relaxd, flipping one byte of every GET /v1/artifacts/<id> body."""

    def __init__(self, port):
        target = port

        class H(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def forward(self):
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else None
                c = http.client.HTTPConnection("127.0.0.1", target, timeout=60)
                hdrs = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")}
                c.request(self.command, self.path, body=body, headers=hdrs)
                r = c.getresponse()
                data = r.read()
                c.close()
                if self.command == "GET" and self.path.startswith("/v1/artifacts/") and r.status == 200:
                    data = bytearray(data)
                    data[len(data) // 2] ^= 0x10
                    data = bytes(data)
                self.send_response(r.status)
                for k, v in r.getheaders():
                    if k.lower() not in ("content-length", "connection", "transfer-encoding"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if data:
                    self.wfile.write(data)

            do_GET = do_POST = forward

        class Quiet(http.server.ThreadingHTTPServer):
            def handle_error(self, request, client_address):
                pass  # an agent hanging up on a forwarded long poll is expected here

        self.srv = Quiet(("127.0.0.1", 0), H)
        self.srv.daemon_threads = True
        self.url = "http://127.0.0.1:%d" % self.srv.server_address[1]
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()

    def close(self):
        self.srv.shutdown()
        self.srv.server_close()


def test_corrupt_artifact_detected():
    # A relaxd of its own: the proxy keeps its upstream long polls open after the agent
    # behind it is gone, and the server would count that agent as alive for a while.
    d = Relaxd()
    art = d.compile(module())
    proxy = CorruptingProxy(d.port)
    a = Agent(proxy.url, "lab-proxied")
    try:
        a.registered()
        jid = d.submit(artifact=art, shapes={"n": 16})
        j = d.wait_job(jid, 30)
        expect(j["status"] == "failed" and j["error"]["code"] == "corrupt_artifact" and
               j["agent"] == "lab-proxied", "job %s" % j)
        expect("failed verification" in j["error"]["message"] and art in j["error"]["message"],
               "message %s" % j["error"])
        expect(a.count(lambda o: o.get("event") == "artifact_corrupt") == 2, "two fetches: %s" % a.tail())
        expect(not [f for f in os.listdir(a.cache) if not f.startswith(".")], "cache holds %s" % os.listdir(a.cache))
        expect(a.stop() == 0, "agent exit: %s" % a.tail())
    finally:
        a.stop()
        d.stop()
        proxy.close()


def slow_body():
    # ~1.5 s of benchmarking (more on a loaded machine): long enough to kill an agent in
    # the middle
    return bench_body(repeat=max(20, int(1.5 / max(S["call_ms"] / 1e3, 1e-6))), timeout_s=60)


def restart(name):
    old = S[name]
    S[name] = Agent(S["d"].url, old.name, cache=old.cache)
    S[name].registered()


def test_agent_killed_mid_job():
    d = S["d"]
    jid = d.submit(**slow_body())
    j = wait_running(jid)
    victim = "a" if j["agent"] == "lab-a" else "b"
    other = "lab-b" if victim == "a" else "lab-a"
    time.sleep(0.3)
    S[victim].stop(signal.SIGKILL)
    j = d.wait_job(jid, 30)
    expect(j["status"] == "done" and j["agent"] == other and j["attempts"] == 2,
           "job %s\nrelaxd: %s" % (j, d.log_for(jid)))
    # no orphaned benchmark child of the killed agent keeps running (PR_SET_PDEATHSIG)
    restart(victim)


def test_sigterm_idle_and_busy():
    d = S["d"]
    # idle: exits 0 at once (its long poll is interrupted)
    a = S["a"]
    t0 = time.time()
    rc = a.stop(signal.SIGTERM, timeout=10)
    dt = time.time() - t0
    expect(rc == 0 and dt < 1.5, "idle SIGTERM: exit %s after %.2f s: %s" % (rc, dt, a.tail()))
    expect(a.wait_log(lambda o: o.get("event") == "stopped", 1), "no stopped line")
    restart("a")
    # busy: the job is reported agent_shutdown, re-queued and finished by the other agent
    jid = d.submit(**slow_body())
    j = wait_running(jid)
    victim = "a" if j["agent"] == "lab-a" else "b"
    time.sleep(0.3)
    t0 = time.time()
    rc = S[victim].stop(signal.SIGTERM, timeout=10)
    dt = time.time() - t0
    expect(rc == 0 and dt < 5, "busy SIGTERM: exit %s after %.2f s: %s" % (rc, dt, S[victim].tail()))
    expect(S[victim].wait_log(lambda o: o.get("event") == "job_end" and o.get("code") == "agent_shutdown", 1),
           "no agent_shutdown: %s" % S[victim].tail())
    j = d.wait_job(jid, 30)
    expect(j["status"] == "done" and j["attempts"] == 2 and j["agent"] != S[victim].name, "job %s" % j)
    restart(victim)


def test_server_restart():
    d = S["d"]
    slow = [d.submit(**slow_body()) for _ in range(2)]
    for jid in slow:
        wait_running(jid)
    fast = [d.submit(**bench_body()) for _ in range(3)]
    expect(all(d.job(j)["status"] == "queued" for j in fast), "fast jobs should wait")
    regs = {k: S[k].count(lambda o: o.get("event") == "registered") for k in ("a", "b")}
    expect(d.stop() == 0, "relaxd exit: %s" % d.tail())
    time.sleep(0.5)
    S["d"] = d = Relaxd(data=d.data, port=d.port)
    for k in ("a", "b"):
        S[k].registered(timeout=20, nth=regs[k] + 1)
    for jid in slow + fast:
        j = d.wait_job(jid, 40)
        expect(j["status"] == "done", "after restart: %s" % j)
    for jid in slow:
        expect(d.job(jid)["attempts"] == 2, "slow job attempts: %s" % d.job(jid))
    ag = d.agents()
    expect(set(ag) >= {"lab-a", "lab-b"} and all(ag[n]["state"] != "offline" for n in ("lab-a", "lab-b")),
           "agents after restart: %s" % ag)


def relax(*args, timeout=120):
    e = {k: v for k, v in os.environ.items() if k not in ("RELAX_SERVER", "RELAX_TOKEN")}
    e["RELAX_SERVER"] = S["d"].url
    return subprocess.run([RELAX, *args], capture_output=True, text=True, timeout=timeout, env=e)


def test_cli_and_python_client():
    mpath = os.path.join(TMP, "agents_it.json")
    with open(mpath, "w") as f:
        json.dump(module(), f)
    p = relax("bench", mpath, "--shape", "n=128", "--repeat", "4", "--number", "2")
    expect(p.returncode == 0, "bench: %s %s" % (p.stdout, p.stderr))
    out = dict(l.split(": ", 1) for l in p.stdout.strip().splitlines())
    expect(out["status"] == "done" and out["repeat"] == "4" and out["number"] == "2" and
           float(out["median_ms"]) > 0 and out["agent"] in ("lab-a", "lab-b"), "bench stdout %s" % out)
    expect("running on lab-" in p.stderr and "submitted" in p.stderr, "progress %s" % p.stderr)
    # the artifact by id, --json, and the check with NumPy files
    rng = np.random.default_rng(3)
    x = rng.standard_normal((16, D)).astype(np.float32)
    w = rng.standard_normal((D, D)).astype(np.float32)
    for n, a in (("x.npy", x), ("w.npy", w), ("want.npy", np.maximum(x @ w, 0)), ("bad.npy", np.maximum(x @ w, 0) + 1)):
        np.save(os.path.join(TMP, n), a)
    p = relax("bench", S["art"], "--in", "x=" + os.path.join(TMP, "x.npy"), "--in", "w=" + os.path.join(TMP, "w.npy"),
              "--expect", os.path.join(TMP, "want.npy"), "--rtol", "1e-4", "--atol", "1e-4", "--json")
    expect(p.returncode == 0, "bench --json: %s" % p.stderr)
    j = json.loads(p.stdout)
    expect(j["status"] == "done" and j["result"]["check"] == "passed", "json %s" % j)
    p = relax("bench", S["art"], "--in", "x=" + os.path.join(TMP, "x.npy"), "--in", "w=" + os.path.join(TMP, "w.npy"),
              "--expect", os.path.join(TMP, "bad.npy"), "--atol", "1e-3")
    expect(p.returncode == 1 and "(check_failed)" in p.stderr and "max_abs_error: 1" in p.stdout,
           "failed check: %s %s" % (p.stdout, p.stderr))
    p = relax("bench", S["art"], "--repeat", "2")  # n unknown
    expect(p.returncode == 1 and "needs symbolic variable n" in p.stderr and "(shape_error)" in p.stderr,
           "shape error: %s" % p.stderr)
    # --no-wait, jobs, cancel
    p = relax("bench", S["art"], "--shape", "n=8", "--target", S["other_kind"], "--no-wait")
    expect(p.returncode == 1 and "target_mismatch" in p.stderr, "mismatch: %s %s" % (p.stdout, p.stderr))
    p = relax("bench", S["art_other"], "--shape", "n=8", "--no-wait")  # the artifact's kind
    jid = p.stdout.strip()
    expect(p.returncode == 0 and len(jid) == 32, "no-wait: %s %s" % (p.stdout, p.stderr))
    p = relax("jobs", "--status", "queued")
    expect(p.returncode == 0 and jid in p.stdout and S["other_kind"] in p.stdout,
           "jobs: %s %s" % (p.stdout, p.stderr))
    p = relax("jobs", "cancel", jid)
    expect(p.returncode == 0 and "cancelled" in p.stdout, "cancel: %s %s" % (p.stdout, p.stderr))
    p = relax("cancel", jid)
    expect(p.returncode == 1 and "finished" in p.stderr, "cancel twice: %s" % p.stderr)
    p = relax("agents")
    expect(p.returncode == 0 and "lab-a" in p.stdout and "lab-b" in p.stdout and "cpu" in p.stdout,
           "agents: %s" % p.stdout)
    p = relax("agents", "--json")
    expect(p.returncode == 0 and {a["name"] for a in json.loads(p.stdout)["agents"]} >= {"lab-a", "lab-b"},
           "agents --json: %s" % p.stdout)
    # the Python client
    import relaxd_client
    cl = relaxd_client.Client(S["d"].url, timeout=60)
    seen = []
    j = cl.bench(module(), shapes={"n": 64}, repeat=3, inputs=None, on_progress=lambda d: seen.append(d["status"]))
    expect(j["status"] == "done" and j["result"]["repeat"] == 3, "python bench %s" % j)
    try:
        cl.bench(S["art"], inputs={"x": x, "w": w}, expected=[np.maximum(x @ w, 0) + 1], atol=1e-3)
        expect(False, "python bench with a bad expectation did not raise")
    except relaxd_client.BenchmarkError as e:
        expect(e.code == "check_failed" and e.job["result"]["max_abs_error"] >= 0.99, "python error %s" % e)
    expect({a["name"] for a in cl.agents()} >= {"lab-a", "lab-b"}, "python agents")
    expect(any(x["id"] == jid and x["status"] == "cancelled" for x in cl.jobs(status="cancelled")), "python jobs")


def main():
    for exe in (RELAXD, AGENT, RELAX, RELAX_RUN):
        if not os.access(exe, os.X_OK):
            print("FAIL setup: %s is not built" % exe)
            return 1
    case(test_bad_token_refused)
    try:
        S["d"] = Relaxd()
        S["art"] = S["d"].compile(module())
        S["a"] = Agent(S["d"].url, "lab-a")
        S["b"] = Agent(S["d"].url, "lab-b")
        S["a"].registered()
        S["b"].registered()
        # an artifact for a GPU kind neither agent offers (their devices decide), which
        # this relaxd compiles: jobs for it queue and time out
        offered = {t for a in S["d"].agents().values() for t in a["targets"]}
        st, tg = S["d"].request("GET", "/v1/targets")
        kinds = [k["kind"] for k in tg["targets"] if k["available"] and k["kind"] not in offered]
        if not kinds:
            raise AssertionError("no target kind both compilable here and not offered: %s" % tg)
        S["other_kind"] = kinds[0]
        S["art_other"] = S["d"].compile(module(), kinds[0])
        # calibration: the median time of one call, for jobs of a chosen length (the
        # median of many calls only underestimates, so jobs last at least that long)
        cal = S["d"].wait_job(S["d"].submit(**bench_body(repeat=30, number=5)), 60)
        S["call_ms"] = max(cal["result"]["median_ms"], 0.005)
    except Exception as e:
        print("FAIL setup: %s" % e)
        return 1
    case(test_statistics_like_relax_run)
    case(test_correctness_check)
    case(test_two_agents_share_a_queue)
    case(test_unavailable_target_times_out)
    case(test_cancel_running_job)
    case(test_once)
    case(test_corrupt_artifact_detected)
    case(test_agent_killed_mid_job)
    case(test_sigterm_idle_and_busy)
    case(test_server_restart)
    case(test_cli_and_python_client)
    # clean shutdown: both agents and relaxd exit 0 (sanitizer builds: no leaks)
    rcs = {k: S[k].stop() for k in ("a", "b")}
    rcs["relaxd"] = S["d"].stop()
    rxtest.record("clean_exit", all(v == 0 for v in rcs.values()), rcs)
    return rxtest.summary(T0)


if __name__ == "__main__":
    sys.exit(main())
