/*
 * text.h — the module in the paper's notation (Figures 2–11), and structural
 * equality and hashing.
 *
 * The printer writes every function: graph functions in the TVMScript-like form of
 * the paper with every binding's annotation, loop functions as nested loops and
 * blocks. It is what `relaxc check` prints and what `--dump-ir` writes.
 *
 * Structural equality and hashing see a module as its semantics: local variable
 * names, symbolic variable names, buffer and loop variable names and the JSON key
 * order do not matter; everything else does, constants' bytes included. Both are
 * computed from one canonical serialization (variables numbered in order of
 * definition, functions and constants in name order... constants by content), so
 * equal modules hash equal by construction.
 */
#ifndef RELAX_TEXT_H
#define RELAX_TEXT_H

#include "relax/ir.h"

void rx_print_module(const rx_module *m, rx_sb *out);
void rx_print_func(const rx_module *m, const rx_func *f, rx_sb *out);

/* SHA-256 of the canonical serialization of m, plus `salt` (target, options). */
void rx_struct_hash(const rx_module *m, const char *salt, uint8_t out[32]);
/* rx_struct_hash of the module holding f alone with its name blanked (f->name is
 * restored before returning): equal for functions that differ only in name, as the
 * passes that share generated functions (legalize, fuse_ops) need. */
void rx_func_struct_hash(rx_func *f, const char *salt, uint8_t out[32]);
/* Equal modules (see above). When they differ and why is not NULL, writes a short
 * description of the first difference. */
bool rx_struct_equal(const rx_module *x, const rx_module *y, rx_sb *why);

#endif
