/*
 * fuse_tir_int.h — FuseTIR's internals shared by fuse_tir.c (the pass: groups, the
 * fused signature, the rewritten calls) and fuse_tir_copy.c (copying a constituent's
 * statements into the fused function with its variables and buffers substituted,
 * loads of inlined intermediates replaced by their formulas).
 *
 * A copier holds two maps from the constituent loop function's world into the fused
 * function's: variables (symbolic variables -> expressions over the fused function's
 * variables; loop, iterator and let variables -> fresh variables, so that the copies
 * of several constituents never share a binder) and buffers (parameters -> the fused
 * function's inputs, outputs and intermediates; allocations -> fresh copies). Both
 * maps are linear lists: a constituent has a handful of buffers and a few dozen
 * variables.
 */
#ifndef RX_FUSE_TIR_INT_H
#define RX_FUSE_TIR_INT_H

#include "relax/pass.h"

/* An intermediate computed inline: loads buf[e0, e1, ...] become `value` with the
 * index variables replaced by e0, e1, ... (the producer's loops are dropped). */
typedef struct ft_inline {
    const rx_buffer *buf;     /* the intermediate, a buffer of the fused function */
    const rx_svar **ivars;    /* per dim: the variable the producer stored with */
    const rx_svar **lvars;    /* per dim: the loop variable it is bound to (or ivars[i]) */
    int32_t ndim;
    rx_expr *value;           /* the stored value, already in the fused function's terms
                                 and of buf's dtype */
} ft_inline;

typedef RX_VEC(ft_inline) ft_inline_vec;

/* Names in use in the fused function: buffers (parameters and allocations) share one
 * scope there, and loop variables must not shadow its symbolic variables, or the
 * function would not read back from relax-json. */
typedef RX_VEC(const char *) ft_name_vec;

typedef struct ft_names {
    ft_name_vec bufs;  /* buffer names taken */
    ft_name_vec vars;  /* the fused function's symbolic variable names */
} ft_names;

/* base, or base_1, base_2, ... : the first not in *taken; the result is added to it
 * (an arena string when a suffix was needed). */
const char *ft_unique_name(rx_arena *a, ft_name_vec *taken, const char *base);

typedef struct ft_copier {
    rx_module *m;                         /* fresh ids come from here */
    rx_arena *a;                          /* m->arena */
    rx_vmap vars;                         /* constituent variable -> fused expression */
    RX_VEC(const rx_buffer *) from;       /* constituent buffer ... */
    RX_VEC(rx_buffer *) to;               /* ... -> fused buffer, same position */
    const ft_inline_vec *inl;             /* the group's inlined intermediates so far */
    ft_names *names;                      /* the fused function's names */
} ft_copier;

/* Adds the buffer mapping b -> to. */
void ft_map_buffer(ft_copier *c, const rx_buffer *b, rx_buffer *to);

/* Frees the copier's maps (the nodes it made stay in the arena). */
void ft_copier_free(ft_copier *c);

/* e in the fused function's terms (NULL for NULL). Variables without a mapping are
 * kept as they are; loads of inlined buffers are replaced by their formulas. */
rx_expr *ft_copy_expr(ft_copier *c, rx_expr *e);

/* A copy of ss in the fused function's terms; binders (loops, block iterators, lets,
 * allocations) get fresh variables and buffers. */
rx_stmts ft_copy_stmts(ft_copier *c, const rx_stmts *ss);

/* True when ss (a copied constituent body) is exactly one plain store per element of
 * y: a nest of FORs from 0, each the only statement of the one before, around either a
 * STORE y[v0, ..., vk] = value or a BLOCK without init whose spatial iterators are
 * bound one to one to those loops and whose body is that STORE; the indices are the
 * distinct loop (iterator) variables, one per loop; value does not read y and uses no
 * other loop or let variable. Then *out describes y as inline (value cast to y's
 * dtype when it differs); ivars/lvars are arena arrays. max_nodes bounds the size of
 * value (duplicated at every use). */
bool ft_match_inline(rx_arena *a, const rx_stmts *ss, const rx_buffer *y, int max_nodes,
                     ft_inline *out);

/* True when ss (nested statements included) stores to or loads from b. */
bool ft_stmts_touch(const rx_stmts *ss, const rx_buffer *b);

/* Simplifies, in place, every load index of body (a fused function's own
 * statements) with the loops' symbolic ranges known: x // d and x % d with x provably
 * in [0, d) drop, then each integer index takes the arithmetic's canonical form
 * (fuse_tir_simplify.c). Scratch nodes go into a. */
void ft_simplify_indices(rx_arena *a, rx_stmts *body);

#endif
