#!/usr/bin/python3
"""gen_llama.py — relax-json modules of Llama-style decoder stacks (issue 4).

Python 3 stdlib only: it writes JSON. Every weight is a function PARAMETER (no
constants), so a generated module is small whatever its size and the e2e harness
feeds the weights as seeded inputs.

Each decoder layer (pre-norm, as Llama; no rotary embedding):

    h  = x + o_proj(attention(rms_norm(x, attn_norm)))
    y  = h + down(silu(n @ w_gate) * (n @ w_up)),   n = rms_norm(h, mlp_norm)

attention: q/k/v = n @ w_{q,k,v}, reshaped to (batch, seq, heads, head_dim) and
permuted to (batch, heads, seq, head_dim); scores = q @ k^T * (1 / sqrt(head_dim));
softmax over the last axis; @ v; permuted back and reshaped to (batch, seq,
heads * head_dim); @ w_o. After the last layer, a final rms_norm (final_norm).

Two entry functions:

  prefill(x: (1, s, hidden), weights...) -> (y: (1, s, hidden), k_0, v_0, ..., k_{L-1}, v_{L-1})
      causal attention over the dynamic length s: the mask is
      triu(full((s, s), -1e9), k=1) added to the scores; k_i, v_i: (1, heads, s, head_dim)
      are the layer's keys and values (the KV cache a decode step continues from).
  decode(x: (b, 1, hidden), k_cache_0, v_cache_0, ..., weights...) with
      k_cache_i, v_cache_i: (b, heads, c, head_dim) -> (y: (b, 1, hidden), k_0, v_0, ...)
      attention of the one new token over concat((cache, new), axis=2), length c + 1
      (no mask: every cached position precedes the new token); k_i, v_i:
      (b, heads, c + 1, head_dim) are the updated caches.

attrs.upper_bounds: prefill {s: 4096}; decode {b: 64, c: 4096}.

Parameter order (both functions): x, [decode: k_cache_i, v_cache_i for each layer],
then for each layer i: l{i}_attn_norm (hidden), l{i}_wq (hidden, heads*head_dim),
l{i}_wk, l{i}_wv, l{i}_wo (heads*head_dim, hidden), l{i}_mlp_norm (hidden),
l{i}_w_gate (hidden, intermediate), l{i}_w_up, l{i}_w_down (intermediate, hidden);
then final_norm (hidden).

Usage:
  /usr/bin/python3 tests/models/gen_llama.py [--layers N] [--hidden H] [--heads A]
      [--head-dim D] [--intermediate I] [--eps E] [--dtype f32] [--name NAME]
      [--preset tiny|llama32] [--out FILE]
  --preset tiny:    layers 2, hidden 64, heads 4, head-dim 16, intermediate 128
  --preset llama32: layers 32, hidden 4096, heads 32, head-dim 128, intermediate 11008
                    (Llama-2-7B shapes; for graph-level pass timing, not the e2e)
  Explicit options override the preset. head-dim defaults to hidden // heads.
  Without --out the module goes to stdout.
"""

import argparse
import json
import math
import sys

PRESETS = {
    "tiny": {"layers": 2, "hidden": 64, "heads": 4, "head_dim": 16, "intermediate": 128},
    "llama32": {"layers": 32, "hidden": 4096, "heads": 32, "head_dim": 128,
                "intermediate": 11008},
}

MASK_VALUE = -1e9  # added above the diagonal; exp(-1e9 - max) underflows to exactly 0


def tensor(shape, dtype):
    return {"tensor": {"shape": list(shape), "dtype": dtype}}


class Builder:
    """Collects the bindings of one dataflow block with fresh names."""

    def __init__(self):
        self.bindings = []
        self.names = set()

    def bind(self, name, value):
        assert name not in self.names, name
        self.names.add(name)
        self.bindings.append({"var": name, "value": value})
        return name

    @staticmethod
    def op(op, *args, **attrs):
        v = {"op": op, "args": list(args)}
        if attrs:
            v["attrs"] = attrs
        return v


def layer_param_names(i):
    return ["l%d_%s" % (i, n) for n in
            ("attn_norm", "wq", "wk", "wv", "wo", "mlp_norm", "w_gate", "w_up", "w_down")]


def layer_params(cfg, i):
    H, A, D, I, dt = cfg["hidden"], cfg["heads"], cfg["head_dim"], cfg["intermediate"], cfg["dtype"]
    shapes = [(H,), (H, A * D), (H, A * D), (H, A * D), (A * D, H), (H,), (H, I), (H, I), (I, H)]
    return [{"name": n, "type": tensor(s, dt)} for n, s in zip(layer_param_names(i), shapes)]


def decoder_layer(bld, cfg, i, x, batch, seq, mask=None, cache=None):
    """Emits layer i on x: (batch, seq, hidden); returns (y, k, v) variable names.

    cache: (k_cache, v_cache) names for decode, concatenated before the new k/v.
    mask: name of an (seq, seq) additive mask, or None.
    """
    H, A, D, dt = cfg["hidden"], cfg["heads"], cfg["head_dim"], cfg["dtype"]
    eps = cfg["eps"]
    p = layer_param_names(i)
    op, b = Builder.op, bld.bind
    pre = "l%d_" % i
    n1 = b(pre + "attn_in", op("nn.rms_norm", x, p[0], axes=[-1], epsilon=eps))
    heads = {}
    for name, w in (("q", p[1]), ("k", p[2]), ("v", p[3])):
        proj = b(pre + name + "_proj", op("matmul", n1, w))
        r = b(pre + name + "_heads", op("reshape", proj, {"shape": [batch, seq, A, D]}))
        heads[name] = b(pre + name, op("permute_dims", r, axes=[0, 2, 1, 3]))
    k, v = heads["k"], heads["v"]
    if cache is not None:
        k = b(pre + "k_all", op("concat", {"tuple": [cache[0], k]}, axis=2))
        v = b(pre + "v_all", op("concat", {"tuple": [cache[1], v]}, axis=2))
    kt = b(pre + "k_t", op("permute_dims", k, axes=[0, 1, 3, 2]))
    qk = b(pre + "qk", op("matmul", heads["q"], kt))
    scores = b(pre + "scores", op("multiply", qk, {"const": 1.0 / math.sqrt(D), "dtype": dt}))
    if mask is not None:
        scores = b(pre + "masked", op("add", scores, mask))
    probs = b(pre + "probs", op("nn.softmax", scores, axis=-1))
    ctx = b(pre + "ctx", op("matmul", probs, v))
    ctx_t = b(pre + "ctx_t", op("permute_dims", ctx, axes=[0, 2, 1, 3]))
    ctx_m = b(pre + "ctx_m", op("reshape", ctx_t, {"shape": [batch, seq, A * D]}))
    attn = b(pre + "attn_out", op("matmul", ctx_m, p[4]))
    h = b(pre + "h", op("add", x, attn))
    n2 = b(pre + "mlp_in", op("nn.rms_norm", h, p[5], axes=[-1], epsilon=eps))
    gate = b(pre + "gate", op("matmul", n2, p[6]))
    act = b(pre + "gate_act", op("nn.silu", gate))
    up = b(pre + "up", op("matmul", n2, p[7]))
    gu = b(pre + "gate_up", op("multiply", act, up))
    down = b(pre + "down", op("matmul", gu, p[8]))
    y = b(pre + "out", op("add", h, down))
    return y, k, v


def stack(cfg, bld, x, batch, seq, mask=None, caches=None):
    outs = []
    for i in range(cfg["layers"]):
        x, k, v = decoder_layer(bld, cfg, i, x, batch, seq, mask,
                                caches[i] if caches is not None else None)
        outs += [k, v]
    y = bld.bind("y", Builder.op("nn.rms_norm", x, "final_norm", axes=[-1], epsilon=cfg["eps"]))
    return bld.bind("result", {"tuple": [y] + outs})


def weight_params(cfg):
    ps = []
    for i in range(cfg["layers"]):
        ps += layer_params(cfg, i)
    ps.append({"name": "final_norm", "type": tensor((cfg["hidden"],), cfg["dtype"])})
    return ps


def prefill_fn(cfg):
    H, A, D, dt = cfg["hidden"], cfg["heads"], cfg["head_dim"], cfg["dtype"]
    bld = Builder()
    full = bld.bind("mask_full", Builder.op("full", {"shape": ["s", "s"]},
                                            {"const": MASK_VALUE, "dtype": dt}))
    mask = bld.bind("mask", Builder.op("triu", full, k=1))
    res = stack(cfg, bld, "x", 1, "s", mask=mask)
    kv = tensor((1, A, "s", D), dt)
    ret = {"tuple": [tensor((1, "s", H), dt)] + [kv] * (2 * cfg["layers"])}
    return {
        "kind": "relax",
        "params": [{"name": "x", "type": tensor((1, "s", H), dt)}] + weight_params(cfg),
        "ret": ret,
        "attrs": {"upper_bounds": {"s": 4096}},
        "body": {"blocks": [{"dataflow": True, "bindings": bld.bindings}], "result": res},
    }


def decode_fn(cfg):
    H, A, D, dt = cfg["hidden"], cfg["heads"], cfg["head_dim"], cfg["dtype"]
    bld = Builder()
    caches, cparams = [], []
    for i in range(cfg["layers"]):
        kc, vc = "k_cache_%d" % i, "v_cache_%d" % i
        caches.append((kc, vc))
        cparams += [{"name": kc, "type": tensor(("b", A, "c", D), dt)},
                    {"name": vc, "type": tensor(("b", A, "c", D), dt)}]
    res = stack(cfg, bld, "x", "b", 1, caches=caches)
    kv = tensor(("b", A, "c + 1", D), dt)
    ret = {"tuple": [tensor(("b", 1, H), dt)] + [kv] * (2 * cfg["layers"])}
    return {
        "kind": "relax",
        "params": [{"name": "x", "type": tensor(("b", 1, H), dt)}] + cparams + weight_params(cfg),
        "ret": ret,
        "attrs": {"upper_bounds": {"b": 64, "c": 4096}},
        "body": {"blocks": [{"dataflow": True, "bindings": bld.bindings}], "result": res},
    }


def module(cfg):
    return {
        "format": "relax-json", "version": 1,
        "attrs": {"name": cfg["name"], "generator": "tests/models/gen_llama.py",
                  "config": {k: cfg[k] for k in ("layers", "hidden", "heads", "head_dim",
                                                 "intermediate", "eps", "dtype")}},
        "functions": {"prefill": prefill_fn(cfg), "decode": decode_fn(cfg)},
    }


def parse(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", choices=sorted(PRESETS), default="tiny")
    ap.add_argument("--layers", type=int)
    ap.add_argument("--hidden", type=int)
    ap.add_argument("--heads", type=int)
    ap.add_argument("--head-dim", type=int, dest="head_dim")
    ap.add_argument("--intermediate", type=int)
    ap.add_argument("--eps", type=float, default=1e-5)
    ap.add_argument("--dtype", default="f32", choices=["f32"])
    ap.add_argument("--name")
    ap.add_argument("--out")
    a = ap.parse_args(argv)
    cfg = dict(PRESETS[a.preset])
    explicit_hd = a.head_dim is not None
    for k in ("layers", "hidden", "heads", "head_dim", "intermediate"):
        if getattr(a, k) is not None:
            cfg[k] = getattr(a, k)
    if not explicit_hd and (a.hidden is not None or a.heads is not None):
        if cfg["hidden"] % cfg["heads"]:
            ap.error("--hidden %d is not a multiple of --heads %d (give --head-dim)"
                     % (cfg["hidden"], cfg["heads"]))
        cfg["head_dim"] = cfg["hidden"] // cfg["heads"]
    for k in ("layers", "hidden", "heads", "head_dim", "intermediate"):
        if cfg[k] < 1:
            ap.error("--%s must be positive" % k.replace("_", "-"))
    cfg["eps"], cfg["dtype"] = a.eps, a.dtype
    cfg["name"] = a.name or "llama_L%d_H%d_A%d_D%d_I%d" % (
        cfg["layers"], cfg["hidden"], cfg["heads"], cfg["head_dim"], cfg["intermediate"])
    return cfg, a.out


def main(argv):
    cfg, out = parse(argv)
    text = json.dumps(module(cfg), indent=1) + "\n"
    if out:
        with open(out, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
