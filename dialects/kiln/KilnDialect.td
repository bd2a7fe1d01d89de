#ifndef KILN_DIALECT_TD
#define KILN_DIALECT_TD

include "mlir/IR/OpBase.td"

def Kiln_Dialect : Dialect {
  let name = "kiln";
  let summary = "Graph-level tensor operations imported from ONNX";
  let description = [{
    The kiln dialect is the graph IR of the kiln compiler. Its ops work on
    builtin ranked tensors with value semantics; each op mirrors one ONNX
    operator family (with ONNX broadcasting rules) but carries fully static
    attributes, so passes never need to know about ONNX protobufs.

    Element types are deliberately open: f32 today; f16/bf16 and quantized
    element types (`!quant.uniform<i8:f32, ...>`, per tensor or per axis)
    plug in without new ops. Weights are `kiln.constant` ops holding
    `dense_resource` blobs, so large tensors are never copied into attributes.
  }];
  let cppNamespace = "::mlir::kiln";
  let hasConstantMaterializer = 1;
}

#endif // KILN_DIALECT_TD
