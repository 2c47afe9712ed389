/*
 * onnx_wire.c — a bound on message nesting, checked on the raw bytes before protobuf-c
 * decodes them.
 *
 * protobuf-c decodes nested messages recursively with no depth limit, so a model that
 * nests subgraphs (If inside If ...) or types (a sequence of sequences ...) a few
 * hundred thousand times overflows the stack in the decoder, before the importer's own
 * bound on subgraph nesting (onnx_control.c) is reached. This walker reads the wire
 * format of the messages through which ONNX recurses, knowing which field of which
 * message holds which message:
 *   ModelProto 7 graph, 20 training_info, 25 functions; TrainingInfoProto 1, 2 graphs;
 *   FunctionProto 7 node; GraphProto 1 node, 11-13 value infos; NodeProto 5 attribute;
 *   AttributeProto 6 g, 11 graphs, 14 tp, 15 tps; ValueInfoProto 2 type;
 *   TypeProto 4 sequence, 5 map, 9 optional; their elem_type 1 / value_type 2 -> TypeProto
 * and fails when they nest deeper than OX_MAX_NESTING. Other fields are skipped by
 * their wire type. Malformed bytes end the walk without a verdict: protobuf-c reports
 * them. The walk recurses at most OX_MAX_NESTING deep. Costs: one pass over the bytes.
 */
#include "onnx_int.h"

#define OX_MAX_NESTING 100

enum { M_MODEL, M_TRAIN, M_FUNC, M_GRAPH, M_NODE, M_ATTR, M_VINFO, M_TYPE, M_TSEQ, M_TMAP, M_NONE };

/* The message type of field f of a message of type m, or M_NONE. */
static int child(int m, uint64_t f)
{
    switch (m) {
    case M_MODEL: return f == 7 ? M_GRAPH : f == 20 ? M_TRAIN : f == 25 ? M_FUNC : M_NONE;
    case M_TRAIN: return f == 1 || f == 2 ? M_GRAPH : M_NONE;
    case M_FUNC: return f == 7 ? M_NODE : M_NONE;
    case M_GRAPH: return f == 1 ? M_NODE : f >= 11 && f <= 13 ? M_VINFO : M_NONE;
    case M_NODE: return f == 5 ? M_ATTR : M_NONE;
    case M_ATTR: return f == 6 || f == 11 ? M_GRAPH : f == 14 || f == 15 ? M_TYPE : M_NONE;
    case M_VINFO: return f == 2 ? M_TYPE : M_NONE;
    case M_TYPE: return f == 4 || f == 9 ? M_TSEQ : f == 5 ? M_TMAP : M_NONE;
    case M_TSEQ: return f == 1 ? M_TYPE : M_NONE;
    case M_TMAP: return f == 2 ? M_TYPE : M_NONE;
    default: return M_NONE;
    }
}

static bool varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
    *v = 0;
    for (int s = 0; s < 64 && *p < end; s += 7) {
        uint8_t b = *(*p)++;
        *v |= (uint64_t)(b & 0x7f) << s;
        if (!(b & 0x80)) return true;
    }
    return false;
}

/* 1: within the bound, 0: too deep, -1: malformed (no verdict). */
static int walk(const uint8_t *p, const uint8_t *end, int m, int depth)
{
    if (depth > OX_MAX_NESTING) return 0;
    while (p < end) {
        uint64_t key, len;
        if (!varint(&p, end, &key)) return -1;
        switch (key & 7) {
        case 0:
            if (!varint(&p, end, &len)) return -1;
            break;
        case 1:
            if (end - p < 8) return -1;
            p += 8;
            break;
        case 5:
            if (end - p < 4) return -1;
            p += 4;
            break;
        case 2: {
            if (!varint(&p, end, &len) || len > (uint64_t)(end - p)) return -1;
            int cm = child(m, key >> 3);
            if (cm != M_NONE) {
                int r = walk(p, p + len, cm, depth + 1);
                if (r <= 0) return r;
            }
            p += len;
            break;
        }
        default: return -1;
        }
    }
    return 1;
}

bool ox_wire_nesting_ok(const uint8_t *buf, size_t n, rx_diags *d)
{
    if (walk(buf, buf + n, M_MODEL, 0) != 0) return true;
    rx_diag_add(d, "", "the model nests subgraphs or types deeper than %d protobuf messages",
                OX_MAX_NESTING);
    return false;
}
