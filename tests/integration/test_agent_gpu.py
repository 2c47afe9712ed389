#!/usr/bin/python3
"""Integration tests of GPU benchmark jobs: the real relaxd, real relax-agent processes and
the real device drivers of this machine (Mesa's lavapipe for Vulkan, PoCL for OpenCL).

usage: test_agent_gpu.py BIN_DIR [SOURCE_DIR]

Agents: "gpu-a" probes its devices as any agent does (it must find lavapipe and PoCL);
"cpu-b" runs with the Vulkan and OpenCL loaders pointed nowhere (RX_VULKAN_LIB,
RX_OPENCL_LIB), as on a host without drivers, and must offer cpu only.

Cases: registration (gpu-a offers vulkan and opencl with their devices' names and
limits in GET /v1/agents; cpu-b offers cpu only and logs why each kind is missing); a
--target the agent cannot run (exit 1 naming the reason); a registration whose device
names a target the agent does not offer (400); a vulkan job while only cpu-b is
registered (never dispatched to it: queue_timeout naming the target and cpu-b); `relax
bench M.json --target vulkan` end to end with both agents up (runs on gpu-a, the result
names the Vulkan device, the check against NumPy passes, the agent's --threads applies
to a job that names none, cpu-b ran nothing); the same for opencl through the API;
`relax agents` listing the devices; the Python client compiling for
vulkan,max_threads=64 and submitting the kind; "cuda-c", with tests/unit/runtime/mock_cuda.c
as its CUDA driver ($RX_MOCK_CUDA; this machine has no NVIDIA driver) and mock_cublas.c as
cuBLAS ($RX_MOCK_CUBLAS), registers `cuda`
with the device's name, compute capability and memory, and runs a cuda benchmark job
(the mock runs no PTX: the job's device and status are checked, no numbers), while
cpu-b logs why it has no cuda ("no CUDA driver (cannot load ...)").

One line per case, then "N passed, M failed"; exit 1 on any failure. Python 3 standard
library and NumPy (/usr/bin/python3).
"""
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

import rxtest
from rxtest import Proc, case, expect

BIN = rxtest.bin_dir()
TMP = rxtest.scratch("relax-agent-gpu-it-")
T0 = time.time()
D = 32
NOWHERE = {"RX_VULKAN_LIB": "/nonexistent/libvulkan.so.1", "RX_OPENCL_LIB": "/nonexistent/libOpenCL.so.1",
           "RX_CUDA_LIB": "/nonexistent/libcuda.so.1"}


def module():
    """main(x: (n, D) f32, w: (D, D) f32) = relu(x @ w), relax-json v1."""
    return rxtest.relu_matmul_module(D, "agent_gpu_it")


class Agent(Proc):
    def __init__(self, url, name, env=None, extra=()):
        cache = tempfile.mkdtemp(prefix="cache-%s-" % name, dir=TMP)
        super().__init__([os.path.join(BIN, "relax-agent"), "--server", url, "--name", name,
                          "--cache-dir", cache, "--no-auto-labels", *extra], env)
        self.name = name

    def registered(self, timeout=60):
        line = self.wait_log(lambda o: o.get("event") == "registered", timeout)
        expect(line, "agent %s did not register: %s" % (self.name, self.tail()))

    def devices_line(self):
        return self.wait_log(lambda o: o.get("event") == "devices", 60)

    def jobs_started(self):
        return self.count(lambda o: o.get("event") == "job_start")


S = {}


def agents():
    st, _, body = S["d"].json("GET", "/v1/agents")
    expect(st == 200, "agents: %s %s" % (st, body))
    return {a["name"]: a for a in body["agents"]}


def relax(*args, timeout=300):
    e = {k: v for k, v in os.environ.items() if k not in ("RELAX_SERVER", "RELAX_TOKEN")}
    e["RELAX_SERVER"] = S["d"].url
    return subprocess.run([os.path.join(BIN, "relax"), *args], capture_output=True, text=True,
                          timeout=timeout, env=e)


def wait_job(jid, timeout):
    end = time.time() + timeout
    while True:
        st, _, j = S["d"].json("GET", "/v1/benchmarks/" + jid)
        expect(st == 200, "job %s: %s" % (jid, j))
        if j["status"] in ("done", "failed", "cancelled"):
            return j
        expect(time.time() < end, "job %s still %s after %d s" % (jid, j["status"], timeout))
        time.sleep(0.05)


def compile_for(target):
    st, _, body = S["d"].json("POST", "/v1/compile", {"module": module(), "target": target})
    expect(st == 200, "compile %s: %s %s" % (target, st, body))
    return body["artifact"]


@case
def test_cpu_only_agent():
    S["d"] = rxtest.Relaxd(config={"agent_heartbeat_ms": 200, "agent_lease_ms": 3000,
                                   "agent_poll_ms": 3000})
    S["b"] = b = Agent(S["d"].url, "cpu-b", env=NOWHERE)
    b.registered()
    line = b.devices_line()
    expect(line and line["devices"] == [] and "no Vulkan device" in line["absent"]["vulkan"]
           and "/nonexistent/libvulkan.so.1" in line["absent"]["vulkan"]
           and "no OpenCL device" in line["absent"]["opencl"]
           and "no CUDA driver (cannot load /nonexistent/libcuda.so.1" in line["absent"]["cuda"],
           "devices log %s" % line)
    a = agents()["cpu-b"]
    expect(a["targets"] == ["cpu"] and a["devices"] == [], "cpu-b %s" % a)


@case
def test_target_refused_without_device():
    p = subprocess.run([os.path.join(BIN, "relax-agent"), "--server", S["d"].url, "--name", "nope",
                        "--target", "vulkan", "--cache-dir", os.path.join(TMP, "nope")],
                       capture_output=True, text=True, timeout=60, env={**os.environ, **NOWHERE})
    expect(p.returncode == 1 and "error: this relax-agent cannot run target vulkan: no Vulkan device"
           in p.stderr, "exit %d: %s" % (p.returncode, p.stderr[-600:]))
    p = subprocess.run([os.path.join(BIN, "relax-agent"), "--server", S["d"].url, "--name", "nope",
                        "--target", "tpu", "--cache-dir", os.path.join(TMP, "nope")],
                       capture_output=True, text=True, timeout=60)
    expect(p.returncode == 1 and "unknown target tpu" in p.stderr, "tpu: %s" % p.stderr[-600:])
    expect("nope" not in agents(), "a refused agent registered")


@case
def test_registration_devices_checked():
    body = {"name": "fake", "targets": ["cpu"], "devices": [{"target": "vulkan", "id": 0, "name": "x"}]}
    st, _, r = S["d"].json("POST", "/v1/agents/register", body)
    rxtest.expect_error(st, r, 400, "bad_request", "devices[0].target")
    body["devices"] = [{"target": "cpu", "id": -1, "name": "x"}]
    st, _, r = S["d"].json("POST", "/v1/agents/register", body)
    rxtest.expect_error(st, r, 400, "bad_request", "devices[0].id")


@case
def test_vulkan_job_not_given_to_cpu_agent():
    S["art_vk"] = art = compile_for("vulkan")
    st, _, r = S["d"].json("POST", "/v1/benchmarks", {"artifact": art, "target": "vulkan",
                                                     "shapes": {"n": 4}, "queue_timeout_s": 2})
    expect(st == 202, "submit %s %s" % (st, r))
    j = wait_job(r["job"], 30)
    expect(j["status"] == "failed" and j["error"]["code"] == "queue_timeout" and j["attempts"] == 0
           and "target vulkan" in j["error"]["message"] and "cpu-b [cpu" in j["error"]["message"],
           "job %s" % j)
    expect(S["b"].jobs_started() == 0, "cpu-b started a job: %s" % S["b"].tail())


@case
def test_gpu_agent_registers_devices():
    S["a"] = a = Agent(S["d"].url, "gpu-a", extra=["--threads", "1"])
    a.registered()
    info = agents()["gpu-a"]
    expect("vulkan" in info["targets"] and "opencl" in info["targets"] and info["targets"][0] == "cpu",
           "gpu-a targets %s" % info["targets"])
    devs = {d["target"]: d for d in info["devices"]}
    vk, cl = devs.get("vulkan", {}), devs.get("opencl", {})
    expect("llvmpipe" in vk.get("name", "") and vk["api"] == "Vulkan" and vk["id"] == 0 and
           vk["max_threads"] >= 64 and vk["max_alloc_bytes"] > 0 and vk["max_push_bytes"] >= 128,
           "vulkan device %s" % vk)
    expect(cl.get("api") == "OpenCL" and cl["name"] and cl["max_local_bytes"] > 0 and
           "Portable Computing Language" in cl["platform"], "opencl device %s" % cl)
    p = relax("agents")
    expect(p.returncode == 0 and "vulkan device 0: llvmpipe" in p.stdout and
           "opencl device 0: " in p.stdout, "relax agents: %s %s" % (p.stdout, p.stderr))


def expect_data():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((24, D)).astype(np.float32)
    w = rng.standard_normal((D, D)).astype(np.float32)
    paths = []
    for n, arr in (("x.npy", x), ("w.npy", w), ("want.npy", np.maximum(x @ w, 0))):
        paths.append(os.path.join(TMP, n))
        np.save(paths[-1], arr)
    return paths


@case
def test_relax_bench_target_vulkan():
    mpath = os.path.join(TMP, "m.json")
    with open(mpath, "w") as f:
        json.dump(module(), f)
    x, w, want = expect_data()
    p = relax("bench", mpath, "--target", "vulkan", "--in", "x=" + x, "--in", "w=" + w,
              "--expect", want, "--rtol", "1e-4", "--atol", "1e-4", "--repeat", "3", "--json")
    expect(p.returncode == 0, "bench: %s %s" % (p.stdout[-800:], p.stderr[-800:]))
    j = json.loads(p.stdout)
    r = j["result"]
    expect(j["status"] == "done" and j["target"] == "vulkan" and j["agent"] == "gpu-a" and
           j["artifact"] == S["art_vk"], "job %s" % j)
    expect(r["check"] == "passed" and r["max_abs_error"] <= 1e-3 and r["repeat"] == 3 and
           r["median_ms"] > 0 and r["kernels"] >= 1, "result %s" % r)
    expect(r["device"].startswith("Vulkan") and "llvmpipe" in r["device"], "device %r" % r["device"])
    expect(r["threads"] == 1, "the agent's --threads 1 for a job without threads: %s" % r)
    expect(S["b"].jobs_started() == 0, "cpu-b started a job")


@case
def test_python_client_target_with_options():
    sys.path.insert(0, os.path.join(rxtest.src_dir(), "clients", "python"))
    import relaxd_client
    cl = relaxd_client.Client(S["d"].url, timeout=300)
    j = cl.bench(module(), target="vulkan,max_threads=64", shapes={"n": 5}, repeat=2)
    expect(j["status"] == "done" and j["target"] == "vulkan" and j["agent"] == "gpu-a" and
           j["result"]["device"].startswith("Vulkan"), "python bench %s" % j)


@case
def test_opencl_job():
    art = compile_for("opencl")
    st, _, r = S["d"].json("POST", "/v1/benchmarks", {"artifact": art, "target": "opencl",
                                                     "shapes": {"n": 16}, "repeat": 2})
    expect(st == 202, "submit %s %s" % (st, r))
    j = wait_job(r["job"], 240)
    expect(j["status"] == "done" and j["agent"] == "gpu-a" and
           j["result"]["device"].startswith("OpenCL"), "job %s" % j)
    expect(S["b"].jobs_started() == 0, "cpu-b started a job")


@case
def test_cuda_agent_mock_driver():
    mock, blas = os.environ.get("RX_MOCK_CUDA"), os.environ.get("RX_MOCK_CUBLAS")
    if not mock or not blas or not os.path.exists(mock):
        print("SKIP cuda agent: $RX_MOCK_CUDA, $RX_MOCK_CUBLAS not set (ctest sets them)")
        return
    env = dict(NOWHERE, RX_CUDA_LIB=mock, RX_CUBLAS_LIB=blas)  # x @ w is a cuBLAS call
    S["c"] = c = Agent(S["d"].url, "cuda-c", env=env, extra=["--target", "cuda"])
    c.registered()
    info = agents()["cuda-c"]
    cu = {d["target"]: d for d in info["devices"]}.get("cuda", {})
    expect("cuda" in info["targets"] and cu.get("name") == "Mock GPU" and cu.get("api") == "CUDA"
           and cu.get("compute_capability") == "9.0" and cu.get("global_bytes") == 64 << 20
           and cu.get("max_threads") == 1024, "cuda-c %s" % info)
    st, _, body = S["d"].json("POST", "/v1/compile", {"module": module(), "target": "cuda"})
    if st != 200 and "NVRTC" in json.dumps(body):
        print("SKIP cuda job: relaxd has no NVRTC here (%s)" % body)
        return
    expect(st == 200, "compile cuda: %s %s" % (st, body))
    st, _, r = S["d"].json("POST", "/v1/benchmarks", {"artifact": body["artifact"], "target": "cuda",
                                                     "shapes": {"n": 16}, "repeat": 2})
    expect(st == 202, "submit %s %s" % (st, r))
    j = wait_job(r["job"], 120)
    expect(j["status"] == "done" and j["agent"] == "cuda-c" and
           j["result"]["device"] == "CUDA: Mock GPU", "cuda job %s" % j)


for k in ("a", "b", "c"):
    if k in S:
        rc = S[k].stop()
        rxtest.record("agent_%s_exit" % k, rc == 0, "exit %s" % rc)
if "d" in S:
    S["d"].stop()
sys.exit(rxtest.summary(T0))
