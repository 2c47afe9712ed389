/*
 * onnx_axis.c — the ONNX importer's converters onto the axis ops and the shifts:
 * GatherElements -> gather_elements; CumSum -> cumsum (reverse: on the input reversed
 * along the axis, the result reversed back; the axis a constant input); BitShift ->
 * left_shift / right_shift by `direction`.
 */
#include <string.h>

#include "onnx_int.h"

bool ox_c_gather_elements(ox_ctx *c)
{
    rx_attr *m = ox_amap(c);
    ox_aset(c, m, "axis", ox_aint(c, ox_attr_i(c, "axis", 0)));
    rx_node *a[2] = {ox_in_node(c, 0), ox_in_node(c, 1)};
    if (!a[0] || !a[1]) return false;
    return ox_out_node(c, 0, ox_call(c, "gather_elements", a, 2, m));
}

bool ox_c_cumsum(ox_ctx *c)
{
    rx_node *x = ox_in_node(c, 0);
    int64_t *ax;
    int n;
    if (!x) return false;
    if (!ox_ints(c, ox_in(c, 1), &ax, &n) || n != 1) {
        ox_err(c, "the axis must be a constant scalar");
        return false;
    }
    int nd = ox_ndim(x), a = ox_norm_axis(c, ax[0], nd > 0 ? nd : 1);
    if (a < 0) return false;
    bool rev = ox_attr_i(c, "reverse", 0) != 0;
    if (rev) x = ox_flip(c, x, a);
    rx_attr *m = ox_amap(c);
    ox_aset(c, m, "axis", ox_aint(c, a));
    ox_aset(c, m, "exclusive", ox_abool(c, ox_attr_i(c, "exclusive", 0) != 0));
    rx_node *y = ox_call1(c, "cumsum", x, m);
    if (y && rev) y = ox_flip(c, y, a);
    return ox_out_node(c, 0, y);
}

bool ox_c_bit_shift(ox_ctx *c)
{
    const char *dir = ox_attr_s(c, "direction", "");
    if (strcmp(dir, "LEFT") && strcmp(dir, "RIGHT")) {
        ox_err(c, "direction must be \"LEFT\" or \"RIGHT\", found \"%s\"", dir);
        return false;
    }
    return ox_out_node(c, 0, ox_call2(c, !strcmp(dir, "LEFT") ? "left_shift" : "right_shift",
                                      ox_in_node(c, 0), ox_in_node(c, 1)));
}
