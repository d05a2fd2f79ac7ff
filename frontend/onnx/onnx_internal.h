/* Private to the ONNX frontend: protobuf-c schema, TensorProto conversion and
 * external-data resolution shared by the importer, the .pb tensor reader and
 * the test-case loader. */
#ifndef XCOMP_FRONTEND_ONNX_INTERNAL_H
#define XCOMP_FRONTEND_ONNX_INTERNAL_H

#include "onnx.pb-c.h"
#include "xcomp/graph.h"
#include "xcomp/tensor.h"

/* Deepest message nesting accepted before unpacking (protobuf-c recurses
 * once per level, so a crafted file could otherwise exhaust the stack). */
#define XC_ONNX_MAX_NESTING 64

/* Checks that `data` is well-formed protobuf wire format for `desc` with
 * message nesting at most XC_ONNX_MAX_NESTING. what names the input. */
xc_status_t xc_onnx_check_wire(const ProtobufCMessageDescriptor* desc,
                               const uint8_t* data, size_t size, const char* what);

/* Where external tensor data may be read from: the model's folder. Files are
 * mapped once and the mappings handed to the graph (or kept until
 * xc_onnx_extdata_close when g is NULL). */
typedef struct xc_onnx_extdata xc_onnx_extdata_t;
xc_status_t xc_onnx_extdata_open(const char* base_dir, xc_onnx_extdata_t** out);
void xc_onnx_extdata_close(xc_onnx_extdata_t* x);
/* Hands the mappings over to g: they are unmapped when g is destroyed. */
xc_status_t xc_onnx_extdata_give_to_graph(xc_onnx_extdata_t* x, xc_graph_t* g);

/* Converts a TensorProto into a tensor. `what` names it in errors (e.g.
 * "initializer 'w'"). ext may be NULL (external data is then an error).
 * The tensor may point into a mapping owned by ext (owns_data false).
 * raw_data is moved into the tensor, not copied: tp loses it (tp must come
 * from protobuf-c unpacking with the default allocator). */
xc_status_t xc_onnx_tensor_from_proto(Onnx__TensorProto* tp, const char* what,
                                      xc_onnx_extdata_t* ext, xc_tensor_t** out);

/* "FLOAT", "INT4", ... for a TensorProto.DataType value; "unknown" if none. */
const char* xc_onnx_type_name(int32_t t);

/* Fills a TensorProto (raw_data, pointing at t's data: no copy) from t. */
xc_status_t xc_onnx_tensor_to_proto(const xc_tensor_t* t, const char* name,
                                    Onnx__TensorProto* tp);

/* Reads a whole file into malloc'd memory (error names the path). */
xc_status_t xc_read_whole_file(const char* path, uint8_t** out_data, size_t* out_size);

/* ---- importer state shared with the legacy-form rewrites ------------- */

typedef struct xc_onnx_importer {
  const char* what;              /* model path or label, for messages */
  const char* file;              /* provenance file (arena copy) or NULL */
  xc_graph_t* g;
  int64_t opset;                 /* default-domain opset of the model */
  const Onnx__GraphProto* gp;
  xc_onnx_extdata_t* ext;
  bool allow_unknown_ops;
  int64_t max_opset;
} xc_onnx_importer_t;

/* A new value name "<base><suffix>" not yet used in the graph (arena). */
const char* xc_onnx_unique_name(xc_onnx_importer_t* im, const char* base, const char* suffix);
/* Adds a constant initializer with a unique name derived from node/what. */
xc_status_t xc_onnx_add_constant(xc_onnx_importer_t* im, const char* node_name,
                                 const char* what, xc_tensor_t* t, xc_value_t** out);
/* Best-effort rank / dtype of a value before inference: from its type (graph
 * inputs, initializers), a Constant producer, or value_info. -1 / UNDEFINED
 * when unknown. */
int xc_onnx_hint_rank(xc_onnx_importer_t* im, const xc_value_t* v);
xc_dtype_t xc_onnx_hint_dtype(xc_onnx_importer_t* im, const xc_value_t* v);
/* The tensor of a value known at import: initializer or Constant 'value'. */
const xc_tensor_t* xc_onnx_known_tensor(const xc_value_t* v);

/* Rewrites a node written for an older op version into the latest form.
 * May replace *node (e.g. by Flatten + Softmax + Reshape). Errors name the
 * node. Called before the op is looked up in the registry. */
xc_status_t xc_onnx_upgrade_node(xc_onnx_importer_t* im, xc_node_t* node);

/* Node helpers. */
xc_status_t xc_onnx_node_set_input(xc_graph_t* g, xc_node_t* n, int pos, xc_value_t* v);
void xc_onnx_node_remove_attr(xc_node_t* n, const char* name);
void xc_onnx_node_set_prov(xc_onnx_importer_t* im, xc_node_t* n, const char* source);

#endif
