//===- OutlineParallelLoops.cpp - parallel loops become pool tasks --------===//
//
// An outermost scf.parallel with enough work is moved into a private task
// function over a linearized iteration range, so that the runtime can hand
// sub-ranges to its threads (see LowerParallelCalls.cpp for the dispatch).
//
//===----------------------------------------------------------------------===//
#include "codegen/Passes.h"

#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNOUTLINEPARALLELLOOPS
#include "codegen/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;

/// Trip count of one loop dimension, when its bounds are constants.
static std::optional<int64_t> tripCount(Value lb, Value ub, Value step) {
  auto l = getConstantIntValue(lb), u = getConstantIntValue(ub), s = getConstantIntValue(step);
  if (!l || !u || !s || *s <= 0)
    return std::nullopt;
  return *u > *l ? (*u - *l + *s - 1) / *s : 0;
}

/// Iterations of all dimensions of `loop` together, when its bounds are constants.
static std::optional<int64_t> iterationCount(scf::ParallelOp loop) {
  int64_t total = 1;
  for (auto [lb, ub, st] : llvm::zip(loop.getLowerBound(), loop.getUpperBound(), loop.getStep())) {
    std::optional<int64_t> trips = tripCount(lb, ub, st);
    if (!trips)
      return std::nullopt;
    total *= *trips;
  }
  return total;
}

/// Estimated number of operations executed by `loop`: each op counts once per
/// iteration of the loops around it, up to and including `loop`.
static int64_t estimateWork(scf::ParallelOp loop) {
  constexpr int64_t unknownTrips = 16;
  int64_t work = 0;
  loop.getBody()->walk([&](Operation *op) {
    if (op->hasTrait<OpTrait::IsTerminator>() || isa<LoopLikeOpInterface>(op))
      return;
    int64_t weight = 1;
    for (Operation *p = op->getParentOp(); p; p = p->getParentOp()) {
      if (auto f = dyn_cast<scf::ForOp>(p))
        weight *= tripCount(f.getLowerBound(), f.getUpperBound(), f.getStep()).value_or(unknownTrips);
      if (auto par = dyn_cast<scf::ParallelOp>(p))
        weight *= iterationCount(par).value_or(unknownTrips);
      if (p == loop)
        break;
    }
    work = std::min<int64_t>(work + weight, int64_t(1) << 50);
  });
  return work;
}

/// Values a task may take as arguments: scalars and buffers that lower to a
/// bare pointer (static shape, identity layout).
static bool isPassable(Type type) {
  if (auto memref = dyn_cast<MemRefType>(type))
    return memref.hasStaticShape() && memref.getLayout().isIdentity();
  return type.isIntOrIndexOrFloat();
}

/// Splits the values used in `loop` but defined above it into ops to clone into
/// the task (constants and pure, region-free ops such as memref views) and
/// captures passed as arguments. Ops are returned in program order.
static void partitionCaptures(scf::ParallelOp loop, SmallVectorImpl<Operation *> &cloned,
                              SmallVectorImpl<Value> &captures) {
  llvm::SetVector<Value> worklist;
  getUsedValuesDefinedAbove(loop.getRegion(), worklist);
  llvm::SetVector<Operation *> toClone;
  llvm::SetVector<Value> args;
  for (size_t i = 0; i < worklist.size(); ++i) {
    Value v = worklist[i];
    Operation *def = v.getDefiningOp();
    bool clonable = def && def->getNumRegions() == 0 && isMemoryEffectFree(def) &&
                    def->getBlock() == loop->getBlock();
    if (!clonable) {
      args.insert(v);
      continue;
    }
    toClone.insert(def);
    for (Value operand : def->getOperands())
      worklist.insert(operand);
  }
  cloned.assign(toClone.begin(), toClone.end());
  llvm::sort(cloned, [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  captures.assign(args.begin(), args.end());
}

/// Whether `loop` can run as independent chunks on several threads.
static bool canOutline(scf::ParallelOp loop, ArrayRef<Value> captures) {
  if (loop.getNumReductions() != 0 || !iterationCount(loop))
    return false;
  // Allocation goes through the run's arena, which belongs to the calling thread.
  bool allocates = loop.getBody()
                       ->walk([](Operation *op) {
                         return isa<memref::AllocOp, memref::DeallocOp>(op) ? WalkResult::interrupt()
                                                                            : WalkResult::advance();
                       })
                       .wasInterrupted();
  return !allocates && llvm::all_of(captures, [](Value v) { return isPassable(v.getType()); });
}

/// Builds `func.func private @name(%begin, %end, captures...)` running the
/// iterations [begin, end) of `loop`, linearized row-major over its dimensions.
static func::FuncOp buildTask(scf::ParallelOp loop, StringRef name, ArrayRef<Operation *> cloned,
                              ArrayRef<Value> captures) {
  OpBuilder b(loop->getParentOfType<func::FuncOp>());
  Location loc = loop.getLoc();
  SmallVector<Type> argTypes(2, b.getIndexType());
  for (Value v : captures)
    argTypes.push_back(v.getType());
  auto task = func::FuncOp::create(b, loc, name, b.getFunctionType(argTypes, {}));
  task.setPrivate();
  task->setAttr("kiln.parallel_task", b.getUnitAttr());

  Block *entry = task.addEntryBlock();
  b.setInsertionPointToStart(entry);
  IRMapping map;
  for (auto [v, arg] : llvm::zip(captures, entry->getArguments().drop_front(2)))
    map.map(v, arg);
  for (Operation *op : cloned)
    b.clone(*op, map);

  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  auto chunk = scf::ForOp::create(b, loc, entry->getArgument(0), entry->getArgument(1), one);
  func::ReturnOp::create(b, loc);

  b.setInsertionPointToStart(chunk.getBody());
  Value rest = chunk.getInductionVar();
  SmallVector<Value> ivs(loop.getNumLoops());
  for (int64_t d = loop.getNumLoops() - 1; d >= 0; --d) {
    Value lb = loop.getLowerBound()[d], step = loop.getStep()[d];
    Value index = rest;
    if (d != 0) {
      Value extent =
          arith::ConstantIndexOp::create(b, loc, *tripCount(lb, loop.getUpperBound()[d], step));
      index = arith::RemUIOp::create(b, loc, rest, extent);
      rest = arith::DivUIOp::create(b, loc, rest, extent);
    }
    // The bounds are constants (see canOutline); rebuild them inside the task.
    int64_t stepValue = *getConstantIntValue(step), lbValue = *getConstantIntValue(lb);
    if (stepValue != 1)
      index = arith::MulIOp::create(b, loc, index, arith::ConstantIndexOp::create(b, loc, stepValue));
    if (lbValue != 0)
      index = arith::AddIOp::create(b, loc, index, arith::ConstantIndexOp::create(b, loc, lbValue));
    ivs[d] = index;
  }
  for (auto [iv, value] : llvm::zip(loop.getInductionVars(), ivs))
    map.map(iv, value);
  for (Operation &op : loop.getBody()->without_terminator())
    b.clone(op, map);
  return task;
}

namespace {
struct KilnOutlineParallelLoopsPass
    : mlir::kiln::impl::KilnOutlineParallelLoopsBase<KilnOutlineParallelLoopsPass> {
  using KilnOutlineParallelLoopsBase::KilnOutlineParallelLoopsBase;

  void runOnOperation() override {
    SmallVector<func::FuncOp> funcs(getOperation().getOps<func::FuncOp>());
    for (func::FuncOp func : funcs) {
      if (func.isExternal() || func->hasAttr("kiln.parallel_task"))
        continue;
      SmallVector<scf::ParallelOp> loops(func.getBody().getOps<scf::ParallelOp>());
      int taskCount = 0;
      for (scf::ParallelOp loop : loops)
        if (outline(loop, (func.getName() + "_task" + Twine(taskCount)).str()))
          ++taskCount;
    }
  }

  bool outline(scf::ParallelOp loop, StringRef name) {
    SmallVector<Operation *> cloned;
    SmallVector<Value> captures;
    partitionCaptures(loop, cloned, captures);
    if (!canOutline(loop, captures) || estimateWork(loop) < minWork)
      return false;
    int64_t total = *iterationCount(loop);
    if (total < 2)
      return false;
    func::FuncOp task = buildTask(loop, name, cloned, captures);
    OpBuilder b(loop);
    SmallVector<Value> operands{arith::ConstantIndexOp::create(b, loop.getLoc(), 0),
                                arith::ConstantIndexOp::create(b, loop.getLoc(), total)};
    operands.append(captures.begin(), captures.end());
    func::CallOp::create(b, loop.getLoc(), task, operands);
    loop.erase();
    return true;
  }
};
} // namespace
