/*
 * onnx.h — the ONNX importer (library rxonnx, compiler/frontend/onnx/, docs/onnx.md).
 *
 * rx_onnx_read decodes a ModelProto (protobuf-c, code generated at build time from the
 * onnx.proto Debian ships) and builds a Relax module with one graph function `main`
 * through the IR constructors (no relax-json text in between):
 *   graph inputs     -> parameters with their dtypes; a dim_param name is one symbolic
 *                       variable wherever it occurs, an unnamed dynamic dim is a fresh one
 *   initializers     -> named module constants (weights inline), or parameters after
 *                       the graph inputs (weights as params: floating-point
 *                       initializers only; integer ones stay constants, they are shapes)
 *   nodes            -> op calls in one dataflow block, deduced as they are built
 *   shape subgraphs  -> Shape/Gather/Concat/Slice/Unsqueeze/arith chains are folded into
 *                       symbolic dims, so Reshape/Expand/ConstantOfShape stay dynamic
 *   graph outputs    -> the result (a tuple when there are several)
 * The op mapping is one table in onnx_ops.c. Opsets 7..17 of the default domain.
 *
 * Errors are located: "graph.node[3]: Gemm 'fc1' (opset 13): attribute ..." for nodes,
 * "graph.input[0]" / "graph.initializer[2]" for the rest. Hostile models are bounded:
 * protobuf that does not decode, more than max_nodes nodes, a dim over 2^40 or an
 * element count over 2^40, tensor payloads that do not match their dims, names used
 * before they are produced (cycles, dangling names), external data outside base_dir.
 */
#ifndef RELAX_ONNX_H
#define RELAX_ONNX_H

#include "relax/ir.h"

typedef enum rx_onnx_weights {
    RX_ONNX_WEIGHTS_INLINE, /* initializers become module constants */
    RX_ONNX_WEIGHTS_PARAMS  /* floating-point initializers become named parameters */
} rx_onnx_weights;

typedef struct rx_onnx_opts {
    rx_onnx_weights weights; /* default INLINE */
    const char *base_dir;    /* directory of external-data files; NULL: external data is
                                an error */
    int max_nodes;           /* 0: 1,000,000 */
} rx_onnx_opts;

/* The weights of a model imported with RX_ONNX_WEIGHTS_PARAMS: the parameters after
 * the graph inputs, in order (arena of the module; names are the parameter names). */
typedef struct rx_onnx_weightset {
    rx_const **w;
    int32_t n;
    const char **ext_path; /* per weight: its external-data file when w[i]->data is NULL
                              (read only when written, so a model's weights are never all
                              in memory), else NULL */
    int64_t *ext_off;      /* per weight: offset in that file */
} rx_onnx_weightset;

/* Decodes and converts buf[0..n). Returns the module (not yet deduced by
 * rx_deduce_module, though every binding has its annotation) or NULL after adding
 * located diagnostics to d. o may be NULL. *ws (may be NULL) receives the weights. */
rx_module *rx_onnx_read(const uint8_t *buf, size_t n, const rx_onnx_opts *o,
                        rx_onnx_weightset *ws, rx_diags *d);

/* Reads a file; base_dir defaults to the file's directory when o->base_dir is NULL. */
rx_module *rx_onnx_read_file(const char *path, const rx_onnx_opts *o, rx_onnx_weightset *ws,
                             rx_diags *d);

/* The model as relax-json text (rx_json_write, compact) appended to out: what relaxc
 * build/check/hash and relaxd compile, so an ONNX model and the equal hand-written
 * module share a cache key. */
bool rx_onnx_to_json(const uint8_t *buf, size_t n, const rx_onnx_opts *o, rx_sb *out,
                     rx_diags *d);

/* True when the file name ends in ".onnx". */
bool rx_onnx_is_path(const char *path);

/* Writes the weights as a .safetensors file (8-byte little-endian header length, JSON
 * header {"name": {"dtype", "shape", "data_offsets"}}, raw tensors in order). */
bool rx_safetensors_write(const char *path, const rx_onnx_weightset *ws, rx_diags *d);

#endif
