/*
 * vm_verify.c — load-time bytecode verification and disassembly.
 *
 * Both walk instructions with the operand formats of vm.h (RX_VM_OPCODES), so the
 * table in the header is the single source of truth for instruction lengths. The
 * verifier makes two passes per function: the first marks instruction starts while
 * checking opcodes and every operand's range, the second checks that jump targets
 * land on marked starts. After it succeeds the interpreter may index registers, heap
 * slots, strings, constants, kernels and functions without bounds checks; what it
 * still checks at run time is the kind of each value (and counts of CALL_VALUE).
 * Cost: linear in code size, one byte of scratch per code word.
 */
#include "builtin.h"
#include "rt_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const op_names[] = {
#define RX_VM_X_NAME(name, fmt, doc) #name,
    RX_VM_OPCODES(RX_VM_X_NAME)
#undef RX_VM_X_NAME
};
static const char *const op_formats[] = {
#define RX_VM_X_FMT(name, fmt, doc) fmt,
    RX_VM_OPCODES(RX_VM_X_FMT)
#undef RX_VM_X_FMT
};

const char *rx_vm_op_format(int64_t op)
{
    return op >= 0 && op < RX_OP_COUNT_ ? op_formats[op] : NULL;
}

const char *rx_vm_op_name(int64_t op)
{
    return op >= 0 && op < RX_OP_COUNT_ ? op_names[op] : NULL;
}

typedef struct vstate {
    const rx_rxa *a;         /* artifact */
    const rx_rxa_func *f;    /* function being checked */
    const int64_t *code;     /* its words */
    size_t n;                /* word count */
    size_t pc;               /* cursor */
    size_t at;               /* start of the current instruction */
    char *err;
    size_t errlen;
} vstate;

static int vfail(vstate *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int vfail(vstate *v, const char *fmt, ...)
{
    int k = snprintf(v->err, v->errlen, "%s: pc %zu: ", v->f->name, v->at);
    if (k >= 0 && (size_t)k < v->errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(v->err + k, v->errlen - (size_t)k, fmt, ap);
        va_end(ap);
    }
    return -1;
}

static int word(vstate *v, int64_t *out)
{
    if (v->pc >= v->n) return vfail(v, "instruction runs past the end of the function");
    *out = v->code[v->pc++];
    return 0;
}

static int range(vstate *v, int64_t x, uint64_t n, const char *what)
{
    if (x < 0 || (uint64_t)x >= n)
        return vfail(v, "%s %" PRId64 " out of range (%" PRIu64 ")", what, x, n);
    return 0;
}

/* Checks one operand of kind c. Targets are recorded for the second pass. */
static int operand(vstate *v, char c, uint8_t *is_target)
{
    int64_t x = 0, y = 0;
    if (word(v, &x)) return -1;
    switch (c) {
    case 'r': return range(v, x, v->f->nregs, "register");
    case 'h': return range(v, x, v->f->heap_size, "heap slot");
    case 'd':
        if (word(v, &y)) return -1;
        if (x == RX_D_SLOT) return range(v, y, v->f->heap_size, "heap slot");
        if (x != RX_D_IMM) return vfail(v, "bad dim operand tag %" PRId64, x);
        return 0;
    case 'm':
        if (word(v, &y)) return -1;
        if (x == RX_M_STORE || x == RX_M_SLOT) return range(v, y, v->f->heap_size, "heap slot");
        if (x != RX_M_IMM && x != RX_M_ANY) return vfail(v, "bad match mode %" PRId64, x);
        return 0;
    case 'i': return 0;
    case 'y': {
        uint64_t code = (uint64_t)x & 0xff, bits = ((uint64_t)x >> 8) & 0xff;
        if (x < 0 || x > UINT32_MAX || (x && (code > kDLComplex || bits == 0)))
            return vfail(v, "bad dtype %" PRId64, x);
        return 0;
    }
    case 's':
    case 'l': return range(v, x, v->a->nstrings, "string");
    case 'c': return range(v, x, v->a->nconsts, "constant");
    case 'k': return range(v, x, v->a->nkernels, "kernel");
    case 'f': return range(v, x, v->a->nfuncs, "function");
    case 't':
        if (range(v, x, v->n, "jump target")) return -1;
        is_target[x] |= 2;
        return 0;
    default: RX_RT_ASSERT(!"bad operand format");
    }
}

/* Walks one instruction at v->pc; fills counts[] with the '*' counts in order. */
static int instruction(vstate *v, uint8_t *marks, int64_t *counts, int *ncounts, int64_t *op)
{
    v->at = v->pc;
    marks[v->pc] |= 1;
    if (word(v, op)) return -1;
    const char *fmt = rx_vm_op_format(*op);
    if (!fmt) return vfail(v, "bad opcode %" PRId64, *op);
    *ncounts = 0;
    for (const char *p = fmt; *p; p++) {
        if (*p == '*') {
            int64_t n = 0;
            if (word(v, &n)) return -1;
            if (n < 0 || (uint64_t)n > v->n - v->pc)
                return vfail(v, "%s: bad operand count %" PRId64, rx_vm_op_name(*op), n);
            counts[(*ncounts)++] = n;
            p++;
            for (int64_t i = 0; i < n; i++)
                if (operand(v, *p, marks)) return -1;
        } else if (operand(v, *p, marks)) {
            return -1;
        }
    }
    return 0;
}

static int verify_func(const rx_rxa *a, uint32_t fi, char *err, size_t errlen)
{
    const rx_rxa_func *f = &a->funcs[fi];
    vstate v = {a, f, a->code + f->code_offset, f->code_words, 0, 0, err, errlen};
    uint8_t *marks = calloc(f->code_words, 1);
    int64_t op = 0, counts[2];
    int ncounts, rc = -1;
    if (!marks) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    while (v.pc < v.n) {
        if (instruction(&v, marks, counts, &ncounts, &op)) goto out;
        const int64_t *w = v.code + v.at;
        if (op == RX_OP_CALL) {
            const rx_rxa_func *callee = &a->funcs[w[2]];
            if (counts[0] != callee->nparams) {
                vfail(&v, "CALL %s with %" PRId64 " arguments, it takes %" PRIu32, callee->name,
                      counts[0], callee->nparams);
                goto out;
            }
        } else if (op == RX_OP_CALL_KERNEL) {
            const rx_rxa_kernel *k = &a->kernels[w[1]];
            if (counts[0] != k->nbufs || counts[1] != k->nivars) {
                vfail(&v, "CALL_KERNEL %s with %" PRId64 " buffers and %" PRId64
                          " ivars, it takes %" PRIu32 " and %" PRIu32,
                      k->name, counts[0], counts[1], k->nbufs, k->nivars);
                goto out;
            }
        } else if (op == RX_OP_MATCH_TENSOR || op == RX_OP_MATCH_SHAPE) {
            int64_t ndim = op == RX_OP_MATCH_TENSOR ? w[3] : w[2];
            if (ndim < -1 || ndim > RX_RXA_MAX_NDIM || (ndim >= 0 && counts[0] != ndim) ||
                (ndim < 0 && counts[0] != 0)) {
                vfail(&v, "%s: ndim %" PRId64 " with %" PRId64 " dims", rx_vm_op_name(op), ndim,
                      counts[0]);
                goto out;
            }
        } else if ((op == RX_OP_MKSHAPE || op == RX_OP_ALLOC_TENSOR || op == RX_OP_VIEW) &&
                   counts[0] > RX_RXA_MAX_NDIM) {
            vfail(&v, "%s with %" PRId64 " dims", rx_vm_op_name(op), counts[0]);
            goto out;
        } else if (op == RX_OP_ALLOC_TENSOR && w[5] == 0) {
            vfail(&v, "ALLOC_TENSOR needs a dtype");
            goto out;
        } else if (op == RX_OP_CALL_BUILTIN && rx_vm_builtin_find(a->strings[w[2]]) < 0) {
            vfail(&v, "CALL_BUILTIN of unknown built-in function \"%s\"", a->strings[w[2]]);
            goto out;
        } else if (op == RX_OP_TUPLE && counts[0] > (1 << 20)) {
            vfail(&v, "TUPLE of %" PRId64 " fields", counts[0]);
            goto out;
        }
    }
    if (op != RX_OP_RET && op != RX_OP_GOTO) {
        vfail(&v, "code falls off the end of the function (last instruction %s)",
              rx_vm_op_name(op));
        goto out;
    }
    for (size_t i = 0; i < v.n; i++)
        if ((marks[i] & 2) && !(marks[i] & 1)) {
            v.at = i;
            vfail(&v, "jump target %zu is not the start of an instruction", i);
            goto out;
        }
    rc = 0;
out:
    free(marks);
    return rc;
}

int rx_vm_verify(const rx_rxa *a, char *err, size_t errlen)
{
    for (uint32_t i = 0; i < a->nfuncs; i++)
        if (verify_func(a, i, err, errlen)) return -1;
    return 0;
}

/* ---- disassembly ---- */

typedef struct sbuf {
    char *p;
    size_t n, cap;
    int oom;
} sbuf;

static void sb_printf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(sbuf *b, const char *fmt, ...)
{
    va_list ap;
    for (;;) {
        size_t room = b->cap - b->n;
        va_start(ap, fmt);
        int k = vsnprintf(b->p ? b->p + b->n : NULL, room, fmt, ap);
        va_end(ap);
        if (k < 0) return;
        if ((size_t)k < room) {
            b->n += (size_t)k;
            return;
        }
        size_t cap = b->cap ? b->cap * 2 : 256;
        while (cap - b->n <= (size_t)k) cap *= 2;
        char *np = realloc(b->p, cap);
        if (!np) {
            b->oom = 1;
            return;
        }
        b->p = np;
        b->cap = cap;
    }
}

static size_t dis_operand(sbuf *b, const rx_rxa *a, const int64_t *w, char c)
{
    switch (c) {
    case 'r': sb_printf(b, " r%" PRId64, w[0]); return 1;
    case 'h': sb_printf(b, " h%" PRId64, w[0]); return 1;
    case 'd':
        if (w[0] == RX_D_SLOT) sb_printf(b, " h%" PRId64, w[1]);
        else sb_printf(b, " #%" PRId64, w[1]);
        return 2;
    case 'm': {
        static const char *const modes[] = {"store h", "== h", "== ", "any"};
        if (w[0] == RX_M_ANY) sb_printf(b, " any");
        else sb_printf(b, " %s%" PRId64, modes[w[0] & 3], w[1]);
        return 2;
    }
    case 'y': {
        char name[32];
        sb_printf(b, " %s", w[0] ? rx_rxa_dtype_name((uint32_t)w[0], name, sizeof name) : "any");
        return 1;
    }
    case 's':
    case 'l': sb_printf(b, " \"%s\"", a->strings[w[0]]); return 1;
    case 'c': sb_printf(b, " const%" PRId64, w[0]); return 1;
    case 'k': sb_printf(b, " %s", a->kernels[w[0]].name); return 1;
    case 'f': sb_printf(b, " @%s", a->funcs[w[0]].name); return 1;
    case 't': sb_printf(b, " ->%" PRId64, w[0]); return 1;
    default: sb_printf(b, " %" PRId64, w[0]); return 1;
    }
}

char *rx_vm_disasm(const rx_rxa *a, uint32_t fi)
{
    const rx_rxa_func *f = &a->funcs[fi];
    const int64_t *code = a->code + f->code_offset;
    sbuf b = {0};
    sb_printf(&b, "function %s (regs %" PRIu32 ", heap %" PRIu32 ")\n", f->name, f->nregs,
              f->heap_size);
    for (size_t pc = 0; pc < f->code_words;) {
        const char *fmt = rx_vm_op_format(code[pc]);
        sb_printf(&b, "%6zu  %s", pc, rx_vm_op_name(code[pc]));
        pc++;
        for (const char *p = fmt; *p; p++) {
            if (*p == '*') {
                int64_t n = code[pc++];
                p++;
                sb_printf(&b, " [");
                for (int64_t i = 0; i < n; i++) pc += dis_operand(&b, a, code + pc, *p);
                sb_printf(&b, " ]");
            } else {
                pc += dis_operand(&b, a, code + pc, *p);
            }
        }
        sb_printf(&b, "\n");
    }
    if (b.oom) {
        free(b.p);
        return NULL;
    }
    return b.p;
}
