#!/usr/bin/python3
"""Reproducible artifacts end to end: the real relaxd and relaxc give the same bytes.

usage: test_repro.py BIN_DIR [SOURCE_DIR]

For a module with kernels (tests/modules/valid/fig03_symbolic_shape.json) at opt levels
0 and 2:
  * `relaxc build` twice, with TMPDIR (where the C compiler's private directory goes) in
    two directories of different name lengths and from two working directories: the
    files are byte-identical;
  * relaxd's POST /v1/compile with the same options: the artifact id is the SHA-256 of
    that file, and the fetched bytes are the file's; a second daemon with another data
    directory (so another C compiler directory) gives the same id;
  * the compile response carries the pass times ("passes": name and ms, in pipeline
    order; a cache hit carries none), the compile_end log line carries them too, and
    `relaxc build --time-passes` prints them on stderr as one JSON line, while the
    artifact's metadata lists the pass names only.
One line per case ("ok NAME" / "FAIL NAME: why"), then "N passed, M failed"; exit 1 on
any failure. Python 3 standard library only.
"""
import hashlib
import json
import os
import subprocess
import sys
import tempfile

import rxtest
from rxtest import case, expect

BIN = rxtest.bin_dir()
SRC = rxtest.src_dir()
RELAXC = os.path.join(BIN, "relaxc")
MODULE = os.path.join(SRC, "tests", "modules", "valid", "fig03_symbolic_shape.json")
TMP = rxtest.scratch("rxrepro-")
PIPELINE = ["deduce", "simplify", "canonicalize", "dce", "library_lower", "legalize",
            "dce_post", "analysis", "fuse_ops", "fuse_tir", "lift_workspace", "reshape_view",
            "specialize", "schedule_matvec", "schedule_moves", "schedule", "lower_vm", "codegen"]
MIN_OPT = {"simplify": 1, "canonicalize": 1, "dce": 1, "library_lower": 2, "fuse_ops": 2,
           "fuse_tir": 2, "lift_workspace": 2, "specialize": 3, "schedule_matvec": 1,
           "schedule": 1}
DAEMONS = []
BUILT = {}  # opt level -> the bytes relaxc wrote


def passes_at(level):
    return [p for p in PIPELINE if MIN_OPT.get(p, 0) <= level]


def metadata(data):
    """The METADATA JSON of artifact bytes (docs/artifact.md: header, section table)."""
    nsec = int.from_bytes(data[16:20], "little")
    for i in range(nsec):
        e = data[40 + 24 * i:64 + 24 * i]
        if int.from_bytes(e[0:4], "little") == 1:
            off, size = int.from_bytes(e[8:16], "little"), int.from_bytes(e[16:24], "little")
            return json.loads(data[off:off + size])
    raise AssertionError("no METADATA section")


def relaxc_build(level, tmpdir, cwd, extra=()):
    out = os.path.join(tempfile.mkdtemp(dir=TMP), "m.rxa")
    env = dict(os.environ, TMPDIR=tmpdir)
    r = subprocess.run([RELAXC, "build", MODULE, "--opt-level", str(level), "-o", out] +
                       list(extra), capture_output=True, timeout=300, env=env, cwd=cwd)
    expect(r.returncode == 0, "relaxc build: %s" % r.stderr.decode()[-500:])
    with open(out, "rb") as f:
        return f.read(), r.stderr.decode()


def test_relaxc_twice_identical():
    short = tempfile.mkdtemp(prefix="t", dir=TMP)
    long_ = tempfile.mkdtemp(prefix="a-much-longer-temporary-directory-name-", dir=TMP)
    for level in (0, 2):
        a, _ = relaxc_build(level, short, TMP)
        b, err = relaxc_build(level, long_, SRC, ["--time-passes"])
        expect(a == b, "O%d: two builds differ (%d and %d bytes)" % (level, len(a), len(b)))
        BUILT[level] = a
        meta = metadata(a)
        expect(meta["passes"] == passes_at(level), "O%d metadata passes %s" % (level, meta["passes"]))
        timed = json.loads(err.strip().splitlines()[-1])
        names = [p["name"] for p in timed["passes"]]
        expect(names == passes_at(level) and all(p["ms"] >= 0 for p in timed["passes"]) and
               timed["total_ms"] >= 0, "--time-passes: %s" % err[-300:])


def test_relaxd_id_is_relaxc_sha256():
    expect(BUILT, "no relaxc builds to compare with")
    with open(MODULE) as f:
        module = json.load(f)
    d = DAEMONS[0]
    for level in (0, 2):
        start = len(d.lines)
        st, _, body = d.json("POST", "/v1/compile", {"module": module,
                                                     "options": {"opt_level": level}})
        expect(st == 200 and body["cached"] is False, "compile O%d: %s %s" % (level, st, body))
        want = hashlib.sha256(BUILT[level]).hexdigest()
        expect(body["artifact"] == want, "O%d: relaxd id %s, sha256(relaxc build) %s" %
               (level, body["artifact"], want))
        st, _, data = d.request("GET", "/v1/artifacts/" + body["artifact"])
        expect(st == 200 and data == BUILT[level], "fetched bytes differ from relaxc's")
        names = [p["name"] for p in body["passes"]]
        expect(names == passes_at(level) and
               all(isinstance(p["ms"], (int, float)) and p["ms"] >= 0 for p in body["passes"]),
               "passes in the response: %s" % body["passes"])
        line = d.wait_log(lambda o: o.get("event") == "compile_end", 10, start)
        expect(line and [p["name"] for p in line["passes"]] == names, "compile_end log %s" % line)
        st, _, hit = d.json("POST", "/v1/compile", {"module": module,
                                                    "options": {"opt_level": level}})
        expect(st == 200 and hit["cached"] is True and "passes" not in hit and
               hit["artifact"] == body["artifact"], "hit: %s" % hit)


def test_second_server_same_id():
    with open(MODULE) as f:
        module = json.load(f)
    data = tempfile.mkdtemp(prefix="another-data-directory-of-another-length-", dir=TMP)
    d2 = rxtest.Relaxd(data=data)
    DAEMONS.append(d2)
    st, _, body = d2.json("POST", "/v1/compile", {"module": module})
    expect(st == 200 and body["cached"] is False, "compile: %s %s" % (st, body))
    want = hashlib.sha256(BUILT[2]).hexdigest()
    expect(body["artifact"] == want, "second server's id %s, want %s" % (body["artifact"], want))


def main():
    for p in (os.path.join(BIN, "relaxd"), RELAXC):
        if not os.access(p, os.X_OK):
            print("missing %s" % p)
            print("0 passed, 1 failed")
            return 1
    DAEMONS.append(rxtest.Relaxd())
    for fn in (test_relaxc_twice_identical, test_relaxd_id_is_relaxc_sha256,
               test_second_server_same_id):
        case(fn)
    for i, d in enumerate(DAEMONS):
        rc = d.stop()
        rxtest.record("daemon_%d_exit" % i, rc == 0, "exit %s" % rc)
    return rxtest.summary()


if __name__ == "__main__":
    sys.exit(main())
