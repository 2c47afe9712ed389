/*
 * spirv_reflect.c — reading what a SPIR-V compute module declares (spirv_reflect.h).
 *
 * A module is a header of five words (magic, version, generator, id bound, 0) and a
 * stream of instructions, each `wordcount << 16 | opcode` followed by its operands. The
 * reader makes two passes, both bounds-checked, so a truncated or hostile module is an
 * error and never a read past its end:
 *
 *   1. index: for every result id, the word offset of the instruction defining it; the
 *      SpecId, Binding, DescriptorSet and BuiltIn WorkgroupSize decorations; the
 *      capabilities; the entry point named `entry` and its LocalSize / LocalSizeId.
 *   2. variables: every OpVariable by storage class. StorageBuffer variables (and
 *      Uniform ones whose struct is a BufferBlock) are the buffers and must sit at set
 *      0, bindings 0..nbuf-1 (several variables may view one binding: a float[] and a
 *      vec4[] of the same buffer count once); a Uniform Block is refused (scalars are
 *      push constants);
 *      images and samplers are refused; the PushConstant variable's struct is sized
 *      from its members' Offset decorations; Workgroup variables are summed.
 *
 * Sizes and constants: scalar types by width, vectors, matrices, arrays (length from a
 * constant) and structs (members summed, padding ignored). Constants are evaluated
 * through OpConstant, OpSpecConstant (its default, or the work-group size asked for when
 * it is one of the size's specialization constants) and the integer OpSpecConstantOp
 * forms glslang emits for `shared float s[gl_WorkGroupSize.x * 2]` (CompositeExtract,
 * add, sub, mul, div, shifts, conversions). Anything else leaves the size unknown
 * (shared_unknown), counted as 0.
 *
 * The work-group size is the BuiltIn WorkgroupSize constant when there is one (a spec
 * composite of SpecId constants for `local_size_x_id = 0` and friends), else the entry
 * point's LocalSize (or LocalSizeId) mode.
 *
 * Cost: linear in the module, two arrays of the id bound (at most 2^22 ids).
 */
#include "spirv_reflect.h"

#include "rt_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { /* opcodes */
    OP_ENTRY_POINT = 15, OP_EXECUTION_MODE = 16, OP_CAPABILITY = 17,
    OP_TYPE_BOOL = 20, OP_TYPE_INT = 21, OP_TYPE_FLOAT = 22, OP_TYPE_VECTOR = 23,
    OP_TYPE_MATRIX = 24, OP_TYPE_ARRAY = 28, OP_TYPE_RUNTIME_ARRAY = 29, OP_TYPE_STRUCT = 30,
    OP_TYPE_POINTER = 32, OP_CONSTANT = 43, OP_CONSTANT_COMPOSITE = 44, OP_SPEC_CONSTANT = 50,
    OP_SPEC_CONSTANT_COMPOSITE = 51, OP_SPEC_CONSTANT_OP = 52, OP_VARIABLE = 59,
    OP_DECORATE = 71, OP_MEMBER_DECORATE = 72, OP_EXECUTION_MODE_ID = 331,
    /* OpSpecConstantOp operations */
    OP_COMPOSITE_EXTRACT = 81, OP_UCONVERT = 113, OP_SCONVERT = 114, OP_IADD = 128,
    OP_ISUB = 130, OP_IMUL = 132, OP_UDIV = 134, OP_SDIV = 135, OP_SHR = 194, OP_SHL = 196,
};
enum { DEC_BLOCK = 2, DEC_BUFFER_BLOCK = 3, DEC_SPEC_ID = 1, DEC_BUILTIN = 11, DEC_BINDING = 33,
       DEC_SET = 34, DEC_OFFSET = 35, BUILTIN_WORKGROUP_SIZE = 25 };
enum { SC_UNIFORM_CONSTANT = 0, SC_UNIFORM = 2, SC_WORKGROUP = 4, SC_PUSH_CONSTANT = 9,
       SC_STORAGE_BUFFER = 12, SC_IMAGE = 11 };
enum { MODE_LOCAL_SIZE = 17, MODE_LOCAL_SIZE_ID = 38, MODEL_GLCOMPUTE = 5 };
#define MAX_BOUND (1u << 22)
#define TOO_BIG ((int64_t)1 << 40) /* sizes past this are "unknown" */

typedef struct spv {
    const uint32_t *w;
    size_t n;
    uint32_t bound;
    uint32_t *def;     /* id -> word offset of its defining instruction, 0: none */
    int32_t *specid;   /* id -> SpecId, -1 */
    int32_t *binding;  /* id -> Binding, -1 */
    int32_t *set;      /* id -> DescriptorSet, -1 */
    uint8_t *flag;     /* id -> F_* */
    uint32_t wgsize;   /* the BuiltIn WorkgroupSize id, 0: none */
    int32_t over_id[3]; /* specialization ids the asked size overrides, -1 */
    uint32_t over[3];
} spv;
enum { F_BLOCK = 1, F_BUFFER_BLOCK = 2 };

/* The opcode and word count at offset i. */
static uint32_t op_at(const spv *s, size_t i) { return s->w[i] & 0xffff; }
static uint32_t wc_at(const spv *s, size_t i) { return s->w[i] >> 16; }

/* Operand k (from 1) of the instruction defining id, or 0 when out of its words. */
static uint32_t operand(const spv *s, uint32_t id, uint32_t k)
{
    uint32_t d = id < s->bound ? s->def[id] : 0;
    return d && k < wc_at(s, d) ? s->w[d + k] : 0;
}

static uint32_t def_op(const spv *s, uint32_t id)
{
    return id < s->bound && s->def[id] ? op_at(s, s->def[id]) : 0;
}

/* Whether the literal string at words [i, end) equals name. */
static bool string_is(const spv *s, size_t i, size_t end, const char *name)
{
    size_t len = strlen(name);
    if ((end - i) * 4 <= len) return false;
    const char *p = (const char *)(s->w + i);
    return !memcmp(p, name, len) && p[len] == '\0';
}

/* The value of integer constant id, or -1 when it is not a known one. */
static int64_t cval(const spv *s, uint32_t id, int depth)
{
    uint32_t op = def_op(s, id);
    if (depth > 16 || !op) return -1;
    uint32_t wc = wc_at(s, s->def[id]);
    if (op == OP_CONSTANT) {
        int64_t v = operand(s, id, 3);
        return wc > 4 && operand(s, id, 4) ? -1 : v;
    }
    if (op == OP_SPEC_CONSTANT) {
        for (int i = 0; i < 3; i++)
            if (s->over_id[i] >= 0 && s->specid[id] == s->over_id[i]) return s->over[i];
        return wc > 4 && operand(s, id, 4) ? -1 : (int64_t)operand(s, id, 3);
    }
    if (op != OP_SPEC_CONSTANT_OP || wc < 5) return -1;
    uint32_t sub = operand(s, id, 3);
    if (sub == OP_COMPOSITE_EXTRACT) {
        uint32_t c = operand(s, id, 4), k = operand(s, id, 5);
        uint32_t cop = def_op(s, c);
        if (wc < 6 || (cop != OP_CONSTANT_COMPOSITE && cop != OP_SPEC_CONSTANT_COMPOSITE) ||
            3 + k >= wc_at(s, s->def[c]))
            return -1;
        return cval(s, operand(s, c, 3 + k), depth + 1);
    }
    int64_t a = cval(s, operand(s, id, 4), depth + 1);
    if (sub == OP_UCONVERT || sub == OP_SCONVERT) return a;
    int64_t b = wc > 5 ? cval(s, operand(s, id, 5), depth + 1) : -1;
    if (a < 0 || b < 0 || a > TOO_BIG || b > TOO_BIG) return -1;
    switch (sub) {
    case OP_IADD: return a + b;
    case OP_ISUB: return a >= b ? a - b : -1;
    case OP_IMUL: return b && a > TOO_BIG / b ? -1 : a * b;
    case OP_UDIV:
    case OP_SDIV: return b ? a / b : -1;
    case OP_SHL: return b < 24 && a < (TOO_BIG >> b) ? a << b : -1;
    case OP_SHR: return b < 63 ? a >> b : -1;
    default: return -1;
    }
}

/* Bytes of type id (padding ignored), or -1 when it cannot be sized. */
static int64_t tsize(const spv *s, uint32_t id, int depth)
{
    uint32_t op = def_op(s, id);
    if (depth > 16) return -1;
    int64_t e, k;
    switch (op) {
    case OP_TYPE_BOOL: return 4;
    case OP_TYPE_INT:
    case OP_TYPE_FLOAT: return operand(s, id, 2) / 8;
    case OP_TYPE_VECTOR:
    case OP_TYPE_MATRIX:
        e = tsize(s, operand(s, id, 2), depth + 1);
        k = operand(s, id, 3);
        return e < 0 || k > 64 ? -1 : e * k;
    case OP_TYPE_ARRAY:
        e = tsize(s, operand(s, id, 2), depth + 1);
        k = cval(s, operand(s, id, 3), 0);
        return e < 0 || k < 0 || (e && k > TOO_BIG / e) ? -1 : e * k;
    case OP_TYPE_STRUCT: {
        int64_t sum = 0;
        for (uint32_t m = 2; m < wc_at(s, s->def[id]); m++) {
            e = tsize(s, operand(s, id, m), depth + 1);
            if (e < 0 || sum > TOO_BIG) return -1;
            sum += e;
        }
        return sum;
    }
    default: return -1;
    }
}

/* ---- pass 1: index ---- */

static int index_module(spv *s, const char *entry, uint32_t *ep, size_t *modes, int nmodes,
                        rx_spv_info *out, rx_rt_err *err)
{
    int nm = 0;
    for (size_t i = 5; i < s->n;) {
        uint32_t op = op_at(s, i), wc = wc_at(s, i);
        if (wc == 0 || wc > s->n - i) return rx_rt_fail(err, "malformed SPIR-V: an instruction runs past the end");
        /* result ids: most instructions with a result put it at operand 2 (type first) or
           1 (types, which have no result type) */
        uint32_t rid = 0;
        if ((op >= OP_TYPE_BOOL && op <= OP_TYPE_POINTER) && wc > 1) rid = s->w[i + 1];
        else if ((op == OP_CONSTANT || op == OP_CONSTANT_COMPOSITE || op == OP_SPEC_CONSTANT ||
                  op == OP_SPEC_CONSTANT_COMPOSITE || op == OP_SPEC_CONSTANT_OP ||
                  op == OP_VARIABLE) && wc > 2)
            rid = s->w[i + 2];
        if (rid) {
            if (rid >= s->bound) return rx_rt_fail(err, "malformed SPIR-V: an id beyond the bound");
            s->def[rid] = (uint32_t)i;
        }
        if (op == OP_CAPABILITY && wc > 1 && out->ncaps < RX_SPV_MAX_CAPS) out->caps[out->ncaps++] = s->w[i + 1];
        if (op == OP_ENTRY_POINT && wc > 3 && s->w[i + 1] == MODEL_GLCOMPUTE && !*ep &&
            string_is(s, i + 3, i + wc, entry))
            *ep = s->w[i + 2];
        if ((op == OP_EXECUTION_MODE || op == OP_EXECUTION_MODE_ID) && wc >= 6 && nm < nmodes)
            modes[nm++] = i;
        if (op == OP_DECORATE && wc > 3) {
            uint32_t t = s->w[i + 1], dec = s->w[i + 2], v = s->w[i + 3];
            if (t >= s->bound) return rx_rt_fail(err, "malformed SPIR-V: a decoration of an id beyond the bound");
            if (dec == DEC_SPEC_ID) s->specid[t] = (int32_t)(v & 0x7fffffff);
            if (dec == DEC_BINDING) s->binding[t] = (int32_t)(v & 0x7fffffff);
            if (dec == DEC_SET) s->set[t] = (int32_t)(v & 0x7fffffff);
            if (dec == DEC_BUILTIN && v == BUILTIN_WORKGROUP_SIZE) s->wgsize = t;
        }
        if (op == OP_DECORATE && wc == 3 && s->w[i + 1] < s->bound) {
            if (s->w[i + 2] == DEC_BLOCK) s->flag[s->w[i + 1]] |= F_BLOCK;
            if (s->w[i + 2] == DEC_BUFFER_BLOCK) s->flag[s->w[i + 1]] |= F_BUFFER_BLOCK;
        }
        i += wc;
    }
    if (!*ep) return rx_rt_fail(err, "no GLCompute entry point %s in the module", entry);
    return nm;
}

/* The work-group size and which dimensions specialization sets. */
static void work_group(spv *s, uint32_t ep, const size_t *modes, int nm, rx_spv_info *out)
{
    for (int i = 0; i < 3; i++) {
        out->local[i] = 1;
        out->spec_id[i] = -1;
    }
    uint32_t comp = s->wgsize;
    uint32_t cop = def_op(s, comp);
    if (cop == OP_CONSTANT_COMPOSITE || cop == OP_SPEC_CONSTANT_COMPOSITE) {
        for (uint32_t i = 0; i < 3; i++) {
            uint32_t c = operand(s, comp, 3 + i);
            if (def_op(s, c) == OP_SPEC_CONSTANT && s->specid[c] >= 0) out->spec_id[i] = s->specid[c];
            int64_t v = cval(s, c, 0);
            out->local[i] = v > 0 && v < (1 << 30) ? (uint32_t)v : 0;
        }
        return;
    }
    for (int m = 0; m < nm; m++) {
        size_t at = modes[m];
        if (s->w[at + 1] != ep) continue;
        uint32_t mode = s->w[at + 2];
        for (int i = 0; i < 3 && mode == MODE_LOCAL_SIZE; i++) out->local[i] = s->w[at + 3 + i];
        for (int i = 0; i < 3 && mode == MODE_LOCAL_SIZE_ID; i++) {
            uint32_t c = s->w[at + 3 + i];
            if (def_op(s, c) == OP_SPEC_CONSTANT && s->specid[c] >= 0) out->spec_id[i] = s->specid[c];
            int64_t v = cval(s, c, 0);
            out->local[i] = v > 0 && v < (1 << 30) ? (uint32_t)v : 0;
        }
    }
}

/* ---- pass 2: variables ---- */

static int variables(spv *s, rx_spv_info *out, rx_rt_err *err)
{
    uint64_t bound_mask = 0;
    for (size_t i = 5; i < s->n; i += wc_at(s, i)) {
        if (op_at(s, i) != OP_VARIABLE || wc_at(s, i) < 4) continue;
        uint32_t ptr = s->w[i + 1], id = s->w[i + 2], sc = s->w[i + 3];
        uint32_t pointee = def_op(s, ptr) == OP_TYPE_POINTER ? operand(s, ptr, 3) : 0;
        if (pointee >= s->bound) pointee = 0;
        if (sc == SC_WORKGROUP) {
            int64_t b = tsize(s, pointee, 0);
            if (b < 0) out->shared_unknown = true;
            else out->shared_bytes += b;
        } else if (sc == SC_PUSH_CONSTANT) {
            if (def_op(s, pointee) != OP_TYPE_STRUCT)
                return rx_rt_fail(err, "the push-constant variable is not a block");
            uint32_t nmem = wc_at(s, s->def[pointee]) - 2;
            out->npush = nmem <= RX_SPV_MAX_PUSH ? (int)nmem : -1;
            for (size_t j = 5; j < s->n; j += wc_at(s, j)) { /* its members' offsets */
                if (op_at(s, j) != OP_MEMBER_DECORATE || wc_at(s, j) < 5 || s->w[j + 1] != pointee ||
                    s->w[j + 3] != DEC_OFFSET)
                    continue;
                uint32_t mi = s->w[j + 2], mt = operand(s, pointee, 2 + mi);
                int64_t m = tsize(s, mt, 0);
                if (m < 0) return rx_rt_fail(err, "a push-constant member cannot be sized");
                if ((int64_t)s->w[j + 4] + m > out->push_bytes) out->push_bytes = (int64_t)s->w[j + 4] + m;
                /* the member layout the launch packs scalars by (device_vulkan_kernels.c) */
                uint32_t op = def_op(s, mt);
                if (out->npush < 0 || mi >= (uint32_t)out->npush) continue;
                if ((op != OP_TYPE_INT && op != OP_TYPE_FLOAT) || (m != 4 && m != 8) ||
                    s->w[j + 4] > INT32_MAX) {
                    out->npush = -1;
                    continue;
                }
                out->push_off[mi] = (int32_t)s->w[j + 4];
                out->push_size[mi] = (uint8_t)m;
                out->push_kind[mi] = op == OP_TYPE_FLOAT ? 'f' : operand(s, mt, 3) ? 'i' : 'u';
            }
        } else if (sc == SC_STORAGE_BUFFER || (sc == SC_UNIFORM && (s->flag[pointee] & F_BUFFER_BLOCK))) {
            if (def_op(s, pointee) != OP_TYPE_STRUCT)
                return rx_rt_fail(err, "arrays of storage buffers are not part of the launch ABI");
            int32_t b = s->binding[id], set = s->set[id];
            if (set != 0 || b < 0 || b >= RX_SPV_MAX_BUFS) {
                return rx_rt_fail(err, "storage buffer bindings must be 0..n-1 in set 0 (binding %d "
                            "in set %d)", (int)b, (int)set);
            }
            /* views of one binding (a float[] and a vec4[]) count once */
            if (!(bound_mask >> b & 1)) {
                bound_mask |= (uint64_t)1 << b;
                out->nbuf++;
            }
        } else if (sc == SC_UNIFORM) {
            return rx_rt_fail(err, "uses a uniform buffer: scalars are push constants in the launch "
                        "ABI, tensors storage buffers");
        } else if (sc == SC_UNIFORM_CONSTANT || sc == SC_IMAGE) {
            return rx_rt_fail(err, "uses images or samplers, which the launch ABI does not bind");
        }
    }
    if (out->nbuf < 64 && bound_mask != ((uint64_t)1 << out->nbuf) - 1)
        return rx_rt_fail(err, "storage buffer bindings must be 0..n-1 in set 0 (a binding is skipped)");
    return 0;
}

int rx_spv_reflect(const uint32_t *w, size_t n, const char *entry, const uint32_t *local,
                   rx_spv_info *out, rx_rt_err *err)
{
    memset(out, 0, sizeof *out);
    if (n < 5 || w[0] != RX_SPV_MAGIC) return rx_rt_fail(err, "not a SPIR-V module");
    if (w[3] == 0 || w[3] > MAX_BOUND || w[3] > 16 * n + 64)
        return rx_rt_fail(err, "malformed SPIR-V: id bound out of range");
    spv s = {w, n, w[3], NULL, NULL, NULL, NULL, NULL, 0, {-1, -1, -1}, {0, 0, 0}};
    s.def = calloc(s.bound, sizeof *s.def);
    s.specid = malloc(s.bound * sizeof *s.specid);
    s.binding = malloc(s.bound * sizeof *s.binding);
    s.set = malloc(s.bound * sizeof *s.set);
    s.flag = calloc(s.bound, 1);
    size_t modes[16];
    int rc = -1;
    if (!s.def || !s.specid || !s.binding || !s.set || !s.flag) {
        rx_rt_fail(err, "out of memory");
        goto done;
    }
    memset(s.specid, 0xff, s.bound * sizeof *s.specid);
    memset(s.binding, 0xff, s.bound * sizeof *s.binding);
    memset(s.set, 0xff, s.bound * sizeof *s.set);
    out->version = w[1];
    uint32_t ep = 0;
    int nm = index_module(&s, entry, &ep, modes, 16, out, err);
    if (nm < 0) goto done;
    work_group(&s, ep, modes, nm, out);
    for (int i = 0; i < 3; i++) {
        s.over_id[i] = local ? out->spec_id[i] : -1;
        if (local && out->spec_id[i] >= 0) out->local[i] = s.over[i] = local[i];
    }
    rc = variables(&s, out, err);
done:
    free(s.def);
    free(s.specid);
    free(s.binding);
    free(s.set);
    free(s.flag);
    return rc;
}

bool rx_spv_has_entry(const uint32_t *w, size_t n, const char *entry)
{
    if (n < 5 || w[0] != RX_SPV_MAGIC) return false;
    spv s = {w, n, 0, NULL, NULL, NULL, NULL, NULL, 0, {-1, -1, -1}, {0, 0, 0}};
    for (size_t i = 5; i < n;) {
        uint32_t op = op_at(&s, i), wc = wc_at(&s, i);
        if (wc == 0 || wc > n - i) return false;
        if (op == OP_ENTRY_POINT && wc > 3 && w[i + 1] == MODEL_GLCOMPUTE && string_is(&s, i + 3, i + wc, entry))
            return true;
        i += wc;
    }
    return false;
}
