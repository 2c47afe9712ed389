/*
 * names.h — private to the IR consumers (printer, json writer): the printed name of
 * every variable of one function.
 *
 * Names in the IR are not semantic and need not be unique: a pass may create two
 * variables called `lv0`, and sibling loop nests reuse `i`. Text that is read back (or
 * read by a person) must be unambiguous, so rx_names walks a function once, in order
 * of definition, and gives each local variable, symbolic variable, buffer, loop
 * variable, iterator and let variable a name not used by any variable visible at that
 * point: its own name when free, else name_1, name_2, ... Graph functions have one
 * scope (every variable is visible to the rest of the function, in one namespace with
 * the symbolic variables); loop functions nest scopes (a loop variable is visible in
 * its loop's body, an alloc to the rest of its list). The result depends only on the
 * function, so printing is deterministic.
 *
 * Local variables are keyed by id, symbolic variables and buffers by pointer. A
 * variable never defined in the function (a dangling reference) prints by its own name.
 */
#ifndef RELAX_IR_NAMES_H
#define RELAX_IR_NAMES_H

#include "relax/ir.h"

typedef struct rx_names rx_names;

/* Names every variable of f (graph or loop function). Caller frees with rx_names_free. */
rx_names *rx_names_new(const rx_func *f);
void rx_names_free(rx_names *n);

/* Printed names. n may be NULL (then the variable's own name). Never NULL. */
const char *rx_names_var(const rx_names *n, const rx_node *var);
const char *rx_names_svar(const rx_names *n, const rx_svar *v);
const char *rx_names_buf(const rx_names *n, const rx_buffer *b);

/* Symbolic variables the function declares (`n = T.int64()`): those its signature
 * defines and, for graph functions, those match_cast defines; scalar parameters of
 * loop functions excluded. In order of definition. */
const rx_svar *const *rx_names_decls(const rx_names *n, int *count);

/* rx_expr_print with the names above (n may be NULL). */
void rx_names_expr(rx_names *n, const rx_expr *e, rx_sb *out);

/* The printed name of the signature's symbolic variable written `raw` (for attribute
 * maps keyed by variable name, such as upper_bounds); raw itself when none. */
const char *rx_names_svar_by_raw(const rx_names *n, const char *raw);

/* ---- helpers shared by the printer and the writer ---- */

/* Element i of a constant, read little-endian: as a double (float dtypes, f16 and bf16
 * decoded) and as an integer (integer dtypes and bool; u64 above INT64_MAX wraps). */
double rx_ir_const_f64(const rx_const *c, size_t i);
int64_t rx_ir_const_i64(const rx_const *c, size_t i);
/* The element count of a constant (1 for 0-d). */
size_t rx_ir_const_numel(const rx_const *c);
/* The shortest text that reads back as v (as a float when single), always with a '.',
 * an exponent, "inf" or "nan", so it reads as a floating-point literal. */
void rx_ir_fmt_double(double v, bool single, rx_sb *out);

#endif
