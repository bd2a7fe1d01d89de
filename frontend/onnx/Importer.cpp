//===- Importer.cpp - load an ONNX model and walk its graph ---------------===//
#include "frontend/onnx/Importer.h"
#include "frontend/onnx/ImportContext.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "onnx/shape_inference/implementation.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <cstring>

using namespace mlir;

namespace kiln::onnx_frontend {

bool HostTensor::isFloat() const {
  return dtype == onnx::TensorProto::FLOAT || dtype == onnx::TensorProto::DOUBLE ||
         dtype == onnx::TensorProto::FLOAT16 || dtype == onnx::TensorProto::BFLOAT16;
}

int64_t HostTensor::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

LogicalResult ImportContext::fail(const llvm::Twine &message) const {
  return mlir::emitError(loc) << message;
}

Location nodeLocation(Builder &b, const onnx::NodeProto &node) {
  std::string name = !node.name().empty()        ? node.name()
                     : node.output_size() > 0 ? node.output(0)
                                              : "";
  return NameLoc::get(b.getStringAttr(name), NameLoc::get(b.getStringAttr(node.op_type())));
}

static const onnx::AttributeProto *findAttr(const onnx::NodeProto *node, llvm::StringRef name) {
  for (const auto &a : node->attribute())
    if (a.name() == name)
      return &a;
  return nullptr;
}

bool ImportContext::hasAttr(llvm::StringRef name) const { return findAttr(node, name); }

int64_t ImportContext::attrInt(llvm::StringRef name, int64_t fallback) const {
  const auto *a = findAttr(node, name);
  return a ? a->i() : fallback;
}

float ImportContext::attrFloat(llvm::StringRef name, float fallback) const {
  const auto *a = findAttr(node, name);
  return a ? a->f() : fallback;
}

std::vector<int64_t> ImportContext::attrInts(llvm::StringRef name,
                                             std::vector<int64_t> fallback) const {
  const auto *a = findAttr(node, name);
  if (!a)
    return fallback;
  return std::vector<int64_t>(a->ints().begin(), a->ints().end());
}

std::vector<float> ImportContext::attrFloats(llvm::StringRef name) const {
  const auto *a = findAttr(node, name);
  if (!a)
    return {};
  return std::vector<float>(a->floats().begin(), a->floats().end());
}

std::string ImportContext::attrString(llvm::StringRef name, std::string fallback) const {
  const auto *a = findAttr(node, name);
  return a ? a->s() : fallback;
}

size_t ImportContext::numInputs() const { return node->input_size(); }

bool ImportContext::hasInput(size_t i) const {
  return i < (size_t)node->input_size() && !node->input(i).empty();
}

const HostTensor *ImportContext::hostInput(size_t i) const {
  if (!hasInput(i))
    return nullptr;
  auto it = values.find(node->input(i));
  if (it == values.end() || !it->second.host)
    return nullptr;
  return &*it->second.host;
}

FailureOr<std::vector<int64_t>> ImportContext::hostInts(size_t i, llvm::StringRef what) {
  const HostTensor *t = hostInput(i);
  if (!t)
    return fail("input '" + what + "' must be a compile-time constant (run-time values here "
                "need dynamic shapes, which are not supported yet)");
  if (t->isFloat())
    return fail("input '" + what + "' must be an integer tensor");
  return t->ints;
}

FailureOr<Value> ImportContext::input(size_t i) {
  if (!hasInput(i))
    return fail("missing input " + llvm::Twine(i));
  auto it = values.find(node->input(i));
  if (it == values.end())
    return fail("input '" + node->input(i) + "' is not defined before use");
  GraphValue &gv = it->second;
  if (!gv.value) {
    auto v = materialize(*gv.host, node->input(i));
    if (failed(v))
      return failure();
    gv.value = *v;
  }
  return gv.value;
}

Value ImportContext::optionalInput(size_t i) {
  if (!hasInput(i))
    return nullptr;
  auto v = input(i);
  return failed(v) ? nullptr : *v;
}

FailureOr<RankedTensorType> ImportContext::inputType(size_t i) {
  auto v = input(i);
  if (failed(v))
    return failure();
  return cast<RankedTensorType>(v->getType());
}

void ImportContext::setOutput(size_t i, Value v) {
  if (i < (size_t)node->output_size() && !node->output(i).empty())
    values[node->output(i)] = GraphValue{v, std::nullopt};
}

void ImportContext::setHostOutput(size_t i, HostTensor t) {
  if (i < (size_t)node->output_size() && !node->output(i).empty())
    values[node->output(i)] = GraphValue{Value(), std::move(t)};
}

FailureOr<int64_t> ImportContext::axis(int64_t a, int64_t rank) const {
  int64_t normalized = a < 0 ? a + rank : a;
  if (normalized < 0 || normalized >= std::max<int64_t>(rank, 1))
    return fail("axis " + llvm::Twine(a) + " is out of range for rank " + llvm::Twine(rank));
  return normalized;
}

/// `value` as an int64, saturated (NaN to 0), as the C++ cast is not.
static int64_t saturatedInt(double value) {
  if (std::isnan(value))
    return 0;
  if (value >= 0x1p63)
    return std::numeric_limits<int64_t>::max();
  return value <= -0x1p63 ? std::numeric_limits<int64_t>::min() : (int64_t)value;
}

Value ImportContext::scalar(Type elementType, double value) {
  auto type = RankedTensorType::get({}, elementType);
  Attribute element = isa<FloatType>(elementType)
                          ? (Attribute)b.getFloatAttr(elementType, value)
                          : (Attribute)b.getIntegerAttr(elementType, saturatedInt(value));
  auto attr = DenseElementsAttr::get(type, element);
  return mlir::kiln::ConstantOp::create(b, loc, type, attr);
}

Type elementTypeOf(Builder &b, int32_t dtype) {
  switch (dtype) {
  case onnx::TensorProto::FLOAT: return b.getF32Type();
  case onnx::TensorProto::DOUBLE: return b.getF64Type();
  case onnx::TensorProto::FLOAT16: return b.getF16Type();
  case onnx::TensorProto::BFLOAT16: return b.getBF16Type();
  case onnx::TensorProto::INT8: return b.getIntegerType(8);
  case onnx::TensorProto::INT16: return b.getIntegerType(16);
  case onnx::TensorProto::INT32: return b.getIntegerType(32);
  case onnx::TensorProto::INT64: return b.getIntegerType(64);
  case onnx::TensorProto::BOOL: return b.getIntegerType(1);
  case onnx::TensorProto::UINT8: return b.getIntegerType(8, false);
  case onnx::TensorProto::UINT16: return b.getIntegerType(16, false);
  case onnx::TensorProto::UINT32: return b.getIntegerType(32, false);
  case onnx::TensorProto::UINT64: return b.getIntegerType(64, false);
  default: return nullptr; // complex, string, float8...
  }
}

int32_t dtypeCodeOf(Type t) {
  for (int32_t code : {onnx::TensorProto::FLOAT, onnx::TensorProto::DOUBLE,
                       onnx::TensorProto::FLOAT16, onnx::TensorProto::BFLOAT16,
                       onnx::TensorProto::INT8, onnx::TensorProto::INT16, onnx::TensorProto::INT32,
                       onnx::TensorProto::INT64, onnx::TensorProto::BOOL, onnx::TensorProto::UINT8,
                       onnx::TensorProto::UINT16, onnx::TensorProto::UINT32,
                       onnx::TensorProto::UINT64}) {
    Builder b(t.getContext());
    if (elementTypeOf(b, code) == t)
      return code;
  }
  return 0;
}

FailureOr<std::pair<RankedTensorType, DenseI64ArrayAttr>>
flattenedType(ImportContext &ctx, RankedTensorType t, int64_t axis) {
  ArrayRef<int64_t> shape = t.getShape();
  SmallVector<int64_t> flat, kept;
  // A dynamic group of one dimension keeps its size; a group with another
  // dimension gets what the element count leaves, which works for one
  // group holding one dynamic dimension (so that the reshape can be undone).
  int64_t inferred = 0;
  bool undetermined = false;
  for (auto [begin, end] : {std::pair<int64_t, int64_t>{0, axis}, {axis, t.getRank()}}) {
    int64_t size = 1, dynamic = 0;
    for (int64_t i = begin; i < end; ++i) {
      dynamic += t.isDynamicDim(i);
      size = dynamic ? ShapedType::kDynamic : size * shape[i];
    }
    kept.push_back(dynamic && end - begin == 1 ? begin : -1);
    inferred += dynamic && end - begin > 1;
    undetermined |= dynamic > 1;
    flat.push_back(size);
  }
  if (inferred > 1 || undetermined)
    return ctx.fail("flattening " + shapeText(shape) + " at axis " + llvm::Twine(axis) +
                    " leaves dynamic sizes undetermined; pin the input shapes with "
                    "--input-shape");
  auto type = RankedTensorType::get(flat, t.getElementType());
  return std::make_pair(type, t.hasStaticShape() ? DenseI64ArrayAttr()
                                                 : ctx.b.getDenseI64ArrayAttr(kept));
}

DenseI64ArrayAttr unflattenedKept(RankedTensorType t,
                                  const std::pair<RankedTensorType, DenseI64ArrayAttr> &flat) {
  if (!flat.second)
    return {};
  SmallVector<int64_t> kept(t.getRank(), -1);
  for (auto [group, source] : llvm::enumerate(flat.second.asArrayRef()))
    if (source >= 0)
      kept[source] = group;
  return DenseI64ArrayAttr::get(t.getContext(), kept);
}

std::string shapeText(ArrayRef<int64_t> shape) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "[";
  llvm::interleave(
      shape, os, [&](int64_t d) { ShapedType::isDynamic(d) ? os << "?" : os << d; }, ",");
  os << "]";
  return s;
}

FailureOr<Value> ImportContext::materialize(const HostTensor &t, llvm::StringRef name) {
  Type et = elementTypeOf(b, t.dtype);
  if (!et)
    return fail("tensor '" + name + "' has element type " + dtypeName(t.dtype) +
                ", which is not supported");
  auto type = RankedTensorType::get(t.shape, et);
  ElementsAttr attr;
  if (t.dtype == onnx::TensorProto::FLOAT && t.floats.size() > 16) {
    // Weights become resource blobs: printed once at the end of the module
    // and never uniqued as attributes.
    std::vector<float> data(t.floats.begin(), t.floats.end());
    std::string blobName = name.str();
    for (char &c : blobName)
      if (!isalnum((unsigned char)c) && c != '_' && c != '.')
        c = '_';
    attr = mlir::kiln::blobElements(
        type, blobName,
        ArrayRef<char>(reinterpret_cast<const char *>(data.data()), data.size() * sizeof(float)));
  } else if (auto ft = dyn_cast<FloatType>(et)) {
    SmallVector<APFloat> values;
    for (double v : t.floats) {
      APFloat f(v);
      bool lost;
      f.convert(ft.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
      values.push_back(f);
    }
    attr = DenseElementsAttr::get(type, values);
  } else {
    SmallVector<APInt> values;
    for (int64_t v : t.ints)
      values.push_back(APInt(et.getIntOrFloatBitWidth(), v, /*isSigned=*/!et.isUnsignedInteger(),
                             /*implicitTrunc=*/true));
    attr = DenseElementsAttr::get(type, values);
  }
  return mlir::kiln::ConstantOp::create(b, loc, type, attr).getResult();
}

//===----------------------------------------------------------------------===//
// Model loading
//===----------------------------------------------------------------------===//

FailureOr<HostTensor> parseTensor(const onnx::TensorProto &tp, Location loc) {
  HostTensor t;
  t.dtype = tp.data_type();
  t.shape.assign(tp.dims().begin(), tp.dims().end());
  auto error = [&] { return mlir::emitError(loc) << "tensor '" << tp.name() << "' "; };
  auto count = checkedElementCount(t.shape, t.dtype, loc, "tensor '" + tp.name() + "'");
  if (failed(count))
    return failure();
  int64_t n = *count;
  if (tp.data_location() == onnx::TensorProto::EXTERNAL)
    return error() << "uses external data, which kiln does not support yet";
  const std::string &raw = tp.raw_data();
  auto fromRaw = [&](auto sample, auto &out) -> bool {
    using T = decltype(sample);
    if (raw.size() != n * sizeof(T))
      return false;
    out.resize(n);
    for (int64_t i = 0; i < n; ++i) {
      T v;
      std::memcpy(&v, raw.data() + i * sizeof(T), sizeof(T));
      out[i] = v;
    }
    return true;
  };
  bool ok = true;
  switch (t.dtype) {
  case onnx::TensorProto::FLOAT:
    if (!raw.empty())
      ok = fromRaw(float(), t.floats);
    else
      t.floats.assign(tp.float_data().begin(), tp.float_data().end());
    break;
  case onnx::TensorProto::DOUBLE:
    if (!raw.empty())
      ok = fromRaw(double(), t.floats);
    else
      t.floats.assign(tp.double_data().begin(), tp.double_data().end());
    break;
  case onnx::TensorProto::INT64:
    if (!raw.empty())
      ok = fromRaw(int64_t(), t.ints);
    else
      t.ints.assign(tp.int64_data().begin(), tp.int64_data().end());
    break;
  case onnx::TensorProto::INT32:
    if (!raw.empty())
      ok = fromRaw(int32_t(), t.ints);
    else
      t.ints.assign(tp.int32_data().begin(), tp.int32_data().end());
    break;
  case onnx::TensorProto::UINT32:
  case onnx::TensorProto::UINT64:
    if (!raw.empty())
      ok = t.dtype == onnx::TensorProto::UINT32 ? fromRaw(uint32_t(), t.ints)
                                                : fromRaw(uint64_t(), t.ints);
    else
      t.ints.assign(tp.uint64_data().begin(), tp.uint64_data().end());
    break;
  case onnx::TensorProto::INT16:
  case onnx::TensorProto::UINT16:
    if (!raw.empty())
      ok = t.dtype == onnx::TensorProto::INT16 ? fromRaw(int16_t(), t.ints)
                                               : fromRaw(uint16_t(), t.ints);
    else
      t.ints.assign(tp.int32_data().begin(), tp.int32_data().end());
    break;
  case onnx::TensorProto::FLOAT16:
  case onnx::TensorProto::BFLOAT16: {
    // Stored as 16-bit patterns (raw, or one per int32_data entry).
    std::vector<int64_t> bits;
    if (!raw.empty())
      ok = fromRaw(uint16_t(), bits);
    else
      bits.assign(tp.int32_data().begin(), tp.int32_data().end());
    const llvm::fltSemantics &sem = t.dtype == onnx::TensorProto::FLOAT16
                                        ? APFloat::IEEEhalf()
                                        : APFloat::BFloat();
    for (int64_t b : bits)
      t.floats.push_back(APFloat(sem, APInt(16, b & 0xffff)).convertToDouble());
    break;
  }
  case onnx::TensorProto::BOOL:
  case onnx::TensorProto::UINT8:
  case onnx::TensorProto::INT8:
    if (!raw.empty())
      ok = t.dtype == onnx::TensorProto::INT8 ? fromRaw(int8_t(), t.ints)
                                              : fromRaw(uint8_t(), t.ints);
    else
      t.ints.assign(tp.int32_data().begin(), tp.int32_data().end());
    break;
  case kDtypeUint4:
  case kDtypeInt4: {
    // Two per byte, the first in the low nibble; kiln holds them widened to
    // 8 bits (weights of blockwise-quantized LLMs feed DequantizeLinear).
    bool isSigned = t.dtype == kDtypeInt4;
    std::vector<int64_t> bytes;
    if (!raw.empty())
      for (char c : raw)
        bytes.push_back(static_cast<uint8_t>(c));
    else
      bytes.assign(tp.int32_data().begin(), tp.int32_data().end());
    ok = bytes.size() == size_t((n + 1) / 2);
    for (int64_t i = 0; ok && i < n; ++i) {
      int64_t nibble = (bytes[i / 2] >> (4 * (i % 2))) & 0xF;
      t.ints.push_back(isSigned && nibble >= 8 ? nibble - 16 : nibble);
    }
    t.dtype = isSigned ? onnx::TensorProto::INT8 : onnx::TensorProto::UINT8;
    break;
  }
  default:
    return error() << "has element type " << dtypeName(t.dtype)
                   << ", which kiln does not support";
  }
  int64_t have = t.isFloat() ? t.floats.size() : t.ints.size();
  if (!ok || have != n)
    return error() << "holds " << have << " values but its shape needs " << n;
  return t;
}

static FailureOr<onnx::ModelProto> parseModel(llvm::StringRef bytes, Location loc) {
  onnx::ModelProto model;
  if (bytes.size() > (size_t)INT_MAX)
    return mlir::emitError(loc) << "the model file is over 2 GiB; protobuf cannot parse it "
                                   "(keep large weights as external data)";
  if (bytes.empty() || !model.ParseFromArray(bytes.data(), (int)bytes.size()) ||
      !model.has_graph())
    return mlir::emitError(loc) << "not a valid ONNX model (the protobuf does not parse; the "
                                   "file may be truncated or not ONNX)";
  if (failed(validateModel(model, loc)))
    return failure();
  return model;
}

static int64_t defaultOpset(const onnx::ModelProto &model) {
  for (const auto &o : model.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx")
      return o.version();
  return 1;
}

/// An input's element type and shape; dynamic dimensions are
/// ShapedType::kDynamic, named by their dim_param where the model has one.
struct InputType {
  int32_t dtype;
  std::vector<int64_t> shape;
  std::vector<std::string> dimNames;
};

static FailureOr<InputType> graphInputType(const onnx::ValueInfoProto &vi,
                                           const ImportOptions &options, Location loc) {
  const auto &tt = vi.type().tensor_type();
  InputType type{tt.elem_type(), {}, {}};
  auto pinned = options.inputShapes.find(vi.name());
  if (pinned != options.inputShapes.end()) {
    type.shape = pinned->second;
    type.dimNames.assign(type.shape.size(), "");
    if (tt.has_shape() && tt.shape().dim_size() != (int)type.shape.size())
      return mlir::emitError(loc) << "--input-shape " << vi.name() << " has rank "
                                  << type.shape.size() << " but the model's input has rank "
                                  << tt.shape().dim_size();
    for (int i = 0; tt.has_shape() && i < tt.shape().dim_size(); ++i) {
      const auto &d = tt.shape().dim(i);
      if (d.has_dim_value() && d.dim_value() != type.shape[i])
        return mlir::emitError(loc) << "--input-shape " << vi.name() << " sets dimension " << i
                                    << " to " << type.shape[i] << " but the model fixes it to "
                                    << d.dim_value();
    }
    if (failed(checkedElementCount(type.shape, type.dtype, loc, "input '" + vi.name() + "'")))
      return failure();
    return type;
  }
  if (!tt.has_shape())
    return mlir::emitError(loc) << "input '" << vi.name() << "' has no shape; pin it with "
                                << "--input-shape " << vi.name() << "=DxDx...";
  for (const auto &d : tt.shape().dim()) {
    type.shape.push_back(d.has_dim_value() ? d.dim_value() : ShapedType::kDynamic);
    type.dimNames.push_back(d.has_dim_value() ? "" : d.dim_param());
  }
  return type;
}

/// The fully static shapes among the graph's outputs and value_info.
static void recordDeclaredShapes(const onnx::GraphProto &graph,
                                 llvm::StringMap<std::vector<int64_t>> &shapes) {
  auto record = [&](const onnx::ValueInfoProto &vi) {
    const auto &tt = vi.type().tensor_type();
    if (!vi.type().has_tensor_type() || !tt.has_shape())
      return;
    std::vector<int64_t> shape;
    for (const auto &d : tt.shape().dim()) {
      if (!d.has_dim_value())
        return;
      shape.push_back(d.dim_value());
    }
    shapes[vi.name()] = std::move(shape);
  };
  for (const auto &vi : graph.value_info())
    record(vi);
  for (const auto &vi : graph.output())
    record(vi);
}

/// Ops whose import rules and lowerings handle dynamic dimensions.
static bool acceptsDynamicShapes(StringRef op) {
  static const llvm::StringSet<> ops = {
      "Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Sum", "Equal", "Less", "LessOrEqual",
      "Greater", "GreaterOrEqual", "Where", "Relu", "Neg", "Abs", "Sigmoid", "Tanh", "Exp",
      "Log", "Erf", "Sqrt", "Reciprocal", "Ceil", "Floor", "Round", "Sin", "Cos", "Not",
      "And", "Or", "Xor", "Clip", "LeakyRelu", "HardSigmoid", "HardSwish", "Identity",
      "Dropout", "Cast", "Gemm", "MatMul", "Conv", "BatchNormalization", "MaxPool",
      "AveragePool", "GlobalAveragePool", "Softmax", "LogSoftmax", "Flatten", "Reshape",
      "Transpose", "Concat", "Unsqueeze", "Squeeze", "Shape", "ReduceMean", "ReduceSum",
      "ReduceMax", "ReduceMin", "ReduceProd", "ReduceSumSquare", "Slice", "Resize",
      "Upsample", "ConvTranspose", "LayerNormalization", "Gather", "GatherND", "Pad", "NonZero",
      "Compress", "Unique", "NonMaxSuppression", "LSTM", "GRU", "RNN", "Split"};
  return ops.contains(op);
}

/// Fails, naming the dimension, when a node whose op is not yet ready for
/// dynamic dimensions receives one.
static LogicalResult checkDynamicInputs(ImportContext &ctx) {
  if (acceptsDynamicShapes(ctx.node->op_type()))
    return success();
  for (const std::string &name : ctx.node->input()) {
    auto it = ctx.values.find(name);
    if (name.empty() || it == ctx.values.end() || !it->second.value)
      continue;
    auto type = dyn_cast<RankedTensorType>(it->second.value.getType());
    if (type && !type.hasStaticShape())
      return ctx.fail("input '" + name + "' has a dynamic dimension (shape " +
                      shapeText(type.getShape()) + "), which " + ctx.node->op_type() +
                      " does not support yet; pin the model's input shapes with "
                      "--input-shape NAME=DxDx...");
  }
  return success();
}

static const ImportTable &importTable() {
  static ImportTable table = [] {
    ImportTable t;
    registerMathOps(t);
    registerNNOps(t);
    registerTensorOps(t);
    registerLossOps(t);
    registerQuantOps(t);
    registerSignalOps(t);
    registerControlFlowOps(t);
    registerRNNOps(t);
    registerTransformerOps(t);
    registerDataDependentOps(t);
    registerDetectionOps(t);
    registerTextOps(t);
    return t;
  }();
  return table;
}

/// Imports order[first..]; ctx.rest at node i imports order[i+1..] and then
/// what `after` (the rest when the node list began) imports.
static LogicalResult importFrom(ImportContext &ctx, ArrayRef<const onnx::NodeProto *> order,
                                size_t first) {
  const ImportTable &table = importTable();
  auto after = ctx.rest;
  llvm::scope_exit restore([&] { ctx.rest = after; });
  for (size_t i = first; i < order.size(); ++i) {
    const onnx::NodeProto &node = *order[i];
    ctx.node = &node;
    ctx.loc = nodeLocation(ctx.b, node);
    if (after)
      ctx.rest = [&ctx, order, i, after] {
        return importRegion(ctx, [&] { return importFrom(ctx, order, i + 1); }, after);
      };
    if (!node.domain().empty() && node.domain() != "ai.onnx")
      return ctx.fail("operator domain '" + node.domain() + "' is not supported");
    auto it = table.find(node.op_type());
    if (it == table.end())
      return ctx.fail("unsupported operator '" + node.op_type() + "'");
    if (failed(checkDynamicInputs(ctx)))
      return failure();
    if (failed(it->second(ctx)))
      return failure();
    if (ctx.regionResults)
      break;
  }
  return success();
}

FailureOr<HostTensor> parseSparseTensor(const onnx::SparseTensorProto &sp, Location loc) {
  const std::string &name = sp.values().name();
  auto error = [&] { return mlir::emitError(loc) << "sparse tensor '" << name << "' "; };
  auto values = parseTensor(sp.values(), loc);
  if (failed(values))
    return failure();
  HostTensor t;
  t.dtype = values->dtype;
  t.shape.assign(sp.dims().begin(), sp.dims().end());
  auto count = checkedElementCount(t.shape, t.dtype, loc, "sparse tensor '" + name + "'");
  if (failed(count))
    return failure();
  // Densified at compile time: a few values must not claim gigabytes.
  constexpr int64_t kMaxDenseElements = int64_t(1) << 26;
  if (*count > kMaxDenseElements)
    return error() << "has " << *count << " elements; kiln densifies sparse tensors of up to "
                   << "2^26 elements";
  int64_t nnz = values->shape.size() == 1 ? values->shape[0] : -1;
  if (nnz < 0)
    return error() << "needs 1-D values";
  auto indices = parseTensor(sp.indices(), loc);
  if (failed(indices))
    return failure();
  if (indices->dtype != onnx::TensorProto::INT64)
    return error() << "needs int64 indices";
  int64_t rank = t.shape.size();
  bool linear = indices->shape == std::vector<int64_t>{nnz};
  if (!linear && indices->shape != std::vector<int64_t>{nnz, rank})
    return error() << "needs indices of shape [" << nnz << "] or [" << nnz << ", " << rank << "]";
  auto dense = [&](auto &out, const auto &from) {
    out.assign(*count, 0);
    for (int64_t i = 0; i < nnz; ++i) {
      int64_t at = 0;
      for (int64_t d = 0; d < (linear ? 1 : rank); ++d) {
        int64_t v = indices->ints[linear ? i : i * rank + d];
        int64_t extent = linear ? *count : t.shape[d];
        if (v < 0 || v >= extent)
          return false;
        at = linear ? v : at * extent + v;
      }
      out[at] = from[i];
    }
    return true;
  };
  if (!(t.isFloat() ? dense(t.floats, values->floats) : dense(t.ints, values->ints)))
    return error() << "has an index out of range";
  return t;
}

void forEachInitializerName(const onnx::GraphProto &graph,
                            llvm::function_ref<void(const std::string &)> fn) {
  for (const auto &init : graph.initializer())
    fn(init.name());
  for (const auto &sparse : graph.sparse_initializer())
    fn(sparse.values().name());
}

LogicalResult loadInitializers(ImportContext &ctx, const onnx::GraphProto &graph,
                               Location loc) {
  for (const auto &init : graph.initializer()) {
    auto t = parseTensor(init, loc);
    if (failed(t))
      return failure();
    ctx.values[init.name()] = GraphValue{Value(), std::move(*t)};
  }
  for (const auto &sparse : graph.sparse_initializer()) {
    auto t = parseSparseTensor(sparse, loc);
    if (failed(t))
      return failure();
    ctx.values[sparse.values().name()] = GraphValue{Value(), std::move(*t)};
  }
  return success();
}

LogicalResult importNodes(ImportContext &ctx, const onnx::GraphProto &graph) {
  const onnx::NodeProto *outer = ctx.node;
  Location outerLoc = ctx.loc;
  if (failed(loadInitializers(ctx, graph, ctx.loc))) // subgraphs may have their own
    return failure();
  auto order = sortedNodes(ctx, graph);
  if (failed(order) || failed(importFrom(ctx, *order, 0)))
    return failure();
  ctx.node = outer;
  ctx.loc = outerLoc;
  return success();
}

FailureOr<SmallVector<Value>>
importRegion(ImportContext &ctx, function_ref<LogicalResult()> body,
             std::function<FailureOr<SmallVector<Value>>()> finish) {
  auto outer = std::exchange(ctx.rest, finish);
  LogicalResult imported = body();
  ctx.rest = outer;
  if (failed(imported))
    return failure();
  if (ctx.regionResults)
    return *std::exchange(ctx.regionResults, std::nullopt);
  return finish();
}

FailureOr<SmallVector<Value>> valuesNamed(ImportContext &ctx, ArrayRef<std::string> names,
                                          Location loc, StringRef what) {
  SmallVector<Value> values;
  for (const std::string &name : names) {
    auto it = ctx.values.find(name);
    if (it == ctx.values.end())
      return mlir::emitError(loc) << what << " '" << name << "' is never produced";
    if (!it->second.value) {
      auto v = ctx.materialize(*it->second.host, name);
      if (failed(v))
        return failure();
      it->second.value = *v;
    }
    values.push_back(it->second.value);
  }
  return values;
}

/// Inside a copy of the rest of the model made for a run-time If (see
/// importIf), an output whose rank differs from the one the model declares
/// means that the copy is a path the model does not take: the error makes
/// the copy stop the run instead, and the other copy gives the output type.
static LogicalResult checkDeclaredRanks(ImportContext &ctx, const onnx::GraphProto &graph,
                                        ValueRange values, Location loc) {
  if (ctx.duplicationDepth == 0)
    return success();
  for (auto [out, v] : llvm::zip(graph.output(), values)) {
    if (!out.type().tensor_type().has_shape())
      continue;
    int64_t declared = out.type().tensor_type().shape().dim_size();
    int64_t rank = cast<RankedTensorType>(v.getType()).getRank();
    if (rank != declared)
      return mlir::emitError(loc) << "graph output '" << out.name() << "' would have rank "
                                  << rank << ", but the model declares rank " << declared;
  }
  return success();
}

OwningOpRef<ModuleOp> importModel(const std::string &path, const ImportOptions &options,
                                  MLIRContext &context) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer) {
    mlir::emitError(FileLineColLoc::get(&context, path, 0, 0))
        << "cannot read the model: " << buffer.getError().message();
    return nullptr;
  }
  return importModelBytes((*buffer)->getBuffer(), path, options, context);
}

OwningOpRef<ModuleOp> importModelBytes(llvm::StringRef bytes, const std::string &path,
                                       const ImportOptions &options, MLIRContext &context) {
  context.loadDialect<mlir::kiln::KilnDialect, func::FuncDialect, scf::SCFDialect,
                      tensor::TensorDialect>();
  Location fileLoc = FileLineColLoc::get(&context, path, 0, 0);
  auto model = parseModel(bytes, fileLoc);
  if (failed(model))
    return nullptr;
  const onnx::GraphProto &graph = model->graph();
  int64_t opset = defaultOpset(*model);
  auto checkNames = [&](auto keys, const char *flag) {
    for (const auto &name : keys)
      if (!llvm::any_of(graph.input(), [&](const auto &vi) { return vi.name() == name; })) {
        mlir::emitError(fileLoc) << flag << " names '" << name
                                 << "', which is not an input of the model";
        return false;
      }
    return true;
  };
  if (!checkNames(options.inputShapes.keys(), "--input-shape") ||
      !checkNames(options.inputValues.keys(), "--input-value"))
    return nullptr;

  OpBuilder b(&context);
  OwningOpRef<ModuleOp> module = ModuleOp::create(fileLoc);
  ImportContext ctx(b, path, opset);
  recordDeclaredShapes(graph, ctx.declaredShapes);

  // Initializers are constants; graph inputs that are also initializers are
  // treated as constants too (the ONNX IR < 4 convention).
  if (failed(loadInitializers(ctx, graph, fileLoc)))
    return nullptr;
  SmallVector<Type> inputTypes;
  SmallVector<std::string> inputNames;
  SmallVector<std::vector<std::string>> inputDimNames;
  for (const auto &vi : graph.input()) {
    if (ctx.values.count(vi.name()))
      continue;
    auto type = graphInputType(vi, options, fileLoc);
    if (failed(type))
      return nullptr;
    if (auto bound = options.inputValues.find(vi.name()); bound != options.inputValues.end()) {
      HostTensor t;
      if (llvm::is_contained(type->shape, ShapedType::kDynamic)) {
        mlir::emitError(fileLoc) << "--input-value " << vi.name()
                                 << " needs a static shape; pin it with --input-shape";
        return nullptr;
      }
      t.dtype = type->dtype;
      t.shape = type->shape;
      int64_t n = t.numElements();
      if (t.isFloat())
        t.floats.assign(n, bound->second);
      else
        t.ints.assign(n, static_cast<int64_t>(bound->second));
      ctx.values[vi.name()] = GraphValue{Value(), std::move(t)};
      continue;
    }
    Type et = elementTypeOf(b, type->dtype); // validateModel checked it
    inputTypes.push_back(RankedTensorType::get(type->shape, et));
    inputNames.push_back(vi.name());
    inputDimNames.push_back(type->dimNames);
  }

  b.setInsertionPointToEnd(module->getBody());
  auto func = func::FuncOp::create(b, fileLoc, "main", b.getFunctionType(inputTypes, {}));
  Block *entry = func.addEntryBlock();
  for (auto [i, name] : llvm::enumerate(inputNames)) {
    func.setArgAttr(i, "kiln.name", b.getStringAttr(name));
    if (llvm::any_of(inputDimNames[i], [](const std::string &n) { return !n.empty(); }))
      func.setArgAttr(i, "kiln.dims", b.getStrArrayAttr(SmallVector<StringRef>(
                                          inputDimNames[i].begin(), inputDimNames[i].end())));
    ctx.values[name] = GraphValue{entry->getArgument(i), std::nullopt};
  }
  b.setInsertionPointToStart(entry);

  std::vector<std::string> outputNames;
  for (const auto &out : graph.output())
    outputNames.push_back(out.name());
  auto results = importRegion(
      ctx, [&] { return importNodes(ctx, graph); },
      [&]() -> FailureOr<SmallVector<Value>> {
        auto values = valuesNamed(ctx, outputNames, fileLoc, "graph output");
        if (failed(values) || failed(checkDeclaredRanks(ctx, graph, *values, fileLoc)))
          return failure();
        return values;
      });
  if (failed(results))
    return nullptr;
  func::ReturnOp::create(b, fileLoc, *results);
  func.setFunctionType(b.getFunctionType(inputTypes, TypeRange(ValueRange(*results))));
  for (auto [i, out] : llvm::enumerate(graph.output()))
    func.setResultAttr(i, "kiln.name", b.getStringAttr(out.name()));
  return module;
}

Value Emitter::reshape(Value x, ArrayRef<int64_t> shape) {
  auto in = cast<RankedTensorType>(x.getType());
  auto type = RankedTensorType::get(shape, in.getElementType());
  if (in.hasStaticShape() && type.hasStaticShape())
    return mlir::kiln::ReshapeOp::create(ctx.b, ctx.loc, type, x);
  // Match the result's dimensions to the input's; unmatched ones are 1.
  // Another reshape gets no `kept`, and the verifier rejects it.
  SmallVector<int64_t> kept;
  size_t i = 0;
  for (int64_t d : shape) {
    while (i < (size_t)in.getRank() && in.getDimSize(i) != d && in.getDimSize(i) == 1)
      ++i;
    bool matched = i < (size_t)in.getRank() && in.getDimSize(i) == d;
    if (!matched && d != 1)
      return mlir::kiln::ReshapeOp::create(ctx.b, ctx.loc, type, x);
    kept.push_back(matched ? (int64_t)i++ : -1);
  }
  return mlir::kiln::ReshapeOp::create(ctx.b, ctx.loc, type, x, ctx.b.getDenseI64ArrayAttr(kept));
}

Value Emitter::sumAll(Value x) {
  auto xt = cast<RankedTensorType>(x.getType());
  SmallVector<int64_t> axes;
  for (int64_t i = 0; i < xt.getRank(); ++i)
    axes.push_back(i);
  return mlir::kiln::ReduceOp::create(ctx.b, ctx.loc,
                                      RankedTensorType::get({}, xt.getElementType()), x, "sum",
                                      axes, false);
}

FailureOr<RankedTensorType> broadcastType(ImportContext &ctx, Value a, Value b,
                                          Type elementType) {
  auto ta = cast<RankedTensorType>(a.getType()), tb = cast<RankedTensorType>(b.getType());
  if (ta.getElementType() != tb.getElementType())
    return ctx.fail("operand element types differ");
  auto shape = mlir::kiln::broadcastShapes(ta.getShape(), tb.getShape());
  if (failed(shape))
    return ctx.fail("operand shapes are not broadcast-compatible");
  return RankedTensorType::get(*shape, elementType ? elementType : ta.getElementType());
}

} // namespace kiln::onnx_frontend
