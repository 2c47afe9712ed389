/*
 * gpu_glsl.c — GPU kernels as GLSL 4.50 compute shaders, compiled to one SPIR-V bundle.
 *
 * The generator (gpu_kernel.c) writes every kernel of a module into one text, as it
 * does for OpenCL C. A Vulkan shader has one entry point and takes its parameters as
 * module-level declarations, so for a dialect with shader_per_kernel:
 *
 *   Head.     Kernel NAME's parameters become, in the launch ABI's order (docs/gpu.md,
 *             "Vulkan launch ABI"): per buffer parameter a storage buffer of set 0 at
 *             the next binding, `buffer NAME_B { T NAME_b[]; }`, then the status
 *             record `rx_st` at the last binding; one push-constant block holding per
 *             buffer its element offset `uint NAME_o32` (4 bytes: subscripts are 32-bit,
 *             so an offset past 2^32 elements could not be used anyway; main() widens
 *             it to `const int64_t NAME_o`), then each symbolic variable as `int64_t`
 *             (std430 packs them at natural alignment; the device packs each scalar
 *             argument into its member's offset and width, read from the SPIR-V).
 *             4-byte offsets let a fused kernel of a QDQ model (18-21 buffers and a
 *             few variables) fit the 128 bytes every Vulkan device has; at 8 bytes
 *             each, roberta's fused cumsum / embedding / LayerNorm kernel (17 buffers,
 *             2 variables: 152 bytes) was refused. The body sees NAME through
 *             subscripts NAME_b[uint(NAME_o + i)] (cg_sym.view) and the symbolic variables as const locals of their type.
 *             A kernel whose scalars need more push-constant bytes than the target's
 *             max_push_bytes is refused here, naming both; the device's own limit
 *             (maxPushConstantsSize) is checked again when the runtime loads it.
 *   Shaders.  Each kernel's text [at, end) becomes a shader: the dialect's prelude, the
 *             operation helpers the module used (the same for every kernel: a helper
 *             a shader does not call costs nothing), the kernel's module-scope lines
 *             in their order (its head's bindings and push constants, the `shared`
 *             work-group arrays and the `layout(...)` vec4 views of a binding that
 *             the body declares: GLSL wants them at module scope, so they are hoisted
 *             from the body), then the rest of the head and the body. The shaders are appended to src one after
 *             the other (what `relaxc print --after codegen` shows) and compiled by
 *             spirv.c into the bundle, in kernel order, under the kernels' names.
 *
 * Cost: one shaderc compile per kernel (a few ms each); the texts are linear.
 */
#include <stdio.h>
#include <string.h>

#include "gpu_int.h"
#include "relax/spirv.h"

enum { OFFSET_BYTES = 4, SCALAR_BYTES = 8 }; /* uint element offsets; int64_t variables */

void rx_gpu_glsl_head(gk *k, const rx_func *f, const char *name)
{
    cg *g = k->g;
    rx_sb *o = g->out;
    int nb = 0, nvar = 0;
    rx_sb push = {0}, widen = {0};
    rx_sb_printf(o, "/* kernel %s */\n", name);
    for (int i = 0; i < f->ntparams; i++) {
        const rx_buffer *b = f->tparams[i].buf;
        if (!b) continue;
        char *nm = rxi_cg_fresh(g, b->name);
        rx_sb_printf(o, "layout(std430, set = 0, binding = %d) buffer %s_B { %s %s_b[]; };\n", nb++,
                     nm, rxi_cg_stype((rx_dtype)b->dtype), nm);
        rx_sb_printf(&push, " uint %s_o32;", nm);
        rx_sb_printf(&widen, "    const int64_t %s_o = int64_t(%s_o32);\n", nm, nm);
        rxi_cg_push_sym(g, b, nm)->view = true;
    }
    rx_sb_printf(o, "layout(std430, set = 0, binding = %d) buffer rx_st_B { int rx_st[]; };\n", nb);
    for (int j = 0; j < f->nsvars; j++) {
        rx_sb_printf(&push, " int64_t rx_v%d;", j);
        nvar++;
    }
    if (k->hloop) { /* the host loop's iteration (gpu_kernel.c) */
        rx_sb_puts(&push, " int64_t rx_it;");
        nvar++;
    }
    /* std430: the 8-byte members start at the next multiple of 8 */
    int64_t bytes = (int64_t)nb * OFFSET_BYTES;
    if (nvar)
        bytes =
            (bytes + SCALAR_BYTES - 1) / SCALAR_BYTES * SCALAR_BYTES + (int64_t)nvar * SCALAR_BYTES;
    int64_t max_push = rx_target_int(k->t, "max_push_bytes");
    if (bytes > max_push)
        rxi_cg_err(
            g, f->loc,
            "kernel %s takes %d scalar arguments (%d element offsets, %d "
            "symbolic variables), %lld bytes of push constants, more than max_push_bytes=%lld "
            "of target %s",
            name, nb + nvar, nb, nvar, (long long)bytes, (long long)max_push, k->t->norm);
    if (nb + nvar) rx_sb_printf(o, "layout(push_constant) uniform rx_P {%s };\n", rx_sb_str(&push));
    rx_sb_free(&push);
    rx_sb_puts(o, "void main()\n{\n");
    g->indent = 1;
    if (nb) rx_sb_puts(o, rx_sb_str(&widen));
    rx_sb_free(&widen);
    for (int j = 0; j < f->nsvars; j++) {
        const rx_svar *v = f->svars[j];
        char *nm = rxi_cg_fresh(g, v->name);
        const char *ct = rxi_cg_ctype((rx_dtype)v->dtype);
        rx_sb_printf(o, "    const %s %s = %s(rx_v%d);\n", ct, nm, ct, j);
        rxi_cg_push_sym(g, v, nm);
    }
    for (int i = 0; i < g->syms.n; i++) { /* extents: after every parameter is in scope */
        cg_sym *s = &g->syms.items[i];
        if (s->view) rxi_cg_declare_dims(g, s, (const rx_buffer *)s->key);
    }
}

void rx_gpu_glsl_vload4(gk *k, const rx_buffer *b, const char *dst, const char *idx)
{
    cg *g = k->g;
    const cg_sym *s = rxi_cg_lookup(g, b);
    int binding = 0;
    for (int i = 0; i < g->f->ntparams && g->f->tparams[i].buf != b; i++)
        binding += g->f->tparams[i].buf != NULL;
    rx_gpu_ind(g);
    rx_sb_printf(g->out,
                 "layout(std430, set = 0, binding = %d) readonly buffer %s_B4 { vec4 %s_b4[]; };\n",
                 binding, s->name, s->name);
    rx_gpu_ind(g);
    rx_sb_printf(g->out, "const int64_t %s_p = %s_o + (%s);\n", dst, s->name, idx);
    rx_gpu_ind(g);
    rx_sb_printf(g->out, "const vec4 %s = (%s_p & 3l) == 0l ? %s_b4[uint(%s_p >> 2)]\n", dst, dst,
                 s->name, dst);
    rx_gpu_ind(g);
    rx_sb_printf(g->out,
                 "    : vec4(%s_b[uint(%s_p)], %s_b[uint(%s_p + 1l)], %s_b[uint(%s_p + 2l)], "
                 "%s_b[uint(%s_p + 3l)]);\n",
                 s->name, dst, s->name, dst, s->name, dst, s->name, dst);
}

/* Appends text[0..n) to src without its `shared` and `layout(` lines (work-group arrays,
 * vec4 views of bindings), which go to hoist. */
static void split_shared(const char *text, size_t n, rx_sb *body, rx_sb *hoist)
{
    for (size_t at = 0; at < n;) {
        const char *nl = memchr(text + at, '\n', n - at);
        size_t end = nl ? (size_t)(nl - text) + 1 : n, s = at;
        while (s < end && text[s] == ' ') s++;
        bool shared = (end - s > 7 && !strncmp(text + s, "shared ", 7)) ||
                      (end - s > 7 && !strncmp(text + s, "layout(", 7));
        rx_sb_putn(shared ? hoist : body, text + (shared ? s : at), end - (shared ? s : at));
        at = end;
    }
}

void rx_gpu_glsl_shaders(gk *k, const rx_sb *body, rx_sb *src, rx_sb *bin)
{
    cg *g = k->g;
    int n = k->shaders.n;
    rx_sb ops = {0};
    rxi_cg_prelude_ops(g, &ops);
    const char **names = rx_xcalloc((size_t)(n ? n : 1), sizeof *names);
    char **texts = rx_xcalloc((size_t)(n ? n : 1), sizeof *texts);
    for (int i = 0; i < n; i++) {
        const gk_shader *sh = &k->shaders.items[i];
        rx_sb one = {0}, kernel = {0}, hoist = {0};
        split_shared(body->p + sh->at, sh->end - sh->at, &kernel, &hoist);
        rx_sb_puts(&one, k->dl->prelude);
        if (g->need[H_F16] || g->need[H_BF16]) rx_sb_puts(&one, k->dl->prelude_f16);
        if (g->need[H_F64MATH]) rx_sb_puts(&one, k->dl->prelude_f64);
        rx_sb_putn(&one, ops.p ? ops.p : "", ops.n);
        rx_sb_putn(&one, hoist.p ? hoist.p : "", hoist.n);
        rx_sb_putn(&one, kernel.p ? kernel.p : "", kernel.n);
        rx_sb_putn(src, one.p, one.n);
        names[i] = sh->name;
        texts[i] = rx_sb_take(&one);
        rx_sb_free(&kernel);
        rx_sb_free(&hoist);
    }
    char msg[1024];
    if (rx_spirv_bundle(names, (const char *const *)texts, n, bin, msg, sizeof msg)) {
        rx_diag_add(g->d, "", "%s", msg);
        g->ok = false;
    }
    for (int i = 0; i < n; i++) free(texts[i]);
    free(texts);
    free(names);
    rx_sb_free(&ops);
}
