/*
 * fuse_ops.c — placeholder while the pass is written (see pass.h); the pipeline already
 * names it. Returns the module unchanged.
 */
#include "relax/pass.h"

bool rx_pass_fuse_ops(rx_module *m, rx_diags *d)
{
    (void)m;
    (void)d;
    return true;
}
