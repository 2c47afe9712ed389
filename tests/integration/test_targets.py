#!/usr/bin/python3
"""Targets end to end: GET /v1/targets, the compile request's "target", relaxc --target.

usage: test_targets.py BIN_DIR [SOURCE_DIR]

BIN_DIR holds relaxd and relaxc (the build's bin/). The daemon gets a fresh data
directory on 127.0.0.1 and an ephemeral port. One line per case, then "N passed, M
failed"; exit 1 on any failure. Python 3 standard library only.
"""
import json
import os
import re
import subprocess
import sys

import rxtest
from rxtest import case, expect, expect_error

BIN = rxtest.bin_dir()
SRC = rxtest.src_dir()
RELAXC = os.path.join(BIN, "relaxc")
FIG03 = os.path.join(SRC, "tests", "modules", "valid", "fig03_symbolic_shape.json")
TMP = rxtest.scratch("relaxd-targets-")
D = None


def module():
    with open(FIG03) as f:
        return json.load(f)


def relaxc(*args):
    return subprocess.run([RELAXC] + list(args), capture_output=True, text=True, timeout=300)


def targets():
    st, _, b = D.json("GET", "/v1/targets")
    expect(st == 200, "targets %s %s" % (st, b))
    return {t["kind"]: t for t in b["targets"]}


def test_list():
    t = targets()
    expect(sorted(t) == ["cpu", "cuda", "opencl", "vulkan"], "kinds %s" % list(t))
    expect(t["cpu"]["available"] is True and t["cpu"]["options"] == [], "cpu %s" % t["cpu"])
    opts = {o["name"]: o for o in t["opencl"]["options"]}
    expect(opts["max_threads"]["default"] == 256 and opts["max_threads"]["max"] == 4096 and
           opts["max_threads"]["power_of_two"] is True and opts["max_local_bytes"]["default"] == 32768
           and opts["clblast"]["default"] == 1,
           "opencl options %s" % opts)
    expect({o["name"] for o in t["vulkan"]["options"]} ==
           {"max_threads", "max_local_bytes", "max_push_bytes", "tile"}, "vulkan %s" % t["vulkan"])
    arch = t["cuda"]["options"][0]
    expect(arch["name"] == "arch" and arch["type"] == "string" and arch["default"] == "sm_80",
           "cuda arch %s" % arch)
    for k, v in t.items():  # every kind says whether it compiles here, and why not
        expect(isinstance(v["available"], bool) and (v["available"] or k in v.get("reason", "")),
               "%s availability %s" % (k, v))


def test_compile_targets():
    mod = module()
    st, _, b = D.json("POST", "/v1/compile", {"module": mod, "target": "opencl,tile=3"})
    expect_error(st, b, 400, "bad_request", "opencl option tile=3 is not a power of two")
    st, _, b = D.json("POST", "/v1/compile", {"module": mod, "target": "opencl,warp=32"})
    expect_error(st, b, 400, "bad_request", "unknown opencl option \"warp\"")
    st, _, b = D.json("POST", "/v1/compile", {"module": mod, "target": "tpu"})
    expect_error(st, b, 400, "unsupported_target", "unknown target tpu")
    st, _, b = D.json("POST", "/v1/compile", {"module": mod, "target": 3})
    expect_error(st, b, 400, "bad_request")
    t = targets()
    for kind in ("opencl", "vulkan", "cuda"):
        if not t[kind]["available"]:
            st, _, b = D.json("POST", "/v1/compile", {"module": mod, "target": kind})
            expect_error(st, b, 400, "unsupported_target", t[kind]["reason"])
    st, _, b = D.json("POST", "/v1/compile", {"module": mod, "target": "cpu"})
    expect(st == 200 and b["target"] == "cpu", "cpu %s %s" % (st, b))
    st, _, m = D.json("GET", "/v1/artifacts/%s/meta" % b["artifact"])
    expect(st == 200 and m["target"] == "cpu" and m["metadata"]["target"] == "cpu" and
           m["metadata"]["target_options"] == {}, "meta %s" % m)
    # the server's key is relaxc's, salted with the normalized target
    r = relaxc("hash", FIG03, "--target", "cpu")
    expect(r.returncode == 0 and r.stdout.strip() == b["key"], "hash %s %s" % (r.stdout, b["key"]))
    # the same module for opencl and vulkan: other keys and artifacts, each built once,
    # then cached
    c1 = compiled_once(mod, t, "opencl", "max_threads", 256)
    st, _, b2 = D.json("POST", "/v1/compile", {"module": mod, "target": "cpu"})
    expect(st == 200 and b2["cached"] is True and b2["artifact"] == b["artifact"], "cpu again %s" % b2)
    v1 = compiled_once(mod, t, "vulkan", "max_push_bytes", 128)
    expect(len({v1["key"], c1["key"], b["key"]}) == 3 and
           len({v1["artifact"], c1["artifact"], b["artifact"]}) == 3, "keys %s %s %s" % (v1, c1, b))


def compiled_once(mod, t, kind, opt, default):
    """POST /v1/compile of mod for kind twice: built, then cached; its metadata and key."""
    expect(t[kind]["available"] is True, "%s %s" % (kind, t[kind]))
    st, _, c1 = D.json("POST", "/v1/compile", {"module": mod, "target": kind})
    expect(st == 200 and c1["target"] == kind and c1["cached"] is False, "%s %s %s" % (kind, st, c1))
    st, _, c2 = D.json("POST", "/v1/compile", {"module": mod, "target": kind})
    expect(st == 200 and c2["cached"] is True and c2["artifact"] == c1["artifact"], "again %s" % c2)
    st, _, m = D.json("GET", "/v1/artifacts/%s/meta" % c1["artifact"])
    expect(st == 200 and m["metadata"]["target"] == kind and
           m["metadata"]["target_options"][opt] == default, "%s meta %s" % (kind, m))
    r = relaxc("hash", FIG03, "--target", kind)
    expect(r.returncode == 0 and r.stdout.strip() == c1["key"], "hash %s %s" % (r.stdout, c1["key"]))
    return c1


def test_relaxc_target():
    keys = {}
    for t in ("cpu", "opencl", "opencl,max_threads=256,tile=16", "opencl,tile=8", "vulkan",
              "cuda,arch=sm_90"):
        r = relaxc("hash", FIG03, "--target", t)
        expect(r.returncode == 0 and re.fullmatch(r"[0-9a-f]{64}", r.stdout.strip()),
               "hash %s: %s %s" % (t, r.stdout, r.stderr))
        keys[t] = r.stdout.strip()
    expect(keys["opencl"] == keys["opencl,max_threads=256,tile=16"], "default spelled out")
    expect(len({keys[t] for t in keys}) == 5, "keys %s" % keys)
    r = relaxc("hash", FIG03, "--target", "vulkan,max_threads=2048")
    expect(r.returncode == 1 and "vulkan option max_threads=2048 is out of range (1..1024)" in r.stderr,
           "bad option %s %s" % (r.returncode, r.stderr))
    t = targets()
    out = os.path.join(TMP, "x.rxa")
    for kind in ("opencl", "vulkan", "cuda"):
        if not t[kind]["available"]:
            r = relaxc("build", FIG03, "--target", kind, "-o", out)
            expect(r.returncode == 1 and "target %s is not supported yet" % kind in r.stderr,
                   "build %s: %s %s" % (kind, r.returncode, r.stderr))


def test_cuda():
    """With NVRTC (the CUDA toolkit on this host) relaxd compiles for cuda: PTX in the
    artifact's KERNELS_PTX section; a relaxd whose NVRTC cannot be loaded lists cuda as
    unavailable with the reason and refuses it, and still compiles for cpu."""
    t = targets()
    if not t["cuda"]["available"]:
        print("SKIP cuda compile: %s" % t["cuda"]["reason"])
    else:
        st, _, b = D.json("POST", "/v1/compile", {"module": module(), "target": "cuda,arch=sm_90"})
        expect(st == 200 and b["target"] == "cuda,arch=sm_90", "cuda compile %s %s" % (st, b))
        st, _, m = D.json("GET", "/v1/artifacts/%s/meta" % b.get("artifact"))
        expect(st == 200 and m["metadata"]["target_options"]["arch"] == "sm_90", "cuda meta %s" % m)
        st, _, raw = D.request("GET", "/v1/artifacts/%s" % b.get("artifact"))
        expect(st == 200 and b".entry rxk_" in raw and b".target sm_90" in raw,
               "cuda artifact holds PTX for sm_90 (%s, %d bytes)" % (st, len(raw or b"")))
    env = dict(os.environ, RX_NVRTC_LIB=os.path.join(TMP, "no-libnvrtc.so"))
    d2 = rxtest.Relaxd(env=env)
    try:
        st, _, b = d2.json("GET", "/v1/targets")
        cu = {x["kind"]: x for x in b["targets"]}["cuda"]
        expect(st == 200 and cu["available"] is False and "no NVRTC for cuda" in cu["reason"],
               "cuda without NVRTC %s" % cu)
        st, _, b = d2.json("POST", "/v1/compile", {"module": module(), "target": "cuda"})
        expect_error(st, b, 400, "unsupported_target", "no NVRTC for cuda")
        st, _, b = d2.json("POST", "/v1/compile", {"module": module(), "target": "cpu"})
        expect(st == 200, "cpu without NVRTC %s %s" % (st, b))
    finally:
        rc = d2.stop()
        expect(rc == 0, "second relaxd exit %s" % rc)


def main():
    global D
    D = rxtest.Relaxd()
    for fn in [test_list, test_compile_targets, test_relaxc_target, test_cuda]:
        case(fn)
    rc = D.stop()
    rxtest.record("daemon_exit", rc == 0, "exit %s" % rc)
    return rxtest.summary()


if __name__ == "__main__":
    sys.exit(main())
