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

    Element types are deliberately open: f32, integers, bf16, and quantized
    element types (`!quant.uniform<u8:f32, 0.1:128>`, per tensor or per
    axis) that carry their scale and zero point; kiln.quantize,
    kiln.dequantize and kiln.storage_cast move between them. Weights are `kiln.constant` ops holding
    `dense_resource` blobs, so large tensors are never copied into attributes.
  }];
  let cppNamespace = "::mlir::kiln";
  // Quantized element types are the quant dialect's !quant.uniform.
  let dependentDialects = ["::mlir::quant::QuantDialect"];
  let hasConstantMaterializer = 1;
}

#endif // KILN_DIALECT_TD
