//===- OutlineParallelLoops.cpp - parallel loops become pool tasks --------===//
//
// An outermost scf.parallel with enough work is moved into a private task
// function over the linearized range of its leading dimensions, so that the
// runtime can hand sub-ranges to its threads (see LowerParallelCalls.cpp for
// the dispatch). Its remaining dimensions stay a loop nest inside the task.
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

/// Iterations of the first `dims` dimensions of `loop` together (all by
/// default), when their bounds are constants.
static std::optional<int64_t> iterationCount(scf::ParallelOp loop,
                                             std::optional<unsigned> dims = std::nullopt) {
  int64_t total = 1;
  unsigned count = dims.value_or(loop.getNumLoops());
  for (unsigned d = 0; d < count; ++d) {
    std::optional<int64_t> trips =
        tripCount(loop.getLowerBound()[d], loop.getUpperBound()[d], loop.getStep()[d]);
    if (!trips)
      return std::nullopt;
    total *= *trips;
  }
  return total;
}

/// The fewest leading dimensions of `loop` with at least `minChunks`
/// iterations together (all of them when the whole loop has fewer).
static unsigned distributedDims(scf::ParallelOp loop, int64_t minChunks) {
  unsigned dims = 1;
  while (dims < loop.getNumLoops() && *iterationCount(loop, dims) < minChunks)
    ++dims;
  return dims;
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

/// Index of dimension `d` of `loop` for its 0-based iteration number `n`.
static Value dimIndex(OpBuilder &b, Location loc, scf::ParallelOp loop, unsigned d, Value n) {
  // The bounds are constants (see canOutline); rebuild them inside the task.
  int64_t step = *getConstantIntValue(loop.getStep()[d]);
  int64_t lb = *getConstantIntValue(loop.getLowerBound()[d]);
  if (step != 1)
    n = arith::MulIOp::create(b, loc, n, arith::ConstantIndexOp::create(b, loc, step));
  if (lb != 0)
    n = arith::AddIOp::create(b, loc, n, arith::ConstantIndexOp::create(b, loc, lb));
  return n;
}

/// Builds `func.func private @name(%begin, %end, captures...)` running the
/// iterations [begin, end) of the first `distributed` dimensions of `loop`,
/// linearized row-major, each over the whole of the remaining dimensions.
static func::FuncOp buildTask(scf::ParallelOp loop, unsigned distributed, StringRef name,
                              ArrayRef<Operation *> cloned, ArrayRef<Value> captures) {
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
  for (int64_t d = distributed - 1; d >= 0; --d) {
    Value n = rest;
    if (d != 0) {
      Value extent = arith::ConstantIndexOp::create(b, loc, *iterationCount(loop, d + 1) /
                                                               *iterationCount(loop, d));
      n = arith::RemUIOp::create(b, loc, rest, extent);
      rest = arith::DivUIOp::create(b, loc, rest, extent);
    }
    map.map(loop.getInductionVars()[d], dimIndex(b, loc, loop, d, n));
  }
  if (distributed < loop.getNumLoops()) {
    auto constants = [&](OperandRange values) {
      return llvm::map_to_vector(values.drop_front(distributed), [&](Value v) -> Value {
        return arith::ConstantIndexOp::create(b, loc, *getConstantIntValue(v));
      });
    };
    auto inner = scf::ParallelOp::create(b, loc, constants(loop.getLowerBound()),
                                         constants(loop.getUpperBound()),
                                         constants(loop.getStep()));
    for (auto [iv, innerIv] :
         llvm::zip(ArrayRef<Value>(loop.getInductionVars()).drop_front(distributed),
                   inner.getInductionVars()))
      map.map(iv, innerIv);
    b.setInsertionPoint(inner.getBody()->getTerminator());
  }
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
    unsigned distributed = distributedDims(loop, minChunks);
    int64_t total = *iterationCount(loop, distributed);
    if (total < 2)
      return false;
    func::FuncOp task = buildTask(loop, distributed, name, cloned, captures);
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
