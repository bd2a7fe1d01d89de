//===- ProfileFlops.cpp - arithmetic per ONNX node, for the profiler -------===//
#include "codegen/common/Passes.h"
#include "dialects/kiln/KilnDialect.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Interfaces/LoopLikeInterface.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include <numeric>

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNPROFILEFLOPS
#include "codegen/common/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;

namespace {

/// Elements of a scalar (1) or vector type; nullopt for other types.
std::optional<int64_t> elementsOf(Type type) {
  if (auto vector = dyn_cast<VectorType>(type))
    return vector.isScalable() ? std::nullopt : std::optional<int64_t>(vector.getNumElements());
  if (type.isIntOrFloat())
    return 1;
  return std::nullopt;
}

/// Arithmetic of one execution of `op`, not counting ops in its regions:
/// 2 per multiply-add, 1 per other arithmetic op, per element.
int64_t ownFlops(Operation *op) {
  if (auto contract = dyn_cast<vector::ContractionOp>(op)) {
    SmallVector<int64_t> bounds;
    contract.getIterationBounds(bounds);
    return 2 * std::accumulate(bounds.begin(), bounds.end(), int64_t(1), std::multiplies<>());
  }
  if (isa<vector::ReductionOp, vector::MultiDimReductionOp>(op))
    return elementsOf(op->getOperand(0).getType()).value_or(0);
  Dialect *dialect = op->getDialect();
  bool arithmetic = dialect && isa<arith::ArithDialect, math::MathDialect>(dialect);
  if (!(arithmetic || isa<vector::FMAOp>(op)) || op->getNumResults() != 1 ||
      isa<arith::ConstantOp, arith::SelectOp, CastOpInterface>(op))
    return 0;
  Type type = op->getResult(0).getType();
  if (getElementTypeOrSelf(type).isIndex())
    return 0;
  int64_t perElement = isa<math::FmaOp, vector::FMAOp>(op) ? 2 : 1;
  return perElement * elementsOf(type).value_or(0);
}

/// Iterations of the loops around `op` up to its function; nullopt when a
/// trip count is not a constant.
std::optional<int64_t> enclosingTrips(Operation *op) {
  int64_t trips = 1;
  for (Operation *parent = op->getParentOp(); parent && !isa<func::FuncOp>(parent);
       parent = parent->getParentOp()) {
    auto loop = dyn_cast<LoopLikeOpInterface>(parent);
    if (!loop)
      continue;
    auto lbs = loop.getLoopLowerBounds(), ubs = loop.getLoopUpperBounds(),
         steps = loop.getLoopSteps();
    if (!lbs || !ubs || !steps)
      return std::nullopt; // scf.while
    for (auto [lbFold, ubFold, stepFold] : llvm::zip(*lbs, *ubs, *steps)) {
      std::optional<int64_t> lb = getConstantIntValue(lbFold), ub = getConstantIntValue(ubFold),
                             step = getConstantIntValue(stepFold);
      if (!lb || !ub || !step || *step <= 0)
        return std::nullopt;
      trips *= std::max<int64_t>(0, (*ub - *lb + *step - 1) / *step);
    }
  }
  return trips;
}

/// Arithmetic of `op` with the loops around it: a linalg op's whole
/// iteration space, any other op's own arithmetic; nullopt if unknown.
std::optional<int64_t> flopsOf(Operation *op) {
  int64_t perTrip = 0;
  if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op)) {
    int64_t iterations = 1;
    for (int64_t range : linalgOp.getStaticLoopRanges()) {
      if (ShapedType::isDynamic(range))
        return std::nullopt;
      iterations *= range;
    }
    for (Operation &inner : *linalgOp.getBlock())
      perTrip += iterations * ownFlops(&inner);
  } else {
    perTrip = ownFlops(op);
  }
  if (perTrip == 0)
    return 0;
  std::optional<int64_t> trips = enclosingTrips(op);
  if (!trips)
    return std::nullopt;
  return perTrip * *trips;
}

struct KilnProfileFlopsPass
    : mlir::kiln::impl::KilnProfileFlopsBase<KilnProfileFlopsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    llvm::StringMap<int64_t> flops;
    llvm::StringSet<> unknown;
    std::vector<std::string> order; // nodes in program order, for a stable attribute
    module.walk([&](Operation *op) {
      // A linalg body's arithmetic counts with its op's iteration space.
      if (isa_and_nonnull<linalg::LinalgOp>(op->getParentOp()))
        return;
      std::optional<int64_t> count = flopsOf(op);
      std::vector<kiln::OnnxNode> nodes = kiln::onnxNodesOf(op->getLoc());
      if (nodes.empty() || count == 0)
        return;
      std::string name = nodes.front().name.str();
      if (!flops.count(name) && !unknown.count(name))
        order.push_back(name);
      if (!count)
        unknown.insert(name);
      else
        flops[name] += *count;
    });
    Builder b(&getContext());
    SmallVector<NamedAttribute> entries;
    for (const std::string &name : order)
      if (!unknown.count(name))
        entries.push_back(b.getNamedAttr(name, b.getI64IntegerAttr(flops[name])));
    module->setAttr("kiln.node_flops", b.getDictionaryAttr(entries));
  }
};
} // namespace
