#!/usr/bin/python3
"""relaxd's HTTP front under hostile clients: the real daemon on loopback, raw sockets.

usage: test_http_front.py BIN_DIR [SOURCE_DIR]

Each case is one defect a hostile probe found (issue 16, defect 5) plus the start-up
and configuration papercuts of the same front: slow header senders (slowloris) must not
lock healthz out, a burst over max_connections is answered at once (503 or a close)
and logged, ambiguous body framing is a 400 and a close, percent-escapes in a path
never reach another resource, a chunked body is cut off with 413 as soon as it passes
max_body. Every loop is bounded, every socket is on 127.0.0.0/8. Python 3 standard
library only.
"""
import hashlib
import json
import os
import socket
import subprocess
import sys
import threading
import time

import rxtest
from rxtest import case, expect, expect_error

BIN = rxtest.bin_dir()
SRC = rxtest.src_dir()
RELAXD = os.path.join(BIN, "relaxd")
TMP = rxtest.scratch("relaxd-front-")


def connect(port, source="127.0.0.1", timeout=5):
    return socket.create_connection(("127.0.0.1", port), timeout=timeout,
                                    source_address=(source, 0))


def read_all(s, timeout):
    """Everything the server sends until it closes (b"" on a reset); "<open>" appended
    when it is still open after timeout seconds."""
    s.settimeout(timeout)
    out = b""
    try:
        while True:
            c = s.recv(65536)
            if not c:
                return out
            out += c
    except socket.timeout:
        return out + b"<open>"
    except ConnectionResetError:
        return out


def healthz_raw(port, source="127.0.0.1", timeout=2):
    """Status of GET /healthz on a fresh connection, or None (refused, closed, slow)."""
    try:
        s = connect(port, source, timeout)
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        data = read_all(s, timeout)
        s.close()
    except OSError:
        return None
    if data.startswith(b"HTTP/1.1 "):
        return int(data[9:12])
    return None


def body_of(reply):
    return json.loads(reply.split(b"\r\n\r\n", 1)[1].split(b"<open>")[0])


def expect_clean_exit(d):
    rc = d.stop()
    d.reader.join(5)
    expect(rc == 0, "relaxd exit status %s; its log ends:\n%s" % (rc, d.stderr_text()))

def test_quiet_start():
    # no libmicrohttpd warning at every start (it used to complain about the order of
    # its options: an "mhd" warning line before "listening")
    d = rxtest.Relaxd()
    i = next(i for i, o in enumerate(d.lines) if o.get("event") == "listening")
    noise = [o for o in d.lines[:i + 1] if o.get("event") == "mhd" or "raw" in o]
    expect(not noise, "start-up warnings: %s" % noise)
    expect_clean_exit(d)


def test_slowloris_healthz_answers():
    # 300 connections dribbling a header block, one byte at a time: the per-address
    # limit (64) refuses most at once, so another address is served at once; the header
    # deadline (2 s here) closes the rest, so the same address is served again soon.
    d = rxtest.Relaxd(["--header-timeout", "2"])
    socks = []
    t0 = time.time()
    for _ in range(300):
        try:
            s = connect(d.port)
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ")
            socks.append(s)
        except OSError:
            pass
    stop = threading.Event()

    def dribble():
        for _ in range(40):              # bounded: 40 rounds of 0.2 s
            if stop.is_set():
                return
            for s in socks:
                try:
                    s.send(b"a")
                except OSError:
                    pass
            time.sleep(0.2)
    th = threading.Thread(target=dribble, daemon=True)
    th.start()
    try:
        t1 = time.time()
        st = healthz_raw(d.port, source="127.0.0.2")
        expect(st == 200 and time.time() - t1 < 1.5,
               "healthz from another address during the attack: %s" % st)
        # the same address: served once the header deadline has closed the dribblers
        got = None
        while time.time() - t0 < 6 and got != 200:
            got = healthz_raw(d.port, timeout=1)
        expect(got == 200 and time.time() - t0 < 6,
               "healthz from the attackers' address: %s after %.1fs" % (got, time.time() - t0))
        rxtest.wait_for(lambda: d.count(lambda o: o.get("event") == "connection_refused" and
                                        o.get("reason") == "max_connections_per_ip") >= 300 - 64,
                        5, "%d connection_refused lines" % (300 - 64))
        rxtest.wait_for(lambda: d.count(lambda o: o.get("event") == "connection_timeout" and
                                        o.get("phase") == "headers") >= 64,
                        5, "64 connection_timeout lines")
    finally:
        stop.set()
        th.join()
        for s in socks:
            s.close()
    # every dribbler's request is in the access log (status 0, terminated)
    expect_clean_exit(d)


def test_burst_over_max_connections():
    # 8 slots held by idle keep-alive connections, then a burst of 100: each gets a 503
    # (or a close) at once, never a silent wait, and each is logged.
    d = rxtest.Relaxd(["--max-connections", "8", "--max-connections-per-ip", "0"])
    held = []
    for _ in range(8):
        s = connect(d.port)
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        s.settimeout(5)
        expect(s.recv(4096).startswith(b"HTTP/1.1 200"), "held connection not served")
        held.append(s)
    burst = []
    for _ in range(100):
        s = connect(d.port)
        try:
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        except OSError:
            pass
        burst.append(s)
    t0 = time.time()
    answers = [read_all(s, 3) for s in burst]
    dt = time.time() - t0
    for s in burst:
        s.close()
    hung = sum(1 for a in answers if a.endswith(b"<open>"))
    five03 = [a for a in answers if a.startswith(b"HTTP/1.1 503")]
    expect(hung == 0, "%d of 100 connections left unanswered (%.1fs)" % (hung, dt))
    expect(len(five03) >= 90, "only %d got a 503" % len(five03))
    b = body_of(five03[0])
    expect(b["error"]["code"] == "too_many_connections" and b"Retry-After:" in five03[0],
           "503 reply %r" % five03[0][:300])
    rxtest.wait_for(lambda: d.count(lambda o: o.get("event") == "connection_refused" and
                                    o.get("reason") == "max_connections") == 100,
                    5, "100 connection_refused lines")
    for s in held:
        s.close()
    st = rxtest.wait_for(lambda: healthz_raw(d.port) == 200, 5, "a slot after the holders left")
    expect(st, "healthz after")
    expect_clean_exit(d)


def one_exchange(port, raw):
    s = connect(port)
    s.sendall(raw)
    data = read_all(s, 3)
    s.close()
    return data


def test_ambiguous_framing_400_close():
    d = rxtest.Relaxd()
    smuggled = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
    cases = {
        "two Content-Length": b"POST /v1/compile HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n"
                              b"Content-Length: %d\r\n\r\n" % len(smuggled) + smuggled,
        "Content-Length with chunked": b"POST /v1/compile HTTP/1.1\r\nHost: x\r\n"
                                       b"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"
                                       b"0\r\n\r\n" + smuggled,
        "a coding before chunked": b"POST /v1/compile HTTP/1.1\r\nHost: x\r\n"
                                   b"Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n" + smuggled,
        "two Content-Length on GET": b"GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n"
                                     b"Content-Length: 0\r\n\r\n" + smuggled,
    }
    for name, raw in cases.items():
        data = one_exchange(d.port, raw)
        expect(data.startswith(b"HTTP/1.1 400"), "%s: %r" % (name, data[:200]))
        expect(not data.endswith(b"<open>"), "%s: the connection stayed open" % name)
        expect(data.count(b"HTTP/1.1 ") == 1, "%s: the smuggled request was answered" % name)
        expect(b"onnection: close" in data, "%s: no Connection: close" % name)
        expect_error(400, body_of(data), 400, "bad_request")
    # one Content-Length, and chunked alone, still work
    body = b'{"x": 1}'
    data = one_exchange(d.port, b"POST /v1/compile HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                                b"Content-Length: %d\r\n\r\n" % len(body) + body)
    expect(b"unknown key" in data, "single Content-Length: %r" % data[:300])
    data = one_exchange(d.port, b"POST /v1/compile HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                                b"Transfer-Encoding: chunked\r\n\r\n8\r\n" + body +
                        b"\r\n0\r\n\r\n")
    expect(b"unknown key" in data, "chunked: %r" % data[:300])
    expect_clean_exit(d)


def test_escaped_paths_404():
    d = rxtest.Relaxd()
    with open(os.path.join(SRC, "tests", "modules", "valid", "fig03_symbolic_shape.json")) as f:
        mod = json.load(f)
    st, _, b = d.json("POST", "/v1/compile", {"module": mod})
    expect(st == 200, "compile %s %s" % (st, b))
    art = b["artifact"]
    st, _, _ = d.request("GET", "/v1/artifacts/" + art)
    expect(st == 200, "plain fetch %d" % st)
    st, _, _ = d.request("GET", "/v1/artifacts/%s/meta" % art)
    expect(st == 200, "plain meta %d" % st)
    for p in ["/v1/artifacts/%s%%00.txt" % art, "/v1/artifacts/%s%%2fmeta" % art,
              "/v1/artifacts/%s%%2Fmeta" % art, "/v1/artifacts/%s%%00" % art,
              "/v1/artifacts/%%61%s" % art[1:], "/healthz%00", "/v1%2Fartifacts/" + art]:
        data = one_exchange(d.port, b"GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
                            % p.encode())
        expect(data.startswith(b"HTTP/1.1 404"), "%s: %r" % (p, data[:120]))
        expect_error(404, body_of(data), 404, "not_found")
    # a query string is not part of the path
    st, _, _ = d.request("GET", "/v1/benchmarks?limit=1")
    expect(st == 200, "query string %d" % st)
    expect_clean_exit(d)


def test_chunked_cut_off_at_max_body():
    d = rxtest.Relaxd(["--max-body", "4096"])
    s = connect(d.port)
    s.sendall(b"POST /v1/compile HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
              b"X-Request-Id: cut-1\r\n\r\n")
    got, sent = b"", 0
    for i in range(400):                 # 400 KiB at most; the limit is 4 KiB
        try:
            s.sendall(b"400\r\n" + b" " * 1024 + b"\r\n")
            sent += 1
        except OSError:
            break
        s.settimeout(0.02)
        try:
            got += s.recv(4096)
        except socket.timeout:
            pass
        except OSError:
            break
        if got:
            break
    got += read_all(s, 2)
    s.close()
    expect(got.startswith(b"HTTP/1.1 413"), "no 413 while sending: %r after %d KiB" %
           (got[:200], sent))
    expect(sent <= 64, "413 came only after %d KiB (limit 4 KiB)" % sent)
    expect(not got.endswith(b"<open>"), "connection left open")
    expect_error(413, body_of(got), 413, "body_too_large")
    line = d.wait_log(lambda o: o.get("request_id") == "cut-1" and o.get("event") == "request", 5)
    expect(line and line["status"] == 413, "log %s" % line)
    st = healthz_raw(d.port)
    expect(st == 200, "healthz after %s" % st)
    expect_clean_exit(d)


def load_module(rel):
    with open(os.path.join(SRC, "tests", "modules", rel)) as f:
        return json.load(f)


def test_token_under_two_roles_refused():
    tok = "same-token-0123456789abcdef"
    for roles in (["client", "admin"], ["agent", "agent"]):
        path = rxtest.write_config({"tokens": [{"token": tok, "role": r} for r in roles]}, "dup")
        r = subprocess.run([RELAXD, "--config", path, "--listen", "127.0.0.1:0",
                            "--data", os.path.join(TMP, "dup")], capture_output=True, timeout=30)
        err = r.stderr.decode()
        expect(r.returncode == 1 and err.startswith("error: config: tokens[1]") and
               "repeats the token of tokens[0]" in err and roles[0] in err,
               "%s: %d %r" % (roles, r.returncode, err))


def test_limits_agree_with_docs():
    # one JSON depth limit for relaxc and relaxd, and the help text says it
    r = subprocess.run([RELAXD, "--help"], capture_output=True, timeout=30)
    help_text = r.stdout.decode()
    expect("nesting limit (default 512" in help_text, "relaxd --help: %s" % help_text)
    for doc, needle in (("docs/server.md", "`max_json_depth` (512"),
                        ("docs/relax-json.md", "| JSON nesting depth | 512 |")):
        with open(os.path.join(SRC, doc)) as f:
            expect(needle in f.read(), "%s lacks %s" % (doc, needle))
    # a module nested 400 deep (under relaxc's 512) compiles on relaxd too
    mod = load_module("valid/fig03_symbolic_shape.json")
    mod.setdefault("attrs", {})["deep"] = json.loads("[" * 400 + "]" * 400)
    path = os.path.join(TMP, "deep400.json")
    with open(path, "w") as f:
        json.dump(mod, f)
    r = subprocess.run([os.path.join(BIN, "relaxc"), "hash", path], capture_output=True,
                       timeout=60)
    expect(r.returncode == 0, "relaxc hash deep: %s" % r.stderr.decode())
    d = rxtest.Relaxd()
    st, _, b = d.json("POST", "/v1/compile", {"module": mod})
    expect(st == 200 and b["key"] == r.stdout.decode().split()[0],
           "relaxd deep: %s %s" % (st, str(b)[:300]))
    mod["attrs"]["deep"] = json.loads("[" * 600 + "]" * 600)
    st, _, b = d.json("POST", "/v1/compile", {"module": mod})
    expect_error(st, b, 400, "invalid_module")
    expect("512" in json.dumps(b["error"].get("errors")), "depth error %s" % b)
    expect_clean_exit(d)


def test_compile_options_match_relaxc():
    d = rxtest.Relaxd()
    rel = "valid/fig03_symbolic_shape.json"
    mod = load_module(rel)
    relaxc = os.path.join(BIN, "relaxc")
    variants = [({}, []),
                ({"opt_level": 1}, ["--opt-level", "1"]),
                ({"lib": "none"}, ["--lib", "none"]),
                ({"lib": "all", "lib_disable": ["matmul_bias", "matmul"]},
                 ["--lib", "all", "--lib-disable", "matmul_bias", "--lib-disable", "matmul"]),
                ({"opt_level": 3, "disable_passes": ["fuse_ops", "memory_plan"]},
                 ["--opt-level", "3", "--disable-pass", "fuse_ops", "--disable-pass",
                  "memory_plan"])]
    keys = set()
    for opts, flags in variants:
        r = subprocess.run([relaxc, "hash", os.path.join(SRC, "tests", "modules", rel)] + flags,
                           capture_output=True, timeout=60)
        expect(r.returncode == 0, "relaxc hash %s: %s" % (flags, r.stderr.decode()))
        want = r.stdout.decode().split()[0]
        st, _, b = d.json("POST", "/v1/compile", {"module": mod, "options": opts})
        expect(st == 200 and b["key"] == want, "%s: %s %s, relaxc %s" % (opts, st, b, want))
        keys.add(want)
    expect(len(keys) == len(variants), "options did not change the key: %s" % keys)
    for opts, code, needle in [({"bogus": 1}, "bad_request", "known: opt_level, lib"),
                               ({"lib": "some"}, "bad_request", "\"none\""),
                               ({"disable_passes": ["parse"]}, "bad_request", "dce"),
                               ({"disable_passes": "dce"}, "bad_request", "list"),
                               ({"lib_disable": ["nope"]}, "bad_request", "matmul_bias")]:
        st, _, b = d.json("POST", "/v1/compile", {"module": mod, "options": opts})
        expect_error(st, b, 400, code, needle)
    expect_clean_exit(d)


def test_put_artifact():
    client, agent = "client-token-0123456789abcdef", "agent-token-0123456789abcdef"
    d = rxtest.Relaxd(config={"tokens": [{"token": client, "role": "client"},
                                         {"token": agent, "role": "agent"}]})
    rel = os.path.join(SRC, "tests", "modules", "valid", "fig08_sym_params.json")
    rxa = os.path.join(TMP, "put.rxa")
    r = subprocess.run([os.path.join(BIN, "relaxc"), "build", rel, "-o", rxa, "--opt-level", "1"],
                       capture_output=True, timeout=120)
    expect(r.returncode == 0, r.stderr.decode())
    with open(rxa, "rb") as f:
        data = f.read()
    aid = hashlib.sha256(data).hexdigest()
    path = "/v1/artifacts/" + aid
    st, _, b = d.json("PUT", path, data)
    expect_error(st, b, 401, "unauthorized")
    st, _, b = d.json("PUT", path, data, token=agent)
    expect_error(st, b, 403, "forbidden")
    st, _, b = d.json("PUT", path, data[:-1], token=client)
    expect_error(st, b, 400, "hash_mismatch", aid)
    bad = bytearray(data)
    bad[len(bad) // 2] ^= 0xFF               # the CRC no longer matches
    st, _, b = d.json("PUT", "/v1/artifacts/" + hashlib.sha256(bad).hexdigest(), bytes(bad),
                      token=client)
    expect_error(st, b, 400, "invalid_artifact")
    junk = b"not an artifact at all"
    st, _, b = d.json("PUT", "/v1/artifacts/" + hashlib.sha256(junk).hexdigest(), junk,
                      token=client)
    expect_error(st, b, 400, "invalid_artifact")
    st, _, b = d.json("PUT", "/v1/artifacts/" + aid.upper(), data, token=client)
    expect(st == 404, "uppercase id %s" % st)
    st, _, b = d.json("GET", path, token=client)
    expect(st == 404, "stored after failures: %s" % st)
    st, _, b = d.json("PUT", path, data, token=client)
    expect(st == 201 and b == {"artifact": aid, "size": len(data), "stored": True},
           "put %s %s" % (st, b))
    st, _, b = d.json("PUT", path, data, token=client)
    expect(st == 200 and b["stored"] is False, "again %s %s" % (st, b))
    st, _, got = d.request("GET", path, token=agent)
    expect(st == 200 and got == data, "agent fetch %s" % st)
    st, _, meta = d.json("GET", path + "/meta", token=client)
    expect(st == 200 and meta["key"] == aid and meta["target"] == "cpu" and
           meta["metadata"]["target"] == "cpu", "meta %s %s" % (st, meta))
    # an upload never answers a compile: the same module and options compile afresh
    with open(rel) as f:
        mod = json.load(f)
    st, _, b = d.json("POST", "/v1/compile", {"module": mod, "options": {"opt_level": 1}},
                      token=client)
    expect(st == 200 and b["cached"] is False, "compile after upload %s %s" % (st, b))
    # short ids: the ids starting with a prefix
    st, _, b = d.json("GET", "/v1/artifacts?prefix=" + aid[:6], token=client)
    expect(st == 200 and aid in b["artifacts"] and b["more"] is False, "prefix %s %s" % (st, b))
    st, _, b = d.json("GET", "/v1/artifacts?prefix=", token=client)
    expect_error(st, b, 400, "bad_request")
    st, _, b = d.json("GET", "/v1/artifacts?prefix=XYZ", token=client)
    expect_error(st, b, 400, "bad_request")
    expect_clean_exit(d)


def main():
    if not os.access(RELAXD, os.X_OK):
        print("missing %s" % RELAXD)
        print("0 passed, 1 failed")
        return 1
    t0 = time.time()
    for fn in [test_quiet_start, test_slowloris_healthz_answers, test_burst_over_max_connections,
               test_ambiguous_framing_400_close, test_escaped_paths_404,
               test_chunked_cut_off_at_max_body, test_token_under_two_roles_refused,
               test_limits_agree_with_docs, test_compile_options_match_relaxc,
               test_put_artifact]:
        case(fn)
    return rxtest.summary(t0)


if __name__ == "__main__":
    sys.exit(main())
