//===- ImportControlFlow.cpp - ONNX If, Scan and Loop ----------------------===//
//
// If with a compile-time condition inlines the taken branch. With a run-time
// condition it becomes scf.if (see importRuntimeIf): the branches are its
// regions when their outputs merge, else each region holds its branch and a
// copy of the rest of the enclosing region.
// Scan over a static sequence and Loop over a trip count known at compile
// time are unrolled.
//
//===----------------------------------------------------------------------===//
#include "frontend/onnx/ImportContext.h"
#include "frontend/onnx/ShapeOperands.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Diagnostics.h"

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

/// Imports a Scan or Loop body; returns its outputs (materialized or host).
/// The rest of the model cannot be copied into an unrolled body, so a
/// run-time If inside must merge its branches.
FailureOr<SmallVector<GraphValue>> importBody(ImportContext &ctx, const onnx::GraphProto &g) {
  auto outer = std::exchange(ctx.rest, nullptr);
  LogicalResult imported = importNodes(ctx, g);
  ctx.rest = outer;
  if (failed(imported))
    return failure();
  SmallVector<GraphValue> outs;
  for (const auto &o : g.output()) {
    auto it = ctx.values.find(o.name());
    if (it == ctx.values.end())
      return ctx.fail("body output '" + o.name() + "' is never produced");
    outs.push_back(it->second);
  }
  return outs;
}

/// A body output as an SSA value (host constants are materialized).
FailureOr<Value> valueOf(ImportContext &ctx, const GraphValue &gv, StringRef name) {
  if (gv.value)
    return gv.value;
  return ctx.materialize(*gv.host, name);
}

std::vector<std::string> outputNames(const onnx::GraphProto &g) {
  std::vector<std::string> names;
  for (const auto &o : g.output())
    names.push_back(o.name());
  return names;
}

/// Imports `branch` of If `node` in place, as if its nodes stood in the
/// enclosing graph, and binds the If's outputs to the branch's. When a node
/// of the branch imports the rest of the region (ctx.regionResults), the
/// binding happens inside that rest.
LogicalResult importInline(ImportContext &ctx, const onnx::NodeProto *node,
                           const onnx::GraphProto &branch) {
  auto bind = [&ctx, node, &branch]() -> LogicalResult {
    for (auto [i, o] : llvm::enumerate(branch.output())) {
      auto it = ctx.values.find(o.name());
      if (it == ctx.values.end())
        return mlir::emitError(nodeLocation(ctx.b, *node))
               << "branch output '" << o.name() << "' is never produced";
      if (i < (size_t)node->output_size() && !node->output(i).empty())
        ctx.values[node->output(i)] = it->second;
    }
    return success();
  };
  auto parent = ctx.rest;
  if (parent)
    ctx.rest = [bind, parent]() -> FailureOr<SmallVector<Value>> {
      if (failed(bind()))
        return failure();
      return parent();
    };
  LogicalResult imported = importNodes(ctx, branch);
  ctx.rest = parent;
  ctx.node = node;
  if (failed(imported) || ctx.regionResults)
    return imported;
  return bind();
}

/// One arm of a run-time If, imported into a block of its own: the values it
/// yields, or why it cannot be compiled.
struct Arm {
  std::unique_ptr<Block> block = std::make_unique<Block>();
  SmallVector<Value> results;
  std::string error; // empty when the arm compiled
  /// Warnings from inside the arm, reported only if the arm is kept.
  SmallVector<std::pair<Location, std::string>> warnings;
};

/// "node 'NAME' (Op): message" for an error the importer emitted at a node.
std::string describe(Diagnostic &d) {
  std::string text;
  llvm::raw_string_ostream os(text);
  if (auto name = dyn_cast<NameLoc>(d.getLocation())) {
    os << "node '" << name.getName().getValue() << "'";
    if (auto op = dyn_cast<NameLoc>(name.getChildLoc()))
      os << " (" << op.getName().getValue() << ")";
    os << ": ";
  }
  os << d.str();
  return text;
}

/// Imports an arm with `build`. Its errors are captured rather than reported:
/// a branch that cannot be compiled may be one the model never takes for
/// the inputs it is given. The names the arm defines go out of scope after
/// it, and so do the SSA values it materialized for host constants.
Arm importArm(ImportContext &ctx, function_ref<FailureOr<SmallVector<Value>>()> build) {
  Arm arm;
  llvm::DenseMap<const void *, Value> before;
  for (const auto &entry : ctx.values)
    before[&entry] = entry.second.value;
  {
    OpBuilder::InsertionGuard guard(ctx.b);
    ctx.b.setInsertionPointToEnd(arm.block.get());
    ScopedDiagnosticHandler capture(ctx.b.getContext(), [&](Diagnostic &d) {
      if (d.getSeverity() == DiagnosticSeverity::Warning)
        arm.warnings.push_back({d.getLocation(), d.str()});
      if (d.getSeverity() != DiagnosticSeverity::Error)
        return success();
      if (arm.error.empty())
        arm.error = describe(d);
      return success();
    });
    auto results = build();
    if (succeeded(results))
      arm.results = *results;
    else if (arm.error.empty())
      arm.error = "it cannot be compiled";
  }
  SmallVector<StringRef> defined;
  for (auto &entry : ctx.values) {
    auto it = before.find(&entry);
    if (it == before.end())
      defined.push_back(entry.getKey());
    else
      entry.second.value = it->second;
  }
  for (StringRef name : defined)
    ctx.values.erase(name);
  return arm;
}

/// The type both `a` and `b` can be cast to: same element type and rank,
/// with the dimensions that differ made dynamic.
std::optional<RankedTensorType> joinTypes(Type a, Type b) {
  auto ta = cast<RankedTensorType>(a), tb = cast<RankedTensorType>(b);
  if (ta.getElementType() != tb.getElementType() || ta.getRank() != tb.getRank())
    return std::nullopt;
  SmallVector<int64_t> shape;
  for (auto [x, y] : llvm::zip(ta.getShape(), tb.getShape()))
    shape.push_back(x == y ? x : ShapedType::kDynamic);
  return RankedTensorType::get(shape, ta.getElementType());
}

/// The result types of an If with these arms; nullopt when the arms'
/// results cannot merge (or neither arm compiled).
std::optional<SmallVector<Type>> joinArms(const Arm &a, const Arm &b) {
  if (!a.error.empty() && !b.error.empty())
    return std::nullopt;
  if (!a.error.empty() || !b.error.empty())
    return SmallVector<Type>(TypeRange(ValueRange(a.error.empty() ? a.results : b.results)));
  if (a.results.size() != b.results.size())
    return std::nullopt;
  SmallVector<Type> types;
  for (auto [x, y] : llvm::zip(a.results, b.results)) {
    auto t = joinTypes(x.getType(), y.getType());
    if (!t)
      return std::nullopt;
    types.push_back(*t);
  }
  return types;
}

/// The first result on which two compiled arms disagree, in words.
std::string mismatch(const Arm &a, const Arm &b) {
  std::string text;
  llvm::raw_string_ostream os(text);
  for (auto [i, x, y] : llvm::enumerate(a.results, b.results))
    if (!joinTypes(x.getType(), y.getType())) {
      os << "output " << i << " is " << x.getType() << " after the then branch and "
         << y.getType() << " after the else branch";
      break;
    }
  return text;
}

/// Ends an arm's block with scf.yield of its results cast to `types`. An
/// arm that did not compile is emptied and instead stops the run with its
/// error, yielding empty placeholders.
void terminateArm(ImportContext &ctx, Arm &arm, TypeRange types, const Twine &taken) {
  OpBuilder::InsertionGuard guard(ctx.b);
  Block *block = arm.block.get();
  ctx.b.setInsertionPointToEnd(block);
  SmallVector<Value> yields;
  if (arm.error.empty()) {
    for (auto [v, t] : llvm::zip(arm.results, types))
      yields.push_back(v.getType() == t ? v : tensor::CastOp::create(ctx.b, ctx.loc, t, v));
  } else {
    while (!block->empty()) {
      block->back().dropAllUses();
      block->back().erase();
    }
    auto flag = RankedTensorType::get({}, ctx.b.getI1Type());
    Value no = k::ConstantOp::create(ctx.b, ctx.loc, flag, DenseElementsAttr::get(flag, false));
    assertAtRunTime(ctx, no, "the model cannot run when it takes its " + taken + " branch: " +
                                 arm.error);
    for (Type t : types) {
      auto rt = cast<RankedTensorType>(t);
      SmallVector<int64_t> empty(rt.getShape());
      for (int64_t &d : empty)
        if (ShapedType::isDynamic(d))
          d = 0;
      auto zeros = RankedTensorType::get(empty, rt.getElementType());
      Value v = k::ConstantOp::create(
          ctx.b, ctx.loc, zeros,
          DenseElementsAttr::get(zeros, ctx.b.getZeroAttr(rt.getElementType())));
      yields.push_back(zeros == rt ? v : tensor::CastOp::create(ctx.b, ctx.loc, rt, v));
    }
  }
  scf::YieldOp::create(ctx.b, ctx.loc, yields);
}

/// scf.if on `cond` with the two arms as its regions; reports the warnings
/// of the arms that compiled.
scf::IfOp buildIf(ImportContext &ctx, Value cond, Arm &thenArm, Arm &elseArm,
                  ArrayRef<Type> types) {
  for (Arm *arm : {&thenArm, &elseArm})
    if (arm->error.empty())
      for (auto &[loc, message] : arm->warnings)
        mlir::emitWarning(loc) << message;
  terminateArm(ctx, thenArm, types, "then");
  terminateArm(ctx, elseArm, types, "else");
  Value flag = tensor::ExtractOp::create(ctx.b, ctx.loc, Emitter{ctx}.reshape(cond, {}));
  auto op = scf::IfOp::create(ctx.b, ctx.loc, types, flag, /*addThenBlock=*/false,
                              /*addElseBlock=*/false);
  op.getThenRegion().push_back(thenArm.block.release());
  op.getElseRegion().push_back(elseArm.block.release());
  return op;
}

/// Warns that one arm of If `node` cannot be compiled; a run that takes it
/// stops with the arm's error.
void warnUncompiledArm(ImportContext &ctx, const Arm &thenArm, const Arm &elseArm) {
  const Arm &bad = thenArm.error.empty() ? elseArm : thenArm;
  if (bad.error.empty())
    return;
  mlir::emitWarning(ctx.loc) << "the " << (&bad == &thenArm ? "then" : "else")
                             << " branch cannot be compiled (" << bad.error
                             << "); a run that takes it stops with this error";
}

/// If with a run-time condition becomes scf.if. When both branches' outputs
/// have matching ranks and element types, the branches are its regions and
/// differing sizes become dynamic. Otherwise (Squeeze in one branch and
/// Identity in the other, as exported `x.squeeze(d)` reads) each region gets
/// its branch followed by a copy of the rest of the enclosing region, in
/// which the branch's shapes are known, and the If yields what the region
/// yields. A branch that cannot be compiled (it is invalid for the shapes
/// that reach it, like Silero's decoder on inputs of the wrong length) stops
/// the run with the reason when it is taken, as onnxruntime does.
LogicalResult importRuntimeIf(ImportContext &ctx, const onnx::GraphProto &thenG,
                              const onnx::GraphProto &elseG) {
  const onnx::NodeProto *node = ctx.node;
  Location loc = ctx.loc;
  auto cond = ctx.input(0);
  if (failed(cond))
    return failure();
  auto branchOutputs = [&](const onnx::GraphProto &g) {
    return [&ctx, &g, node] {
      return importRegion(
          ctx, [&] { return importNodes(ctx, g); },
          [&ctx, &g, node] {
            return valuesNamed(ctx, outputNames(g), nodeLocation(ctx.b, *node), "branch output");
          });
    };
  };
  Arm thenArm = importArm(ctx, branchOutputs(thenG));
  Arm elseArm = importArm(ctx, branchOutputs(elseG));
  ctx.node = node;
  ctx.loc = loc;
  bool bothCompiled = thenArm.error.empty() && elseArm.error.empty();
  auto types = joinArms(thenArm, elseArm);
  if (types && (bothCompiled || !ctx.rest)) {
    warnUncompiledArm(ctx, thenArm, elseArm);
    auto op = buildIf(ctx, *cond, thenArm, elseArm, *types);
    for (auto [i, r] : llvm::enumerate(op.getResults()))
      if (i < (size_t)node->output_size())
        ctx.setOutput(i, r);
    return success();
  }
  if (!ctx.rest) {
    if (!types && bothCompiled)
      return ctx.fail("If with a run-time condition inside a Scan or Loop body needs branches "
                      "whose outputs have the same ranks and element types");
    return ctx.fail("neither branch of If can be compiled; the then branch: " + thenArm.error);
  }
  constexpr int maxDepth = 8;
  if (ctx.duplicationDepth >= maxDepth)
    return ctx.fail("If with a run-time condition nested " + Twine(maxDepth) +
                    " deep in Ifs whose branches give different ranks: kiln would compile the "
                    "rest of the model more than " + Twine(1 << maxDepth) + " times");
  // Each arm: the branch, then the rest of the enclosing region.
  auto rest = ctx.rest;
  auto branchThenRest = [&](const onnx::GraphProto &g) {
    return [&ctx, &g, node, rest]() -> FailureOr<SmallVector<Value>> {
      ++ctx.duplicationDepth;
      auto results = importRegion(ctx, [&] { return importInline(ctx, node, g); }, rest);
      --ctx.duplicationDepth;
      return results;
    };
  };
  thenArm = importArm(ctx, branchThenRest(thenG));
  elseArm = importArm(ctx, branchThenRest(elseG));
  ctx.node = node;
  ctx.loc = loc;
  types = joinArms(thenArm, elseArm);
  if (!types) {
    if (thenArm.error.empty() && elseArm.error.empty())
      return ctx.fail("the outputs differ in rank or element type depending on this If's "
                      "run-time condition (" + mismatch(thenArm, elseArm) +
                      "); kiln compiles one rank and element type per output");
    return ctx.fail("neither branch of If can be compiled; the then branch: " + thenArm.error);
  }
  warnUncompiledArm(ctx, thenArm, elseArm);
  ctx.regionResults = SmallVector<Value>(buildIf(ctx, *cond, thenArm, elseArm, *types).getResults());
  return success();
}

LogicalResult importIf(ImportContext &ctx) {
  const onnx::GraphProto *thenG = branch(ctx, "then_branch"), *elseG = branch(ctx, "else_branch");
  if (!thenG || !elseG)
    return ctx.fail("If needs then_branch and else_branch");
  if (const HostTensor *c = ctx.hostInput(0)) {
    bool taken = c->isFloat() ? c->floats.at(0) != 0 : c->ints.at(0) != 0;
    return importInline(ctx, ctx.node, taken ? *thenG : *elseG);
  }
  return importRuntimeIf(ctx, *thenG, *elseG);
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
  if (body->output_size() < numState)
    return ctx.fail("Scan's body has fewer outputs than Scan has state values");
  // The scan is unrolled: every scanned input needs the same static length.
  int64_t steps = 0;
  for (Value scan : scans) {
    auto t = cast<RankedTensorType>(scan.getType());
    if (t.getRank() == 0 || ShapedType::isDynamic(t.getDimSize(0)))
      return ctx.fail("Scan inputs need a first (scan) dimension of static length");
    if (scan != scans.front() && t.getDimSize(0) != steps)
      return ctx.fail("Scan inputs differ in length along the scan axis");
    steps = t.getDimSize(0);
  }
  if (steps == 0 && body->output_size() > numState)
    return ctx.fail("Scan over zero steps with scan outputs is not supported");
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
    auto outs = importBody(ctx, *body);
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
    auto outs = importBody(ctx, *body);
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
