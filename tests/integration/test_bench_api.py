#!/usr/bin/python3
"""HTTP-level tests of relaxd's benchmark and agent endpoints (docs/rpc.md), without a
real relax-agent: this script plays the agent with plain requests.

usage: test_bench_api.py BIN_DIR [SOURCE_DIR]

BIN_DIR holds relaxd (the build's bin/); SOURCE_DIR is the repository (default: two
levels up). Every daemon gets a fresh temporary data directory, listens on port 0 and is
found through its {"event":"listening"} log line. Short agent timings (poll 300 ms, lease
400 ms, heartbeat 100 ms) keep the cases quick. One line per case ("ok NAME" / "FAIL
NAME: why"), then "N passed, M failed"; exit 1 on any failure. Python 3 standard
library only.
"""
import http.client
import json
import os
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time

import rxtest
from rxtest import case, expect, expect_error, wait_for

BIN = rxtest.bin_dir()
SRC = rxtest.src_dir()
RELAXD = os.path.join(BIN, "relaxd")
MODULE = os.path.join(SRC, "tests", "modules", "valid", "fig03_symbolic_shape.json")
TMP = rxtest.scratch("relaxd-bench-it-")

CLIENT = "client-token-0123456789abcdef"
AGENT = "agent-token-0123456789abcdef"
ADMIN = "admin-token-0123456789abcdef"
FAST = ["--agent-poll-ms", "300", "--agent-lease-ms", "400", "--agent-heartbeat-ms", "100"]


class Daemon(rxtest.Relaxd):
    """relaxd (rxtest.Relaxd) with the benchmark and agent protocol as plain requests."""

    def json(self, method, path, body=None, token=None, timeout=60):
        """(status, parsed reply) of a request with an optional bearer token."""
        st, _, obj = super().json(method, path, body, timeout=timeout, token=token)
        return st, obj

    # ---- protocol helpers ----

    def compile(self, token=None, target="cpu"):
        with open(MODULE) as f:
            mod = json.load(f)
        st, b = self.json("POST", "/v1/compile", {"module": mod, "target": target}, token,
                          timeout=300)
        assert st == 200, "compile %s %s" % (st, b)
        return b["artifact"]

    def register(self, name, targets=("cpu",), labels=("x86",), token=None):
        st, b = self.json("POST", "/v1/agents/register",
                          {"name": name, "targets": list(targets), "labels": list(labels),
                           "cpu": "test cpu", "cores": 2, "memory_bytes": 1 << 30,
                           "runtime_version": "0.1.0", "protocol": 1}, token)
        expect(st == 200 and re.fullmatch(r"[0-9a-f]{32}", b.get("agent", "")),
               "register %s %s" % (st, b))
        return b["agent"]

    def poll(self, agent, token=None, timeout=60):
        """(status, job or None, seconds)"""
        t0 = time.time()
        st, _, data = self.request("POST", "/v1/agents/%s/poll" % agent, {}, token=token,
                                   timeout=timeout)
        dt = time.time() - t0
        job = json.loads(data)["job"] if st == 200 else (json.loads(data) if data else None)
        return st, job, dt

    def submit(self, art, token=None, **kw):
        body = {"artifact": art}
        body.update(kw)
        st, b = self.json("POST", "/v1/benchmarks", body, token)
        expect(st == 202 and re.fullmatch(r"[0-9a-f]{32}", b.get("job", "")),
               "submit %s %s" % (st, b))
        return b["job"]

    def job(self, jid, token=None):
        st, b = self.json("GET", "/v1/benchmarks/" + jid, token=token)
        expect(st == 200, "job %s: %s %s" % (jid, st, b))
        return b

    def heartbeat(self, agent, jid, token=None):
        return self.json("POST", "/v1/agents/%s/heartbeat" % agent, {"job": jid}, token)

    def result(self, agent, jid, body, token=None):
        return self.json("POST", "/v1/agents/%s/jobs/%s/result" % (agent, jid), body, token)

    def agents(self, token=None):
        st, b = self.json("GET", "/v1/agents", token=token)
        expect(st == 200, "agents %s %s" % (st, b))
        return {a["name"]: a for a in b["agents"]}


MAIN = None  # anonymous daemon with fast agent timings
ART = None   # an artifact compiled on MAIN
ART_CL = None  # the same module compiled for opencl (no agent here offers it)


def drain(d, agent):
    """Polls until the agent has nothing (204), finishing whatever it is handed."""
    while True:
        st, job, _ = d.poll(agent)
        if st != 200:
            return
        d.result(agent, job["id"], {"status": "done", "result": {}})


# ---- cases ----

def test_register():
    a = MAIN.register("reg-1")
    st, b = MAIN.json("POST", "/v1/agents/register", {"name": "reg-1", "targets": ["cpu"]})
    expect(st == 200 and b["agent"] == a, "same name, same id: %s" % b)
    expect(b["heartbeat_ms"] == 100 and b["lease_ms"] == 400 and b["poll_ms"] == 300,
           "timings %s" % b)
    st, b = MAIN.json("POST", "/v1/agents/register", {"name": "reg-2"})
    expect_error(st, b, 400, "bad_request", "targets: expected a non-empty array of strings")
    st, b = MAIN.json("POST", "/v1/agents/register", {"name": "reg-2", "targets": "cpu"})
    expect_error(st, b, 400, "bad_request", "targets:")
    st, b = MAIN.json("POST", "/v1/agents/register", b"{\"name\": ")
    expect_error(st, b, 400, "bad_json", "line 1")
    st, b = MAIN.json("POST", "/v1/agents/register", {"name": "x" * 65, "targets": ["cpu"]})
    expect_error(st, b, 400, "bad_request", "name:")
    st, b = MAIN.json("POST", "/v1/agents/register",
                      {"name": "reg-3", "targets": ["cpu"], "protocol": 2})
    expect_error(st, b, 400, "bad_request", "protocol")


def test_idle_poll_204():
    a = MAIN.register("idle-1", targets=["nothing-runs-here"])
    st, job, dt = MAIN.poll(a)
    expect(st == 204 and job is None, "idle poll %s %s" % (st, job))
    expect(0.25 <= dt < 2.0, "idle poll took %.3f s (poll_ms 300)" % dt)
    st, job, _ = MAIN.poll("0" * 32)
    expect_error(st, job, 404, "unknown_agent")
    st, b = MAIN.heartbeat("f" * 32, None)
    expect_error(st, b, 404, "unknown_agent")


def test_submit_wakes_poll():
    d = Daemon(["--agent-poll-ms", "5000", "--agent-lease-ms", "6000"])
    art = d.compile()
    a = d.register("fast-1")
    lat = []
    for i in range(5):
        out = {}

        def go():
            out["r"] = d.poll(a)
            out["t"] = time.time()
        t = threading.Thread(target=go)
        t.start()
        # the poll is parked once the agent shows as polling
        wait_for(lambda: d.agents()["fast-1"].get("polling"), 5, "the poll to park")
        t0 = time.time()
        jid = d.submit(art, shapes={"n": 16}, repeat=3)
        t.join(10)
        st, job, _ = out["r"]
        expect(st == 200 and job["id"] == jid, "poll %s %s" % (st, job))
        lat.append((out["t"] - t0) * 1000)
        if i == 0:
            expect(job["artifact"] == art and job["artifact_url"] == "/v1/artifacts/" + art and
                   job["artifact_bytes"] > 0 and job["function"] == "main" and
                   job["shapes"] == {"n": 16} and job["repeat"] == 3 and job["number"] == 1 and
                   job["warmup"] == 1 and job["timeout_ms"] == 60000 and "inputs" not in job,
                   "jobspec %s" % job)
            j = d.job(jid)
            expect(j["status"] == "running" and j["agent"] == "fast-1" and j["attempts"] == 1,
                   "job %s" % j)
        st, b = d.result(a, jid, {"status": "done", "result": {"mean_ms": 1.0}})
        expect(st == 200 and b == {"accepted": True}, "result %s %s" % (st, b))
    lat.sort()
    print("     dispatch latency submit -> poll answer: median %.1f ms, max %.1f ms" %
          (lat[len(lat) // 2], lat[-1]), flush=True)
    expect(lat[len(lat) // 2] < 50, "median dispatch latency %.1f ms (goal < 50 ms)" % lat[2])
    m = d.metrics()
    expect('relaxd_bench_dispatch_seconds_count 5' in m, "dispatch histogram:\n%s" % m[-1500:])
    expect('relaxd_bench_jobs{state="done"} 5' in m, "jobs gauge")
    expect('relaxd_agents{state="idle"} 1' in m, "agents gauge")
    expect(d.stop() == 0, "exit")


def test_heartbeat_cancel_result_409():
    a = MAIN.register("hb-1", labels=["hb-only"])
    jid = MAIN.submit(ART, labels=["hb-only"])
    st, job, _ = MAIN.poll(a)
    expect(st == 200 and job["id"] == jid, "poll %s %s" % (st, job))
    st, b = MAIN.heartbeat(a, jid)
    expect(st == 200 and b == {"cancel": False}, "heartbeat %s %s" % (st, b))
    st, b = MAIN.heartbeat(a, None)
    expect(st == 200 and b == {"cancel": False}, "heartbeat null %s %s" % (st, b))
    # a result for another job: 409, the running one unaffected
    other = MAIN.submit(ART, labels=["hb-nobody"])
    st, b = MAIN.result(a, other, {"status": "done", "result": {}})
    expect_error(st, b, 409, "not_assigned")
    st, b = MAIN.json("POST", "/v1/benchmarks/%s/cancel" % jid)
    expect(st == 200 and b["status"] == "cancelled" and b["agent"] == "hb-1", "cancel %s" % b)
    st, b = MAIN.heartbeat(a, jid)
    expect(st == 200 and b == {"cancel": True}, "heartbeat after cancel %s %s" % (st, b))
    st, b = MAIN.result(a, jid, {"status": "done", "result": {"mean_ms": 2}})
    expect_error(st, b, 409, "not_assigned")
    st, b = MAIN.json("POST", "/v1/benchmarks/%s/cancel" % jid)
    expect_error(st, b, 409, "finished")
    st, b = MAIN.json("POST", "/v1/benchmarks/%s/cancel" % other)
    expect(st == 200 and b["status"] == "cancelled", "cancel queued %s" % b)
    st, b = MAIN.json("POST", "/v1/benchmarks/%s/cancel" % ("0" * 32))
    expect_error(st, b, 404, "not_found")


def test_result_done_and_failed():
    a = MAIN.register("res-1", labels=["res-only"])
    j1 = MAIN.submit(ART, labels=["res-only"], priority=1)
    j2 = MAIN.submit(ART, labels=["res-only"])
    st, job, _ = MAIN.poll(a)
    expect(job["id"] == j1, "priority first")
    st, b = MAIN.result(a, j1, {"status": "done"})
    expect_error(st, b, 400, "bad_request", "result:")
    res = {"mean_ms": 1.5, "median_ms": 1.4, "min_ms": 1.2, "max_ms": 2.0, "stddev_ms": 0.1,
           "repeat": 10, "number": 1, "kernels": 4, "peak_bytes": 4096, "load_ms": 3.0}
    st, b = MAIN.result(a, j1, {"status": "done", "result": res})
    expect(st == 200 and b == {"accepted": True}, "done %s %s" % (st, b))
    j = MAIN.job(j1)
    expect(j["status"] == "done" and j["result"] == res and j["error"] is None and
           j["agent"] == "res-1" and isinstance(j["run_ms"], int) and
           isinstance(j["queue_ms"], int), "done job %s" % j)
    st, job, _ = MAIN.poll(a)
    expect(job["id"] == j2, "second job %s" % job)
    st, b = MAIN.result(a, j2, {"status": "failed", "error": {"code": "check_failed",
                                "message": "max_abs_error 0.5 > 1e-6"},
                                "result": {"max_abs_error": 0.5, "check": "failed"}})
    expect(st == 200, "failed %s %s" % (st, b))
    j = MAIN.job(j2)
    expect(j["status"] == "failed" and j["error"]["code"] == "check_failed" and
           j["result"]["check"] == "failed", "failed job %s" % j)
    st, b = MAIN.json("GET", "/v1/benchmarks?status=failed&limit=1")
    expect(st == 200 and [x["id"] for x in b["jobs"]] == [j2], "list failed %s" % b)
    st, b = MAIN.json("GET", "/v1/benchmarks?limit=2")
    expect(st == 200 and [x["id"] for x in b["jobs"]] == [j2, j1], "newest first %s" % b)
    st, b = MAIN.json("GET", "/v1/benchmarks?status=zombie")
    expect_error(st, b, 400, "bad_request", "status:")
    st, b = MAIN.json("GET", "/v1/benchmarks?limit=100000")
    expect_error(st, b, 400, "bad_request", "limit:")
    st, b = MAIN.result(a, j2, {"status": "done", "result": {}})
    expect_error(st, b, 409, "not_assigned")


def test_lease_expiry_requeue():
    a = MAIN.register("lease-1", labels=["lease"])
    b = MAIN.register("lease-2", labels=["lease"])
    jid = MAIN.submit(ART, labels=["lease"], max_attempts=2)
    st, job, _ = MAIN.poll(a)
    expect(st == 200 and job["id"] == jid, "poll %s" % job)
    for _ in range(4):  # heartbeats keep it
        time.sleep(0.15)
        st, r = MAIN.heartbeat(a, jid)
        expect(st == 200 and r["cancel"] is False, "heartbeat %s" % r)
    expect(MAIN.agents()["lease-1"]["state"] == "busy", "busy")
    # silence: the lease (400 ms) expires, the job goes back to the queue
    j = wait_for(lambda: (lambda j: j if j["status"] == "queued" else None)(MAIN.job(jid)), 5,
                 "the re-queue")
    expect(j["attempts"] == 1 and j["agent"] is None and j["position"] == 0, "requeued %s" % j)
    ag = MAIN.agents()
    expect(ag["lease-1"]["state"] == "offline" and ag["lease-1"]["job"] is None,
           "offline %s" % ag["lease-1"])
    st, r = MAIN.heartbeat(a, jid)
    expect(st == 200 and r["cancel"] is True, "the lost job is cancelled for its old agent")
    st, job, _ = MAIN.poll(b)
    expect(st == 200 and job["id"] == jid, "second agent %s %s" % (st, job))
    j = wait_for(lambda: (lambda j: j if j["status"] == "failed" else None)(MAIN.job(jid)), 5,
                 "agent_lost")
    expect(j["error"]["code"] == "agent_lost" and "lease-2" in j["error"]["message"] and
           "2 of 2" in j["error"]["message"], "agent_lost %s" % j)
    expect(MAIN.wait_log(lambda o: o.get("event") == "agent_offline" and
                         o.get("name") == "lease-1", 5), "no agent_offline log line")


def test_artifact_target():
    """A job runs on its artifact's target kind: omitted, it is the artifact's; another
    kind is a 409 target_mismatch (it could only fail on the agent), nothing queued."""
    before = MAIN.json("GET", "/v1/benchmarks?status=queued")[1]
    st, b = MAIN.json("POST", "/v1/benchmarks", {"artifact": ART_CL, "target": "cpu"})
    expect(st == 409 and b["error"]["code"] == "target_mismatch" and
           "names cpu but artifact %s was compiled for opencl" % ART_CL[:12]
           in b["error"]["message"], "mismatch %s %s" % (st, b))
    st, b = MAIN.json("POST", "/v1/benchmarks", {"artifact": ART, "target": "opencl"})
    expect(st == 409 and b["error"]["code"] == "target_mismatch", "mismatch %s %s" % (st, b))
    expect(MAIN.json("GET", "/v1/benchmarks?status=queued")[1] == before, "a refused job queued")
    q = MAIN.submit(ART_CL, queue_timeout_s=30)
    expect(MAIN.job(q)["target"] == "opencl", "default target %s" % MAIN.job(q))
    st, _ = MAIN.json("POST", "/v1/benchmarks/%s/cancel" % q)
    expect(st == 200, "cancel %s" % st)


def test_timeouts():
    a = MAIN.register("to-1", labels=["to"])
    q = MAIN.submit(ART_CL, labels=["sm90"], queue_timeout_s=1)  # target: the artifact's
    r = MAIN.submit(ART, labels=["to"], timeout_s=1)
    st, job, _ = MAIN.poll(a)
    expect(job["id"] == r and job["timeout_ms"] == 1000, "poll %s" % job)

    def beat():
        st, b = MAIN.heartbeat(a, r)
        return b["cancel"]
    # run timeout 1 s + 400 ms grace: the server fails it, the heartbeat says cancel
    wait_for(beat, 5, "cancel after the run timeout")
    j = MAIN.job(r)
    expect(j["status"] == "failed" and j["error"]["code"] == "timeout", "timeout %s" % j)
    j = wait_for(lambda: (lambda j: j if j["status"] == "failed" else None)(MAIN.job(q)), 5,
                 "queue timeout")
    msg = j["error"]["message"]
    expect(j["error"]["code"] == "queue_timeout" and
           msg.startswith("no agent with target opencl and labels sm90 became available within 1 s")
           and "to-1 [cpu; to]" in msg, "queue_timeout %s" % j)


def test_agents_states():
    a = MAIN.register("st-1", labels=["st"])
    ag = MAIN.agents()["st-1"]
    expect(ag["state"] == "idle" and ag["job"] is None and ag["cpu"] == "test cpu" and
           ag["cores"] == 2 and ag["memory_bytes"] == 1 << 30 and
           ag["runtime_version"] == "0.1.0" and ag["targets"] == ["cpu"] and
           ag["labels"] == ["st"] and ag["id"] == a and isinstance(ag["last_seen_ms_ago"], int)
           and ag["jobs_done"] == 0, "idle %s" % ag)
    jid = MAIN.submit(ART, labels=["st"])
    MAIN.poll(a)
    ag = MAIN.agents()["st-1"]
    expect(ag["state"] == "busy" and ag["job"] == jid, "busy %s" % ag)
    MAIN.result(a, jid, {"status": "done", "result": {}})
    ag = MAIN.agents()["st-1"]
    expect(ag["state"] == "idle" and ag["jobs_done"] == 1, "idle again %s" % ag)
    wait_for(lambda: MAIN.agents()["st-1"]["state"] == "offline", 5, "offline")
    m = MAIN.metrics()
    expect(re.search(r'^relaxd_agents\{state="offline"\} [1-9]', m, re.M), "offline gauge")


def test_hostile_input():
    a = MAIN.register("hostile-1", labels=["hostile"])
    bad_bodies = [b"", b"null", b"[]", b"\"x\"", b"{\"artifact\": 1}", b"{" * 5000,
                  json.dumps({"artifact": ART, "shapes": {"n": "big"}}).encode(),
                  json.dumps({"artifact": ART, "function": "f" * 10000}).encode(),
                  json.dumps({"artifact": ART, "labels": ["x"] * 1000}).encode(),
                  json.dumps({"artifact": ART, "inputs": {"x": "not base64!"}}).encode(),
                  json.dumps({"artifact": ART, "repeat": 1e300}).encode(),
                  json.dumps({"artifact": ART, "priority": 2 ** 70}).encode(),
                  b"{\"artifact\": \"" + ART.encode() + b"\", \"artifact\": \"x\"}",
                  b"\xff\xfe\x00garbage"]
    for body in bad_bodies:
        st, b = MAIN.json("POST", "/v1/benchmarks", body)
        expect(st == 400 and b["error"]["code"] in ("bad_request", "bad_json"),
               "%r: %s %s" % (body[:40], st, b))
    st, b = MAIN.json("POST", "/v1/benchmarks", {"artifact": "0" * 64})
    expect_error(st, b, 404, "not_found", "artifact")
    for body in [b"[]", b"{\"job\": 5}", b"{\"job\": \"../../x\"}", b"{{{"]:
        st, b = MAIN.json("POST", "/v1/agents/%s/heartbeat" % a, body)
        expect(st == 400, "heartbeat %r: %s %s" % (body, st, b))
    for body in [b"[]", b"{\"status\": 1}", b"{\"status\": \"failed\", \"error\": \"x\"}",
                 b"{\"status\": \"failed\", \"error\": {\"code\": \"ok\", \"message\": \"" +
                 b"m" * 5000 + b"\"}}"]:
        st, b = MAIN.json("POST", "/v1/agents/%s/jobs/%s/result" % (a, "0" * 32), body)
        expect(st == 400, "result %r: %s %s" % (body[:40], st, b))
    st, b = MAIN.json("POST", "/v1/agents/%s/poll" % a, b"[1]")
    expect_error(st, b, 400, "bad_request")
    for p in ["/v1/agents/..%2F..%2Fetc/poll", "/v1/agents/%00/heartbeat",
              "/v1/agents/" + "A" * 32 + "/poll", "/v1/agents/x/jobs/y/result",
              "/v1/agents/" + "a" * 200 + "/poll"]:
        st, b = MAIN.json("POST", p, {})
        expect(st == 404 and b["error"]["code"] in ("unknown_agent", "not_found"),
               "%s: %s %s" % (p, st, b))
    for p in ["/v1/benchmarks/..%2F", "/v1/benchmarks/%00", "/v1/benchmarks/" + "G" * 32,
              "/v1/benchmarks/" + "a" * 33, "/v1/benchmarks/'%20OR%201=1"]:
        st, b = MAIN.json("GET", p)
        expect(st == 404 and b["error"]["code"] == "not_found", "%s: %s %s" % (p, st, b))
    st, b = MAIN.json("DELETE", "/v1/benchmarks")
    expect_error(st, b, 405, "method_not_allowed")
    # a name with SQL in it is just a (refused) name; a job id with SQL is a 404
    st, b = MAIN.json("POST", "/v1/agents/register",
                      {"name": "x'); DROP TABLE jobs;--", "targets": ["cpu"]})
    expect_error(st, b, 400, "bad_request", "name:")
    st, b = MAIN.json("GET", "/healthz")
    expect(st == 200 and MAIN.proc.poll() is None, "daemon died")
    st, b = MAIN.json("GET", "/v1/benchmarks?limit=1")
    expect(st == 200, "listing after hostile input %s" % b)


def test_auth_separation():
    cfg = {"tokens": [{"token": CLIENT, "role": "client"}, {"token": AGENT, "role": "agent"},
                      {"token": ADMIN, "role": "admin"}]}
    d = Daemon(FAST, config=cfg)
    art = d.compile(CLIENT)
    st, b = d.json("POST", "/v1/benchmarks", {"artifact": art}, AGENT)
    expect_error(st, b, 403, "forbidden")
    st, b = d.json("POST", "/v1/benchmarks", {"artifact": art})
    expect_error(st, b, 401, "unauthorized")
    st, b = d.json("POST", "/v1/agents/register", {"name": "au", "targets": ["cpu"]}, CLIENT)
    expect_error(st, b, 403, "forbidden")
    st, b = d.json("POST", "/v1/agents/register", {"name": "au", "targets": ["cpu"]})
    expect_error(st, b, 401, "unauthorized")
    a = d.register("au", token=AGENT)
    d.register("au-admin", token=ADMIN)
    st, b = d.json("POST", "/v1/agents/%s/poll" % a, {}, CLIENT)
    expect_error(st, b, 403, "forbidden")
    st, b = d.json("POST", "/v1/agents/%s/heartbeat" % a, {"job": None}, CLIENT)
    expect_error(st, b, 403, "forbidden")
    for tok in (CLIENT, AGENT, ADMIN):
        st, b = d.json("GET", "/v1/agents", token=tok)
        expect(st == 200 and len(b["agents"]) == 2, "agents with %s: %s" % (tok[:6], st))
    st, b = d.json("GET", "/v1/agents")
    expect_error(st, b, 401, "unauthorized")
    jid = d.submit(art, token=CLIENT)
    st, b = d.json("GET", "/v1/benchmarks/" + jid, token=AGENT)
    expect_error(st, b, 403, "forbidden")
    st, b = d.json("POST", "/v1/benchmarks/%s/cancel" % jid, token=AGENT)
    expect_error(st, b, 403, "forbidden")
    st, job, _ = d.poll(a, token=AGENT)
    expect(st == 200 and job["id"] == jid, "agent poll %s %s" % (st, job))
    # agents download artifacts; the metadata stays the clients'
    st, _, data = d.request("GET", job["artifact_url"], token=AGENT)
    expect(st == 200 and len(data) == job["artifact_bytes"], "agent artifact fetch %s" % st)
    st, b = d.json("GET", job["artifact_url"] + "/meta", token=AGENT)
    expect_error(st, b, 403, "forbidden")
    st, b = d.result(a, jid, {"status": "done", "result": {}}, CLIENT)
    expect_error(st, b, 403, "forbidden")
    st, b = d.result(a, jid, {"status": "done", "result": {}}, AGENT)
    expect(st == 200, "result %s %s" % (st, b))
    expect(d.job(jid, ADMIN)["status"] == "done", "admin reads jobs")
    expect(d.stop() == 0, "exit")


def test_restart_keeps_queued():
    d = Daemon(FAST)
    art = d.compile()
    a = d.register("rs-1")
    run = d.submit(art, priority=5)
    q1 = d.submit(art)
    st, job, _ = d.poll(a)
    expect(job["id"] == run, "poll %s" % job)
    expect(d.stop() == 0, "exit")
    d2 = Daemon(FAST, data=d.data)
    j = d2.job(run)
    expect(j["status"] == "queued" and j["attempts"] == 1 and j["agent"] is None and
           j["position"] == 0, "running -> queued %s" % j)
    j = d2.job(q1)
    expect(j["status"] == "queued" and j["attempts"] == 0 and j["position"] == 1,
           "queued kept %s" % j)
    st, b = d2.heartbeat(a, run)
    expect_error(st, b, 404, "unknown_agent")
    st, job, _ = d2.poll(a)
    expect_error(st, job, 404, "unknown_agent")
    a2 = d2.register("rs-1")
    st, job, _ = d2.poll(a2)
    expect(st == 200 and job["id"] == run, "re-registered agent gets it %s" % job)
    expect(d2.metric('relaxd_bench_jobs{state="queued"}') == 1, "queued gauge")
    # kill -9 right after the 202: the job was committed before the answer
    q2 = d2.submit(art, labels=["later"])
    d2.proc.kill()
    d2.proc.wait()
    d3 = Daemon(FAST, data=d.data)
    expect(d3.job(q2)["status"] == "queued", "submission lost by kill -9")
    expect(d3.job(run)["attempts"] == 2, "attempts counted across restarts")
    expect(d3.stop() == 0, "exit")
    db = sqlite3.connect(os.path.join(d.data, "jobs.db"))
    expect(db.execute("PRAGMA integrity_check").fetchone()[0] == "ok", "integrity")
    expect(db.execute("PRAGMA journal_mode").fetchone()[0] == "wal", "WAL")
    n = db.execute("SELECT count(*) FROM jobs").fetchone()[0]
    db.close()
    expect(n == 3, "rows %d" % n)


def test_garbage_jobs_db():
    data = tempfile.mkdtemp(prefix="data-bad-", dir=TMP)
    with open(os.path.join(data, "jobs.db"), "wb") as f:
        f.write(os.urandom(4096))
    r = subprocess.run([RELAXD, "--listen", "127.0.0.1:0", "--data", data],
                       capture_output=True, timeout=60)
    err = r.stderr.decode()
    expect(r.returncode == 1 and "jobs.db" in err and "move it aside" in err,
           "garbage jobs.db: %d %s" % (r.returncode, err[-400:]))


def test_parked_polls_free_event_loop():
    d = Daemon(["--http-threads", "1", "--agent-poll-ms", "3000", "--agent-lease-ms", "4000"])
    agents = [d.register("park-%d" % i) for i in range(4)]
    outs = {}
    ts = []
    for a in agents:
        t = threading.Thread(target=lambda a=a: outs.setdefault(a, d.poll(a)))
        t.start()
        ts.append(t)
    wait_for(lambda: all(x["polling"] for x in d.agents().values()), 5, "the polls to park")
    t0 = time.time()
    st, _, _ = d.request("GET", "/healthz")
    dt = time.time() - t0
    expect(st == 200 and dt < 0.5, "healthz during 4 parked polls: %s in %.3f s" % (st, dt))
    # shutdown answers the parked polls (204) and exits cleanly
    t0 = time.time()
    rc = d.stop()
    for t in ts:
        t.join(10)
    expect(rc == 0, "exit %s: %s" % (rc, d.stderr_text()))
    expect(all(outs.get(a, (None,))[0] == 204 for a in agents),
           "parked polls at shutdown: %s" % {a[:6]: v[0] for a, v in outs.items()})
    expect(time.time() - t0 < 2.5, "shutdown waited for the polls")


def test_undelivered_job_returns():
    # an agent parked in a poll vanishes; the job handed to its dead connection comes back
    # to the queue at once, its attempt not counted
    d = Daemon(["--agent-poll-ms", "10000", "--agent-lease-ms", "10000"])
    art = d.compile()
    a = d.register("gone-1")
    s = socket.create_connection(("127.0.0.1", d.port), timeout=10)
    s.sendall(("POST /v1/agents/%s/poll HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}"
               % a).encode())
    wait_for(lambda: d.agents()["gone-1"]["polling"], 5, "the poll to park")
    s.close()
    time.sleep(0.1)
    jid = d.submit(art)
    expect(d.wait_log(lambda o: o.get("event") == "bench_undelivered" and
                      o.get("job") == jid, 5), "no bench_undelivered line")
    j = d.job(jid)
    expect(j["status"] == "queued" and j["attempts"] == 0, "after a failed delivery %s" % j)
    b = d.register("gone-2")
    st, job, _ = d.poll(b)
    expect(st == 200 and job["id"] == jid, "another agent gets it %s %s" % (st, job))
    expect(d.stop() == 0, "exit")


def test_concurrent_agents():
    # 4 agents polling and reporting while 3 clients submit 60 jobs: every job runs once
    d = Daemon(["--agent-poll-ms", "500", "--agent-lease-ms", "3000"])
    art = d.compile()
    agents = [d.register("cc-%d" % i) for i in range(4)]
    ran = {}
    lock = threading.Lock()
    stop = threading.Event()

    def agent_loop(a):
        while not stop.is_set():
            st, job, _ = d.poll(a)
            if st == 200:
                with lock:
                    ran[job["id"]] = ran.get(job["id"], 0) + 1
                st, b = d.result(a, job["id"], {"status": "done", "result": {"mean_ms": 1}})
                assert st == 200, "result %s %s" % (st, b)
    ts = [threading.Thread(target=agent_loop, args=(a,)) for a in agents]
    for t in ts:
        t.start()
    jobs = []

    def client_loop():
        for _ in range(20):
            jid = d.submit(art)
            with lock:
                jobs.append(jid)
    cs = [threading.Thread(target=client_loop) for _ in range(3)]
    for t in cs:
        t.start()
    for t in cs:
        t.join()
    try:
        wait_for(lambda: all(d.job(j)["status"] == "done" for j in jobs), 30, "all jobs done")
    finally:
        stop.set()
        for t in ts:
            t.join(5)
    expect(len(jobs) == 60 and sorted(ran) == sorted(jobs) and set(ran.values()) == {1},
           "each job ran once: %d jobs, %d ran" % (len(jobs), len(ran)))
    done = sum(a["jobs_done"] for a in d.agents().values())
    expect(done == 60, "jobs_done %d" % done)
    expect(d.stop() == 0, "exit %s" % d.stderr_text())


def test_config_checks():
    r = subprocess.run([RELAXD, "--agent-heartbeat-ms", "5000", "--agent-lease-ms", "5000",
                        "--data", os.path.join(TMP, "cfg")], capture_output=True, timeout=30)
    expect(r.returncode == 1 and b"agent_heartbeat_ms" in r.stderr, "heartbeat >= lease %s" %
           r.stderr)
    r = subprocess.run([RELAXD, "--agent-poll-ms", "10"], capture_output=True, timeout=30)
    expect(r.returncode == 1 and b"out of range" in r.stderr, "poll range %s" % r.stderr)
    e = dict(os.environ, RELAXD_AGENT_POLL_MS="777")
    p = subprocess.Popen([RELAXD, "--listen", "127.0.0.1:0", "--data",
                          tempfile.mkdtemp(prefix="data-env-", dir=TMP)],
                         stderr=subprocess.PIPE, env=e)
    try:
        port = None
        for raw in p.stderr:
            o = json.loads(raw)
            if o.get("event") == "listening":
                port = int(o["address"].rsplit(":", 1)[1])
                break
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        c.request("POST", "/v1/agents/register", body=json.dumps(
            {"name": "env", "targets": ["cpu"]}), headers={"Content-Type": "application/json"})
        b = json.loads(c.getresponse().read())
        expect(b["poll_ms"] == 777, "RELAXD_AGENT_POLL_MS %s" % b)
    finally:
        p.send_signal(signal.SIGTERM)
        p.wait(30)


def check_main_db():
    # after every case above (hostile input included) the jobs database is sound
    db = sqlite3.connect(os.path.join(MAIN.data, "jobs.db"))
    try:
        expect(db.execute("PRAGMA integrity_check").fetchone()[0] == "ok", "integrity")
        rows = db.execute("SELECT status, count(*) FROM jobs GROUP BY status").fetchall()
        states = dict(rows)
        expect(sum(states.values()) >= 8 and set(states) <= {"queued", "running", "done",
               "failed", "cancelled"}, "rows %s" % rows)
        expect(db.execute("SELECT count(*) FROM jobs WHERE status IN ('done', 'failed',"
                          " 'cancelled') AND data IS NOT NULL").fetchone()[0] == 0,
               "finished jobs keep their inputs")
    finally:
        db.close()


def main():
    global MAIN, ART, ART_CL
    if not os.access(RELAXD, os.X_OK):
        print("missing %s" % RELAXD)
        print("0 passed, 1 failed")
        return 1
    MAIN = Daemon(FAST)
    ART = MAIN.compile()
    ART_CL = MAIN.compile(target="opencl")
    for fn in [test_register, test_idle_poll_204, test_submit_wakes_poll,
               test_heartbeat_cancel_result_409, test_result_done_and_failed,
               test_lease_expiry_requeue, test_timeouts, test_artifact_target, test_agents_states,
               test_hostile_input, test_auth_separation, test_restart_keeps_queued,
               test_garbage_jobs_db, test_parked_polls_free_event_loop,
               test_undelivered_job_returns, test_concurrent_agents, test_config_checks]:
        case(fn)
    rc = MAIN.stop()
    rxtest.record("main_daemon_exit", rc == 0, "exit %s" % rc)
    case(check_main_db)
    return rxtest.summary()


if __name__ == "__main__":
    sys.exit(main())
