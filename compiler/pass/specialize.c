/*
 * specialize.c — placeholder while the pass is written (see pass.h); the pipeline already
 * names it. Returns the module unchanged.
 */
#include "relax/pass.h"

bool rx_pass_specialize(rx_module *m, rx_diags *d)
{
    (void)m;
    (void)d;
    return true;
}
