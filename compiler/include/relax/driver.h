/*
 * driver.h — the compiler pipeline and the build entry point (library rxdriver).
 *
 * The pipeline is one table of stages in compiler/driver/driver.c (paper §4.7, Figure
 * 13), run in order, each timed: its name, paper step, minimum opt level, kind (graph
 * pass, switch, lowering, code generation), paper section and a one-line description.
 * It is the only list: `relaxc passes` prints it (rx_pipeline_stage), docs/passes.md's
 * table is checked against it by a test, and every optional stage (min_opt > 0,
 * memory_plan included) can be turned off by name (rx_build_opts.disable, relaxc
 * --disable-pass): the ablation benchmark.
 *
 * After every graph-level stage the module is checked by rx_verify_module (ir.h) when
 * rx_build_opts.verify_each is set (relaxc --verify-each) and always in builds without
 * NDEBUG (the test build): a pass that leaves a malformed module fails the build naming
 * itself.
 *
 * Graph-level passes (deduce, legalize) leave a module that prints in the text form:
 * that is what --dump-ir writes after each of them (DIR/01-deduce.txt, ...) and what
 * `relaxc print --after` shows; after lower_vm it shows the bytecode listing, after
 * codegen the kernels' C source.
 *
 * Thread safety: a build owns everything it touches (its module, arena, builder,
 * diagnostics, temp directory); there is no global state, so the server may run builds
 * on several threads at once.
 */
#ifndef RELAX_DRIVER_H
#define RELAX_DRIVER_H

#include "relax/codegen.h"
#include "relax/json.h"
#include "relax/pass.h"
#include "relax/vmgen.h"

typedef struct rx_build_opts {
    const char *target;    /* KIND[,key=value]... (target.h; NULL: "cpu"); a kind that
                              rx_target_available refuses fails with its reason */
    int opt_level;         /* 0..3: which passes run (driver.c's table), in the cache
                              key and the metadata; RX_OPT_LEVEL_DEFAULT when o is NULL */
    const char *dump_dir;  /* write the text form after each graph-level pass; NULL: no */
    const rx_cc_opts *cc;  /* how kernels are compiled; NULL: rx_cc_build's defaults */
    rx_lib_opts lib;       /* library lowering (pass.h); zero: AUTO, nothing disabled.
                              Anything else is part of the cache key's salt */
    const char *const *disable; /* NULL-terminated names of optional steps not to run
                              (rx_pipeline_optional), in the cache key; NULL: none */
    size_t max_memory;     /* memory budget: bytes the module's arena (the IR and every
                              pass's results) may hold; checked after parsing and after
                              each pass, the build failing at stage "memory" past it.
                              0: no limit. Not in the cache key */
    size_t max_module_bytes; /* the module text's size limit (rx_read_opts.max_bytes; 0:
                              the reader's 256 MiB): relaxc lifts it for local files,
                              relaxd passes max_module_bytes. Not in the cache key */
    bool verify_each;      /* rx_verify_module after every graph-level stage (always
                              on without NDEBUG). Not in the cache key */
    /* Called after every graph-level stage that ran, before the verifier, with the
       stage's name and the module (pass instrumentation: tools inspect the module,
       tests plant a malformed one to see the verifier name the stage). NULL: none */
    void (*instrument)(const char *stage, rx_module *m, void *ud);
    void *instrument_ud;
} rx_build_opts;

#define RX_PIPELINE_MAX 24

typedef struct rx_build_result {
    uint8_t *rxa;          /* the artifact (heap; the caller frees) on success, else NULL */
    size_t rxa_n;          /* its size */
    const char *failed;    /* on failure, what failed: "options", "parse", or a pass name
                              (static string); NULL on success */
    rx_pass_time times[RX_PIPELINE_MAX]; /* wall time of each pass run, in order */
    int ntimes;
    char key[65];          /* the module's cache key (rx_build_key), "" before deduction */
    size_t memory_peak;    /* most bytes the module's arena held (what max_memory bounds) */
} rx_build_result;

/* The pass times of r as a new JSON array (jansson; the caller owns the reference):
 * [{"name": "deduce", "ms": 0.356}, ...] in the order the passes ran, ms rounded to the
 * microsecond. Times are not in the artifact (its bytes depend only on the module,
 * target, options and compiler version); this is where they go instead: relaxd's
 * compile response and log, `relaxc build --time-passes`. */
typedef struct json_t json_t;
json_t *rx_build_times_json(const rx_build_result *r);

/* Number of pipeline passes and the name of pass i (0 <= i < count), in order. */
int rx_pipeline_count(void);
const char *rx_pipeline_name(int i);

/* The lowest opt level at which pass i runs; -1 out of range. */
int rx_pipeline_min_opt(int i);

/* Name i (0, 1, ...) of the steps rx_build_opts.disable accepts: every stage with a
 * minimum opt level above 0 (memory_plan included), in order; NULL past the end. */
const char *rx_pipeline_optional(int i);

/* One row of the pipeline table, as `relaxc passes` prints it. */
typedef struct rx_stage_info {
    const char *name;  /* "fuse_ops" */
    const char *step;  /* its number in the paper's pipeline: "5" */
    int min_opt;       /* the lowest opt level that runs it */
    const char *kind;  /* "graph" (module -> module), "switch" (turns on part of a later
                          stage: memory_plan), "lower" (-> VM bytecode), "codegen" */
    const char *paper; /* "§4.2, Algorithm 2, Figure 8"; "" for none */
    const char *what;  /* one line */
} rx_stage_info;

/* Row i of the pipeline into *out; false past the end. */
bool rx_pipeline_stage(int i, rx_stage_info *out);

/* Compiles the relax-json module json[0..n) into an artifact (*rxa, heap, caller
 * frees; *rxa_n bytes). o may be NULL (cpu, RX_OPT_LEVEL_DEFAULT, no dump). Returns false after
 * adding diagnostics to d: located module errors, "target cuda is not supported yet: ...",
 * a C compiler failure, an unwritable dump directory. Thread-safe. */
bool rx_build(const char *json, size_t n, const rx_build_opts *o, uint8_t **rxa,
              size_t *rxa_n, rx_diags *d);

/* rx_build with the details: which stage failed, per-pass times, the cache key.
 * *r is overwritten; free r->rxa. */
bool rx_build_run(const char *json, size_t n, const rx_build_opts *o, rx_build_result *r,
                  rx_diags *d);

/* rx_build_run of a module already read (relaxc build MODEL.onnx: the importer's
 * module, without writing and re-reading its weights as base64 relax-json, which took
 * two thirds of a BERT-base build). Takes m over (freed whatever the outcome). The
 * artifact and key equal rx_build_run's of rx_json_write(m)'s text. */
bool rx_build_run_module(rx_module *m, const rx_build_opts *o, rx_build_result *r,
                         rx_diags *d);

/* Runs the pipeline up to and including pass `after` ("parse" stops before deduce)
 * and appends that stage's output to out: the text form for parse and graph-level
 * passes, the bytecode listing after lower_vm, the C source after codegen. Returns
 * false with diagnostics (and *failed as in rx_build_result when failed is non-NULL),
 * or for an unknown pass name with the diagnostic "unknown pass X". */
bool rx_build_print(const char *json, size_t n, const rx_build_opts *o, const char *after,
                    rx_sb *out, const char **failed, rx_diags *d);

/* Runs the pipeline up to and including the graph-level pass `after` (as
 * rx_build_print; "parse" stops before deduce) and hands the module over in *out (the
 * caller frees it with rx_module_free): what `relaxc print --after P --json` writes and
 * the golden pass tests (tests/passes) compare. A lowering stage (lower_vm, codegen)
 * or an unknown name is the error "X is not a graph-level pass". On failure *out is
 * NULL and *failed (when non-NULL) is set as in rx_build_print. */
bool rx_build_module(const char *json, size_t n, const rx_build_opts *o, const char *after,
                     rx_module **out, const char **failed, rx_diags *d);

/* The default optimization level of every entry point: relaxc build and hash, rx_build
 * with NULL options, relaxd's POST /v1/compile without "options", the relax CLI. */
#define RX_OPT_LEVEL_DEFAULT 2

/* The cache key of a deduced module m built with options o (NULL: cpu,
 * RX_OPT_LEVEL_DEFAULT): the hex SHA-256 of rx_struct_hash(m, salt) with the one salt
 *
 *     "target=T;opt=N;compiler=V"      (T the target, N the opt level, V RX_VERSION)
 *
 * followed by ";lib=none" or ";lib=all" and ";lib-disable=P1,P2" when the library
 * lowering options are not the default (so default keys never change)
 *
 * so a module built for another target, at another opt level or by another compiler
 * version never shares a key. T is the normalized target (target.h: "opencl,tile=8"), so
 * two spellings of one target share a key; a key can be taken for any valid target,
 * also one this compiler cannot build for yet. This is the only place the salt is written: relaxc hash,
 * relaxd's key (rx_module_key), rx_build_result.key and the artifact metadata's
 * module.hash all come from here (docs/relax-json.md, "Structural hash"). Checks the
 * options first; returns false with a diagnostic in d (unknown target or bad target
 * option, opt level outside 0..3) and key "". Thread-safe. */
bool rx_build_key(const rx_module *m, const rx_build_opts *o, char key[65], rx_diags *d);

/* The cache key (rx_build_key) of a module given as relax-json text, cheaply: parse +
 * deduce + structural hash, no lowering and no C compiler. ro bounds the document
 * (NULL: the reader's defaults). Writes 64 hex digits + NUL into key and returns true;
 * returns false with located diagnostics in d (options, parse or deduction errors). o
 * may be NULL (cpu, RX_OPT_LEVEL_DEFAULT). Equals the key rx_build_run reports for the
 * same text and options. Thread-safe. */
bool rx_module_key(const char *json, size_t n, const rx_build_opts *o,
                   const rx_read_opts *ro, char key[65], rx_diags *d);

#endif
