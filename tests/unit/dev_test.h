/*
 * dev_test.h — checks shared by the device tests (runtime/test_device_opencl.c,
 * codegen/test_device_vulkan.c): a row-sum kernel with the signature
 * rowsum(out, x, long cols) run over device tensors, one work-group per row, at each
 * given group size, compared with a host loop. Included as "../dev_test.h".
 */
#ifndef RX_DEV_TEST_H
#define RX_DEV_TEST_H

#include <check.h>
#include <string.h>

#include "relax/device.h"

static inline void dev_check_rowsum(rx_dev *d, rx_dev_kernel *k, const size_t *groups, int ngroups)
{
    rx_rt_err e = {{0}};
    enum { R = 7, COLS = 333 };
    static float x[R * COLS], out[R];
    for (int i = 0; i < R * COLS; i++) x[i] = (float)((i * 37) % 101) / 16.0f; /* exact sums */
    DLDataType f32 = {kDLFloat, 32, 1};
    int64_t xs[2] = {R, COLS}, os[1] = {R};
    DLTensor *dx = rx_dev_tensor_new(d, f32, 2, xs, &e), *dout = rx_dev_tensor_new(d, f32, 1, os, &e);
    ck_assert_msg(dx && dout, "%s", e.msg);
    ck_assert_int_eq(dx->device.device_type, d->info.dl_type);
    DLTensor hx = {x, {kDLCPU, 0}, 2, f32, xs, NULL, 0}, hout = {out, {kDLCPU, 0}, 1, f32, os, NULL, 0};
    ck_assert_msg(rx_dev_tensor_upload(d, dx, &hx, &e) == 0, "%s", e.msg);
    /* a shape mismatch is refused */
    ck_assert(rx_dev_tensor_upload(d, dout, &hx, &e) == -1);
    ck_assert_msg(strstr(e.msg, "differ in dtype or shape"), "%s", e.msg);
    rx_dev_arg args[] = {{RX_DEV_ARG_BUF, rx_dev_tensor_buf(dout), 0, 0},
                         {RX_DEV_ARG_BUF, rx_dev_tensor_buf(dx), 0, 0}, {RX_DEV_ARG_I64, NULL, COLS, 0}};
    for (int g = 0; g < ngroups; g++) {
        size_t local = groups[g], global = R * local;
        memset(out, 0, sizeof out);
        ck_assert_msg(d->ops->launch(d, k, args, 3, 1, &global, &local, &e) == 0, "%s", e.msg);
        ck_assert_msg(rx_dev_tensor_download(d, &hout, dout, &e) == 0, "%s", e.msg);
        for (int r = 0; r < R; r++) {
            float want = 0;
            for (int c = 0; c < COLS; c++) want += x[r * COLS + c];
            ck_assert_msg(out[r] == want, "group %zu row %d: %g, want %g", local, r, out[r], want);
        }
    }
    rx_dev_tensor_free(d, dx);
    rx_dev_tensor_free(d, dout);
}

#endif
