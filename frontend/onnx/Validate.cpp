//===- Validate.cpp - kiln's own checks of an ONNX model ------------------===//
//
// libonnx 1.12 parses every newer model, but its checker refuses IR > 8 and
// judges opsets > 17 by the newest schema it knows (Split-18's num_outputs
// is "unrecognized"). So kiln checks models itself: versions it can import,
// a graph that is a DAG of defined values (sorted when the file lists nodes
// out of order), element types it knows by name, sizes that fit 64-bit byte
// counts, and each node against ONNX's schema where libonnx's schema is the
// one the model's opset means. Every failure is a diagnostic on the node's
// or the model's location.
//
//===----------------------------------------------------------------------===//
#include "frontend/onnx/ImportContext.h"

#include "onnx/defs/schema.h"
#include "llvm/ADT/StringSet.h"

#include <queue>

using namespace mlir;

namespace kiln::onnx_frontend {

std::string dtypeName(int32_t dtype) {
  // Codes after BFLOAT16 (16) are newer than libonnx 1.12's descriptor.
  static const char *const newer[] = {"FLOAT8E4M3FN", "FLOAT8E4M3FNUZ", "FLOAT8E5M2",
                                      "FLOAT8E5M2FNUZ", "UINT4", "INT4", "FLOAT4E2M1",
                                      "FLOAT8E8M0", "UINT2", "INT2"};
  if (dtype >= 17 && dtype < 17 + (int32_t)std::size(newer))
    return newer[dtype - 17];
  const auto *value = onnx::TensorProto::DataType_descriptor()->FindValueByNumber(dtype);
  return value ? value->name() : "unknown data type " + std::to_string(dtype);
}

FailureOr<int64_t> checkedElementCount(llvm::ArrayRef<int64_t> shape, int32_t dtype,
                                       Location loc, llvm::StringRef what) {
  auto error = [&] { return mlir::emitError(loc); };
  // 2^47 bytes is the whole user address space of x86-64 and AArch64 Linux.
  constexpr int64_t kMaxBytes = int64_t(1) << 47;
  int64_t count = 1, bytes = 0;
  for (int64_t d : shape) {
    if (d < 0) {
      error() << what << " has a negative dimension (" << d << ")";
      return failure();
    }
    if (__builtin_mul_overflow(count, d, &count)) {
      error() << what << " has more elements than a 64-bit count holds";
      return failure();
    }
  }
  Builder b(loc.getContext());
  Type type = elementTypeOf(b, dtype);
  int64_t width = type ? std::max<int64_t>(1, type.getIntOrFloatBitWidth() / 8) : 1;
  if (__builtin_mul_overflow(count, width, &bytes) || bytes > kMaxBytes) {
    error() << what << " would take more than 2^47 bytes (" << count
            << " elements), more than any process can address";
    return failure();
  }
  return count;
}

FailureOr<int64_t> constantElementCount(llvm::ArrayRef<int64_t> shape, Location loc,
                                       llvm::StringRef what) {
  auto count = checkedElementCount(shape, onnx::TensorProto::DOUBLE, loc, what);
  if (failed(count))
    return failure();
  if (*count > kMaxConstantElements) {
    mlir::emitError(loc) << what << " would need a constant of " << *count
                         << " elements, more than the " << kMaxConstantElements
                         << " kiln builds while compiling";
    return failure();
  }
  return count;
}

//===----------------------------------------------------------------------===//
// Model-level checks
//===----------------------------------------------------------------------===//

/// A graph value's declared element type and static dimensions.
static LogicalResult checkValueInfo(const onnx::ValueInfoProto &vi, const char *role,
                                    Location loc) {
  auto error = [&] { return mlir::emitError(loc); };
  if (!vi.type().has_tensor_type())
    return error() << role << " '" << vi.name()
                   << "' is not a tensor (sequences, maps and optionals are not supported)";
  const auto &tt = vi.type().tensor_type();
  Builder b(loc.getContext());
  if (!elementTypeOf(b, tt.elem_type()))
    return error() << role << " '" << vi.name() << "' has element type "
                   << dtypeName(tt.elem_type()) << ", which kiln does not support";
  std::vector<int64_t> known;
  for (const auto &d : tt.shape().dim())
    if (d.has_dim_value())
      known.push_back(d.dim_value());
  return checkedElementCount(known, tt.elem_type(), loc,
                             (llvm::Twine(role) + " '" + vi.name() + "'").str());
}

LogicalResult validateModel(const onnx::ModelProto &model, Location loc) {
  auto error = [&] { return mlir::emitError(loc); };
  if (model.ir_version() < 1 || model.ir_version() > kMaxIrVersion)
    return error() << "the model's IR version is " << model.ir_version()
                   << "; kiln reads IR versions 1 to " << kMaxIrVersion;
  for (const auto &o : model.opset_import()) {
    bool onnxDomain = o.domain().empty() || o.domain() == "ai.onnx";
    if (onnxDomain && (o.version() < 1 || o.version() > kMaxOpset))
      return error() << "the model imports opset " << o.version()
                     << " of the default ONNX domain; kiln supports opsets 1 to " << kMaxOpset;
  }
  const onnx::GraphProto &graph = model.graph();
  if (graph.output_size() == 0)
    return error() << "the graph has no outputs, so there is nothing to compute";
  llvm::StringSet<> initializers;
  std::string twice;
  forEachInitializerName(graph, [&](const std::string &name) {
    if (!initializers.insert(name).second && twice.empty())
      twice = name;
  });
  if (!twice.empty())
    return error() << "two initializers are named '" << twice << "'";
  llvm::StringSet<> inputs;
  for (const auto &vi : graph.input()) {
    if (!inputs.insert(vi.name()).second)
      return error() << "two graph inputs are named '" << vi.name() << "'";
    if (!initializers.contains(vi.name()) && failed(checkValueInfo(vi, "input", loc)))
      return failure();
  }
  for (const auto &vi : graph.output())
    if (failed(checkValueInfo(vi, "output", loc)))
      return failure();
  return success();
}

//===----------------------------------------------------------------------===//
// Node order and definitions
//===----------------------------------------------------------------------===//

/// Adds to `names` the values the subgraphs of `node` read from outside
/// (recursively): a node with an If or Loop depends on them too.
static void collectOuterReads(const onnx::NodeProto &node, std::vector<std::string> &names) {
  for (const auto &attr : node.attribute()) {
    std::vector<const onnx::GraphProto *> graphs;
    if (attr.has_g())
      graphs.push_back(&attr.g());
    for (const auto &g : attr.graphs())
      graphs.push_back(&g);
    for (const onnx::GraphProto *g : graphs) {
      llvm::StringSet<> defined;
      for (const auto &vi : g->input())
        defined.insert(vi.name());
      forEachInitializerName(*g, [&](const std::string &name) { defined.insert(name); });
      for (const auto &n : g->node())
        for (const auto &out : n.output())
          defined.insert(out);
      std::vector<std::string> reads;
      for (const auto &n : g->node()) {
        reads.assign(n.input().begin(), n.input().end());
        collectOuterReads(n, reads);
        for (const std::string &name : reads)
          if (!name.empty() && !defined.contains(name))
            names.push_back(name);
      }
      for (const auto &out : g->output())
        if (!defined.contains(out.name()))
          names.push_back(out.name());
    }
  }
}

/// ONNX ops whose inputs or attributes changed after opset 17, the newest
/// libonnx 1.12 knows: its schemas would judge them by their old form.
static bool changedAfterOpset17(llvm::StringRef op) {
  static const llvm::StringSet<> ops = {
      "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax", "ReduceMean",
      "ReduceMin", "ReduceProd", "ReduceSumSquare", "Pad", "Resize", "Split", "LpPool",
      "AveragePool", "Cast", "CastLike", "DequantizeLinear", "QuantizeLinear",
      "GroupNormalization", "DFT", "GridSample", "ScatterElements", "ScatterND", "TopK",
      "Attention", "ConstantOfShape", "Constant"};
  return ops.contains(op);
}

/// The node against ONNX's schema of the op at the model's opset: number of
/// inputs and outputs, required and known attributes.
static LogicalResult checkSchema(ImportContext &ctx, const onnx::NodeProto &node) {
  if (!node.domain().empty() && node.domain() != "ai.onnx")
    return success();
  if (ctx.opset > 17 && changedAfterOpset17(node.op_type()))
    return success(); // kiln's import rule checks these itself
  const onnx::OpSchema *schema =
      onnx::OpSchemaRegistry::Schema(node.op_type(), (int)std::min<int64_t>(ctx.opset, 17));
  if (!schema)
    return success(); // unknown or newer ops: the import table decides
  try {
    schema->Verify(node);
  } catch (const std::exception &e) {
    // libonnx's text ends with "==> Context: Bad node spec ..."; keep the reason.
    llvm::StringRef reason = llvm::StringRef(e.what()).split("\n\n==>").first.trim();
    return ctx.fail("does not match " + node.op_type() + "-" +
                    llvm::Twine(schema->since_version()) + ": " + reason);
  }
  return success();
}

FailureOr<std::vector<const onnx::NodeProto *>> sortedNodes(ImportContext &ctx,
                                                            const onnx::GraphProto &graph) {
  int n = graph.node_size();
  llvm::StringSet<> ownValues; // a subgraph may read the enclosing graph's values
  for (const auto &vi : graph.input())
    ownValues.insert(vi.name());
  forEachInitializerName(graph, [&](const std::string &name) { ownValues.insert(name); });
  llvm::StringMap<int> producer;
  auto locate = [&](int i) {
    ctx.node = &graph.node(i);
    ctx.loc = nodeLocation(ctx.b, graph.node(i));
  };
  for (int i = 0; i < n; ++i)
    for (const std::string &out : graph.node(i).output()) {
      if (out.empty())
        continue;
      locate(i);
      if (ownValues.contains(out))
        return ctx.fail("output '" + out + "' redefines a graph input or initializer");
      auto [it, fresh] = producer.insert({out, i});
      if (!fresh)
        return ctx.fail("output '" + out + "' is also produced by node '" +
                        graph.node(it->second).name() + "'");
    }
  std::vector<std::vector<int>> consumers(n), producers(n);
  std::vector<int> pending(n, 0);
  std::vector<std::string> reads;
  for (int i = 0; i < n; ++i) {
    const onnx::NodeProto &node = graph.node(i);
    locate(i);
    if (failed(checkSchema(ctx, node)))
      return failure();
    reads.assign(node.input().begin(), node.input().end());
    collectOuterReads(node, reads);
    for (const std::string &name : reads) {
      if (name.empty())
        continue;
      auto it = producer.find(name);
      if (it != producer.end()) {
        consumers[it->second].push_back(i);
        producers[i].push_back(it->second);
        ++pending[i];
      } else if (!ctx.values.count(name)) {
        return ctx.fail("input '" + name +
                        "' is not produced by any node, initializer or graph input");
      }
    }
  }
  // Kahn's algorithm, always taking the ready node listed first, so that a
  // sorted graph keeps its order.
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (int i = 0; i < n; ++i)
    if (!pending[i])
      ready.push(i);
  std::vector<const onnx::NodeProto *> order;
  while (!ready.empty()) {
    int i = ready.top();
    ready.pop();
    order.push_back(&graph.node(i));
    for (int c : consumers[i])
      if (--pending[c] == 0)
        ready.push(c);
  }
  if ((int)order.size() < n) {
    // Walk back from an unsorted node through unsorted producers: the
    // first node seen twice lies on a cycle.
    int at = (int)std::distance(pending.begin(), llvm::find_if(pending, [](int p) {
                                  return p > 0;
                                }));
    std::vector<bool> seen(n, false);
    while (!seen[at]) {
      seen[at] = true;
      at = *llvm::find_if(producers[at], [&](int p) { return pending[p] > 0; });
    }
    locate(at);
    return ctx.fail("the node depends on its own outputs (the graph has a cycle)");
  }
  return order;
}

} // namespace kiln::onnx_frontend
