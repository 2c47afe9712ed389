/*
 * json.h — relax-json v1 (docs/relax-json.md): reading a module into the IR and
 * writing it back.
 *
 * The reader checks everything the format promises before any deduction runs:
 * key sets per object (unknown keys are errors, except inside attrs), variable
 * scoping (bound once per function, no use before definition), symbolic variable
 * definition rules, the scalar expression grammar, op names and attribute schemas,
 * constants' base64 payloads against their dtype and shape. Every error carries the
 * JSON path of the offending value and says what was expected and what was found;
 * the reader keeps going after an error so that one run reports all of them.
 *
 * Hostile input is bounded: documents over `max_bytes`, nesting deeper than
 * `max_depth`, expressions longer than `max_expr_len` characters or deeper than
 * `max_expr_depth`, invalid UTF-8 and duplicate keys are errors, never crashes.
 *
 * The writer emits relax-json v1 with sorted-free, deterministic output (functions
 * and constants in module order). With RX_JSON_DEDUCED, every binding gets its
 * variable's annotation as `type` and every graph function its deduced `ret`.
 * Reading what the writer wrote gives a structurally equal module.
 */
#ifndef RELAX_JSON_H
#define RELAX_JSON_H

#include "relax/ir.h"

/* The JSON nesting limit by default, the same for relaxc and relaxd (max_json_depth), so
 * a module one accepts the other accepts too. */
#define RX_JSON_MAX_DEPTH 512

typedef struct rx_read_opts {
    size_t max_bytes;      /* 0: 256 MiB */
    int max_depth;         /* JSON nesting; 0: RX_JSON_MAX_DEPTH */
    size_t max_expr_len;   /* characters in one scalar expression; 0: 65536 */
    int max_expr_depth;    /* 0: 256 */
} rx_read_opts;

/* Parses a module. Returns NULL (and fills d) when the document or the module is
 * invalid; on success the module is not yet deduced (see deduce.h). opts may be NULL. */
rx_module *rx_json_read(const char *text, size_t n, const rx_read_opts *opts, rx_diags *d);

/* Reads a module from an already parsed relax-json document (a jansson value, borrowed
 * and not modified), with the same checks and diagnostics as rx_json_read from its
 * step 3 on; max_depth is checked on the tree, max_bytes is not (the caller bounds the
 * text it parsed). For callers that parsed the module as part of a larger document. */
typedef struct json_t json_t;
rx_module *rx_json_read_value(const json_t *root, const rx_read_opts *opts, rx_diags *d);

/* Reads a file; a file that cannot be read is one error with an empty path. */
rx_module *rx_json_read_file(const char *path, const rx_read_opts *opts, rx_diags *d);

enum {
    RX_JSON_DEDUCED = 1 << 0, /* write deduced annotations into `type` and `ret` */
    RX_JSON_COMPACT = 1 << 1  /* no indentation */
};

/* Writes m as relax-json v1. */
void rx_json_write(const rx_module *m, int flags, rx_sb *out);

#endif
