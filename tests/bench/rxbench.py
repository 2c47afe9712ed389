"""rxbench.py — helpers shared by the Python benchmarks of tests/bench.

* run(argv): a program without a shell; its stdout, or exit with its stderr.
* rxa_metadata(path): the METADATA section of an .rxa (docs/artifact.md) as a dict.
* llama_module(cfg): a gen_llama.py module (tests/models) for a config dict.
* table(headers, rows): a plain-text table, columns right-aligned but the first.
* relax_bench(...): relax-run --bench on given .npy inputs; the JSON line as a dict.
* median_ms(fn, repeat, warmup): the median wall time of a Python callable, in ms.
* finish(who, lines, failed): prints the JSON lines; exits 1 naming the failures.
* vs_ort_args(ap): the options of the benchmarks run beside ONNX Runtime (--quick,
  --repeat, --threads, --relaxc, --relax-run, --ort-dir); have_ort(dir).
* ort_run(...): one ONNX model timed by ONNX Runtime (bench_vs_ort_run.js); the JSON
  line as a dict and the first output as an array.
"""
import json
import os
import statistics
import struct
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "models"))
import gen_llama  # noqa: E402

RXA_MAGIC = b"\x89RXA\r\n\x1a\n"
RXA_METADATA = 1


def run(argv, timeout=1800, what=None):
    """Runs argv (a list, no shell); returns stdout; exits with its stderr on failure."""
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=timeout, check=False)
    if p.returncode != 0:
        sys.exit("%s: %s failed (exit %d):\n%s" % (what or os.path.basename(sys.argv[0]),
                                                   " ".join(argv[:3]), p.returncode, p.stderr))
    return p.stdout


def call(argv, env=None):
    """Runs argv (a list, no shell); returns stdout; raises RuntimeError with the tail of
    its stderr on failure (for scripts that record a failed case and go on)."""
    p = subprocess.run(argv, capture_output=True, text=True, env=env)
    if p.returncode:
        raise RuntimeError("%s failed:\n%s" % (" ".join(argv), p.stderr[-1500:]))
    return p.stdout


def rxa_metadata(path):
    """The METADATA JSON of the artifact at path (header and section table as in
    docs/artifact.md); ValueError when the file is not an artifact or has none."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != RXA_MAGIC or len(data) < 40:
        raise ValueError("%s: not an .rxa artifact" % path)
    (nsec,) = struct.unpack_from("<I", data, 16)
    for i in range(nsec):
        kind, _flags, off, size = struct.unpack_from("<IIQQ", data, 40 + 24 * i)
        if kind == RXA_METADATA:
            return json.loads(data[off:off + size].decode("utf-8"))
    raise ValueError("%s: no METADATA section" % path)


def llama_config(**over):
    """A gen_llama.py config: the tiny preset, eps 1e-5, f32, with overrides."""
    cfg = dict(gen_llama.PRESETS["tiny"], eps=1e-5, dtype="f32")
    cfg.update(over)
    if "head_dim" not in over and ("hidden" in over or "heads" in over):
        cfg["head_dim"] = cfg["hidden"] // cfg["heads"]
    cfg.setdefault("name", "llama_L%d_H%d_A%d_D%d_I%d" % (
        cfg["layers"], cfg["hidden"], cfg["heads"], cfg["head_dim"], cfg["intermediate"]))
    return cfg


def llama_module(cfg):
    """The relax-json module (dict) gen_llama.py writes for cfg."""
    return gen_llama.module(cfg)


def table(headers, rows):
    """Rows (lists of values) under headers as aligned text lines."""
    cells = [[str(h) for h in headers]] + [["" if v is None else str(v) for v in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    out = []
    for k, r in enumerate(cells):
        out.append("  ".join(r[i].ljust(widths[i]) if i == 0 else r[i].rjust(widths[i])
                             for i in range(len(r))).rstrip())
        if k == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out)


def relax_bench(relax_run, rxa, fn, inputs, repeat, number=1, warmup=1, out_dir=None):
    """relax-run --bench of fn on inputs ({param: .npy path}); the JSON line as a dict.
    With out_dir, the outputs of the first call are written there too."""
    argv = [relax_run, rxa, "--fn", fn, "--bench", "--repeat", str(repeat), "--number",
            str(number), "--warmup", str(warmup)]
    for name, path in inputs.items():
        argv += ["--in", "%s=%s" % (name, path)]
    if out_dir:
        argv += ["--out-dir", out_dir]
    out = run(argv)
    return json.loads(out.strip().splitlines()[-1])


def median_ms(fn, repeat, warmup=2):
    """The median of `repeat` timed calls of fn() after `warmup` untimed ones (allocator,
    thread pools), in milliseconds."""
    for _ in range(warmup):
        fn()

    def once():
        t0 = time.perf_counter()
        fn()
        return (time.perf_counter() - t0) * 1e3

    return statistics.median([once() for _ in range(repeat)])


def finish(who, lines, failed, sep="; "):
    """Prints each dict of lines as one JSON line, then exits with the failures (a
    list of messages) when there are any; returns 0 otherwise."""
    for ln in lines:
        print(json.dumps(ln), flush=True)
    if failed:
        sys.exit("%s: %s" % (who, sep.join(failed)))
    return 0


def read_outputs(out_dir):
    """out0.npy, out1.npy, ... of out_dir as a list of arrays."""
    import numpy as np
    outs, i = [], 0
    while os.path.exists(os.path.join(out_dir, "out%d.npy" % i)):
        outs.append(np.load(os.path.join(out_dir, "out%d.npy" % i), allow_pickle=False))
        i += 1
    return outs


def load_note():
    """The 1-minute load average and CPU count, and a warning line when the machine is
    busier than its cores (then OpenMP and BLAS threads wait for CPU time and latencies
    of small kernels swing by orders of magnitude: rerun on an idle machine)."""
    load, cpus = os.getloadavg()[0], os.cpu_count() or 1
    warn = None
    if load > cpus:
        warn = ("warning: load average %.1f on %d CPUs: timings are not reliable "
                "(threads wait for cores)" % (load, cpus))
    return {"loadavg": round(load, 2), "cpus": cpus}, warn


def vs_ort_args(ap, repeat=10):
    """Adds the options every relax-vs-ONNX-Runtime benchmark takes to parser ap."""
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repeat", type=int, default=repeat)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--relaxc", default="build/bin/relaxc")
    ap.add_argument("--relax-run", default="build/bin/relax-run")
    ap.add_argument("--ort-dir", default=os.environ.get(
        "RX_ORT_DIR", os.path.expanduser("~/.cache/relaxd/ort-1.30.0")))
    return ap


def have_ort(ort_dir):
    """Whether tests/bench/setup_ort.sh installed onnxruntime-node under ort_dir."""
    return os.path.isdir(os.path.join(ort_dir, "node_modules", "onnxruntime-node"))


def ort_run(ort_dir, model, inputs, outputs, threads, warmup, repeat, work):
    """Times model (an .onnx path) on inputs ({name: .npy path}) with onnxruntime-node
    (tests/bench/bench_vs_ort_run.js), the spec and outputs under the folder work;
    returns (its JSON line as a dict, the first output as an array)."""
    import numpy as np
    os.makedirs(work, exist_ok=True)
    spec, out_dir = os.path.join(work, "spec.json"), os.path.join(work, "out")
    with open(spec, "w") as f:
        json.dump({"model": model, "inputs": inputs, "outputs": outputs, "threads": threads,
                   "warmup": warmup, "repeat": repeat, "out_dir": out_dir}, f)
    js = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bench_vs_ort_run.js")
    line = json.loads(run(["node", js, ort_dir, spec], what="onnxruntime-node")
                      .strip().splitlines()[-1])
    return line, np.load(os.path.join(out_dir, "out0.npy"))
