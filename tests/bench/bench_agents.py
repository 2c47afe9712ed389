#!/usr/bin/python3
"""bench_agents.py — remote benchmarking: dispatch latency and agent vs local statistics.

What is measured, on a release relaxd and relax-agent (BIN_DIR, built elsewhere: this
script builds nothing), on 127.0.0.1 with a fresh temporary data directory:

1. Dispatch latency: one agent, idle and long-polling; N tiny jobs (n = 1, repeat 1)
   submitted one at a time (each waits for the previous to finish, so the agent is
   parked in its poll at every submission). Per job, three numbers:
     server   the job's queue_ms as relaxd reports it: submission committed -> assigned
              to the parked poll (relaxd's own clock; integer milliseconds)
     client   POST /v1/benchmarks sent -> the first GET /v1/benchmarks/<id> that shows
              "running" (the client polls in a tight loop: ~0.2 ms per GET on loopback)
     agent    POST sent -> the agent's "job_start" log line (the spec parsed, before the
              artifact is fetched; wall clock, millisecond timestamps)
   plus the round trip of the POST itself (the server commits the job before answering).
   Reported: median and p95 of each (goal: client p95 < 50 ms).
2. Statistics through an agent vs `relax-run --bench` locally, the same artifact
   (relu(x @ w), x: (n, 256), w: (256, 256), n = 512), function, shapes, repeat and
   number: median_ms of both and their ratio (agent / local; 1.0 means the agent adds
   nothing to what is timed). Both use the same code (runtime/tools/bench.c and
   rx_rt_bench); kernels and peak_bytes must be equal, else the run fails. The two
   runs alternate ROUNDS times (which goes first alternates too) and the medians of the
   per-round medians are compared, so drift on a shared machine hits both alike; while
   the agent's job runs the client polls only every 200 ms, staying out of its way. OpenBLAS gets --blas-threads threads
   (default 1) in both, through OPENBLAS_NUM_THREADS: on a small shared machine its
   thread pool's spinning otherwise dominates the variance of both runs alike.

Output: a table on stdout, then one JSON object with every number. `--smoke` (the
ctest): 5 dispatch jobs and one small comparison round; it fails on any job that does
not finish "done" or a kernels/peak_bytes mismatch, not on timings.

Programs are spawned with argv lists, never a shell; every process started here is
stopped here (SIGTERM, then SIGKILL after a bounded wait). relaxd's log goes to a file.
Python 3 standard library only.
  bench_agents.py BIN_DIR [--smoke] [--jobs N] [--rounds R] [--blas-threads T]
"""
import argparse
import datetime
import http.client
import json
import os
import signal
import statistics
import subprocess
import sys
import shutil
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
from rxtest import relu_matmul_module  # noqa: E402  (the agents' tests' module)

PROCS = []
D = 256


def stop_all():
    while PROCS:
        p = PROCS.pop()
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def module():
    return relu_matmul_module(D, "bench_agents")


class Conn:
    """One keep-alive HTTP connection to relaxd (the client of the measurements)."""

    def __init__(self, port):
        self.port = port
        self.c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)

    def json(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        h = {"Content-Type": "application/json"} if data else {}
        try:
            self.c.request(method, path, body=data, headers=h)
            r = self.c.getresponse()
        except (http.client.HTTPException, OSError):
            self.c.close()
            self.c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
            self.c.request(method, path, body=data, headers=h)
            r = self.c.getresponse()
        raw = r.read()
        return r.status, json.loads(raw) if raw else None


ENV = dict(os.environ)  # what relax-agent and relax-run run with (OPENBLAS_NUM_THREADS)


def start(argv, log_path):
    f = open(log_path, "wb")
    p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=f, env=ENV)
    f.close()
    PROCS.append(p)
    return p


def wait_log(path, pred, timeout, proc):
    end = time.time() + timeout
    while time.time() < end:
        try:
            with open(path) as f:
                for line in f:
                    try:
                        o = json.loads(line)
                    except ValueError:
                        continue
                    if pred(o):
                        return o
        except OSError:
            pass
        if proc.poll() is not None:
            raise SystemExit("process exited (status %s); log %s" % (proc.returncode, path))
        time.sleep(0.02)
    raise SystemExit("timed out waiting in %s" % path)


def wall_of(ts):
    """The agent's "ts" (UTC ISO 8601 with ms) as Unix seconds."""
    return datetime.datetime.strptime(ts, "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=datetime.timezone.utc).timestamp()


def pct(xs, q):
    xs = sorted(xs)
    k = min(len(xs) - 1, max(0, int(round(q / 100.0 * (len(xs) - 1)))))
    return xs[k]


def agent_job_starts(path):
    """job id -> wall time of its job_start line."""
    out = {}
    with open(path) as f:
        for line in f:
            try:
                o = json.loads(line)
            except ValueError:
                continue
            if o.get("event") == "job_start":
                out[o["job"]] = wall_of(o["ts"])
    return out


def dispatch(conn, art, n_jobs, agent_log):
    server, client, post, submit_wall = [], [], [], {}
    for _ in range(n_jobs):
        body = {"artifact": art, "shapes": {"n": 1}, "repeat": 1}
        t0 = time.perf_counter()
        w0 = time.time()
        st, r = conn.json("POST", "/v1/benchmarks", body)
        if st != 202:
            raise SystemExit("submit: %s %s" % (st, r))
        jid = r["job"]
        post.append((time.perf_counter() - t0) * 1e3)
        submit_wall[jid] = w0
        seen_running = None
        while True:
            st, j = conn.json("GET", "/v1/benchmarks/" + jid)
            if seen_running is None and j["status"] in ("running", "done"):
                seen_running = time.perf_counter() - t0
            if j["status"] in ("done", "failed", "cancelled"):
                break
        if j["status"] != "done":
            raise SystemExit("dispatch job %s: %s" % (jid, j))
        server.append(float(j["queue_ms"]))
        client.append(seen_running * 1e3)
        time.sleep(0.02)  # the agent reports, then parks its next poll
    time.sleep(0.2)
    starts = agent_job_starts(agent_log)
    agent = [(starts[j] - w) * 1e3 for j, w in submit_wall.items() if j in starts]
    return server, client, agent, post


def compare(conn, art, bin_dir, tmp, shapes, repeat, number, rounds):
    # the artifact, fetched once for relax-run
    c = http.client.HTTPConnection("127.0.0.1", conn.port, timeout=60)
    c.request("GET", "/v1/artifacts/" + art)
    data = c.getresponse().read()
    c.close()
    path = os.path.join(tmp, "bench.rxa")
    with open(path, "wb") as f:
        f.write(data)
    agent_meds, local_meds, res = [], [], {}

    def through_agent():
        st, r = conn.json("POST", "/v1/benchmarks", {"artifact": art, "shapes": shapes, "repeat": repeat,
                                                     "number": number})
        jid = r["job"]
        while True:
            time.sleep(0.2)  # slow polling: the client stays out of the measurement's way
            st, j = conn.json("GET", "/v1/benchmarks/" + jid)
            if j["status"] in ("done", "failed", "cancelled"):
                break
        if j["status"] != "done":
            raise SystemExit("comparison job: %s" % j)
        res["agent"] = j["result"]
        agent_meds.append(j["result"]["median_ms"])

    def locally():
        argv = [os.path.join(bin_dir, "relax-run"), path, "--bench", "--repeat", str(repeat), "--number", str(number)]
        for k, v in shapes.items():
            argv += ["--shape", "%s=%d" % (k, v)]
        p = subprocess.run(argv, capture_output=True, text=True, timeout=600, env=ENV)
        if p.returncode != 0:
            raise SystemExit("relax-run: %s" % p.stderr)
        res["local"] = json.loads(p.stdout)
        local_meds.append(res["local"]["median_ms"])

    for i in range(rounds):  # alternating which goes first
        for run in ((through_agent, locally) if i % 2 == 0 else (locally, through_agent)):
            run()
    agent_res, local_res = res["agent"], res["local"]
    for k in ("kernels", "peak_bytes", "repeat", "number"):
        if agent_res[k] != local_res[k]:
            raise SystemExit("%s differs: agent %s, relax-run %s" % (k, agent_res[k], local_res[k]))
    return statistics.median(agent_meds), statistics.median(local_meds), agent_res, local_res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bin_dir")
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--jobs", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--blas-threads", type=int, default=1)
    a = ap.parse_args()
    ENV["OPENBLAS_NUM_THREADS"] = str(a.blas_threads)
    n_jobs, rounds = (5, 1) if a.smoke else (a.jobs, a.rounds)
    shapes, repeat, number = ({"n": 64}, 3, 1) if a.smoke else ({"n": 512}, 30, 5)
    tmp = tempfile.mkdtemp(prefix="bench-agents-")
    try:
        dlog = os.path.join(tmp, "relaxd.log")
        d = start([os.path.join(a.bin_dir, "relaxd"), "--listen", "127.0.0.1:0", "--data", os.path.join(tmp, "data")],
                  dlog)
        port = int(wait_log(dlog, lambda o: o.get("event") == "listening", 30, d)["address"].rsplit(":", 1)[1])
        conn = Conn(port)
        st, r = conn.json("POST", "/v1/compile", {"module": module(), "target": "cpu"})
        if st != 200:
            raise SystemExit("compile: %s %s" % (st, r))
        art = r["artifact"]
        alog = os.path.join(tmp, "agent.log")
        ag = start([os.path.join(a.bin_dir, "relax-agent"), "--server", "http://127.0.0.1:%d" % port, "--name",
                    "bench-agent", "--cache-dir", os.path.join(tmp, "cache")], alog)
        wait_log(alog, lambda o: o.get("event") == "registered", 30, ag)
        # warm the agent's cache and the server's paths
        dispatch(conn, art, 2, alog)
        server, client, agent, post = dispatch(conn, art, n_jobs, alog)
        am, lm, ares, lres = compare(conn, art, a.bin_dir, tmp, shapes, repeat, number, rounds)
    finally:
        stop_all()
        shutil.rmtree(tmp, ignore_errors=True)
    rows = [("server queue_ms (submit -> assigned)", server), ("client submit -> running seen", client),
            ("agent submit -> job_start logged", agent), ("client POST /v1/benchmarks round trip", post)]
    print("dispatch latency, idle long-polling agent, %d jobs (ms)" % n_jobs)
    print("  %-38s %9s %9s %9s" % ("", "median", "p95", "max"))
    for name, xs in rows:
        print("  %-38s %9.2f %9.2f %9.2f" % (name, statistics.median(xs), pct(xs, 95), max(xs)))
    print("statistics of main(n=%d), repeat %d x number %d, %d round(s) (ms per call)" %
          (shapes["n"], repeat, number, rounds))
    print("  %-38s %9s %9s %9s" % ("", "median", "kernels", "peak B"))
    print("  %-38s %9.4f %9d %9d" % ("through relax-agent", am, ares["kernels"], ares["peak_bytes"]))
    print("  %-38s %9.4f %9d %9d" % ("relax-run --bench locally", lm, lres["kernels"], lres["peak_bytes"]))
    print("  %-38s %9.3f" % ("ratio agent / local", am / lm if lm > 0 else float("nan")))
    out = {"bench": "agents", "jobs": n_jobs,
           "dispatch_server_ms": {"median": statistics.median(server), "p95": pct(server, 95)},
           "dispatch_client_ms": {"median": statistics.median(client), "p95": pct(client, 95)},
           "dispatch_agent_ms": {"median": statistics.median(agent), "p95": pct(agent, 95)} if agent else None,
           "submit_post_ms": {"median": statistics.median(post), "p95": pct(post, 95)},
           "goal_p95_ms": 50, "agent_median_ms": am, "local_median_ms": lm,
           "ratio_agent_vs_local": am / lm if lm > 0 else None, "shapes": shapes, "repeat": repeat,
           "number": number, "rounds": rounds, "blas_threads": a.blas_threads}
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    finally:
        stop_all()
