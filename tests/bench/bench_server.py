#!/usr/bin/python3
"""bench_server.py — relaxd's cache-hit HTTP paths under wrk, against nginx in the same run.

What is measured: a release relaxd (BIN_DIR/relaxd, built elsewhere: this script builds
nothing) on 127.0.0.1 with an ephemeral port and a fresh temporary --data directory. One
POST /v1/compile of tests/modules/valid/fig03_symbolic_shape.json warms the cache (a real
compile); a second must answer "cached": true. Then, for each connection count C (1, 16,
64), wrk runs for a fixed duration with threads = min(2, C) and --latency against
  POST /v1/compile            the same body again: a cache hit (body from a wrk Lua script)
  GET  /v1/artifacts/<id>     the artifact's bytes
and, as the reference, nginx serving the SAME bytes (fetched from relaxd, compared byte for
byte) as a static file: worker_processes 2, sendfile on, access_log off, its own generated
config and prefix in the temporary directory, 127.0.0.1 on a free port, run in the
foreground (`nginx -c CONF -p PREFIX -e LOG -g 'daemon off;'`) and stopped at the end.
For each C the three runs go back to back (nginx GET, relaxd GET, relaxd POST), so the
machine's state drifts as little as possible between the GETs being compared.

Output: one JSON object per line per (target, endpoint, connections) with wrk's
requests/s and its p50/p99 latency (ms), the request count, non-2xx/3xx responses and
socket errors; relaxd's GET lines carry ratio_vs_nginx = relaxd rps / nginx rps at the
same C (the goal is >= 0.5). Any non-2xx response, socket error or zero-request run makes
the exit status 1 (the numbers are still printed).

`--smoke` (the ctest): relaxd only, GET only, 1 connection for 1 s; it fails unless wrk
counted requests and no non-2xx responses or socket errors. Exit 77 (ctest's skip) when
wrk is not installed (deploy/packages.sh bench installs it; the test set does not).

Programs are spawned with argv lists, never a shell; relaxd's stderr (one JSON log line
per request) goes to a file, so a full pipe can never stall it. Every process started
here is stopped here (SIGTERM, then SIGKILL after a bounded wait), also on errors.
Python 3 standard library only.
  bench_server.py BIN_DIR [--smoke] [--duration S] [--connections 1,16,64]
                  [--wrk PATH] [--nginx PATH]
"""
import argparse
import hashlib
import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODULE = os.path.join(ROOT, "tests", "modules", "valid", "fig03_symbolic_shape.json")
SKIP = 77                      # ctest SKIP_RETURN_CODE
PROCS = []                     # every process started here, stopped in stop_all()


class BenchError(Exception):
    pass


def stop(proc, timeout=10.0):
    """SIGTERM, wait up to `timeout` s, then SIGKILL; `proc` is one we started."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def stop_all():
    while PROCS:
        stop(PROCS.pop())


def wait_port(port, proc, what, timeout=15.0):
    """Bounded wait until 127.0.0.1:port accepts a connection."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise BenchError("%s exited with status %d" % (what, proc.returncode))
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1.0).close()
            return
        except OSError:
            time.sleep(0.05)
    raise BenchError("%s did not accept connections on port %d" % (what, port))


def request(port, method, path, body=None, headers=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        c.request(method, path, body=body, headers=headers or {})
        r = c.getresponse()
        return r.status, r.read()
    finally:
        c.close()


# --- relaxd -------------------------------------------------------------------------------

def start_relaxd(relaxd, tmp):
    """relaxd on 127.0.0.1:0 with a fresh data dir; returns (proc, port)."""
    log_path = os.path.join(tmp, "relaxd.log")
    log = open(log_path, "wb")
    argv = [relaxd, "--listen", "127.0.0.1:0", "--data", os.path.join(tmp, "data")]
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=log)
    log.close()
    PROCS.append(proc)
    end = time.monotonic() + 30
    while time.monotonic() < end:
        with open(log_path, "rb") as f:
            for raw in f:
                try:
                    o = json.loads(raw)
                except ValueError:
                    continue
                if isinstance(o, dict) and o.get("event") == "listening":
                    port = int(o["address"].rsplit(":", 1)[1])
                    wait_port(port, proc, "relaxd")
                    return proc, port
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    with open(log_path, "rb") as f:
        tail = f.read()[-2000:].decode("utf-8", "replace")
    raise BenchError("relaxd did not log {\"event\":\"listening\"}: %s" % tail)


def warm_cache(port, body):
    """Compiles once (a miss), then checks the same request hits; returns (artifact id, bytes)."""
    hdrs = {"Content-Type": "application/json"}
    for attempt in ("miss", "hit"):
        st, data = request(port, "POST", "/v1/compile", body, hdrs)
        if st != 200:
            raise BenchError("POST /v1/compile (%s): %d %s" % (attempt, st, data[:500]))
        res = json.loads(data)
    if res.get("cached") is not True:
        raise BenchError("the second identical compile was not a cache hit: %s" % res)
    art = res["artifact"]
    st, blob = request(port, "GET", "/v1/artifacts/" + art)
    if st != 200 or len(blob) != res["size"]:
        raise BenchError("GET /v1/artifacts/%s: %d, %d bytes (size %s)"
                         % (art, st, len(blob), res["size"]))
    return art, blob


# --- nginx --------------------------------------------------------------------------------

NGINX_CONF = """\
worker_processes 2;
pid {prefix}/nginx.pid;
error_log {prefix}/error.log warn;
events {{ worker_connections 1024; }}
http {{
    access_log off;
    sendfile on;
    tcp_nopush on;
    keepalive_requests 1000000;
    default_type application/octet-stream;
    types {{ }}
    client_body_temp_path {prefix}/client_body;
    proxy_temp_path {prefix}/proxy;
    fastcgi_temp_path {prefix}/fastcgi;
    uwsgi_temp_path {prefix}/uwsgi;
    scgi_temp_path {prefix}/scgi;
    server {{
        listen 127.0.0.1:{port};
        root {prefix}/html;
        etag on;
    }}
}}
"""


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def start_nginx(nginx, tmp, art, blob):
    """nginx serving `blob` at /v1/artifacts/<art>; returns (proc, port).

    The prefix is world-readable so workers that dropped root (user nobody) can read it.
    A free port can be taken between the probe and nginx's bind: up to 5 tries."""
    prefix = os.path.join(tmp, "nginx")
    os.makedirs(os.path.join(prefix, "html", "v1", "artifacts"))
    for d in (tmp, prefix):
        os.chmod(d, 0o755)
    path = os.path.join(prefix, "html", "v1", "artifacts", art)
    with open(path, "wb") as f:
        f.write(blob)
    for dirpath, dirs, files in os.walk(os.path.join(prefix, "html")):
        os.chmod(dirpath, 0o755)
        for name in files:
            os.chmod(os.path.join(dirpath, name), 0o644)
    conf = os.path.join(prefix, "nginx.conf")
    last = ""
    for _ in range(5):
        port = free_port()
        with open(conf, "w") as f:
            f.write(NGINX_CONF.format(prefix=prefix, port=port))
        argv = [nginx, "-c", conf, "-p", prefix + "/", "-e", os.path.join(prefix, "error.log"),
                "-g", "daemon off;"]
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE)
        PROCS.append(proc)
        try:
            wait_port(port, proc, "nginx")
            return proc, port
        except BenchError as e:
            stop(proc)
            PROCS.remove(proc)
            last = "%s: %s" % (e, proc.stderr.read().decode("utf-8", "replace")[-1000:])
    raise BenchError("nginx did not start: " + last)


# --- wrk ----------------------------------------------------------------------------------

UNITS = {"us": 1e-3, "ms": 1.0, "s": 1e3, "m": 60e3, "h": 3600e3}


def ms(text):
    m = re.fullmatch(r"([0-9.]+)(us|ms|s|m|h)", text)
    if not m:
        raise BenchError("unparsable wrk time %r" % text)
    return float(m.group(1)) * UNITS[m.group(2)]


def parse_wrk(out):
    """wrk --latency output -> dict(requests, rps, p50_ms, p99_ms, non_2xx, socket_errors)."""
    r = {"non_2xx": 0, "socket_errors": 0}
    m = re.search(r"^\s*(\d+) requests in ", out, re.M)
    r["requests"] = int(m.group(1)) if m else 0
    m = re.search(r"^Requests/sec:\s*([0-9.]+)", out, re.M)
    if not m:
        raise BenchError("no Requests/sec in wrk output:\n" + out)
    r["rps"] = float(m.group(1))
    for pct, key in (("50", "p50_ms"), ("99", "p99_ms")):
        m = re.search(r"^\s*%s%%\s+(\S+)" % pct, out, re.M)
        if not m:
            raise BenchError("no %s%% latency in wrk output:\n%s" % (pct, out))
        r[key] = ms(m.group(1))
    m = re.search(r"Non-2xx or 3xx responses:\s*(\d+)", out)
    if m:
        r["non_2xx"] = int(m.group(1))
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    if m:
        r["socket_errors"] = sum(int(g) for g in m.groups())
    return r


POST_LUA = """\
-- POST the compile request read from a file next to this script (a cache hit).
local f = assert(io.open("{body}", "rb"))
wrk.method = "POST"
wrk.body = f:read("*a")
f:close()
wrk.headers["Content-Type"] = "application/json"
"""


def run_wrk(wrk, url, conns, duration, script=None):
    threads = min(2, conns)
    argv = [wrk, "-t%d" % threads, "-c%d" % conns, "-d%ds" % duration, "--timeout", "10s",
            "--latency"]
    if script:
        argv += ["-s", script]
    argv.append(url)
    p = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=duration + 60)
    out = p.stdout.decode("utf-8", "replace")
    if p.returncode != 0:
        raise BenchError("wrk exited %d: %s%s" % (p.returncode, out,
                                                 p.stderr.decode("utf-8", "replace")))
    r = parse_wrk(out)
    r["threads"] = threads
    return r


# --- driver -------------------------------------------------------------------------------

def emit(target, endpoint, conns, duration, size, r, extra=None):
    o = {"bench": "server", "target": target, "endpoint": endpoint, "connections": conns,
         "threads": r["threads"], "duration_s": duration, "requests": r["requests"],
         "rps": round(r["rps"], 1), "p50_ms": round(r["p50_ms"], 3),
         "p99_ms": round(r["p99_ms"], 3), "non_2xx": r["non_2xx"],
         "socket_errors": r["socket_errors"], "bytes": size}
    o.update(extra or {})
    print(json.dumps(o), flush=True)


def healthy(r):
    return r["requests"] > 0 and r["non_2xx"] == 0 and r["socket_errors"] == 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("bin_dir", help="build's bin/ holding relaxd (a release build for numbers)")
    ap.add_argument("--smoke", action="store_true", help="relaxd GET, 1 connection, 1 s")
    ap.add_argument("--duration", type=int, default=5, help="seconds per wrk run (default 5)")
    ap.add_argument("--connections", default="1,16,64")
    ap.add_argument("--wrk", default=shutil.which("wrk") or "/usr/bin/wrk")
    ap.add_argument("--nginx", default=shutil.which("nginx") or "/usr/sbin/nginx")
    a = ap.parse_args()
    relaxd = os.path.join(os.path.abspath(a.bin_dir), "relaxd")
    if not os.access(relaxd, os.X_OK):
        print("error: no relaxd in %s" % a.bin_dir, file=sys.stderr)
        return 1
    if not os.access(a.wrk, os.X_OK):
        print("skip: wrk not installed (deploy/packages.sh bench)", file=sys.stderr)
        return SKIP
    if a.smoke:
        conns, duration = [1], 1
    else:
        conns, duration = [int(c) for c in a.connections.split(",")], a.duration
        if not os.access(a.nginx, os.X_OK):
            print("error: nginx not installed (deploy/packages.sh bench)", file=sys.stderr)
            return 1
        if duration < 1 or not conns or min(conns) < 1:
            print("error: --duration and --connections must be positive", file=sys.stderr)
            return 1

    tmp = tempfile.mkdtemp(prefix="bench-server-")
    ok = True
    try:
        with open(MODULE) as f:
            body = json.dumps({"module": json.load(f)}).encode()
        body_path = os.path.join(tmp, "compile.json")
        with open(body_path, "wb") as f:
            f.write(body)
        lua = os.path.join(tmp, "post.lua")
        with open(lua, "w") as f:
            f.write(POST_LUA.format(body=body_path.replace("\\", "\\\\").replace('"', '\\"')))

        _, rport = start_relaxd(relaxd, tmp)
        art, blob = warm_cache(rport, body)
        get_path = "/v1/artifacts/" + art
        get_ep, post_ep = "GET /v1/artifacts/{id}", "POST /v1/compile"
        nport = None
        if not a.smoke:
            _, nport = start_nginx(a.nginx, tmp, art, blob)
            st, nblob = request(nport, "GET", get_path)
            if st != 200 or nblob != blob:
                raise BenchError("nginx does not serve the artifact's bytes (status %d)" % st)

        for c in conns:
            base = None
            if nport:
                n = run_wrk(a.wrk, "http://127.0.0.1:%d%s" % (nport, get_path), c, duration)
                ok &= healthy(n)
                base = n["rps"]
                emit("nginx", get_ep, c, duration, len(blob), n)
            g = run_wrk(a.wrk, "http://127.0.0.1:%d%s" % (rport, get_path), c, duration)
            ok &= healthy(g)
            extra = {"ratio_vs_nginx": round(g["rps"] / base, 3) if base else None}
            emit("relaxd", get_ep, c, duration, len(blob), g, extra)
            if a.smoke:
                continue
            p = run_wrk(a.wrk, "http://127.0.0.1:%d/v1/compile" % rport, c, duration, lua)
            ok &= healthy(p)
            emit("relaxd", post_ep, c, duration, len(body), p)
        if not ok:
            print("error: a run had non-2xx responses, socket errors or no requests",
                  file=sys.stderr)
    except (BenchError, OSError, subprocess.SubprocessError, ValueError, KeyError) as e:
        print("error: %s" % e, file=sys.stderr)
        ok = False
    finally:
        stop_all()
        shutil.rmtree(tmp, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
