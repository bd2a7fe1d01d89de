//===- ImportContext.h - state shared by the ONNX op importers --*- C++ -*-===//
#ifndef KILN_FRONTEND_ONNX_IMPORTCONTEXT_H
#define KILN_FRONTEND_ONNX_IMPORTCONTEXT_H

#include "dialects/kiln/KilnDialect.h"
#include "mlir/IR/TypeUtilities.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringMap.h"
#include "onnx/onnx_pb.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace kiln::onnx_frontend {

/// A tensor whose value is known at compile time (initializers, Constant
/// nodes and shape arithmetic on static shapes). Small integer tensors are
/// evaluated on the host so that Shape -> Slice -> Concat -> Reshape chains
/// fold into static shapes.
struct HostTensor {
  int32_t dtype = 0; // onnx::TensorProto::DataType
  std::vector<int64_t> shape;
  std::vector<double> floats;  // for floating-point dtypes
  std::vector<int64_t> ints;   // for integer and bool dtypes
  bool isFloat() const;
  int64_t numElements() const;
};

/// One named value of the graph: an SSA value, a host constant, or both.
struct GraphValue {
  mlir::Value value;
  std::optional<HostTensor> host;
};

class ImportContext {
public:
  ImportContext(mlir::OpBuilder &builder, std::string file, int64_t opset)
      : b(builder), file(std::move(file)), opset(opset) {}

  mlir::OpBuilder &b;
  std::string file;
  int64_t opset;
  const onnx::NodeProto *node = nullptr;
  mlir::Location loc = mlir::UnknownLoc::get(b.getContext());
  llvm::StringMap<GraphValue> values;
  /// Static shapes the model declares for graph outputs and value_info
  /// entries (used to specialise shape operands known only at run time).
  llvm::StringMap<std::vector<int64_t>> declaredShapes;

  /// What the region being built (the function body, or one arm of a run-time
  /// If) still has to import after the current node: the rest of every node
  /// list up to the region's end. It returns the values the region yields. A
  /// run-time If whose branches cannot merge imports it once per branch (see
  /// importIf). Null inside Scan and Loop bodies, which are unrolled.
  std::function<mlir::FailureOr<llvm::SmallVector<mlir::Value>>()> rest;
  /// Set when a node has imported `rest` itself; the node loops stop and the
  /// region yields these values.
  std::optional<llvm::SmallVector<mlir::Value>> regionResults;
  /// How many tail-duplicating run-time Ifs enclose the current node.
  int duplicationDepth = 0;

  /// Emits `message` as an error at the current node's location; returns failure.
  mlir::LogicalResult fail(const llvm::Twine &message) const;

  // Attributes of the current node.
  bool hasAttr(llvm::StringRef name) const;
  int64_t attrInt(llvm::StringRef name, int64_t fallback) const;
  float attrFloat(llvm::StringRef name, float fallback) const;
  std::vector<int64_t> attrInts(llvm::StringRef name, std::vector<int64_t> fallback = {}) const;
  std::vector<float> attrFloats(llvm::StringRef name) const;
  std::string attrString(llvm::StringRef name, std::string fallback = "") const;

  // Inputs of the current node (an empty name is an omitted optional input).
  size_t numInputs() const;
  bool hasInput(size_t i) const;
  mlir::FailureOr<mlir::Value> input(size_t i);           // materializes constants
  mlir::Value optionalInput(size_t i);                     // null if omitted or failed
  const HostTensor *hostInput(size_t i) const;             // null if not known
  mlir::FailureOr<std::vector<int64_t>> hostInts(size_t i, llvm::StringRef what);
  mlir::FailureOr<mlir::RankedTensorType> inputType(size_t i);

  void setOutput(size_t i, mlir::Value v);
  void setHostOutput(size_t i, HostTensor t);

  /// A kiln.constant for a host tensor (a dense_resource blob when large).
  mlir::FailureOr<mlir::Value> materialize(const HostTensor &t, llvm::StringRef name);
  mlir::Value scalar(mlir::Type elementType, double value);

  /// Normalizes a possibly negative axis against `rank`.
  mlir::FailureOr<int64_t> axis(int64_t a, int64_t rank) const;
};

/// Builds kiln ops at the current node; binary ops broadcast their operands.
struct Emitter {
  ImportContext &ctx;

  template <typename Op>
  mlir::FailureOr<mlir::Value> binary(mlir::Value a, mlir::Value b,
                                      mlir::Type resultElement = nullptr);
  template <typename Op>
  mlir::Value unary(mlir::Value x) {
    return Op::create(ctx.b, ctx.loc, x.getType(), x);
  }
  /// A rank-0 constant of `like`'s element type.
  mlir::Value constant(mlir::Value like, double v) {
    return ctx.scalar(mlir::getElementTypeOrSelf(like.getType()), v);
  }
  /// `x` reshaped to `shape`. With dynamic dimensions, the reshape may only
  /// insert or drop size-1 dimensions (the dynamic ones carry over).
  mlir::Value reshape(mlir::Value x, llvm::ArrayRef<int64_t> shape);
  /// `x` converted to `elementType` (itself when it already has it).
  mlir::Value castTo(mlir::Value x, mlir::Type elementType) {
    if (mlir::getElementTypeOrSelf(x.getType()) == elementType)
      return x;
    auto shape = mlir::cast<mlir::RankedTensorType>(x.getType()).getShape();
    return mlir::kiln::CastOp::create(ctx.b, ctx.loc,
                                      mlir::RankedTensorType::get(shape, elementType), x);
  }
  /// Sum over all dimensions, as a rank-0 tensor.
  mlir::Value sumAll(mlir::Value x);
};

using ImportFn = std::function<mlir::LogicalResult(ImportContext &)>;
using ImportTable = llvm::StringMap<ImportFn>;

// One registration function per op family (ImportMath.cpp, ImportNN.cpp, ...).
/// saturate(round_half_even(scaled) + zero_point) as the integer type `qt`
/// (ImportQuant.cpp; shared by the quantized convolutions and matmuls).
mlir::FailureOr<mlir::Value> requantize(Emitter &e, mlir::Value scaled, mlir::Value zeroPoint,
                                        mlir::Type qt);

/// Imports the nodes of `graph` (the main graph or an inlined subgraph) at
/// the builder's insertion point; names resolve through ctx.values. Stops
/// early, with ctx.regionResults set, when a node imported ctx.rest.
mlir::LogicalResult importNodes(ImportContext &ctx, const onnx::GraphProto &graph);

/// Builds a region: runs `body` with ctx.rest = `finish` and returns what the
/// region yields (`finish`'s values, or ctx.regionResults when a node of
/// `body` imported the rest itself).
mlir::FailureOr<llvm::SmallVector<mlir::Value>>
importRegion(ImportContext &ctx, llvm::function_ref<mlir::LogicalResult()> body,
             std::function<mlir::FailureOr<llvm::SmallVector<mlir::Value>>()> finish);

/// The values named `names` (host constants are materialized); `what` names
/// them in the error for one that was never produced.
mlir::FailureOr<llvm::SmallVector<mlir::Value>> valuesNamed(ImportContext &ctx,
                                                            llvm::ArrayRef<std::string> names,
                                                            mlir::Location loc,
                                                            llvm::StringRef what);

void registerMathOps(ImportTable &table);
void registerControlFlowOps(ImportTable &table);
void registerRNNOps(ImportTable &table);
void registerNNOps(ImportTable &table);
void registerTensorOps(ImportTable &table);
void registerLossOps(ImportTable &table);
void registerQuantOps(ImportTable &table);
void registerSignalOps(ImportTable &table);
void registerTransformerOps(ImportTable &table);
void registerDataDependentOps(ImportTable &table);
void registerDetectionOps(ImportTable &table);
void registerTextOps(ImportTable &table);

/// kiln binary op result type under numpy broadcasting, with `a`'s element
/// type unless `elementType` is given.
mlir::FailureOr<mlir::RankedTensorType> broadcastType(ImportContext &ctx, mlir::Value a,
                                                      mlir::Value b,
                                                      mlir::Type elementType = nullptr);

template <typename Op>
mlir::FailureOr<mlir::Value> Emitter::binary(mlir::Value a, mlir::Value b,
                                             mlir::Type resultElement) {
  auto type = broadcastType(ctx, a, b, resultElement);
  if (mlir::failed(type))
    return mlir::failure();
  return Op::create(ctx.b, ctx.loc, *type, a, b).getResult();
}

/// The values of an ONNX TensorProto (prints an error naming `file` on failure).
mlir::FailureOr<HostTensor> parseTensor(const onnx::TensorProto &tp, mlir::Location loc);
/// A SparseTensorProto (COO: values, and linear or per-dimension int64
/// indices) as the dense tensor it stands for.
mlir::FailureOr<HostTensor> parseSparseTensor(const onnx::SparseTensorProto &sp,
                                              mlir::Location loc);
/// Calls `fn` with the name of each initializer of `graph`, dense or sparse.
void forEachInitializerName(const onnx::GraphProto &graph,
                            llvm::function_ref<void(const std::string &)> fn);
/// Parses the graph's initializers (dense and sparse) into host constants.
mlir::LogicalResult loadInitializers(ImportContext &ctx, const onnx::GraphProto &graph,
                                     mlir::Location loc);

/// The MLIR element type of an ONNX data type; null if unsupported.
mlir::Type elementTypeOf(mlir::Builder &b, int32_t dtype);
/// The ONNX data type code of an element type (0 if none).
int32_t dtypeCodeOf(mlir::Type t);
/// "FLOAT", "INT64", ... for messages.
std::string dtypeName(int32_t dtype); // "FLOAT", "FLOAT8E4M3FN", ...

/// ONNX element type codes newer than libonnx 1.12's enum.
constexpr int32_t kDtypeUint4 = 21, kDtypeInt4 = 22;

/// The newest ONNX versions kiln reads: IR 13 and opset 27 (ONNX 1.22).
constexpr int64_t kMaxIrVersion = 13, kMaxOpset = 27;

/// The location of an imported node: NameLoc(name, NameLoc(op type)).
mlir::Location nodeLocation(mlir::Builder &b, const onnx::NodeProto &node);

/// The element count of `shape`, or an error at `loc` naming `what` when a
/// dimension is negative or the byte count would not fit 2^47.
mlir::FailureOr<int64_t> checkedElementCount(llvm::ArrayRef<int64_t> shape, int32_t dtype,
                                             mlir::Location loc, llvm::StringRef what);

/// The most elements of a constant the importer computes (index tables,
/// interpolation weights, grids): 64M, 512 MiB while held as doubles.
constexpr int64_t kMaxConstantElements = int64_t(1) << 26;
/// The element count of such a constant of `shape`, or an error at `loc`
/// naming `what` when it is negative, overflows or exceeds the limit.
mlir::FailureOr<int64_t> constantElementCount(llvm::ArrayRef<int64_t> shape, mlir::Location loc,
                                              llvm::StringRef what);

/// Model-level checks (versions, outputs, graph inputs and outputs) that
/// replace libonnx's checker; diagnostics at `loc`.
mlir::LogicalResult validateModel(const onnx::ModelProto &model, mlir::Location loc);

/// The nodes of `graph` in an order where each comes after what it reads,
/// after checking that every value is defined once and every input is
/// defined; diagnostics on the node at fault.
mlir::FailureOr<std::vector<const onnx::NodeProto *>> sortedNodes(ImportContext &ctx,
                                                                  const onnx::GraphProto &graph);
/// The 2-D [outer, inner] type that Flatten gives `t` at `axis`, with the
/// `kept` attribute of that reshape (null for static shapes). Fails when
/// dynamic dimensions leave the two sizes undetermined.
mlir::FailureOr<std::pair<mlir::RankedTensorType, mlir::DenseI64ArrayAttr>>
flattenedType(ImportContext &ctx, mlir::RankedTensorType t, int64_t axis);
/// The `kept` attribute of the reshape that undoes flattenedType().
mlir::DenseI64ArrayAttr
unflattenedKept(mlir::RankedTensorType t,
                const std::pair<mlir::RankedTensorType, mlir::DenseI64ArrayAttr> &flat);
/// "[1,?,3]": a shape or list of integers, dynamic dimensions as '?'.
std::string shapeText(llvm::ArrayRef<int64_t> shape);

} // namespace kiln::onnx_frontend

#endif
