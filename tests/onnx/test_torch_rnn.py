#!/usr/bin/python3
"""PyTorch's recurrent layers, exported to ONNX, built by relaxc, run by relax-run,
equal PyTorch (docs/onnx.md, "Recurrent layers").

Each case is a module as users write it: nn.LSTM / nn.GRU / nn.RNN (tanh and relu),
1 or 2 layers, uni- or bidirectional, batch_first both ways, called with and without
initial states (h0 / c0 as graph inputs), returning the sequence output and the final
states. Exported with torch.onnx.export (opset 14) with a dynamic sequence axis (and a
dynamic batch axis for some), each is built once (O2) and run at two sequence lengths
and batches (2, 5 and, with a dynamic batch, 9: part of an 8-row tile, a whole one and
a part; 2 and 9's last row take the AVX-512 few-row tile, four gates at once) from that
one artifact; hidden
sizes from 7 to 40 cover whole 16-unit blocks and partial ones; every output is compared with PyTorch at rtol 1e-4,
atol 1e-4. One LSTM is also built at O0 (no library lowering: legalize takes nn.rnn).
Five cases run again with RX_RNN_KERNEL=avx2 (AVX2 + FMA instead of AVX-512) and three
with RX_RNN_KERNEL=portable (the portable C kernels); three, and a GRU with
linear_before_reset 0 and 20 units, with RX_RNN_SPLIT_MIN=0 on 4 threads (a direction's
16-unit blocks split among threads with a barrier a step, which layers this small do
not take by themselves), on the default kernels and on AVX2.
The loop form of nn.rnn (compiler/legalize/legalize_rnn.c: a serial time loop, one
launch per step on a GPU), which f32 on the CPU never takes:
  - f64 layers (LSTM bidirectional 2 layers, GRU, RNN relu) on the cpu at O2 and O0
    against PyTorch in f64 at rtol 1e-9;
  - the opencl (PoCL) and vulkan (lavapipe) targets, f32: LSTM bidirectional 2 layers
    with h0 c0 on both, GRU bidirectional 2 layers (opencl), RNN relu bidirectional
    (vulkan), each at two lengths and batches;
  - GRU with linear_before_reset 0 (the exported model edited; PyTorch has no such
    GRU) against a NumPy recurrence, on the cpu (rt.rnn, f32), in f64 and on vulkan;
  - cuda: two layers built, each PTX assembled by ptxas for sm_90, its time loop a host
    loop (a per-step kernel `..._sK_bJ`).
ONNX's own layout 1 ([B, T, I], which PyTorch never exports) and the GRU's
linear_before_reset 0 in f32 on the cpu are covered by the ONNX backend node tests
(tests/onnx/ci_sample.txt: test_gru_seq_length, test_simple_rnn_batchwise,
test_lstm_with_peepholes). A planted swap of two LSTM gates or GRU gates in
runtime/library_rnn.c fails every case of that layer; one in legalize_rnn.c fails the
loop-form cases of that layer.

Usage: test_torch_rnn.py BIN_DIR
"""
import os
import re
import subprocess
import sys
import tempfile
import warnings

import numpy as np
import onnx
import torch
import torch.nn as nn
from onnx import numpy_helper

import test_torch_e2e as e2e  # sh, check, check_fail and the failure count (same argv)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "e2e"))
from test_cuda_e2e import PTX, find_ptxas, nvrtc_env, sections  # noqa: E402

BIN = e2e.BIN


class Net(nn.Module):
    """cell(x[, states]) -> (y, final states...), flattened to a tuple of tensors."""
    def __init__(self, cell, with_state):
        super().__init__()
        self.cell, self.with_state = cell, with_state

    def forward(self, x, *st):
        if self.with_state:
            y, s = self.cell(x, st if len(st) > 1 else st[0])
        else:
            y, s = self.cell(x)
        return (y,) + (tuple(s) if isinstance(s, tuple) else (s,))


def cases():
    """(name, cell, with initial states, batch_first, input size, dynamic batch)"""
    return [
        ("lstm", nn.LSTM(6, 8, batch_first=True), False, True, 6, False),
        ("lstm 2 layers h0 c0", nn.LSTM(6, 24, num_layers=2, batch_first=True), True, True, 6, True),
        ("lstm bidirectional", nn.LSTM(5, 19, bidirectional=True), False, False, 5, True),
        ("lstm bidirectional 2 layers h0 c0", nn.LSTM(5, 7, num_layers=2, bidirectional=True,
                                                      batch_first=True), True, True, 5, False),
        ("gru", nn.GRU(6, 32), False, False, 6, True),
        ("gru bidirectional 2 layers h0", nn.GRU(6, 21, num_layers=2, bidirectional=True,
                                                 batch_first=True), True, True, 6, True),
        ("rnn tanh h0", nn.RNN(4, 17, batch_first=True), True, True, 4, False),
        ("rnn relu bidirectional", nn.RNN(4, 40, nonlinearity="relu", bidirectional=True), False,
         False, 4, True),
    ]


def inputs(cell, bf, insz, with_state, b, t, dt=torch.float32):
    x = torch.randn(b, t, insz, dtype=dt) if bf else torch.randn(t, b, insz, dtype=dt)
    st = []
    if with_state:
        d = (2 if cell.bidirectional else 1) * cell.num_layers
        st = [torch.randn(d, b, cell.hidden_size, dtype=dt)]
        if isinstance(cell, nn.LSTM):
            st.append(torch.randn(d, b, cell.hidden_size, dtype=dt))
    return [x] + st


def check(name, got, want, tol):
    if tol is None:
        e2e.check(name, got, want)
        return
    ok = got.shape == want.shape and got.dtype == want.dtype and np.allclose(got, want, rtol=tol, atol=tol)
    err = float(np.max(np.abs(got - want))) if got.shape == want.shape else float("nan")
    print("%s %s (%s, max abs error %.2e)" % ("PASS" if ok else "FAIL", name, got.dtype, err))
    e2e.failures += 0 if ok else 1


def build(src, rxa, target, opt):
    """relaxc build src for target at opt; RuntimeError with its stderr on failure."""
    argv = [os.path.join(BIN, "relaxc"), "build", src, "--target", target, "--opt-level", opt, "-o", rxa]
    p = subprocess.run(argv, capture_output=True, text=True,
                       env=nvrtc_env() if target.startswith("cuda") else None)
    if p.returncode != 0:
        raise RuntimeError("relaxc build --target %s failed: %s" % (target, p.stderr[-1500:]))
    return p.stderr


def run_case(tmp, name, cell, with_state, bf, insz, dyn_batch, opt="2", target="cpu",
             dt=torch.float32, tol=None):
    cell = cell.to(dt)
    if target != "cpu" or dt != torch.float32:
        name = "%s %s %s" % (name, target, str(dt).replace("torch.", ""))
    net = Net(cell, with_state).eval()
    ex = inputs(cell, bf, insz, with_state, 2, 5, dt)
    nst = len(ex) - 1
    nout = 3 if isinstance(cell, nn.LSTM) else 2
    in_names = ["x"] + ["h0", "c0"][:nst]
    out_names = ["y", "hn", "cn"][:nout]
    tax, bax = (1, 0) if bf else (0, 1)
    dyn = {"x": {tax: "seq"}, "y": {tax: "seq"}}
    if dyn_batch:
        dyn["x"][bax] = dyn["y"][bax] = "batch"
        for n in in_names[1:] + out_names[1:]:
            dyn[n] = {1: "batch"}
    path = os.path.join(tmp, "rnn.onnx")
    rxa = os.path.join(tmp, "rnn.rxa")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(net, tuple(ex), path, input_names=in_names, output_names=out_names,
                              opset_version=14, dynamic_axes=dyn)
        build(path, rxa, target, opt)
    except RuntimeError as e:
        e2e.check_fail(name, str(e))
        return
    for b, t in [(2, 5), (5 if dyn_batch else 2, 11)] + ([(9, 4)] if dyn_batch else []):
        xs = inputs(cell, bf, insz, with_state, b, t, dt)
        args = []
        for n, v in zip(in_names, xs):
            f = os.path.join(tmp, n + ".npy")
            np.save(f, v.numpy())
            args += ["--in", "%s=%s" % (n, f)]
        od = os.path.join(tmp, "out")
        try:
            e2e.sh([os.path.join(BIN, "relax-run"), rxa, "--out-dir", od] + args)
        except RuntimeError as e:
            e2e.check_fail(name + " run", str(e))
            continue
        with torch.no_grad():
            want = net(*xs)
        for i, w in enumerate(want):
            got = np.load(os.path.join(od, "out%d.npy" % i))
            check("%s O%s %s b=%d t=%d" % (name, opt, out_names[i], b, t), got, w.numpy(), tol)


def gru_lbr0(tmp, dt, target, hidden=9, tag=""):
    """A GRU with linear_before_reset 0 (ONNX's default; the PyTorch export edited) against
    a NumPy recurrence in float64, for dtype dt on target."""
    name = "gru linear_before_reset=0 %s%s %s" % (tag, target, np.dtype(dt).name)
    cell = nn.GRU(5, hidden).double() if dt == np.float64 else nn.GRU(5, hidden)
    path, rxa = os.path.join(tmp, "gru0.onnx"), os.path.join(tmp, "gru0.rxa")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(Net(cell, False).eval(), (torch.randn(3, 2, 5, dtype=cell.weight_ih_l0.dtype),),
                          path, input_names=["x"], output_names=["y", "hn"], opset_version=14,
                          dynamic_axes={"x": {0: "seq"}, "y": {0: "seq"}})
    m = onnx.load(path)
    node = [n for n in m.graph.node if n.op_type == "GRU"][0]
    for a in node.attribute:
        if a.name == "linear_before_reset":
            a.i = 0
    onnx.save(m, path)
    init = {i.name: numpy_helper.to_array(i).astype(np.float64) for i in m.graph.initializer}
    W, R, B = (init[node.input[k]][0] for k in (1, 2, 3))
    H = R.shape[1]
    try:
        build(path, rxa, target, "2")
    except RuntimeError as e:
        e2e.check_fail(name, str(e))
        return
    x = np.random.default_rng(7).standard_normal((6, 2, 5)).astype(dt)
    np.save(os.path.join(tmp, "x.npy"), x)
    od = os.path.join(tmp, "out")
    try:
        e2e.sh([os.path.join(BIN, "relax-run"), rxa, "--out-dir", od, "--in", "x=" + os.path.join(tmp, "x.npy")])
    except RuntimeError as e:
        e2e.check_fail(name + " run", str(e))
        return
    sig = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    h, ys = np.zeros((2, H)), []
    for xt in x.astype(np.float64):  # ONNX's GRU: gates z, r, h; Rb_h outside r * (...)
        g = xt @ W.T + B[:3 * H]
        z = sig(g[:, :H] + h @ R[:H].T + B[3 * H:4 * H])
        r = sig(g[:, H:2 * H] + h @ R[H:2 * H].T + B[4 * H:5 * H])
        hh = np.tanh(g[:, 2 * H:] + (r * h) @ R[2 * H:].T + B[5 * H:])
        h = (1 - z) * hh + z * h
        ys.append(h)
    tol = 1e-9 if dt == np.float64 else 1e-4
    check(name + " y", np.load(os.path.join(od, "out0.npy")), np.stack(ys).astype(dt), tol)
    check(name + " hn", np.load(os.path.join(od, "out1.npy")), h[None].astype(dt), tol)


def cuda_ptx(tmp, name, cell):
    """cell built for cuda: the PTX assembles for sm_90 and the time loop is a host loop."""
    ptxas = find_ptxas()
    path, rxa = os.path.join(tmp, "c.onnx"), os.path.join(tmp, "c.rxa")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(Net(cell, False).eval(), (torch.randn(3, 2, cell.input_size),), path,
                          input_names=["x"], opset_version=14, dynamic_axes={"x": {0: "seq"}})
    try:
        build(path, rxa, "cuda", "2")
    except RuntimeError as e:
        if "NVRTC" in str(e) and "not available" in str(e):
            print("SKIP cuda %s: %s" % (name, str(e)[-200:]))
            return
        e2e.check_fail("cuda " + name, str(e))
        return
    ptx = sections(open(rxa, "rb").read()).get(PTX, b"")
    looped = re.search(rb"\.entry rxk_nn_rnn\w*_s\d+_b\d+", ptx) is not None
    if not ptxas:
        print("SKIP cuda %s ptxas: no ptxas" % name)
        ok, err = looped, ""
    else:
        src = os.path.join(tmp, "k.ptx")
        with open(src, "wb") as f:
            f.write(ptx)
        p = subprocess.run([ptxas, "-O0", "-arch=sm_90", src, "-o", os.devnull], capture_output=True, text=True)
        ok, err = looped and p.returncode == 0, p.stderr[-600:]
    print("%s cuda %s: PTX with a per-step host-loop kernel%s%s" %
          ("PASS" if ok else "FAIL", name, ", ptxas -arch=sm_90 accepts it" if ptxas else "", err))
    e2e.failures += 0 if ok else 1


def main():
    with tempfile.TemporaryDirectory(prefix="torch-rnn-") as tmp:
        for c in cases():
            run_case(tmp, *c)
        run_case(tmp, "lstm", nn.LSTM(6, 8, batch_first=True), True, True, 6, True, opt="0")
        # the lower kernels (AVX2 + FMA without AVX-512, portable C), forced on this machine
        for kern, which in (("avx2", (0, 1, 2, 5, 7)), ("portable", (1, 5, 7))):
            os.environ["RX_RNN_KERNEL"] = kern
            for c in [cases()[i] for i in which]:
                run_case(tmp, kern + " " + c[0], *c[1:])
        del os.environ["RX_RNN_KERNEL"]
        # the barrier path (a direction's blocks split among threads, a barrier a step),
        # which these small layers do not take by themselves: forced, on 4 threads (a
        # bidirectional layer: a team of 2 threads per direction), with both kernels' tiles
        os.environ.update(RX_RNN_SPLIT_MIN="0", OMP_NUM_THREADS="4")
        for kern in ("", "avx2"):
            os.environ["RX_RNN_KERNEL"] = kern
            for c in [cases()[i] for i in (1, 5, 7)]:
                run_case(tmp, "split %s%s" % (kern + " " if kern else "", c[0]), *c[1:])
            gru_lbr0(tmp, np.float32, "cpu", hidden=20, tag="split %s" % (kern + " " if kern else ""))
        for k in ("RX_RNN_SPLIT_MIN", "OMP_NUM_THREADS", "RX_RNN_KERNEL"):
            del os.environ[k]
        # the loop form: f64 on the cpu, every GPU target
        cs = cases()
        for c in (cs[3], cs[5], cs[7]):
            run_case(tmp, *c, dt=torch.float64, tol=1e-9)
        run_case(tmp, *cs[3], opt="0", dt=torch.float64, tol=1e-9)
        for c in (cs[3], cs[5]):
            run_case(tmp, *c, target="opencl")
        for c in (cs[3], cs[7]):
            run_case(tmp, *c, target="vulkan")
        for dt, target in ((np.float32, "cpu"), (np.float64, "cpu"), (np.float32, "vulkan")):
            gru_lbr0(tmp, dt, target)
        cuda_ptx(tmp, "lstm bidirectional", nn.LSTM(5, 19, bidirectional=True))
        cuda_ptx(tmp, "gru", nn.GRU(6, 32))
    print("%d failure(s)" % e2e.failures)
    return 1 if e2e.failures else 0


if __name__ == "__main__":
    sys.exit(main())
