//===- ImportControlFlow.cpp - ONNX If, Scan and Loop ----------------------===//
//
// If with a compile-time condition inlines the taken branch. With a run-time
// condition both branches are inlined (they have no side effects) and each
// output is selected with kiln.where, which needs matching branch types.
// Scan over a static sequence and Loop over a trip count known at compile
// time are unrolled.
//
//===----------------------------------------------------------------------===//
#include "frontend/onnx/ImportContext.h"
#include "frontend/onnx/ShapeOperands.h"

using namespace mlir;
namespace k = mlir::kiln;

namespace kiln::onnx_frontend {

namespace {

const onnx::GraphProto *branch(ImportContext &ctx, llvm::StringRef name) {
  for (const auto &a : ctx.node->attribute())
    if (a.name() == name && a.has_g())
      return &a.g();
  return nullptr;
}

/// Imports a branch; returns its outputs (materialized or host).
FailureOr<SmallVector<GraphValue>> importBranch(ImportContext &ctx, const onnx::GraphProto &g) {
  if (failed(importNodes(ctx, g)))
    return failure();
  SmallVector<GraphValue> outs;
  for (const auto &o : g.output()) {
    auto it = ctx.values.find(o.name());
    if (it == ctx.values.end())
      return ctx.fail("branch output '" + o.name() + "' is never produced");
    outs.push_back(it->second);
  }
  return outs;
}

/// A branch output as an SSA value (host constants are materialized).
FailureOr<Value> valueOf(ImportContext &ctx, const GraphValue &gv, StringRef name) {
  if (gv.value)
    return gv.value;
  return ctx.materialize(*gv.host, name);
}

LogicalResult importIf(ImportContext &ctx) {
  const onnx::GraphProto *thenG = branch(ctx, "then_branch"), *elseG = branch(ctx, "else_branch");
  if (!thenG || !elseG)
    return ctx.fail("If needs then_branch and else_branch");
  const onnx::NodeProto *node = ctx.node;
  if (const HostTensor *c = ctx.hostInput(0)) {
    bool taken = c->isFloat() ? c->floats.at(0) != 0 : c->ints.at(0) != 0;
    auto outs = importBranch(ctx, taken ? *thenG : *elseG);
    if (failed(outs))
      return failure();
    ctx.node = node;
    for (auto [i, v] : llvm::enumerate(*outs))
      if (i < (size_t)node->output_size() && !node->output(i).empty())
        ctx.values[node->output(i)] = v;
    return success();
  }
  auto cond = ctx.input(0);
  if (failed(cond))
    return failure();
  auto explain = [&] {
    llvm::errs() << "note: If '" << node->name()
                 << "' has a run-time condition, so both branches are compiled for the pinned "
                    "shapes; if the inputs deciding it are fixed in your use, bind them with "
                    "--input-value NAME=VALUE\n";
    return failure();
  };
  auto thenOuts = importBranch(ctx, *thenG);
  if (failed(thenOuts))
    return explain();
  ctx.node = node;
  auto elseOuts = importBranch(ctx, *elseG);
  if (failed(elseOuts))
    return explain();
  ctx.node = node;
  Emitter e{ctx};
  Value c = e.reshape(*cond, {});
  for (size_t i = 0; i < thenOuts->size() && i < (size_t)node->output_size(); ++i) {
    auto t = valueOf(ctx, (*thenOuts)[i], "then"), f = valueOf(ctx, (*elseOuts)[i], "else");
    if (failed(t) || failed(f))
      return failure();
    if (t->getType() != f->getType())
      return ctx.fail("If with a run-time condition needs branches with the same output types "
                      "(output " + llvm::Twine(i) + " differs)");
    ctx.setOutput(i, k::WhereOp::create(ctx.b, ctx.loc, t->getType(), c, *t, *f));
  }
  return success();
}

/// The per-iteration values `parts` stacked along a new leading axis.
Value stack(ImportContext &ctx, ArrayRef<Value> parts) {
  Emitter e{ctx};
  auto pt = cast<RankedTensorType>(parts[0].getType());
  SmallVector<int64_t> one(pt.getShape());
  one.insert(one.begin(), 1);
  SmallVector<Value> stacked;
  for (Value p : parts)
    stacked.push_back(e.reshape(p, one));
  if (stacked.size() == 1)
    return stacked[0];
  SmallVector<int64_t> all(one);
  all[0] = stacked.size();
  return k::ConcatOp::create(ctx.b, ctx.loc, RankedTensorType::get(all, pt.getElementType()),
                             stacked, 0);
}

/// Scan with a static sequence length is unrolled: the body is imported once
/// per step with its state and scan-input slices bound, and the per-step scan
/// outputs are stacked. Opset 8's leading batch axis is supported for batch 1.
LogicalResult importScan(ImportContext &ctx) {
  const onnx::GraphProto *body = branch(ctx, "body");
  if (!body)
    return ctx.fail("Scan needs a body");
  const onnx::NodeProto *node = ctx.node;
  bool v8 = ctx.opset < 9;
  size_t first = v8 ? 1 : 0; // opset 8: sequence_lens comes first
  if (v8 && ctx.hasInput(0))
    return ctx.fail("Scan sequence_lens is not supported");
  int64_t numScan = ctx.attrInt("num_scan_inputs", 0);
  int64_t numState = (int64_t)ctx.numInputs() - first - numScan;
  if (numScan < 1 || numState < 0 || body->input_size() != numState + numScan)
    return ctx.fail("Scan inputs do not match its body");
  for (const char *attr : {"scan_input_axes", "scan_output_axes", "scan_input_directions",
                           "scan_output_directions", "directions"})
    for (int64_t v : ctx.attrInts(attr))
      if (v != 0)
        return ctx.fail(llvm::Twine("Scan attribute '") + attr + "' other than 0 is not supported");
  Emitter e{ctx};
  // Drop opset 8's batch axis (batch 1 only).
  auto unbatch = [&](Value v) -> FailureOr<Value> {
    auto t = cast<RankedTensorType>(v.getType());
    if (!v8)
      return v;
    if (t.getRank() == 0 || t.getDimSize(0) != 1)
      return ctx.fail("opset-8 Scan is supported for batch 1 only");
    return e.reshape(v, t.getShape().drop_front());
  };
  SmallVector<Value> state, scans;
  for (int64_t i = 0; i < numState + numScan; ++i) {
    auto v = ctx.input(first + i);
    if (failed(v))
      return failure();
    auto u = unbatch(*v);
    if (failed(u))
      return failure();
    (i < numState ? state : scans).push_back(*u);
  }
  int64_t steps = cast<RankedTensorType>(scans[0].getType()).getDimSize(0);
  SmallVector<SmallVector<Value>> scanOutputs(body->output_size() - numState);
  for (int64_t t = 0; t < steps; ++t) {
    for (int64_t i = 0; i < numState; ++i)
      ctx.values[body->input(i).name()] = GraphValue{state[i], std::nullopt};
    for (int64_t j = 0; j < numScan; ++j) {
      auto st = cast<RankedTensorType>(scans[j].getType());
      SmallVector<int64_t> starts(st.getRank(), 0), steps1(st.getRank(), 1), size(st.getShape());
      starts[0] = t;
      size[0] = 1;
      Value slice = k::SliceOp::create(ctx.b, ctx.loc,
                                       RankedTensorType::get(size, st.getElementType()), scans[j],
                                       starts, steps1);
      ctx.values[body->input(numState + j).name()] =
          GraphValue{e.reshape(slice, st.getShape().drop_front()), std::nullopt};
    }
    auto outs = importBranch(ctx, *body);
    if (failed(outs))
      return failure();
    ctx.node = node;
    for (auto [i, gv] : llvm::enumerate(*outs)) {
      auto v = valueOf(ctx, gv, "scan");
      if (failed(v))
        return failure();
      if ((int64_t)i < numState)
        state[i] = *v;
      else
        scanOutputs[i - numState].push_back(*v);
    }
  }
  auto rebatch = [&](Value v) -> Value {
    if (!v8)
      return v;
    SmallVector<int64_t> shape(cast<RankedTensorType>(v.getType()).getShape());
    shape.insert(shape.begin(), 1);
    return e.reshape(v, shape);
  };
  for (int64_t i = 0; i < numState; ++i)
    ctx.setOutput(i, rebatch(state[i]));
  for (auto [i, parts] : llvm::enumerate(scanOutputs))
    ctx.setOutput(numState + i, rebatch(stack(ctx, parts)));
  return success();
}

/// The body of Loop, imported once per iteration: it sees the iteration
/// number as a constant, the condition and the carried values.
struct LoopState {
  GraphValue cond;
  SmallVector<GraphValue> carried;
  SmallVector<SmallVector<Value>> scans;
};

/// Whether a host condition is true; nullopt for a run-time one.
std::optional<bool> knownCondition(const GraphValue &cond) {
  if (!cond.host)
    return std::nullopt;
  const HostTensor &t = *cond.host;
  return t.isFloat() ? t.floats.at(0) != 0 : t.ints.at(0) != 0;
}

/// Loop is unrolled over a trip count known at compile time: a constant M,
/// or the length the model declares for its first scan output (a run-time M
/// is then checked against it). A run-time condition is checked to hold for
/// every iteration the unrolled code runs; a constant false one ends the
/// loop early.
LogicalResult importLoop(ImportContext &ctx) {
  const onnx::GraphProto *body = branch(ctx, "body");
  if (!body)
    return ctx.fail("Loop needs a body");
  const onnx::NodeProto *node = ctx.node;
  int64_t numCarried = (int64_t)ctx.numInputs() - 2;
  int64_t numScans = body->output_size() - 1 - numCarried;
  if (numCarried < 0 || body->input_size() != numCarried + 2 || numScans < 0)
    return ctx.fail("Loop inputs do not match its body");
  const HostTensor *m = ctx.hostInput(0);
  std::optional<std::vector<int64_t>> scanShape =
      numScans ? declaredShape(ctx, numCarried) : std::nullopt;
  int64_t trips;
  std::string source;
  if (m) {
    trips = m->ints.at(0);
    source = "the trip count M";
  } else if (scanShape && !scanShape->empty()) {
    trips = (*scanShape)[0];
    source = "the trip count the declared shape of scan output '" +
             node->output(numCarried) + "' implies";
  } else {
    return ctx.fail("Loop needs a trip count known at compile time: a constant M, or a "
                    "declared static shape for its first scan output (run-time trip counts "
                    "need dynamic shapes, which are not supported yet)");
  }
  Emitter e{ctx};
  auto condTrue = [&](Value c) -> Value {
    auto t = cast<RankedTensorType>(c.getType());
    return t.getElementType().isInteger(1) ? c : e.castTo(c, ctx.b.getI1Type());
  };
  if (ctx.hasInput(0) && !m) {
    auto count = ctx.input(0);
    if (failed(count))
      return failure();
    HostTensor expected;
    expected.dtype = onnx::TensorProto::INT64;
    expected.ints = {trips};
    auto eq = e.binary<k::EqualOp>(*count, *ctx.materialize(expected, "trips"),
                                   ctx.b.getI1Type());
    if (failed(eq))
      return failure();
    assertAtRunTime(ctx, *eq, "input 'M' must be " + llvm::Twine(trips) + ", " + source);
  }

  LoopState state;
  HostTensor alwaysTrue;
  alwaysTrue.dtype = onnx::TensorProto::BOOL;
  alwaysTrue.ints = {1};
  state.cond = ctx.hasInput(1) ? ctx.values[node->input(1)] : GraphValue{Value(), alwaysTrue};
  for (int64_t i = 0; i < numCarried; ++i)
    state.carried.push_back(ctx.values[node->input(2 + i)]);
  state.scans.resize(numScans);
  int64_t ran = 0;
  for (; ran < trips; ++ran) {
    std::optional<bool> known = knownCondition(state.cond);
    if (known == false)
      break;
    if (!known)
      assertAtRunTime(ctx, condTrue(state.cond.value),
                      "the loop condition must hold for all " + llvm::Twine(trips) +
                          " iterations, " + source);
    HostTensor iteration;
    iteration.dtype = onnx::TensorProto::INT64;
    iteration.ints = {ran};
    ctx.values[body->input(0).name()] = GraphValue{Value(), iteration};
    ctx.values[body->input(1).name()] = state.cond;
    for (int64_t i = 0; i < numCarried; ++i)
      ctx.values[body->input(2 + i).name()] = state.carried[i];
    auto outs = importBranch(ctx, *body);
    ctx.node = node;
    if (failed(outs))
      return failure();
    state.cond = (*outs)[0];
    for (int64_t i = 0; i < numCarried; ++i)
      state.carried[i] = (*outs)[1 + i];
    for (int64_t j = 0; j < numScans; ++j) {
      auto v = valueOf(ctx, (*outs)[1 + numCarried + j], "scan");
      if (failed(v))
        return failure();
      state.scans[j].push_back(*v);
    }
  }
  if (numScans && ran != (scanShape ? (*scanShape)[0] : ran))
    return ctx.fail("the loop stops after " + llvm::Twine(ran) +
                    " iterations but its first scan output is declared with " +
                    llvm::Twine((*scanShape)[0]));
  if (numScans && ran == 0)
    return ctx.fail("a Loop that runs no iteration has empty scan outputs, which are not "
                    "supported");
  if (!ctx.hasInput(0)) { // only the condition ends the loop
    std::optional<bool> known = knownCondition(state.cond);
    if (known == true)
      return ctx.fail("the loop condition is still true after " + llvm::Twine(ran) +
                      " iterations, " + source);
    if (!known)
      assertAtRunTime(ctx, e.unary<k::NotOp>(condTrue(state.cond.value)),
                      "the loop condition must turn false after " + llvm::Twine(trips) +
                          " iterations, " + source);
  }
  for (int64_t i = 0; i < numCarried; ++i)
    if (i < node->output_size() && !node->output(i).empty())
      ctx.values[node->output(i)] = state.carried[i];
  for (int64_t j = 0; j < numScans; ++j)
    ctx.setOutput(numCarried + j, stack(ctx, state.scans[j]));
  return success();
}

} // namespace

void registerControlFlowOps(ImportTable &t) {
  t["If"] = importIf;
  t["Scan"] = importScan;
  t["Loop"] = importLoop;
}

} // namespace kiln::onnx_frontend
