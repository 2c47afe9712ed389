#!/usr/bin/python3
"""PyTorch's recurrent layers, exported to ONNX, built by relaxc, run by relax-run,
equal PyTorch (docs/onnx.md, "Recurrent layers").

Each case is a module as users write it: nn.LSTM / nn.GRU / nn.RNN (tanh and relu),
1 or 2 layers, uni- or bidirectional, batch_first both ways, called with and without
initial states (h0 / c0 as graph inputs), returning the sequence output and the final
states. Exported with torch.onnx.export (opset 14) with a dynamic sequence axis (and a
dynamic batch axis for some), each is built once (O2) and run at two sequence lengths
and batches (2 and 5: a whole 4-row tile and a part) from that one artifact; hidden
sizes from 7 to 40 cover whole 16-unit blocks and partial ones; every output is compared with PyTorch at rtol 1e-4,
atol 1e-4. One LSTM is also built at O0 (no library lowering: legalize takes nn.rnn);
an f64 LSTM and a vulkan build are refused with located errors. Three cases run again
with RX_RNN_PORTABLE=1 (the portable C kernels instead of AVX2).
ONNX's own layout 1 ([B, T, I], which PyTorch never exports) and the GRU's
linear_before_reset 0 (PyTorch exports 1) are covered by the ONNX backend node tests
(tests/onnx/ci_sample.txt: test_gru_seq_length, test_simple_rnn_batchwise,
test_lstm_with_peepholes). A planted swap of two LSTM gates or GRU gates in
runtime/library_rnn.c fails every case of that layer.

Usage: test_torch_rnn.py BIN_DIR
"""
import os
import subprocess
import sys
import tempfile
import warnings

import numpy as np
import torch
import torch.nn as nn

import test_torch_e2e as e2e  # sh, check, check_fail and the failure count (same argv)

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


def inputs(cell, bf, insz, with_state, b, t):
    x = torch.randn(b, t, insz) if bf else torch.randn(t, b, insz)
    st = []
    if with_state:
        d = (2 if cell.bidirectional else 1) * cell.num_layers
        st = [torch.randn(d, b, cell.hidden_size)]
        if isinstance(cell, nn.LSTM):
            st.append(torch.randn(d, b, cell.hidden_size))
    return [x] + st


def run_case(tmp, name, cell, with_state, bf, insz, dyn_batch, opt="2"):
    net = Net(cell, with_state).eval()
    ex = inputs(cell, bf, insz, with_state, 2, 5)
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
        e2e.sh([os.path.join(BIN, "relaxc"), "build", path, "--opt-level", opt, "-o", rxa])
    except RuntimeError as e:
        e2e.check_fail(name, str(e))
        return
    for b, t in [(2, 5), (5 if dyn_batch else 2, 11)]:
        xs = inputs(cell, bf, insz, with_state, b, t)
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
            e2e.check("%s O%s %s b=%d t=%d" % (name, opt, out_names[i], b, t), got, w.numpy())


def main():
    with tempfile.TemporaryDirectory(prefix="torch-rnn-") as tmp:
        for c in cases():
            run_case(tmp, *c)
        run_case(tmp, "lstm", nn.LSTM(6, 8, batch_first=True), True, True, 6, True, opt="0")
        # the portable kernels (no AVX2), forced on this machine
        os.environ["RX_RNN_PORTABLE"] = "1"
        for c in [cases()[i] for i in (1, 5, 7)]:
            run_case(tmp, "portable " + c[0], *c[1:])
        del os.environ["RX_RNN_PORTABLE"]
        # an f64 recurrence is a located import error (rt.rnn runs f32)
        path = os.path.join(tmp, "lstm64.onnx")
        net = Net(nn.LSTM(3, 4).double(), False).eval()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(net, (torch.randn(2, 1, 3, dtype=torch.float64),), path,
                              input_names=["x"], opset_version=14)
        p = subprocess.run([os.path.join(BIN, "relaxc"), "build", path, "-o",
                            os.path.join(tmp, "x.rxa")], capture_output=True, text=True)
        if p.returncode != 0 and "LSTM" in p.stderr and "float32 only" in p.stderr:
            print("PASS f64 LSTM refused with a located error")
        else:
            e2e.check_fail("f64 LSTM refused with a located error", p.stderr)
        # a GPU target has no rt.rnn: a located build error, not a crash or a wrong kernel
        p = subprocess.run([os.path.join(BIN, "relaxc"), "build", os.path.join(tmp, "rnn.onnx"),
                            "--target", "vulkan", "-o", os.path.join(tmp, "v.rxa")],
                           capture_output=True, text=True)
        if p.returncode != 0 and "rt.rnn is not available on a GPU target" in p.stderr:
            print("PASS vulkan refuses nn.rnn with a located error")
        else:
            e2e.check_fail("vulkan refuses nn.rnn with a located error", p.stderr or "built")
    print("%d failure(s)" % e2e.failures)
    return 1 if e2e.failures else 0


if __name__ == "__main__":
    sys.exit(main())
