//===- PruneChannels.cpp - structured pruning of whole channels -----------===//
//
// Removes the least important output channels of convolutions, gemms and
// matmuls, together with what reads them downstream, so that the model
// itself gets smaller and its dense kernels faster.
//
// Channels are followed through the graph one by one: every channel of
// every value is a node of a union-find. Ops that pass channels through
// (elementwise ops, pooling, depthwise convolutions, concatenation along
// channels, [N, C, 1, 1] <-> [N, C] reshapes) give their result the nodes
// of their inputs; an elementwise op of two activations (a residual add)
// unites the channels of both. A set of united channels goes as one: from
// every layer that produces it and every layer that reads it. Channels
// that reach anything else (a model output, an op that mixes channels, a
// grouped convolution) are frozen, with the reason.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "dialects/kiln/KilnDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNPRUNECHANNELS
#include "passes/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using namespace mlir::kiln;

namespace {

/// The axis of a value that holds its channels: 1 of NCHW and of [N, C].
std::optional<int64_t> channelAxis(Value v) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  if (!type || (type.getRank() != 4 && type.getRank() != 2) || type.isDynamicDim(1))
    return std::nullopt;
  return 1;
}

/// The f32 values of a constant operand of static shape, or nullopt.
std::optional<std::vector<float>> constantValues(Value v) {
  auto constant = v.getDefiningOp<ConstantOp>();
  auto type = dyn_cast<RankedTensorType>(v.getType());
  if (!constant || !type || !type.hasStaticShape() || !type.getElementType().isF32())
    return std::nullopt;
  return f32Elements(constant.getValue());
}

/// The elements of row-major `values` of `shape` whose index along `axis`
/// is in `kept`.
std::vector<float> gather(const std::vector<float> &values, ArrayRef<int64_t> shape,
                          int64_t axis, ArrayRef<int64_t> kept) {
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d)
    outer *= shape[d];
  for (int64_t d = axis + 1; d < static_cast<int64_t>(shape.size()); ++d)
    inner *= shape[d];
  std::vector<float> out;
  out.reserve(outer * kept.size() * inner);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t k : kept) {
      const float *from = &values[(o * shape[axis] + k) * inner];
      out.insert(out.end(), from, from + inner);
    }
  return out;
}

/// `type` with dimension `axis` of size `size`.
RankedTensorType withDim(Type type, int64_t axis, int64_t size) {
  auto t = cast<RankedTensorType>(type);
  SmallVector<int64_t> shape(t.getShape());
  shape[axis] = size;
  return t.clone(shape);
}

/// Replaces operand `index` of `op` (a constant) by its elements at `kept`
/// along `axis`.
void sliceConstantOperand(Operation *op, unsigned index, int64_t axis, ArrayRef<int64_t> kept) {
  Value old = op->getOperand(index);
  auto type = cast<RankedTensorType>(old.getType());
  if (type.getDimSize(axis) == static_cast<int64_t>(kept.size()))
    return;
  std::vector<float> values = gather(*constantValues(old), type.getShape(), axis, kept);
  OpBuilder b(op);
  op->setOperand(index, blobConstant(b, old.getLoc(), withDim(type, axis, kept.size()),
                                     ArrayRef(values), "pruned_channels"));
  if (Operation *def = old.getDefiningOp(); def && def->use_empty())
    def->erase();
}

/// A weight operand sliced along one axis when channels go.
struct WeightSlice {
  Operation *op;
  unsigned operand;
  int64_t axis;
  Value channels; // whose kept channels select the slice
};

class ChannelPruner {
public:
  ChannelPruner(double fraction, ArrayRef<std::string> skip, bool pruneFirstLast, bool report)
      : fraction(fraction), skip(skip), pruneFirstLast(pruneFirstLast), report(report) {}

  void run(func::FuncOp func);

private:
  // Union-find over channels, each with the reason it is frozen ("" if not).
  int fresh(StringRef frozenBecause = "") {
    parent.push_back(parent.size());
    frozen.push_back(frozenBecause.str());
    return parent.size() - 1;
  }
  int find(int x) {
    while (parent[x] != x)
      x = parent[x] = parent[parent[x]];
    return x;
  }
  void unite(int a, int b) {
    a = find(a), b = find(b);
    if (a == b)
      return;
    parent[b] = a;
    if (frozen[a].empty())
      frozen[a] = frozen[b];
  }
  void freeze(Value v, StringRef because) {
    for (int n : channelsOf(v))
      if (frozen[find(n)].empty())
        frozen[find(n)] = because.str();
  }

  /// The channel nodes of `v`: new frozen ones for a value whose producer
  /// the pass does not follow; none for a value without channels. (Valid
  /// until the next call: it may add to `channels`.)
  ArrayRef<int> channelsOf(Value v) {
    auto it = channels.find(v);
    if (it != channels.end())
      return it->second;
    SmallVector<int> &nodes = channels[v];
    if (std::optional<int64_t> axis = channelAxis(v)) {
      std::string why = isa<BlockArgument>(v) ? "they come from a model input"
                                              : "they come from an op that mixes channels";
      for (int64_t c = 0; c < cast<RankedTensorType>(v.getType()).getDimSize(*axis); ++c)
        nodes.push_back(fresh(why));
    }
    return nodes;
  }
  void passThrough(Value from, Value to) {
    SmallVector<int> nodes(channelsOf(from));
    channels[to] = nodes;
  }

  void visit(Operation *op, size_t layerIndex, size_t layerCount);
  bool visitLayer(Operation *op, size_t layerIndex, size_t layerCount);
  bool visitDepthwise(ConvOp conv);
  bool visitElementwise(Operation *op);
  bool visitReshape(ReshapeOp reshape);
  void addProducer(Operation *op, Value result, unsigned weights, int64_t outputAxis,
                   StringRef frozenBecause);
  void decide();
  void rewrite();
  SmallVector<int64_t> keptChannels(Value v);

  double fraction;
  ArrayRef<std::string> skip;
  bool pruneFirstLast, report;

  SmallVector<int> parent;
  SmallVector<std::string> frozen;
  llvm::DenseMap<Value, SmallVector<int>> channels;
  struct Producer {
    Operation *op;
    Value result;
  };
  std::vector<Producer> producers;
  std::map<int, double> importance; // per root, summed over its producers
  std::vector<WeightSlice> slices;
  SmallVector<ConvOp> depthwise;
  llvm::DenseSet<int> pruned; // roots
};

void ChannelPruner::addProducer(Operation *op, Value result, unsigned weights,
                                int64_t outputAxis, StringRef frozenBecause) {
  auto type = cast<RankedTensorType>(op->getOperand(weights).getType());
  std::vector<float> w = *constantValues(op->getOperand(weights));
  int64_t outputs = type.getDimSize(outputAxis);
  SmallVector<int> &nodes = channels[result];
  for (int64_t c = 0; c < outputs; ++c) {
    int node = fresh(frozenBecause);
    nodes.push_back(node);
    // The channel's importance: the L2 norm of the weights that make it.
    std::vector<float> row = gather(w, type.getShape(), outputAxis, {c});
    double sum = 0;
    for (float x : row)
      sum += double(x) * x;
    importance[node] = std::sqrt(sum);
  }
  producers.push_back({op, result});
  slices.push_back({op, weights, outputAxis, result});
}

/// A conv (no groups), gemm or matmul with constant weights: its input's
/// channels are read by its weights, its output's are new.
bool ChannelPruner::visitLayer(Operation *op, size_t layerIndex, size_t layerCount) {
  unsigned weights = 1;
  int64_t inputAxis, outputAxis;
  Value bias;
  if (auto conv = dyn_cast<ConvOp>(op)) {
    if (conv.getGroup() != 1 || conv.getChannelsLast())
      return false;
    inputAxis = 1, outputAxis = 0, bias = conv.getBias();
  } else if (auto gemm = dyn_cast<GemmOp>(op)) {
    if (gemm.getTransA())
      return false;
    inputAxis = gemm.getTransB() ? 1 : 0, outputAxis = gemm.getTransB() ? 0 : 1;
    bias = gemm.getC();
    if (bias && !(cast<RankedTensorType>(bias.getType()).getRank() == 1 ||
                  cast<RankedTensorType>(bias.getType()).getDimSize(0) == 1))
      return false;
  } else if (isa<MatMulOp>(op)) {
    inputAxis = 0, outputAxis = 1;
  } else {
    return false;
  }
  Value x = op->getOperand(0), w = op->getOperand(weights);
  int64_t rank = isa<ConvOp>(op) ? 4 : 2; // a gemm's or matmul's channels are its K
  if (cast<RankedTensorType>(x.getType()).getRank() != rank ||
      cast<RankedTensorType>(w.getType()).getRank() != rank || !channelAxis(x) ||
      !channelAxis(op->getResult(0)) || !constantValues(w) || (bias && !constantValues(bias)))
    return false;

  std::string why;
  if (!pruneFirstLast && (layerIndex == 0 || layerIndex + 1 == layerCount))
    why = std::string("they come from the ") + (layerIndex == 0 ? "first" : "last") +
          " layer (--prune-first-last prunes it too)";
  if (auto node = onnxNodeOf(op->getLoc()); node && llvm::is_contained(skip, node->name.str()))
    why = "they come from a layer named in --prune-skip";
  (void)channelsOf(x); // its nodes exist before the producer's
  slices.push_back({op, weights, inputAxis, x});
  addProducer(op, op->getResult(0), weights, outputAxis, why);
  if (bias)
    slices.push_back({op, 2, cast<RankedTensorType>(bias.getType()).getRank() - 1,
                      op->getResult(0)});
  return true;
}

/// A depthwise convolution (one filter per channel) passes channels through.
bool ChannelPruner::visitDepthwise(ConvOp conv) {
  auto filter = cast<RankedTensorType>(conv.getFilter().getType());
  int64_t channels = cast<RankedTensorType>(conv.getInput().getType()).getDimSize(1);
  if (conv.getChannelsLast() || static_cast<int64_t>(conv.getGroup()) != channels ||
      filter.getDimSize(0) != channels || !constantValues(conv.getFilter()) ||
      (conv.getBias() && !constantValues(conv.getBias())))
    return false;
  passThrough(conv.getInput(), conv.getResult());
  slices.push_back({conv, 1, 0, conv.getResult()});
  if (conv.getBias())
    slices.push_back({conv, 2, 0, conv.getResult()});
  depthwise.push_back(conv);
  return true;
}

/// An elementwise op: operands of the result's shape share its channels;
/// constants broadcast along them are sliced with them.
bool ChannelPruner::visitElementwise(Operation *op) {
  Value result = op->getResult(0);
  std::optional<int64_t> axis = channelAxis(result);
  if (!axis)
    return false;
  int64_t rank = cast<RankedTensorType>(result.getType()).getRank();
  SmallVector<Value> activations;
  SmallVector<std::pair<unsigned, int64_t>> constants;
  for (auto [i, operand] : llvm::enumerate(op->getOperands())) {
    auto type = cast<RankedTensorType>(operand.getType());
    int64_t aligned = *axis - (rank - type.getRank());
    if (constantValues(operand)) {
      if (aligned >= 0 && type.getDimSize(aligned) != 1)
        constants.push_back({i, aligned});
      continue; // otherwise the same for every channel
    }
    if (type.getShape() != cast<RankedTensorType>(result.getType()).getShape())
      return false; // an activation broadcast against the result
    activations.push_back(operand);
  }
  if (activations.empty())
    return false;
  passThrough(activations.front(), result);
  for (Value other : llvm::drop_begin(activations)) {
    // Copies: channelsOf may add to the map, which moves what it holds.
    SmallVector<int> a(channelsOf(activations.front())), b(channelsOf(other));
    for (auto [x, y] : llvm::zip(a, b))
      unite(x, y);
  }
  for (auto [i, aligned] : constants)
    slices.push_back({op, i, aligned, result});
  return true;
}

/// [N, C, 1, 1] <-> [N, C] keeps the channels.
bool ChannelPruner::visitReshape(ReshapeOp reshape) {
  auto in = cast<RankedTensorType>(reshape.getInput().getType());
  auto out = cast<RankedTensorType>(reshape.getType());
  auto isPlain = [](RankedTensorType t) {
    return t.hasStaticShape() && (t.getRank() == 2 || (t.getRank() == 4 && t.getDimSize(2) == 1 &&
                                                       t.getDimSize(3) == 1));
  };
  if (reshape.getShape() || !isPlain(in) || !isPlain(out) ||
      in.getDimSize(0) != out.getDimSize(0) || in.getDimSize(1) != out.getDimSize(1))
    return false;
  passThrough(reshape.getInput(), reshape.getResult());
  return true;
}

void ChannelPruner::visit(Operation *op, size_t layerIndex, size_t layerCount) {
  if (isa<ConstantOp>(op))
    return;
  bool followed = false;
  if (isa<ConvOp, GemmOp, MatMulOp>(op))
    followed = visitLayer(op, layerIndex, layerCount) ||
               (isa<ConvOp>(op) && visitDepthwise(cast<ConvOp>(op)));
  else if (isa<ReluOp, SigmoidOp, TanhOp, ExpOp, ErfOp, SqrtOp, NegOp, AbsOp, ClipOp, MaxPoolOp,
               AveragePoolOp, GlobalAveragePoolOp>(op) &&
           channelAxis(op->getOperand(0)) && channelAxis(op->getResult(0))) {
    passThrough(op->getOperand(0), op->getResult(0));
    followed = true;
  }
  else if (isa<AddOp, SubOp, MulOp, DivOp, MaxOp, MinOp>(op))
    followed = visitElementwise(op);
  else if (auto concat = dyn_cast<ConcatOp>(op); concat && concat.getAxis() == 1 &&
                                                 channelAxis(concat.getResult())) {
    SmallVector<int> nodes;
    for (Value input : concat.getInputs())
      llvm::append_range(nodes, channelsOf(input));
    channels[concat.getResult()] = nodes;
    followed = true;
  } else if (auto reshape = dyn_cast<ReshapeOp>(op))
    followed = visitReshape(reshape);
  if (followed)
    return;
  std::string why = isa<func::ReturnOp>(op)
                        ? "they reach a model output"
                        : ("they reach " + op->getName().getStringRef() + ", which may mix them")
                              .str();
  for (Value operand : op->getOperands())
    freeze(operand, why);
}

/// Per cluster of producers whose channels are united (a residual stream,
/// or one layer alone): the `fraction` of its free channels with the
/// smallest importance go.
void ChannelPruner::decide() {
  std::map<int, double> weight; // per root
  for (auto &[node, value] : importance)
    weight[find(node)] += value;
  // Clusters: the roots of producers that share a root.
  std::vector<int> cluster(producers.size());
  std::iota(cluster.begin(), cluster.end(), 0);
  auto top = [&](int p) {
    while (cluster[p] != p)
      p = cluster[p] = cluster[cluster[p]];
    return p;
  };
  std::map<int, int> producerOfRoot;
  for (auto [p, producer] : llvm::enumerate(producers))
    for (int node : channels[producer.result]) {
      auto [it, inserted] = producerOfRoot.try_emplace(find(node), p);
      if (!inserted)
        cluster[top(p)] = top(it->second);
    }
  std::map<int, std::vector<int>> rootsOfCluster;
  for (auto &[root, p] : producerOfRoot)
    if (frozen[root].empty())
      rootsOfCluster[top(p)].push_back(root);
  for (auto &[c, roots] : rootsOfCluster) {
    std::stable_sort(roots.begin(), roots.end(),
                     [&](int a, int b) { return weight[a] < weight[b]; });
    for (size_t i = 0; i < static_cast<size_t>(fraction * roots.size()); ++i)
      pruned.insert(roots[i]);
  }
}

SmallVector<int64_t> ChannelPruner::keptChannels(Value v) {
  SmallVector<int64_t> kept;
  for (auto [c, node] : llvm::enumerate(channels[v]))
    if (!pruned.contains(find(node)))
      kept.push_back(c);
  return kept;
}

void ChannelPruner::rewrite() {
  for (const WeightSlice &s : slices)
    sliceConstantOperand(s.op, s.operand, s.axis, keptChannels(s.channels));
  for (ConvOp conv : depthwise)
    conv.setGroup(keptChannels(conv.getResult()).size());
  for (auto &[value, nodes] : channels) {
    SmallVector<int64_t> kept = keptChannels(value);
    if (kept.size() != nodes.size() && !isa<BlockArgument>(value))
      value.setType(withDim(value.getType(), *channelAxis(value), kept.size()));
  }
}

void ChannelPruner::run(func::FuncOp func) {
  Block &body = func.getBody().front();
  auto isLayer = [](Operation &op) { return isa<ConvOp, GemmOp, MatMulOp>(op); };
  size_t layers = llvm::count_if(body, isLayer), layer = 0;
  for (BlockArgument arg : func.getArguments())
    (void)channelsOf(arg); // frozen: a model input
  for (Operation &op : body) {
    size_t index = isLayer(op) ? layer++ : layers;
    visit(&op, index, layers);
    // What a region uses is beyond the pass (If and Loop bodies).
    op.walk([&](Operation *nested) {
      if (nested != &op)
        for (Value operand : nested->getOperands())
          freeze(operand, "they are used inside " + op.getName().getStringRef().str());
    });
  }
  decide();
  if (report)
    for (const Producer &p : producers) {
      ArrayRef<int> nodes = channels[p.result];
      size_t kept = keptChannels(p.result).size();
      std::string why = nodes.empty() ? "" : frozen[find(nodes.front())];
      InFlightDiagnostic remark = emitRemark(p.op->getLoc());
      if (kept < nodes.size())
        remark << llvm::formatv("sparsity: {0} -> {1} output channels (channel pruning)",
                                nodes.size(), kept);
      else
        remark << "sparsity: all " << nodes.size() << " output channels kept"
               << (why.empty() ? "" : ": " + why);
    }
  rewrite();
}

struct KilnPruneChannelsPass
    : mlir::kiln::impl::KilnPruneChannelsBase<KilnPruneChannelsPass> {
  using KilnPruneChannelsBase::KilnPruneChannelsBase;

  void runOnOperation() override {
    if (!(fraction >= 0.0 && fraction < 1.0)) {
      getOperation().emitError("kiln-prune-channels: fraction ")
          << fraction << " is not in [0, 1)";
      return signalPassFailure();
    }
    SmallVector<std::string> names(skip.begin(), skip.end());
    getOperation().walk([&](func::FuncOp func) {
      ChannelPruner(fraction, names, pruneFirstLast, report).run(func);
    });
    if (failed(verify(getOperation())))
      return signalPassFailure();
  }
};

} // namespace
