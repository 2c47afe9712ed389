/*
 * driver.c — the pipeline (one table, below) and rx_build (contracts in driver.h).
 *
 * A build is: check the options, parse the relax-json text, then run every pass of
 * `pipeline` in order, timing each, dumping the text form after each graph-level pass
 * when asked, and finally package the artifact (metadata + sections). The times stay in
 * rx_build_result (rx_build_times_json), never in the artifact: its bytes depend only on
 * the module, target, options and compiler version. A pass is either
 * graph level (rx_pass_fn: module in, module out) or a lowering stage that fills the
 * build's artifact builder or kernel object. The first failing pass stops the build;
 * its diagnostics are already in d.
 *
 * Everything a build touches lives in its bstate, created and freed by one call, so
 * builds on different threads share nothing.
 */
#include "relax/driver.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "relax/codegen.h"
#include "relax/deduce.h"
#include "relax/json.h"
#include "relax/nvrtc.h"
#include "relax/pass.h"
#include "relax/target.h"
#include "relax/text.h"
#include "relax/vm.h"

/* Debug builds (the test build) verify the module after every graph-level stage. */
#ifdef NDEBUG
#define RX_VERIFY_DEFAULT false
#else
#define RX_VERIFY_DEFAULT true
#endif

typedef struct bstate {
    const rx_build_opts *o;  /* options (defaults filled) */
    rx_module *m;            /* the module, from parse on */
    rx_diags *d;             /* where errors go */
    rx_rxa_builder *b;       /* the artifact being built (lower_vm on) */
    rx_vmgen_info info;      /* what lower_vm used */
    rx_sb csrc;              /* the kernels' C (or GPU) source (codegen) */
    rx_sb launch;            /* GPU targets: the LAUNCH section (codegen) */
    rx_sb spirv;             /* vulkan: the SPIR-V bundle (codegen) */
    uint8_t *so;             /* the kernel object (codegen; heap) */
    size_t so_n;
    rx_build_result *r;      /* times, key, failed stage */
    rx_target tgt;           /* the parsed target (check_options) */
    size_t mem;              /* bytes the module's arena holds (its hook counts them) */
    bool mem_over;           /* mem went past o->max_memory */
    bool plan;               /* memory_plan ran: lower_vm plans */
} bstate;

static bool st_library_lower(bstate *s);
static bool st_legalize(bstate *s);
static bool st_fuse_ops(bstate *s);
static bool st_lift_workspace(bstate *s);
static bool st_schedule_moves(bstate *s);
static bool st_memory_plan(bstate *s);
static bool st_lower_vm(bstate *s);
static bool st_codegen(bstate *s);

/* What a stage is: how the driver runs it and what can be looked at after it. */
typedef enum stage_kind {
    ST_GRAPH,   /* module -> module: verified, dumped (--dump-ir), printable as text or
                   relax-json (relaxc print --after), where rx_build_module may stop */
    ST_SWITCH,  /* turns on what a later lowering stage does (memory_plan: planning
                   inside lower_vm); not a pass: untimed, not in the metadata's
                   "passes" (whether planning ran is the metadata's "planned") */
    ST_LOWER,   /* module -> VM bytecode in the artifact builder (--after: the listing) */
    ST_CODEGEN, /* loop functions -> kernel object (--after: the kernels' source) */
} stage_kind;

static const char *const kind_names[] = {"graph", "switch", "lower", "codegen"};

typedef struct stage {
    const char *name;        /* what --dump-ir, --after, --disable-pass and timings say */
    const char *step;        /* its number in the paper's pipeline (Figure 13) */
    int min_opt;             /* runs at this opt level and above (0: always) */
    stage_kind kind;
    rx_pass_fn graph;        /* ST_GRAPH: the pass, or NULL when lower takes options */
    bool (*lower)(bstate *); /* every other stage, and graph passes that take options */
    bool key_after;          /* the cache key is the module's hash after this pass */
    bool deduce_after;       /* rewrites bindings: the driver deduces the module again */
    const char *paper;       /* where the paper describes it ("" for none) */
    const char *what;        /* one line: `relaxc passes` prints it */
} stage;

/* The pipeline (paper §4.7, Figure 13): the one list of stages. `relaxc passes` prints
 * it, docs/passes.md's table is checked against it (tests/integration), and the opt
 * levels are its min_opt column:
 *   0  what is needed to run: deduce, legalize, lower, codegen; no planning; data
 *      movement (copies, permutes, concat) scheduled for memory speed (schedule_moves),
 *      reshapes as views (reshape_view)
 *   1  + clean-ups (simplify, canonicalize, dce), CPU loop scheduling and tiling, memory planning
 *   2  + library lowering, FuseOps + FuseTIR, workspace lifting (the default)
 *   3  + static-shape specialization
 * A stage with min_opt > 0 can also be turned off by name (rx_build_opts.disable): that
 * is how the ablation benchmark runs. The passes that rewrite bindings (deduce_after)
 * leave their annotations to the driver, which runs deduction (normal form and
 * annotations, §4.1) right after them, inside their time; then the verifier. */
static const stage pipeline[] = {
    {"deduce", "1", 0, ST_GRAPH, rx_deduce_module, NULL, true, false, "§4.1, Figures 6-7",
     "A-normal form and forward deduction of every annotation; the cache key is taken here"},
    {"simplify", "1a", 1, ST_GRAPH, rx_pass_simplify, NULL, false, true, "",
     "exporters' spellings: power(x, 2) -> x * x, divide(1, sqrt(y)) -> rsqrt(y)"},
    {"canonicalize", "1b", 1, ST_GRAPH, rx_pass_canonicalize, NULL, false, true, "",
     "var-to-var copies, tuple get_item, tuple rebuilds, constant folding"},
    {"dce", "1c", 1, ST_GRAPH, rx_pass_dce, NULL, false, true, "", "unused pure bindings"},
    {"library_lower", "2", 2, ST_GRAPH, NULL, st_library_lower, false, true, "§4.6, Figure 12",
     "matmul [+ bias] [+ activation] chains -> call_dps_library of BLAS, by a cost rule"},
    {"legalize", "3", 0, ST_GRAPH, NULL, st_legalize, false, true, "§4.7",
     "op calls -> call_tir of generated loop functions (symbolic shapes kept)"},
    {"dce_post", "3b", 0, ST_GRAPH, rx_pass_dce, NULL, false, true, "",
     "unused bindings and loop functions no longer called"},
    {"analysis", "4", 0, ST_GRAPH, rx_pass_annotate_patterns, NULL, false, false, "§4.2, Algorithm 1",
     "compute pattern of every loop function"},
    {"fuse_ops", "5", 2, ST_GRAPH, NULL, st_fuse_ops, false, true, "§4.2, Algorithm 2, Figure 8",
     "groups call_tirs by compute pattern into primitive graph functions"},
    {"fuse_tir", "5b", 2, ST_GRAPH, rx_pass_fuse_tir, NULL, false, true, "§4.2, Figure 9",
     "one loop function per group; intermediates inlined or allocated"},
    {"lift_workspace", "6", 2, ST_GRAPH, NULL, st_lift_workspace, false, true, "§4.4, Figure 11",
     "kernel workspaces -> outputs planned by the graph"},
    {"reshape_view", "6b", 0, ST_GRAPH, rx_pass_reshape_view, NULL, false, true, "",
     "CPU: calls copying a tensor in row-major order (reshape, flatten, squeeze, expand_dims) -> views"},
    {"specialize", "7a", 3, ST_GRAPH, rx_pass_specialize, NULL, false, true, "",
     "static-shape copies of loop functions per call"},
    {"schedule_matvec", "7b", 1, ST_GRAPH, rx_pass_schedule_matvec, NULL, false, false, "",
     "decode's matrix-vector products (<= 16 rows): the weight streamed once, columns split"},
    {"schedule_moves", "7m", 0, ST_GRAPH, NULL, st_schedule_moves, false, false, "§4.6",
     "CPU data movement (copies, permutes, concat): split, tiled, parallel, vectorized"},
    {"schedule", "7", 1, ST_GRAPH, rx_pass_schedule_cpu, NULL, false, false, "§4.6",
     "CPU tiling of reductions and transposes, then loop kinds: parallel, vectorized"},
    {"memory_plan", "8", 1, ST_SWITCH, NULL, st_memory_plan, false, false, "§4.3, Algorithm 3, Figure 10",
     "static memory planning of intermediates (done by lower_vm)"},
    {"cuda_graph", "9", 2, ST_GRAPH, rx_pass_cuda_graph, NULL, false, false, "§4.6, Figure 17",
     "cuda: regions of static kernel launches marked for CUDA Graph capture, keyed by symbolic values"},
    {"lower_vm", "10", 0, ST_LOWER, NULL, st_lower_vm, false, false, "§4.7",
     "explicit allocations, DPS calls, shape heap, VM bytecode"},
    {"codegen", "11", 0, ST_CODEGEN, NULL, st_codegen, false, false, "",
     "loop functions -> C -> shared object with the system compiler"},
};

int rx_pipeline_count(void) { return RX_COUNTOF(pipeline); }

const char *rx_pipeline_name(int i)
{
    return i >= 0 && i < RX_COUNTOF(pipeline) ? pipeline[i].name : NULL;
}

/* Steps that are for the CPU only: schedule and specialize write OpenMP loop kinds and
 * CPU tiles; reshape_view makes VIEWs, which the device VM does not place in its split
 * storages; library lowering calls CPU libraries (BLAS), except on `opencl,clblast=1`
 * and `cuda,cublas=1`, where its registry is CLBlast's or cuBLAS's (library_lower.c). A
 * GPU build skips them; its kernels are scheduled by codegen (gpu_kernel.c). */
static bool cpu_only(const rx_target *t, const char *name)
{
    if (!strcmp(name, "library_lower"))
        return !(t->kind == RX_TARGET_OPENCL && rx_target_int(t, "clblast")) &&
               !(t->kind == RX_TARGET_CUDA && rx_target_int(t, "cublas"));
    return !strcmp(name, "schedule") || !strcmp(name, "schedule_matvec") ||
           !strcmp(name, "schedule_moves") || !strcmp(name, "specialize") ||
           !strcmp(name, "reshape_view");
}

/* Whether the step `name` of minimum level min_opt runs under o for target t. */
static bool enabled(const rx_build_opts *o, const rx_target *t, const char *name, int min_opt)
{
    if (o->opt_level < min_opt) return false;
    if (t->kind != RX_TARGET_CPU && cpu_only(t, name)) return false;
    if (t->kind != RX_TARGET_CUDA && !strcmp(name, "cuda_graph")) return false; /* CUDA only */
    for (int i = 0; o->disable && o->disable[i]; i++)
        if (!strcmp(o->disable[i], name)) return false;
    return true;
}

/* Whether name can be given to rx_build_opts.disable. */
static bool can_disable(const char *name)
{
    for (int i = 0; i < RX_COUNTOF(pipeline); i++)
        if (!strcmp(name, pipeline[i].name)) return pipeline[i].min_opt > 0;
    return false;
}

const char *rx_pipeline_optional(int i)
{
    int k = 0;
    for (int j = 0; j < RX_COUNTOF(pipeline); j++)
        if (pipeline[j].min_opt > 0 && k++ == i) return pipeline[j].name;
    return NULL;
}

bool rx_pipeline_stage(int i, rx_stage_info *out)
{
    if (i < 0 || i >= RX_COUNTOF(pipeline)) return false;
    const stage *p = &pipeline[i];
    *out = (rx_stage_info){p->name, p->step, p->min_opt, kind_names[p->kind], p->paper, p->what};
    return true;
}

int rx_pipeline_min_opt(int i)
{
    return i >= 0 && i < RX_COUNTOF(pipeline) ? pipeline[i].min_opt : -1;
}

/* ---- stages with options ---- */

/* Library lowering is graph level but takes the build's options. */
static bool st_library_lower(bstate *s)
{
    rx_lib_opts o = s->o->lib;
    o.opencl = s->tgt.kind == RX_TARGET_OPENCL; /* enabled() ran it: clblast=1 */
    o.cuda = s->tgt.kind == RX_TARGET_CUDA;     /* ... or cublas=1 */
    return rx_pass_library_lower(s->m, &o, s->d);
}

/* legalize: on a GPU target nn.rnn becomes loops (rt.rnn runs on CPU memory only). */
static bool st_legalize(bstate *s)
{
    return rx_legalize_for(s->m, s->tgt.kind != RX_TARGET_CPU, NULL, s->d);
}

/* fuse_ops: on vulkan a group's kernel must fit its scalar arguments in the push
 * constants (gpu_glsl.c: 4 bytes per buffer's offset, 8 per symbolic variable, at most
 * max_push_bytes) and its buffers in 32 storage-buffer bindings (lavapipe's
 * maxPerStageDescriptorStorageBuffers; the status record is one), so FuseOps refuses
 * a merge that would not (fuse_args.c). */
static bool st_fuse_ops(bstate *s)
{
    if (s->tgt.kind != RX_TARGET_VULKAN) return rx_pass_fuse_ops(s->m, s->d);
    rx_fuse_limit lim = {31, 4, 8, rx_target_int(&s->tgt, "max_push_bytes")};
    return rx_pass_fuse_ops_limited(s->m, &lim, s->d);
}

/* lift_workspace: on a GPU target FuseTIR's local intermediates first become global
 * (gpu_workspace.c), so that each nest of a fused function is a grid kernel. */
static bool st_lift_workspace(bstate *s)
{
    if (s->tgt.kind != RX_TARGET_CPU) rx_gpu_promote_local_allocs(s->m);
    return rx_pass_lift_workspace(s->m, s->d);
}

/* schedule_moves: elementwise vector-math nests too where "schedule" will not run (O0,
 * or disabled): from O1 its row schedules take them with their reductions. */
static bool st_schedule_moves(bstate *s)
{
    bool sched = false;
    for (int i = 0; i < RX_COUNTOF(pipeline); i++)
        if (!strcmp(pipeline[i].name, "schedule"))
            sched = enabled(s->o, &s->tgt, "schedule", pipeline[i].min_opt);
    return rx_schedule_moves(s->m, !sched, NULL);
}

/* ---- lowering stages ---- */

/* memory_plan: a switch lower_vm reads. */
static bool st_memory_plan(bstate *s)
{
    s->plan = true;
    return true;
}

/* The VM's device type (ALLOC_STORAGE) and the kernel section of target kind k. */
static int64_t dev_type(rx_target_kind k)
{
    switch (k) {
    case RX_TARGET_CPU: return RX_DEV_CPU;
    case RX_TARGET_CUDA: return RX_DEV_CUDA;
    case RX_TARGET_VULKAN: return RX_DEV_VULKAN;
    default: return RX_DEV_OPENCL;
    }
}

static uint32_t kernel_section(rx_target_kind k)
{
    switch (k) {
    case RX_TARGET_CPU: return RX_RXA_KERNELS_CPU;
    case RX_TARGET_CUDA: return RX_RXA_KERNELS_PTX;
    case RX_TARGET_VULKAN: return RX_RXA_KERNELS_SPIRV;
    default: return RX_RXA_KERNELS_OPENCL;
    }
}

static bool st_lower_vm(bstate *s)
{
    s->b = rx_rxa_builder_new();
    if (!s->b) {
        rx_diag_add(s->d, "", "out of memory");
        return false;
    }
    rx_vmgen_opts vo = {.no_plan = !s->plan,
                        .dev_type = dev_type(s->tgt.kind),
                        .kernel_section = kernel_section(s->tgt.kind)};
    return rx_vmgen_with(s->m, s->b, &vo, &s->info, s->d);
}

/* CUDA C src compiled by NVRTC into the KERNELS_PTX section (the PTX text,
 * uncompressed: docs/gpu.md) and KERNELS_CUBIN. */
static bool cuda_sections(bstate *s, const char *src, size_t n)
{
    rx_sb ptx = {0}, cubin = {0};
    bool ok = rx_nvrtc_ptx(src, n, rx_target_str(&s->tgt, "arch"), &ptx, &cubin, s->d);
    if (ok) rx_rxa_set_section(s->b, RX_RXA_KERNELS_PTX, ptx.p, ptx.n);
    if (ok && cubin.n) rx_rxa_set_section(s->b, RX_RXA_KERNELS_CUBIN, cubin.p, cubin.n);
    rx_sb_free(&ptx);
    rx_sb_free(&cubin);
    return ok;
}

static bool st_codegen(bstate *s)
{
    bool any = false;
    for (int i = 0; i < s->m->nfuncs && !any; i++) any = s->m->funcs[i]->kind == RX_F_TIR;
    if (!any && s->tgt.kind == RX_TARGET_OPENCL && rx_target_int(&s->tgt, "clblast")) {
        /* only CLBlast calls: still an OpenCL artifact, so the runtime opens the device */
        static const char none[] = "/* no kernels: every call is a CLBlast call */\n";
        rx_rxa_set_section(s->b, RX_RXA_KERNELS_OPENCL, none, sizeof none - 1);
        return true;
    }
    if (!any && s->tgt.kind == RX_TARGET_CUDA && rx_target_int(&s->tgt, "cublas")) {
        /* only cuBLAS calls: still a CUDA artifact, its PTX a valid module without entries */
        static const char none[] = "/* no kernels: every call is a cuBLAS call */\n";
        return cuda_sections(s, none, sizeof none - 1);
    }
    if (!any) return true; /* no kernels, no object */
    if (s->tgt.kind != RX_TARGET_CPU) {
        if (!rx_codegen_gpu(s->m, &s->tgt, &s->csrc, &s->spirv, &s->launch, s->d)) return false;
        if (s->tgt.kind == RX_TARGET_CUDA) {
            if (!cuda_sections(s, rx_sb_str(&s->csrc), s->csrc.n)) return false;
        } else if (s->tgt.kind == RX_TARGET_VULKAN) {
            rx_rxa_set_section(s->b, RX_RXA_KERNELS_SPIRV, s->spirv.p, s->spirv.n);
        } else {
            rx_rxa_set_section(s->b, RX_RXA_KERNELS_OPENCL, rx_sb_str(&s->csrc), s->csrc.n);
        }
        rx_rxa_set_section(s->b, RX_RXA_LAUNCH, s->launch.p, s->launch.n);
        return true;
    }
    rx_codegen_opts co = {.isa_versions = s->o->opt_level >= 3, /* AVX versions at O3 */
                          /* exp, erf, tanh, log kernels without contraction below O3
                             (their explicit fmaf is a libm call in the baseline) */
                          .exact_isa_versions = s->o->opt_level <= 2};
    if (!rx_codegen_c_with(s->m, &co, &s->csrc, s->d)) return false;
    return rx_cc_build(rx_sb_str(&s->csrc), s->csrc.n, s->o->cc, &s->so, &s->so_n, s->d);
}

/* ---- the run ---- */

/* Checks o (target, opt level, disabled steps, library options); the parsed target goes
 * to *t. With build set, a valid target of a kind this compiler cannot generate code for
 * is refused with the reason (rx_target_available); a key needs no code generator. */
static bool check_options(const rx_build_opts *o, bool build, rx_target *t, rx_diags *d)
{
    if (!rx_target_parse(o->target, t, d)) return false;
    char why[256];
    if (build && !rx_target_available(t->kind, why, sizeof why)) {
        rx_diag_add(d, "target", "target %s is not supported yet: %s", t->norm, why);
        return false;
    }
    if (o->opt_level < 0 || o->opt_level > 3) {
        rx_diag_add(d, "", "opt level %d out of range (0..3)", o->opt_level);
        return false;
    }
    for (int i = 0; o->disable && o->disable[i]; i++)
        if (!can_disable(o->disable[i])) {
            rx_sb known = {0};
            for (int k = 0; rx_pipeline_optional(k); k++)
                rx_sb_printf(&known, "%s%s", k ? ", " : "", rx_pipeline_optional(k));
            rx_diag_add(d, "", "pass %s cannot be disabled (passes that can: %s)", o->disable[i],
                        rx_sb_str(&known));
            rx_sb_free(&known);
            return false;
        }
    return rx_lib_opts_check(&o->lib, d);
}

static bool dump(bstate *s, int idx)
{
    const char *dir = s->o->dump_dir;
    if (mkdir(dir, 0777) && errno != EEXIST) {
        rx_diag_add(s->d, "", "cannot create %s: %s", dir, strerror(errno));
        return false;
    }
    rx_sb path = {0}, text = {0};
    rx_sb_printf(&path, "%s/%02d-%s.txt", dir, idx + 1, pipeline[idx].name);
    rx_print_module(s->m, &text);
    FILE *f = fopen(rx_sb_str(&path), "w");
    bool ok = f && fwrite(text.p ? text.p : "", 1, text.n, f) == text.n;
    if (f && fclose(f)) ok = false;
    if (!ok) rx_diag_add(s->d, "", "cannot write %s: %s", rx_sb_str(&path), strerror(errno));
    rx_sb_free(&path);
    rx_sb_free(&text);
    return ok;
}

/* ---- the memory budget ---- */

/* The module arena's hook: counts its bytes and the peak, notes a crossing of the
 * budget. Never refuses (the arena would abort): the driver stops the build at the
 * next check instead, so a pass may overshoot by what it allocates itself. */
static bool count_bytes(void *ud, ptrdiff_t size)
{
    bstate *s = ud;
    s->mem += (size_t)size;
    if (s->mem > s->r->memory_peak) s->r->memory_peak = s->mem;
    if (s->o->max_memory && s->mem > s->o->max_memory) s->mem_over = true;
    return true;
}

/* False (with the diagnostic, stage "memory") once the budget was crossed. */
static bool within_budget(bstate *s, const char *after)
{
    if (!s->mem_over) return true;
    rx_diag_add(s->d, "", "compile memory budget exceeded: the compiler held %.1f MiB by the "
                "end of %s, over the budget of %.1f MiB (max_compile_memory)",
                (double)s->r->memory_peak / 1048576.0, after, (double)s->o->max_memory / 1048576.0);
    s->r->failed = "memory";
    return false;
}

static bool run_passes(bstate *s, int last);

/* Runs options, parse and passes 0..last (last -1: parse only). */
static bool run(bstate *s, const char *json, size_t n, int last)
{
    rx_build_result *r = s->r;
    if (!check_options(s->o, true, &s->tgt, s->d)) {
        r->failed = "options";
        return false;
    }
    rx_read_opts ro = {.max_bytes = s->o->max_module_bytes};
    s->m = rx_json_read(json, n, &ro, s->d);
    if (!s->m) {
        r->failed = "parse";
        return false;
    }
    return run_passes(s, last);
}

/* Passes 0..last over the parsed module s->m (options checked). */
static bool run_passes(bstate *s, int last)
{
    rx_build_result *r = s->r;
    s->mem = r->memory_peak = rx_arena_bytes(s->m->arena);
    s->mem_over = s->o->max_memory && s->mem > s->o->max_memory;
    rx_arena_set_hook(s->m->arena, count_bytes, s);
    if (!within_budget(s, "parse")) return false;
    for (int i = 0; i <= last; i++) {
        const stage *p = &pipeline[i];
        if (!enabled(s->o, &s->tgt, p->name, p->min_opt)) continue;
        double t0 = rx_now_ms();
        s->m->unchanged = false;
        bool ok = p->graph ? p->graph(s->m, s->d) : p->lower(s);
        if (ok && p->deduce_after && !s->m->unchanged) ok = rx_deduce_module(s->m, s->d);
        if (p->kind != ST_SWITCH) r->times[r->ntimes++] = (rx_pass_time){p->name, rx_now_ms() - t0};
        if (!ok) {
            r->failed = p->name;
            return false;
        }
        if (!within_budget(s, p->name)) return false;
        if (p->kind == ST_GRAPH && s->o->instrument)
            s->o->instrument(p->name, s->m, s->o->instrument_ud);
        if (p->kind == ST_GRAPH && (s->o->verify_each || RX_VERIFY_DEFAULT) &&
            !rx_verify_module(s->m, p->name, s->d)) {
            r->failed = p->name;
            return false;
        }
        if (p->key_after && !rx_build_key(s->m, s->o, r->key, s->d)) {
            r->failed = "options";
            return false;
        }
        if (p->kind == ST_GRAPH && s->o->dump_dir && !dump(s, i)) {
            r->failed = p->name;
            return false;
        }
    }
    return true;
}

json_t *rx_build_times_json(const rx_build_result *r)
{
    json_t *a = json_array();
    for (int i = 0; i < r->ntimes; i++)
        json_array_append_new(a, json_pack("{s:s, s:f}", "name", r->times[i].name, "ms",
                                           (double)(int64_t)(r->times[i].ms * 1000) / 1000));
    return a;
}

/* o with its defaults filled: NULL means cpu at the default opt level. */
static void fill_defaults(const rx_build_opts *o, rx_build_opts *opts)
{
    memset(opts, 0, sizeof *opts);
    if (o) *opts = *o;
    else opts->opt_level = RX_OPT_LEVEL_DEFAULT;
    if (!opts->target) opts->target = "cpu";
}

static void state_init(bstate *s, rx_build_opts *opts, const rx_build_opts *o,
                       rx_build_result *r, rx_diags *d)
{
    fill_defaults(o, opts);
    memset(s, 0, sizeof *s);
    memset(r, 0, sizeof *r);
    s->o = opts;
    s->d = d;
    s->r = r;
}

static void state_free(bstate *s)
{
    rx_rxa_builder_free(s->b);
    rx_vmgen_info_free(&s->info);
    rx_sb_free(&s->csrc);
    rx_sb_free(&s->launch);
    rx_sb_free(&s->spirv);
    free(s->so);
    rx_module_free(s->m);
}

/* The artifact of a built state into r (rx_build_run's tail). */
static bool write_artifact(bstate *s, rx_build_opts *opts, rx_build_result *r, rx_diags *d)
{
    rx_artifact_meta meta = {s->tgt.norm, opts->opt_level, r->key, r->times, r->ntimes, &s->tgt};
    bool ok = rx_artifact_write(s->b, s->m, &s->info, &meta, s->so, s->so_n, &r->rxa, &r->rxa_n, d);
    if (!ok) r->failed = "write";
    return ok;
}

bool rx_build_run(const char *json, size_t n, const rx_build_opts *o, rx_build_result *r,
                  rx_diags *d)
{
    bstate s;
    rx_build_opts opts;
    state_init(&s, &opts, o, r, d);
    bool ok = run(&s, json, n, RX_COUNTOF(pipeline) - 1) && write_artifact(&s, &opts, r, d);
    state_free(&s);
    return ok;
}

bool rx_build_run_module(rx_module *m, const rx_build_opts *o, rx_build_result *r, rx_diags *d)
{
    bstate s;
    rx_build_opts opts;
    state_init(&s, &opts, o, r, d);
    s.m = m;
    bool ok = check_options(&opts, true, &s.tgt, d);
    if (!ok) r->failed = "options";
    ok = ok && run_passes(&s, RX_COUNTOF(pipeline) - 1) && write_artifact(&s, &opts, r, d);
    state_free(&s);
    return ok;
}

bool rx_build(const char *json, size_t n, const rx_build_opts *o, uint8_t **rxa,
              size_t *rxa_n, rx_diags *d)
{
    rx_build_result r;
    bool ok = rx_build_run(json, n, o, &r, d);
    *rxa = r.rxa;
    *rxa_n = r.rxa_n;
    return ok;
}

/* The bytecode listing of every function in the builder. */
static bool disassemble(bstate *s, rx_sb *out)
{
    uint8_t *bytes;
    size_t n;
    rx_rxa *a = NULL;
    char err[256];
    static const uint8_t placeholder[1] = {0}; /* parse needs a kernel section to name */
    rx_rxa_set_section(s->b, kernel_section(s->tgt.kind), placeholder, sizeof placeholder);
    if (rx_rxa_serialize(s->b, &bytes, &n)) {
        rx_diag_add(s->d, "", "out of memory");
        return false;
    }
    bool ok = rx_rxa_parse(bytes, n, "<lowered>", &a, err, sizeof err) == 0 &&
              rx_vm_verify(a, err, sizeof err) == 0;
    if (!ok) rx_diag_add(s->d, "", "internal error: lowered code does not verify: %s", err);
    for (uint32_t i = 0; ok && i < a->nfuncs; i++) {
        char *text = rx_vm_disasm(a, i);
        if (i) rx_sb_putc(out, '\n');
        rx_sb_puts(out, text ? text : "");
        free(text);
    }
    for (uint32_t i = 0; ok && i < a->nkernels; i++) {
        rx_sb_printf(out, "%skernel %u %s (buffers %u, ivars", i ? "" : "\n", i, a->kernels[i].name,
                     a->kernels[i].nbufs);
        for (uint32_t j = 0; j < a->kernels[i].nivars; j++) rx_sb_printf(out, " %s", a->kernels[i].ivar_names[j]);
        rx_sb_puts(out, ")\n");
    }
    rx_rxa_free(a);
    free(bytes);
    return ok;
}

/* The index of the pipeline step named after (-1: "parse"; graph_only: graph passes and
 * library_lower only); -2 when there is none. */
static int step_named(const char *after, bool graph_only)
{
    int last = -2;
    if (after && !strcmp(after, "parse")) last = -1;
    for (int i = 0; after && i < RX_COUNTOF(pipeline); i++)
        if (!strcmp(after, pipeline[i].name) && (!graph_only || pipeline[i].kind == ST_GRAPH))
            last = i;
    return last;
}

/* A build stopped after one step: the state and what it points at. */
typedef struct partial {
    bstate s;           /* the build state (state_free it) */
    rx_build_opts opts; /* the options with defaults filled in */
    rx_build_result r;  /* the result (r.failed: the failing step) */
} partial;

/* Parses json and runs the pipeline through step last into p; p->s is the caller's to
 * read and state_free. */
static bool run_partial(partial *p, const char *json, size_t n, const rx_build_opts *o, int last,
                        rx_diags *d)
{
    state_init(&p->s, &p->opts, o, &p->r, d);
    return run(&p->s, json, n, last);
}

bool rx_build_print(const char *json, size_t n, const rx_build_opts *o, const char *after,
                    rx_sb *out, const char **failed, rx_diags *d)
{
    int last = step_named(after, false);
    if (failed) *failed = NULL;
    if (last == -2) {
        rx_diag_add(d, "", "unknown pass %s", after ? after : "(none)");
        if (failed) *failed = "options";
        return false;
    }
    partial p;
    bool ok = run_partial(&p, json, n, o, last, d);
    if (ok) {
        if (last >= 0 && pipeline[last].kind == ST_LOWER) ok = disassemble(&p.s, out);
        else if (last >= 0 && pipeline[last].kind == ST_CODEGEN) rx_sb_puts(out, rx_sb_str(&p.s.csrc));
        else rx_print_module(p.s.m, out);
    }
    if (failed) *failed = p.r.failed;
    state_free(&p.s);
    return ok;
}

bool rx_build_module(const char *json, size_t n, const rx_build_opts *o, const char *after,
                     rx_module **out, const char **failed, rx_diags *d)
{
    int last = step_named(after, true);
    *out = NULL;
    if (failed) *failed = NULL;
    if (last == -2) {
        rx_diag_add(d, "", "%s is not a graph-level pass", after ? after : "(none)");
        if (failed) *failed = "options";
        return false;
    }
    partial p;
    bool ok = run_partial(&p, json, n, o, last, d);
    if (ok) {
        rx_arena_set_hook(p.s.m->arena, NULL, NULL); /* the hook's state dies here */
        *out = p.s.m;
        p.s.m = NULL;
    }
    if (failed) *failed = p.r.failed;
    state_free(&p.s);
    return ok;
}

bool rx_build_key(const rx_module *m, const rx_build_opts *o, char key[65], rx_diags *d)
{
    rx_build_opts opts;
    rx_target t;
    key[0] = '\0';
    fill_defaults(o, &opts);
    if (!check_options(&opts, false, &t, d)) return false;
    uint8_t h[32];
    rx_sb salt = {0};
    rx_sb_printf(&salt, "target=%s;opt=%d;compiler=%s", t.norm, opts.opt_level, RX_VERSION);
    if (opts.lib.mode != RX_LIB_AUTO)
        rx_sb_printf(&salt, ";lib=%s", opts.lib.mode == RX_LIB_NONE ? "none" : "all");
    for (int i = 0; opts.lib.disable && opts.lib.disable[i]; i++)
        rx_sb_printf(&salt, "%s%s", i ? "," : ";lib-disable=", opts.lib.disable[i]);
    if (opts.lib.threshold > 0 && opts.lib.threshold != RX_LIB_THRESHOLD_DEFAULT)
        rx_sb_printf(&salt, ";lib-threshold=%lld", (long long)opts.lib.threshold);
    /* disabled steps in pipeline order, each once, whatever order they were given in */
    int nd = 0;
    for (int k = 0; rx_pipeline_optional(k); k++) {
        const char *name = rx_pipeline_optional(k);
        bool off = false;
        for (int i = 0; opts.disable && opts.disable[i]; i++) off |= !strcmp(opts.disable[i], name);
        if (off) rx_sb_printf(&salt, "%s%s", nd++ ? "," : ";disable=", name);
    }
    rx_struct_hash(m, rx_sb_str(&salt), h);
    rx_hex(h, 32, key);
    rx_sb_free(&salt);
    return true;
}

bool rx_module_key(const char *json, size_t n, const rx_build_opts *o,
                   const rx_read_opts *ro, char key[65], rx_diags *d)
{
    rx_build_opts opts;
    rx_target t;
    key[0] = '\0';
    fill_defaults(o, &opts);
    if (!check_options(&opts, false, &t, d)) return false;
    rx_module *m = rx_json_read(json, n, ro, d);
    if (!m) return false;
    bool ok = rx_deduce_module(m, d) && rx_build_key(m, &opts, key, d);
    rx_module_free(m);
    return ok;
}
