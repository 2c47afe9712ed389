"""test_conv_lib_e2e.py — convolutions (blas.conv2d) and poolings (rt.pool2d) through
library lowering's conv and pool rules, end to end.

    /usr/bin/python3 tests/e2e/test_conv_lib_e2e.py BUILD_DIR

One module, symbolic batch n, holds one convolution chain per formulation (3x3 with
bias and relu; stride 2 with 4-value asymmetric padding and a 3x2 kernel; dilation;
grouped; depthwise; depthwise with channel multiplier 2, stride 2 and a residual; 1x1
with bias, residual and relu; 1x1 with stride 2; 1x1 with padding; a layer large enough
that the im2col panel is cut into several bands; ReLU6 as ONNX Clip imports it, maximum
then minimum with scalar constants, after a 1x1, after a depthwise 3x3 (the one-pass
3x3 row kernel on a plane wider than a vector) and after a stride-2 depthwise; a
Hardtanh-like clamp(-0.5, 0.75) after a 3x3; SiLU and hardswish (as ONNX HardSwish
imports) after pointwise, 3x3, depthwise (stride 1 and 2), stem and wide convolutions;
leaky relu as ONNX LeakyRelu and a one-slope PRelu import after each tile kind;
maximum(., 0) alone as relu; minimum
alone; nn.relu then clamp(0, 6) as F.relu6 exports, after a depthwise and after a 3x3;
stride-1 depthwise 7x7, 5x5, 3x5, 9x9, 1x1 padded and a channel multiplier through the
zero-padded plane; the implicit GEMM's corners: a 7-wide plane with 64 channels and a
residual, a 3-channel stride-2 stem, strides 3/2 with dilations 2/3 and a clamp, 720
reduction indices into 14 channels, 3 groups of 3 channels at stride and dilation 2;
one input channel onto 24-32 outputs at stride 10 or dilation 2; dilated stride-1
depthwise (VAN's 7x7 dilation 3, dilations 2 / 3 with a multiplier and a residual, a
plane smaller than its dilation);
the tile's epilogue on 13 and 11 channels after 2 reduction blocks with a residual;
a 24-pixel plane (an 8-pixel last panel);
small planes with large weights (the wide cut: 3x3, pointwise, stride 2 dilated)),
and max / avg poolings (the probe's
3x3 stride 2 pad 1 max pool, dilation, ceil_mode, count_include_pad both ways, 4-value
padding, stride 1 on 37 columns, windows of 17 and 18 rows; adaptive average pooling with equal windows, global
and 2x3; global on a symbolic h x w map), all returned as a tuple. Checked:
  - `relaxc build` (default cost rule) turns every chain into one blas.conv2d call and
    every pooling into one rt.pool2d (the counts in the lowered module);
  - relax-run at batch 2 and batch 1 of the same artifact equals a float64 NumPy
    convolution of the same formulation (rtol 1e-4, atol 1e-4), every output; batch 2
    also with RX_GEMM=blas (the im2col way), RX_GEMM_KERNEL=portable, RX_CONV_KERNEL=avx2
    and =portable (the lower tiles on an AVX-512 CPU; batch 1 too: bit-identical to
    the default way, all but the stride-2 depthwise cases), RX_CONV_BX=0 (KxK layers on
    the 12 x 32 tile instead of library_conv_bx.c's, batch 1 too: bit-identical) and
    --threads 3
    (the implicit GEMM's lanes of unequal lengths, tasks taken from others' ends);
    batch 5 with --threads 2 and 3 (each image's phase planes built before its first
    task by the threads that need it, lanes that end inside an image);
  - the poolings built with --lib-disable conv2d --lib-disable pool2d (the generated
    loops, whose avg divisors the NumPy reference restates) agree too.
Prints one line per check and `N passed, M failed`; exit 1 on a failure.
"""

import json
import os
import sys
import tempfile

import numpy as np

from e2e_check import Checks, run_status, start

# name, C, H, W, weight (O, Cg, KH, KW), strides, padding (as written), dilation,
# groups, bias ("1o11", "o11" or None), residual, act (False, True: nn.relu, or (lo, hi):
# maximum(., lo) then minimum(., hi), either None to leave that op out; (lo, hi, "relu"):
# nn.relu first, as F.relu6 exports)
CASES = [
    ("k3_bias_relu", 16, 20, 20, (32, 16, 3, 3), [1, 1], [1, 1, 1, 1], [1, 1], 1, "1o11", False, True),
    ("s2_asym_pad", 8, 17, 19, (16, 8, 3, 2), [2, 2], [0, 1, 2, 1], [1, 1], 1, None, False, False),
    ("dilated", 8, 17, 19, (16, 8, 3, 3), [1, 1], [2], [2, 3], 1, "o11", False, True),
    ("grouped", 8, 17, 19, (16, 4, 3, 3), [1, 2], [1, 1, 1, 1], [1, 1], 2, "o11", False, True),
    ("depthwise", 8, 17, 19, (8, 1, 3, 3), [1, 1], [1, 1, 1, 1], [1, 1], 8, "1o11", False, True),
    ("dw_mult2_s2_res", 8, 17, 19, (16, 1, 5, 5), [2, 2], [2, 2, 2, 2], [1, 1], 8, None, True, False),
    ("pw_bias_res_relu", 16, 20, 20, (32, 16, 1, 1), [1, 1], [0, 0, 0, 0], [1, 1], 1, "1o11", True, True),
    ("pw_s2", 16, 20, 20, (32, 16, 1, 1), [2, 2], [0, 0, 0, 0], [1, 1], 1, None, False, False),
    ("pw_padded", 16, 20, 20, (24, 16, 1, 1), [1, 1], [1, 0, 2, 1], [1, 1], 1, "1o11", False, False),
    ("banded", 32, 24, 128, (16, 32, 3, 3), [1, 1], [1, 1, 1, 1], [1, 1], 1, "1o11", False, True),
    ("pw_relu6", 16, 12, 13, (48, 16, 1, 1), [1, 1], [0, 0, 0, 0], [1, 1], 1, "1o11", False, (0.0, 6.0)),
    ("dw3_relu6", 48, 13, 37, (48, 1, 3, 3), [1, 1], [1, 1, 1, 1], [1, 1], 48, "1o11", False, (0.0, 6.0)),
    ("dw3_s2_relu6", 48, 13, 37, (48, 1, 3, 3), [2, 2], [1, 1, 1, 1], [1, 1], 48, "o11", False, (0.0, 6.0)),
    ("dw3_nopad_res", 8, 9, 21, (8, 1, 3, 3), [1, 1], [0, 0, 0, 0], [1, 1], 8, None, True, False),
    ("k3_hardtanh", 8, 11, 12, (16, 8, 3, 3), [1, 1], [1, 1, 1, 1], [1, 1], 1, None, False, (-0.5, 0.75)),
    ("k3_max0", 8, 11, 12, (16, 8, 3, 3), [1, 1], [1, 1, 1, 1], [1, 1], 1, "o11", False, (0.0, None)),
    ("k3_min_only", 8, 11, 12, (16, 8, 3, 3), [1, 1], [1, 1, 1, 1], [1, 1], 1, "o11", True, (None, 0.25)),
    ("dw3_relu_relu6", 16, 9, 21, (16, 1, 3, 3), [1, 1], [1, 1, 1, 1], [1, 1], 16, "o11", False, (0.0, 6.0, "relu")),
    ("k3_relu_clamp", 8, 11, 12, (16, 8, 3, 3), [1, 1], [1, 1, 1, 1], [1, 1], 1, None, False, (-1.0, 0.5, "relu")),
    # the implicit GEMM's corners: a 7-wide plane (a 16-pixel panel spans 3 output rows)
    # with 64 channels (at batch 1 the output channels are split across tasks too); the
    # stem's 3 channels at stride 2 (4 phase planes); strides 3 and 2 with dilations 2
    # and 3 (taps in every phase, odd offsets); 720 reduction indices (3 blocks) and 14
    # rows (a partial micro-tile); 3 groups of 3 rows (less than one micro-tile)
    ("k3_w7_res_relu", 24, 7, 7, (64, 24, 3, 3), [1, 1], [1, 1, 1, 1], [1, 1], 1, "o11", True, True),
    ("stem_s2", 3, 33, 31, (32, 3, 3, 3), [2, 2], [1, 1, 1, 1], [1, 1], 1, "1o11", False, True),
    ("s3_dil23_clamp", 6, 23, 21, (10, 6, 3, 3), [3, 2], [2, 1, 0, 3], [2, 3], 1, "1o11", False, (-0.5, 0.75)),
    ("deep_k720", 80, 9, 11, (14, 80, 3, 3), [1, 1], [1, 1, 1, 1], [1, 1], 1, None, False, False),
    ("grouped_s2_dil", 12, 15, 13, (9, 4, 3, 3), [2, 2], [1, 1, 1, 1], [2, 2], 3, "o11", False, True),
    # the tile with its epilogue (library_conv_kern.c): 13 rows (6 + 6 + 1) and 11 rows
    # (6 + 5), 2 reduction blocks (the epilogue on the last only: the first block's
    # partial sums read back once), bias, residual, clamp and relu, 90- and 80-pixel
    # planes (a partial 16-pixel panel through the bounce tile)
    ("deep_o13_res_clamp", 40, 10, 9, (13, 40, 3, 3), [1, 1], [1, 1, 1, 1], [1, 1], 1, "1o11", True, (-0.5, 0.75)),
    ("k5_o11_res_relu", 20, 8, 10, (11, 20, 5, 5), [1, 1], [2, 2, 2, 2], [1, 1], 1, "o11", True, True),
    # a plane of 24 pixels: its last panel 8 wide (the 8-column tile straight into y;
    # 4-column tails: the 11x12 and 6x6 cases, 1 and 3: the 7x7 and 5x7 ones)
    ("k3_tail8_res_relu", 12, 6, 4, (20, 12, 3, 3), [1, 1], [1, 1, 1, 1], [1, 1], 1, "1o11", True, True),
    # the AVX-512 tile (up to 12 rows of the unpacked weights by two 16-pixel panels):
    # 25 channels (tiles of 9, 8, 8 rows) on a 17-pixel plane (a 2-panel tile whose second
    # panel has 1 column) with a residual; one output channel on a 66-pixel plane (32,
    # 32, then 2 columns) with a clamp
    ("t512_o25_p17_res", 9, 1, 17, (25, 9, 3, 3), [1, 1], [1, 1, 1, 1], [1, 1], 1, "o11", True, True),
    ("t512_o1_p66_clamp", 5, 6, 11, (1, 5, 3, 3), [1, 1], [1, 1, 1, 1], [1, 1], 1, "1o11", False, (-0.5, 0.75)),
    # 1x1 convolutions on that tile read x (or the stride-2 phase plane) in place, no
    # packed panel: 400 channels (2 reduction blocks: the first block's sums read back)
    # on a 45-pixel plane (32, then 13 columns: masked loads at the end of x) with a
    # residual; 3 groups at stride 2 onto a 30-pixel plane (the group's rows at their
    # offsets, a 14-column second panel)
    ("pw_k400_p45_res", 400, 5, 9, (13, 400, 1, 1), [1, 1], [0, 0, 0, 0], [1, 1], 1, "o11", True, True),
    ("pw_g3_s2_p30", 12, 9, 11, (15, 4, 1, 1), [2, 2], [0, 0, 0, 0], [1, 1], 3, "1o11", False, False),
    # wide (small planes, weights of 1 MiB or more: each weight read once, B's panels
    # packed per image first): 234 channels (39 tiles, 2 to 8 a task) on a
    # 5x7 plane (3 panels, the last partial) with a residual; a pointwise 1024 -> 260 on
    # 6x6 (x read in place, a 2-row tile); stride 2 with dilation 2 onto 4x4 (one panel)
    # with a clamp
    ("wide_k3_res_relu", 128, 5, 7, (234, 128, 3, 3), [1, 1], [1, 1, 1, 1], [1, 1], 1, "o11", True, True),
    ("wide_pw_o260", 1024, 6, 6, (260, 1024, 1, 1), [1, 1], [0, 0, 0, 0], [1, 1], 1, "1o11", False, False),
    ("wide_s2_dil_clamp", 128, 9, 9, (256, 128, 3, 3), [2, 2], [1, 1, 1, 1], [2, 2], 1, None, False, (-0.5, 0.75)),
    # one input channel, one group, 24 or more outputs, strides above 2 or dilation: the
    # implicit GEMM (the direct window rows took 62 ms on zoo6 conv_mfcc's DFT-as-conv1d,
    # 1 -> 201 channels, kernel 400, stride 160); a 1x25 kernel at stride 10 with a
    # residual (reflect-padded audio as torchlibrosa writes it), a dilated 3x3 onto 24
    # channels with a clamp
    ("c1_k25_s10_res", 1, 1, 203, (32, 1, 1, 25), [1, 10], [0, 0, 0, 0], [1, 1], 1, "o11", True, False),
    ("c1_dil2_o24_clamp", 1, 13, 14, (24, 1, 3, 3), [1, 1], [2, 2, 2, 2], [2, 2], 1, "1o11", False, (-0.5, 0.75)),
    # dilated stride-1 depthwise as dh x dw undilated phase planes (library_dwconv.c): VAN's
    # 7x7 dilation 3, a 3x3 with dilations 2 / 3, a channel multiplier 2, a residual and
    # relu, and a plane smaller than the dilation, whose padding leaves a phase no input
    # (its outputs the bias alone)
    ("dw7_dil3", 8, 20, 22, (8, 1, 7, 7), [1, 1], [9, 9, 9, 9], [3, 3], 8, "o11", False, False),
    ("dw3_dil23_m2_res", 4, 11, 13, (8, 1, 3, 3), [1, 1], [2, 3, 2, 3], [2, 3], 4, "o11", True, True),
    ("dw3_dil3_empty", 2, 2, 3, (2, 1, 3, 3), [1, 1], [4, 4, 4, 4], [3, 3], 2, "o11", False, False),
    # stride-1 depthwise planes through the zero-padded copy (library_dwconv.c): ConvNeXt's
    # 7x7 (two 16-column blocks, an 8-column one, a 1-column tail; odd row count), a 5x5
    # with asymmetric padding and a residual, a 7x7 with channel multiplier 2 on a plane
    # narrower and shorter than the kernel (the bounce-buffer store), a 3x5 with one
    # padding side 0 (OW 31), a 9x9 (no unrolled width), a 1x1-padded depthwise
    ("dw7_convnext", 12, 15, 41, (12, 1, 7, 7), [1, 1], [3, 3, 3, 3], [1, 1], 12, "o11", False, False),
    ("dw5_asym_res", 8, 11, 23, (8, 1, 5, 5), [1, 1], [1, 2, 3, 0], [1, 1], 8, None, True, True),
    ("dw7_mult2_small", 3, 4, 5, (6, 1, 7, 7), [1, 1], [3, 3, 3, 3], [1, 1], 3, "o11", True, False),
    ("dw3x5_asym", 8, 9, 31, (8, 1, 3, 5), [1, 1], [0, 2, 1, 2], [1, 1], 8, "1o11", False, (0.0, 6.0)),
    ("dw9", 4, 13, 20, (4, 1, 9, 9), [1, 1], [4, 4, 4, 4], [1, 1], 4, None, False, False),
    ("dw1_padded", 4, 5, 9, (4, 1, 1, 1), [1, 1], [1, 2, 0, 1], [1, 1], 4, "o11", False, False),
    # SiLU (x * sigmoid(x), EfficientNet's) and hardswish (ONNX HardSwish's import:
    # * 1/6, + 0.5, maximum 0, minimum 1, times x; MobileNetV3's) as the call's epilogue,
    # after each tile: pointwise (the AVX-512 tile, 2 panels, the last partial), a 3x3
    # with bias and residual on 13 rows (AVX2: 6 + 6 + 1), 2 reduction blocks, stride-1
    # and stride-2 depthwise (the AVX-512 planes), a 3-channel stem at stride 2, the wide
    # cut
    ("pw_silu", 16, 5, 7, (24, 16, 1, 1), [1, 1], [0, 0, 0, 0], [1, 1], 1, "1o11", False, "silu"),
    ("deep_o13_res_silu", 40, 10, 9, (13, 40, 3, 3), [1, 1], [1, 1, 1, 1], [1, 1], 1, "o11", True, "silu"),
    ("dw3_silu", 24, 13, 37, (24, 1, 3, 3), [1, 1], [1, 1, 1, 1], [1, 1], 24, "1o11", False, "silu"),
    ("dw5_s2_hswish", 16, 13, 37, (16, 1, 5, 5), [2, 2], [2, 2, 2, 2], [1, 1], 16, "o11", False, "hardswish"),
    ("stem_s2_hswish", 3, 33, 31, (16, 3, 3, 3), [2, 2], [1, 1, 1, 1], [1, 1], 1, "1o11", False, "hardswish"),
    ("pw_res_hswish", 16, 9, 9, (20, 16, 1, 1), [1, 1], [0, 0, 0, 0], [1, 1], 1, None, True, "hardswish"),
    ("wide_k3_silu", 128, 5, 7, (64, 128, 3, 3), [1, 1], [1, 1, 1, 1], [1, 1], 1, "o11", False, "silu"),
    # library_conv_bx.c's tiles (KxK on AVX-512, whole 16-channel vectors: pixels of one
    # output row by 32 output channels): 48 channels (a 32-channel chunk, then a 16-channel
    # one) on 25-pixel rows (tiles of 9, 8, 8) at stride 2 with a residual and SiLU; 80
    # channels (32, 32, 16) by a 5x5 over 16 channels (400 indices: 2 reduction blocks)
    # on 29-pixel rows with ReLU6; 144 channels at stride 2 (above 128 a group: stride 1
    # keeps the 12 x 32 tile) in 2 groups of 72 -> 144 with a residual
    ("bx_o48_w25_s2_silu", 20, 11, 50, (48, 20, 3, 3), [2, 2], [1, 1, 1, 1], [1, 1], 1, "o11", True, "silu"),
    ("bx_o80_k5_relu6", 16, 9, 29, (80, 16, 5, 5), [1, 1], [2, 2, 2, 2], [1, 1], 1, "1o11", False, (0.0, 6.0)),
    ("bx_g2_o288_s2_res", 16, 7, 15, (288, 8, 3, 3), [2, 2], [1, 1, 1, 1], [1, 1], 2, "o11", True, True),
    # 1x1 ones reducing 3x their channels or more take those tiles too (x read in place,
    # or its stride-2 phase; whole 32-channel chunks): 96 -> 32 with a residual on
    # 13-pixel rows, 2 groups of 96 -> 32 at stride 2 with hardswish
    ("bx_pw_k96_o32_res", 96, 6, 13, (32, 96, 1, 1), [1, 1], [0, 0, 0, 0], [1, 1], 1, "1o11", True, True),
    ("bx_pw_g2_s2_hswish", 192, 9, 11, (64, 96, 1, 1), [2, 2], [0, 0, 0, 0], [1, 1], 2, "o11", False, "hardswish"),
    # leaky relu (act 5, in registers on every tile) as ONNX LeakyRelu imports,
    # where(greater(v, 0), v, v * a), and as a one-slope PRelu's where(less(v, 0), a * v,
    # v): pointwise (the AVX-512 tile), 13 rows with a residual over 2 reduction blocks
    # (AVX2: 6 + 6 + 1), a 7x7 plane (the AVX2 4-column tail), stride-1 and stride-2
    # depthwise (the AVX-512 planes), library_conv_bx.c's tiles at stride 2 with a
    # residual, the wide cut, a negative slope
    ("pw_leaky", 16, 5, 7, (24, 16, 1, 1), [1, 1], [0, 0, 0, 0], [1, 1], 1, "1o11", False, ("leaky", 0.2)),
    ("deep_o13_res_prelu", 40, 10, 9, (13, 40, 3, 3), [1, 1], [1, 1, 1, 1], [1, 1], 1, "o11", True, ("prelu", 0.25)),
    ("k3_w7_leaky", 24, 7, 7, (64, 24, 3, 3), [1, 1], [1, 1, 1, 1], [1, 1], 1, "o11", False, ("leaky", 0.1)),
    ("dw3_leaky", 24, 13, 37, (24, 1, 3, 3), [1, 1], [1, 1, 1, 1], [1, 1], 24, "1o11", False, ("leaky", 0.2)),
    ("dw5_s2_prelu", 16, 13, 37, (16, 1, 5, 5), [2, 2], [2, 2, 2, 2], [1, 1], 16, "o11", False, ("prelu", 0.3)),
    ("bx_o48_s2_res_leaky", 20, 11, 50, (48, 20, 3, 3), [2, 2], [1, 1, 1, 1], [1, 1], 1, "o11", True, ("leaky", 0.2)),
    ("wide_k3_leaky", 128, 5, 7, (64, 128, 3, 3), [1, 1], [1, 1, 1, 1], [1, 1], 1, "o11", False, ("leaky", 0.2)),
    ("k3_leaky_neg", 8, 11, 12, (16, 8, 3, 3), [1, 1], [1, 1, 1, 1], [1, 1], 1, "1o11", False, ("leaky", -0.5)),
]

# name, op, C, H, W, pool_size, strides, padding, dilation, ceil_mode, count_include_pad
POOLS = [
    ("max_k3s2p1", "max", 8, 21, 22, [3, 3], [2, 2], [1, 1, 1, 1], [1, 1], False, False),
    ("max_dil_ceil", "max", 8, 21, 22, [3, 2], [2, 3], [1, 0, 1, 1], [2, 1], True, False),
    ("avg_pad_exclude", "avg", 8, 21, 22, [3, 3], [2, 2], [1], [1, 1], False, False),
    ("avg_pad_include_ceil", "avg", 8, 21, 22, [3, 3], [2, 2], [1, 0, 0, 1], [1, 1], True, True),
    ("avg_k2s2", "avg", 8, 20, 22, [2, 2], [2, 2], [0], [1, 1], False, True),
    # stride 1 (16 columns a load in the AVX-512 row), 37 columns (a partial last vector);
    # ResNet's 3x3/2 max on 39 columns (two vectors of outputs, the second partial)
    ("max_k3s1p1_w37", "max", 8, 9, 37, [3, 3], [1, 1], [1, 1, 1, 1], [1, 1], False, False),
    ("avg_k3s1_w37", "avg", 8, 9, 37, [3, 3], [1, 1], [1, 0, 1, 2], [1, 1], False, False),
    ("max_k3s2p1_w39", "max", 8, 7, 67, [3, 3], [2, 2], [1, 1, 1, 1], [1, 1], False, False),
    # windows taller than the AVX-512 rows' 16 (library_pool.c's RX_POOL_ROWS: the C rows)
    ("max_k18_tall", "max", 4, 20, 23, [18, 3], [1, 2], [1, 0, 0, 1], [1, 1], False, False),
    ("avg_k17_tall_ceil", "avg", 4, 21, 19, [17, 2], [2, 2], [0], [1, 1], True, False),
    # nn.adaptive_avg_pool2d whose windows are all one size (output (H / k, W / k)) as
    # rt.pool2d: global average pooling (SE blocks, heads) on 13x37, and 2x3 outputs
    ("adaptive_global", "adaptive", 24, 13, 37, [13, 37], [13, 37], [0], [1, 1], False, False),
    ("adaptive_2x3", "adaptive", 8, 12, 21, [6, 7], [6, 7], [0], [1, 1], False, False),
    # global average pooling on a symbolic map (h, w: DenseNet's head): rt.pool2d's
    # global form, the plane's extents read at the call
    ("adaptive_global_sym", "adaptive_sym", 16, 9, 14, [9, 14], [9, 14], [0], [1, 1], False, False),
]


def pool_hw(c):
    _, _, _, H, W, k, st, pd, dl, ceil, _ = c
    t, l, b, r = pads4(pd)
    return tuple((e + p0 + p1 - d * (kk - 1) - 1 + (s - 1 if ceil else 0)) // s + 1
                 for e, p0, p1, d, kk, s in ((H, t, b, dl[0], k[0], st[0]), (W, l, r, dl[1], k[1], st[1])))


def pool_ref(x, c):
    """float64 NCHW max / avg pooling with op_nn.c's extents and legalize_nn.c's counts."""
    _, op, _, H, W, k, st, pd, dl, ceil, cip = c
    t, l, b, r = pads4(pd)
    OH, OW = pool_hw(c)
    eb = max(0, (OH - 1) * st[0] + dl[0] * (k[0] - 1) + 1 - (H + t))  # rows below, overhang included
    er = max(0, (OW - 1) * st[1] + dl[1] * (k[1] - 1) + 1 - (W + l))
    fill = -np.inf if op == "max" else 0.0
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (t, eb), (l, er)), constant_values=fill)
    mask = np.zeros(xp.shape[2:])
    if cip:
        mask[:t + H + b, :l + W + r] = 1
    else:
        mask[t:t + H, l:l + W] = 1
    acc = np.full(x.shape[:2] + (OH, OW), fill)
    cnt = np.zeros((OH, OW))
    for kh in range(k[0]):
        for kw in range(k[1]):
            h0, w0 = kh * dl[0], kw * dl[1]
            sl = (slice(h0, h0 + st[0] * (OH - 1) + 1, st[0]), slice(w0, w0 + st[1] * (OW - 1) + 1, st[1]))
            win = xp[(slice(None), slice(None)) + sl]
            acc = np.maximum(acc, win) if op == "max" else acc + win
            cnt += mask[sl]
    if op == "max":
        return acc
    if ceil or not cip:
        cnt = np.maximum(cnt, 1)
    return acc / cnt


def pads4(p):
    return p * 4 if len(p) == 1 else p + p if len(p) == 2 else p


def out_hw(c):
    _, _, H, W, (O, _, KH, KW), st, pd, dl, *_ = c
    t, l, b, r = pads4(pd)
    return (H + t + b - dl[0] * (KH - 1) - 1) // st[0] + 1, (W + l + r - dl[1] * (KW - 1) - 1) // st[1] + 1


def conv_ref(x, w, st, pd, dl, g):
    """float64 NCHW convolution (padding top, left, bottom, right)."""
    t, l, b, r = pads4(pd)
    N, C, H, W = x.shape
    O, Cg, KH, KW = w.shape
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (t, b), (l, r)))
    OH = (H + t + b - dl[0] * (KH - 1) - 1) // st[0] + 1
    OW = (W + l + r - dl[1] * (KW - 1) - 1) // st[1] + 1
    y = np.zeros((N, O, OH, OW))
    Og = O // g
    for gi in range(g):
        xs = xp[:, gi * Cg:(gi + 1) * Cg]
        for kh in range(KH):
            for kw in range(KW):
                h0, w0 = kh * dl[0], kw * dl[1]
                patch = xs[:, :, h0:h0 + st[0] * (OH - 1) + 1:st[0], w0:w0 + st[1] * (OW - 1) + 1:st[1]]
                y[:, gi * Og:(gi + 1) * Og] += np.einsum(
                    "ncij,oc->noij", patch, w[gi * Og:(gi + 1) * Og, :, kh, kw].astype(np.float64))
    return y


def module(cases, pools):
    def t(name, shape):
        return {"name": name, "type": {"tensor": {"shape": shape, "dtype": "f32"}}}
    params, bind, results = [], [], []
    for i, c in enumerate(cases):
        name, C, H, W, ws, st, pd, dl, g, bias, res, relu = c
        OH, OW = out_hw(c)
        params += [t("x%d" % i, ["n", C, H, W]), t("w%d" % i, list(ws))]
        attrs = {"strides": st, "padding": pd, "dilation": dl, "groups": g}
        bind.append({"var": "c%d" % i, "value": {"op": "nn.conv2d", "args": ["x%d" % i, "w%d" % i],
                                                 "attrs": attrs}})
        cur = "c%d" % i
        if bias:
            params.append(t("b%d" % i, [1, ws[0], 1, 1] if bias == "1o11" else [ws[0], 1, 1]))
            bind.append({"var": "s%d" % i, "value": {"op": "add", "args": ["b%d" % i, cur]}})
            cur = "s%d" % i
        if res:
            params.append(t("r%d" % i, ["n", ws[0], OH, OW]))
            bind.append({"var": "a%d" % i, "value": {"op": "add", "args": [cur, "r%d" % i]}})
            cur = "a%d" % i
        if relu is True:
            bind.append({"var": "y%d" % i, "value": {"op": "nn.relu", "args": [cur]}})
            cur = "y%d" % i
        elif relu == "silu":
            bind.append({"var": "g%d" % i, "value": {"op": "sigmoid", "args": [cur]}})
            bind.append({"var": "y%d" % i, "value": {"op": "multiply", "args": [cur, "g%d" % i]}})
            cur = "y%d" % i
        elif relu == "hardswish":
            steps = (("multiply", 1.0 / 6.0), ("add", 0.5), ("maximum", 0.0), ("minimum", 1.0))
            h = cur
            for j, (op, k) in enumerate(steps):
                bind.append({"var": "h%d_%d" % (i, j),
                             "value": {"op": op, "args": [h, {"const": k, "dtype": "f32"}]}})
                h = "h%d_%d" % (i, j)
            bind.append({"var": "y%d" % i, "value": {"op": "multiply", "args": [h, cur]}})
            cur = "y%d" % i
        elif relu and relu[0] in ("leaky", "prelu"):
            a, z = {"const": relu[1], "dtype": "f32"}, {"const": 0.0, "dtype": "f32"}
            gt = relu[0] == "leaky"
            bind.append({"var": "l%d" % i, "value": {"op": "greater" if gt else "less", "args": [cur, z]}})
            bind.append({"var": "q%d" % i, "value": {"op": "multiply", "args": [cur, a] if gt else [a, cur]}})
            bind.append({"var": "y%d" % i, "value": {"op": "where", "args": ["l%d" % i] + (
                [cur, "q%d" % i] if gt else ["q%d" % i, cur])}})
            cur = "y%d" % i
        elif relu:
            if len(relu) > 2:
                bind.append({"var": "y%d" % i, "value": {"op": "nn.relu", "args": [cur]}})
                cur = "y%d" % i
            for j, (op, bound) in enumerate((("maximum", relu[0]), ("minimum", relu[1]))):
                if bound is not None:
                    k = {"const": bound, "dtype": "f32"}
                    bind.append({"var": "y%d_%d" % (i, j), "value": {"op": op, "args": [cur, k]}})
                    cur = "y%d_%d" % (i, j)
        results.append(cur)
    for i, c in enumerate(pools):
        name, op, C, H, W, k, st, pd, dl, ceil, cip = c
        params.append(t("px%d" % i, ["n", C, "h", "w"] if op == "adaptive_sym" else ["n", C, H, W]))
        attrs = {"pool_size": k, "strides": st, "padding": pd, "dilation": dl, "ceil_mode": ceil}
        if op == "avg":
            attrs["count_include_pad"] = cip
        if op.startswith("adaptive"):
            attrs = {"output_size": [H // k[0], W // k[1]]}
        bind.append({"var": "p%d" % i, "value": {"op": "nn.%s_pool2d" % ("adaptive_avg" if op.startswith("adaptive") else op),
                                                 "args": ["px%d" % i], "attrs": attrs}})
        results.append("p%d" % i)
    return {"format": "relax-json", "version": 1, "functions": {"main": {
        "kind": "relax", "params": params,
        "body": {"blocks": [{"dataflow": True, "bindings": bind}], "result": {"tuple": results}}}}}


def inputs(rng, n, cases=None, pools=None):
    """(arrays by name, expected outputs) at batch n (CASES and POOLS unless given)."""
    arrs, want = {}, []
    cases, pools = CASES if cases is None else cases, POOLS if pools is None else pools
    for i, c in enumerate(cases):
        name, C, H, W, ws, st, pd, dl, g, bias, res, relu = c
        OH, OW = out_hw(c)
        x = rng.standard_normal((n, C, H, W)).astype(np.float32)
        w = (rng.standard_normal(ws) / np.sqrt(ws[1] * ws[2] * ws[3])).astype(np.float32)
        arrs["x%d" % i], arrs["w%d" % i] = x, w
        y = conv_ref(x, w, st, pd, dl, g)
        if bias:
            b = rng.standard_normal(ws[0]).astype(np.float32)
            arrs["b%d" % i] = b.reshape((1, ws[0], 1, 1) if bias == "1o11" else (ws[0], 1, 1))
            y = y + b.reshape(1, -1, 1, 1)
        if res:
            r = rng.standard_normal((n, ws[0], OH, OW)).astype(np.float32)
            arrs["r%d" % i] = r
            y = y + r
        if relu is True:
            y = np.maximum(y, 0)
        elif relu == "silu":
            y = y / (1.0 + np.exp(-y))
        elif relu == "hardswish":
            y = y * np.clip(y / 6.0 + 0.5, 0.0, 1.0)
        elif relu and relu[0] in ("leaky", "prelu"):
            y = np.where(y > 0, y, y * relu[1])
        elif relu:
            y = y if len(relu) < 3 else np.maximum(y, 0)
            y = y if relu[0] is None else np.maximum(y, relu[0])
            y = y if relu[1] is None else np.minimum(y, relu[1])
        want.append(y)
    for i, c in enumerate(pools):
        x = rng.standard_normal((n,) + tuple(c[2:5])).astype(np.float32)
        arrs["px%d" % i] = x
        want.append(pool_ref(x, c))
    return arrs, want


def main():
    started = start(sys.argv, __doc__)
    if started is None:
        return 2
    relaxc, relax_run, checks = started
    check = checks.check
    rng = np.random.default_rng(13)
    with tempfile.TemporaryDirectory(prefix="rx_conv_lib.") as tmp:
        src, gen_src = os.path.join(tmp, "m.json"), os.path.join(tmp, "pools.json")
        with open(src, "w") as f:
            json.dump(module(CASES, POOLS), f)
        with open(gen_src, "w") as f:  # the generated loops: the poolings (their divisors)
            json.dump(module([], POOLS), f)
        rxa = {"lib": os.path.join(tmp, "lib.rxa"), "gen": os.path.join(tmp, "gen.rxa")}
        gen_opts = ["--lib-disable", "conv2d", "--lib-disable", "pool2d"]
        for tag, path, extra in (("lib", src, []), ("gen", gen_src, gen_opts)):
            rc, _, err = run_status([relaxc, "build", path, "-o", rxa[tag]] + extra)
            check(rc == 0, "relaxc build %s" % " ".join(extra) + ("" if rc == 0 else ": " + err))
            if rc != 0:
                return checks.done()
        text = run_status([relaxc, "print", src, "--after", "library_lower"])[1]
        check(text.count('"blas.conv2d"') == len(CASES),
              "every chain is one blas.conv2d (%d of %d)" % (text.count('"blas.conv2d"'), len(CASES)))
        check(all(op not in text for op in ("maximum", "minimum", "nn.relu", "sigmoid", "multiply",
                                            "where", "greater")),
              "every relu, clamp, SiLU, hardswish and leaky relu is the call's epilogue (none "
              "left in the lowered module)")
        check(text.count('"rt.pool2d"') == len(POOLS),
              "every pooling is one rt.pool2d (%d of %d)" % (text.count('"rt.pool2d"'), len(POOLS)))
        gen_text = run_status([relaxc, "print", src, "--after", "library_lower"] + gen_opts)[1]
        check("blas.conv2d" not in gen_text and "rt.pool2d" not in gen_text,
              "--lib-disable conv2d, pool2d keep the generated loops")
        # batch 2 also on the runtime's other ways: RX_GEMM=blas (im2col panels on the
        # BLAS's sgemm), RX_GEMM_KERNEL=portable (the implicit GEMM on the C kernel), and
        # on an AVX-512 CPU the lower tiles: RX_CONV_KERNEL=avx2 (library_conv_kern.c's
        # 6x16 AVX2 tile) and =portable (rx_rt_gemm_micro, then the epilogue pass)
        envs = {"lib": None, "gen": None,
                "blas": dict(os.environ, RX_GEMM="blas"),
                "portable": dict(os.environ, RX_GEMM_KERNEL="portable"),
                "avx2": dict(os.environ, RX_CONV_KERNEL="avx2"),
                "kern": dict(os.environ, RX_CONV_KERNEL="portable"),
                "t512": dict(os.environ, RX_CONV_BX="0")}
        rxa["blas"] = rxa["portable"] = rxa["threads3"] = rxa["avx2"] = rxa["kern"] = rxa["lib"]
        rxa["t512"] = rxa["lib"]
        envs["threads3"] = None
        # 3 threads on the machine's cores: the implicit GEMM's lanes of unequal lengths,
        # and threads that finish theirs take tasks from the end of the others'
        extra = {"threads3": ["--threads", "3"]}
        # batch 5: an image's phase planes are built before its first task by the threads
        # that need it (lanes that end mid-image, a thread taking tasks of an image from
        # another's end before that thread reaches it; 2 and 3 threads)
        extra["threads2"] = ["--threads", "2"]
        rxa["threads2"], envs["threads2"] = rxa["lib"], None
        outs = {}
        for n, tags in ((2, ("lib", "gen", "blas", "portable", "avx2", "kern", "t512", "threads3")),
                        (1, ("lib", "avx2", "t512")),
                        (5, ("threads2", "threads3")), (0, ("lib",))):
            arrs, want = inputs(rng, n)
            ins, gen_ins = [], []
            for k, v in arrs.items():
                p = os.path.join(tmp, "%s_%d.npy" % (k, n))
                np.save(p, v)
                ins += ["--in", "%s=%s" % (k, p)]
                gen_ins += ["--in", "%s=%s" % (k, p)] if k.startswith("px") else []
            for tag in tags:
                out = os.path.join(tmp, "out_%s_%d" % (tag, n))
                os.makedirs(out)
                rc, _, err = run_status([relax_run, rxa[tag], "--out-dir", out] + extra.get(tag, []) +
                                        (gen_ins if tag == "gen" else ins), envs[tag])
                check(rc == 0, "relax-run %s batch %d" % (tag, n) + ("" if rc == 0 else ": " + err[-500:]))
                if rc != 0:
                    continue
                skip = len(CASES) if tag == "gen" else 0
                for i, c in enumerate(CASES + POOLS):
                    if i < skip:
                        continue
                    got = np.load(os.path.join(out, "out%d.npy" % (i - skip)))
                    outs[tag, n, i] = got
                    ok = got.shape == want[i].shape and np.allclose(got, want[i], rtol=1e-4, atol=1e-4)
                    err_s = float(np.abs(got - want[i]).max(initial=0.0)) if got.shape == want[i].shape else -1
                    check(ok, "%s %s batch %d equals NumPy (max err %.2e)" % (c[0], tag, n, err_s))
        # the AVX-512 tile, the AVX2 tile and the GEMM kernel + epilogue pass sum in the
        # same order with the same roundings: bit-identical outputs (so are the AVX-512
        # pooling rows and stride-1 depthwise planes); only stride-2 depthwise differs
        # (FMAs on AVX-512, window_row's multiply then add below it)
        for n in (2, 1):
            for i, c in enumerate(CASES + POOLS):
                dw_s2 = i < len(CASES) and c[4][1] == 1 and c[8] > 1 and c[5] != [1, 1]
                for tag in ("avx2", "kern", "t512") if n == 2 else ("avx2", "t512"):
                    a, b = outs.get(("lib", n, i)), outs.get((tag, n, i))
                    if a is not None and b is not None and not dw_s2:
                        check(np.array_equal(a, b), "%s batch %d: %s bit-identical to the "
                              "AVX-512 way" % (c[0], n, tag))
        # a process whose first convolution is pointwise: on the AVX-512 tile it needs no
        # scratch at all (x and the weights read in place), which once failed as "out of
        # memory" (the empty scratch request); every tile kind
        pw = [c for c in CASES if c[0] == "pw_bias_res_relu"]
        first = os.path.join(tmp, "first_pw.json")
        with open(first, "w") as f:
            json.dump(module(pw, []), f)
        rc, _, err = run_status([relaxc, "build", first, "-o", first + ".rxa"])
        check(rc == 0, "relaxc build (pointwise alone)" + ("" if rc == 0 else ": " + err))
        arrs, want = inputs(rng, 2, pw, [])
        ins = []
        for k, v in arrs.items():
            np.save(os.path.join(tmp, "first_%s.npy" % k), v)
            ins += ["--in", "%s=%s" % (k, os.path.join(tmp, "first_%s.npy" % k))]
        for kind in ("avx512", "avx2", "portable"):
            out = os.path.join(tmp, "out_first_" + kind)
            rc, _, err = run_status([relax_run, first + ".rxa", "--out-dir", out, "--threads", "1"] +
                                    ins, dict(os.environ, RX_CONV_KERNEL=kind))
            got = np.load(os.path.join(out, "out0.npy")) if rc == 0 else None
            check(rc == 0 and np.allclose(got, want[0], rtol=1e-4, atol=1e-4),
                  "pointwise as the first call (%s) equals NumPy" % kind + ("" if rc == 0 else ": " + err[-300:]))
    return checks.done()


if __name__ == "__main__":
    sys.exit(main())
