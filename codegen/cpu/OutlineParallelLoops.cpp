//===- OutlineParallelLoops.cpp - parallel loops become pool tasks --------===//
//
// An outermost scf.parallel with enough work is moved into a private task
// function over the linearized range of its leading dimensions, so that the
// runtime can hand sub-ranges to its threads (see LowerParallelCalls.cpp for
// the dispatch). Its remaining dimensions stay a loop nest inside the task.
//
//===----------------------------------------------------------------------===//
#include "codegen/cpu/Passes.h"

#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNCPUOUTLINEPARALLELLOOPS
#include "codegen/cpu/Passes.h.inc"
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

/// Iterations of dimension `d`, or a guess when they are known only at run
/// time (sizes of dynamic dimensions).
static constexpr int64_t unknownTrips = 16;
static int64_t estimatedTrips(scf::ParallelOp loop, unsigned d) {
  return tripCount(loop.getLowerBound()[d], loop.getUpperBound()[d], loop.getStep()[d])
      .value_or(unknownTrips);
}

/// The fewest leading dimensions of `loop` with at least `minChunks`
/// iterations together (all of them when the whole loop has fewer).
static unsigned distributedDims(scf::ParallelOp loop, int64_t minChunks) {
  unsigned dims = 1;
  int64_t chunks = estimatedTrips(loop, 0);
  while (dims < loop.getNumLoops() && chunks < minChunks)
    chunks *= estimatedTrips(loop, dims++);
  return dims;
}

/// Iterations of dimension `d` as a value: ceil((ub - lb) / step), at least
/// 0, with the bounds looked up in `map` (inside a task).
static Value tripCountValue(OpBuilder &b, Location loc, scf::ParallelOp loop, unsigned d,
                            IRMapping &map) {
  if (auto trips = tripCount(loop.getLowerBound()[d], loop.getUpperBound()[d], loop.getStep()[d]))
    return arith::ConstantIndexOp::create(b, loc, *trips);
  Value lb = map.lookupOrDefault(loop.getLowerBound()[d]);
  Value ub = map.lookupOrDefault(loop.getUpperBound()[d]);
  Value step = map.lookupOrDefault(loop.getStep()[d]);
  Value span = arith::SubIOp::create(b, loc, ub, lb);
  span = arith::MaxSIOp::create(b, loc, span, arith::ConstantIndexOp::create(b, loc, 0));
  return arith::CeilDivUIOp::create(b, loc, span, step);
}

/// Estimated number of operations executed by `loop`: each op counts once per
/// iteration of the loops around it, up to and including `loop`; an AMX tile
/// op counts 16 (a tile multiply takes 16 cycles, a tile load as long).
static int64_t estimateWork(scf::ParallelOp loop) {
  int64_t work = 0;
  loop.getBody()->walk([&](Operation *op) {
    if (op->hasTrait<OpTrait::IsTerminator>() || isa<LoopLikeOpInterface>(op))
      return;
    int64_t weight = op->getDialect() && op->getDialect()->getNamespace() == "amx" ? 16 : 1;
    for (Operation *p = op->getParentOp(); p; p = p->getParentOp()) {
      if (auto f = dyn_cast<scf::ForOp>(p))
        weight *= tripCount(f.getLowerBound(), f.getUpperBound(), f.getStep()).value_or(unknownTrips);
      if (auto par = dyn_cast<scf::ParallelOp>(p))
        for (unsigned d = 0; d < par.getNumLoops(); ++d)
          weight *= estimatedTrips(par, d);
      if (p == loop)
        break;
    }
    work = std::min<int64_t>(work + weight, int64_t(1) << 50);
  });
  return work;
}

/// Values a task may take as arguments as they are: scalars and buffers that
/// lower to a bare pointer (static shape, identity layout). Other strided
/// buffers travel as their metadata (see flattenCapture).
static bool isPassable(Type type) {
  if (auto memref = dyn_cast<MemRefType>(type))
    return memref.hasStaticShape() && memref.getLayout().isIdentity();
  return type.isIntOrIndexOrFloat();
}

static bool isStridedBuffer(Type type) {
  auto memref = dyn_cast<MemRefType>(type);
  return memref && memref.isStrided();
}

/// The task arguments that carry `v`: itself, or for a buffer with dynamic
/// sizes or layout its base pointer (rank 0), offset, sizes and strides.
static SmallVector<Value> flattenCapture(OpBuilder &b, Location loc, Value v) {
  if (isPassable(v.getType()))
    return {v};
  auto meta = memref::ExtractStridedMetadataOp::create(b, loc, v);
  SmallVector<Value> parts = {meta.getBaseBuffer(), meta.getOffset()};
  llvm::append_range(parts, meta.getSizes());
  llvm::append_range(parts, meta.getStrides());
  return parts;
}

/// Inside the task: the buffer `original` rebuilt from its flattened `args`.
static Value rebuildCapture(OpBuilder &b, Location loc, Value original, ValueRange args) {
  if (isPassable(original.getType()))
    return args[0];
  auto type = cast<MemRefType>(original.getType());
  int64_t rank = type.getRank();
  auto [strides, offset] = type.getStridesAndOffset();
  auto pick = [&](int64_t known, Value arg) -> OpFoldResult {
    return ShapedType::isDynamic(known) ? OpFoldResult(arg) : OpFoldResult(b.getIndexAttr(known));
  };
  SmallVector<OpFoldResult> sizes, strideValues;
  for (int64_t d = 0; d < rank; ++d) {
    sizes.push_back(pick(type.getDimSize(d), args[2 + d]));
    strideValues.push_back(pick(strides[d], args[2 + rank + d]));
  }
  auto viewType = MemRefType::get(type.getShape(), type.getElementType(),
                                  StridedLayoutAttr::get(b.getContext(), offset, strides),
                                  type.getMemorySpace());
  Value view = memref::ReinterpretCastOp::create(b, loc, viewType, args[0], pick(offset, args[1]),
                                                 sizes, strideValues);
  return view.getType() == type ? view : memref::CastOp::create(b, loc, type, view).getResult();
}

/// Splits the values used in `loop` but defined above it into ops to clone into
/// the task (constants and pure, region-free ops such as memref views) and
/// captures passed as arguments. Ops are returned in program order. Views of
/// kiln-plan-memory's arena are captured, not cloned: as pointers of their
/// own they are distinct objects to LLVM, which then vectorizes the task's
/// loops behind run-time alias checks; offsets of one arena pointer would be
/// an unknown dependence that it gives up on.
static void partitionCaptures(scf::ParallelOp loop, SmallVectorImpl<Operation *> &cloned,
                              SmallVectorImpl<Value> &captures) {
  llvm::SetVector<Value> worklist;
  getUsedValuesDefinedAbove(loop.getRegion(), worklist);
  // The task rebuilds the bounds too (they may be known only at run time).
  for (Value bound : loop->getOperands())
    worklist.insert(bound);
  llvm::SetVector<Operation *> toClone;
  llvm::SetVector<Value> args;
  for (size_t i = 0; i < worklist.size(); ++i) {
    Value v = worklist[i];
    Operation *def = v.getDefiningOp();
    bool clonable = def && def->getNumRegions() == 0 && isMemoryEffectFree(def) &&
                    def->getBlock() == loop->getBlock() && !isa<memref::ViewOp>(def);
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
  if (loop.getNumReductions() != 0)
    return false;
  // Allocations come from the run's arena, which the pool's workers share
  // (runtime.c); a failed run-time check unwinds the calling thread only, so
  // loops that may call one stay there.
  bool checks = loop.getBody()
                    ->walk([](Operation *op) {
                      return isa<func::CallOp, memref::DeallocOp>(op) ? WalkResult::interrupt()
                                                                      : WalkResult::advance();
                    })
                    .wasInterrupted();
  return !checks && llvm::all_of(captures, [](Value v) {
           return isPassable(v.getType()) || isStridedBuffer(v.getType());
         });
}

/// Index of dimension `d` of `loop` for its 0-based iteration number `n`;
/// `map` gives the bounds inside the task.
static Value dimIndex(OpBuilder &b, Location loc, scf::ParallelOp loop, unsigned d, Value n,
                      IRMapping &map) {
  Value step = map.lookupOrDefault(loop.getStep()[d]);
  Value lb = map.lookupOrDefault(loop.getLowerBound()[d]);
  if (getConstantIntValue(step) != 1)
    n = arith::MulIOp::create(b, loc, n, step);
  if (getConstantIntValue(lb) != 0)
    n = arith::AddIOp::create(b, loc, n, lb);
  return n;
}

/// Builds `func.func private @name(%begin, %end, captures...)` running the
/// iterations [begin, end) of the first `distributed` dimensions of `loop`,
/// linearized row-major, each over the whole of the remaining dimensions.
static func::FuncOp buildTask(scf::ParallelOp loop, unsigned distributed, StringRef name,
                              ArrayRef<Operation *> cloned, ArrayRef<Value> captures,
                              TypeRange captureTypes, ArrayRef<unsigned> captureArity) {
  OpBuilder b(loop->getParentOfType<func::FuncOp>());
  Location loc = loop.getLoc();
  SmallVector<Type> argTypes(2, b.getIndexType());
  for (Type t : captureTypes)
    argTypes.push_back(t);
  auto task = func::FuncOp::create(b, loc, name, b.getFunctionType(argTypes, {}));
  task.setPrivate();
  task->setAttr("kiln.parallel_task", b.getUnitAttr());

  Block *entry = task.addEntryBlock();
  b.setInsertionPointToStart(entry);
  IRMapping map;
  ValueRange args = entry->getArguments().drop_front(2);
  for (auto [v, count] : llvm::zip(captures, captureArity)) {
    map.map(v, rebuildCapture(b, loc, v, args.take_front(count)));
    args = args.drop_front(count);
  }
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
      Value extent = tripCountValue(b, loc, loop, d, map);
      n = arith::RemUIOp::create(b, loc, rest, extent);
      rest = arith::DivUIOp::create(b, loc, rest, extent);
    }
    map.map(loop.getInductionVars()[d], dimIndex(b, loc, loop, d, n, map));
  }
  if (distributed < loop.getNumLoops()) {
    auto inside = [&](OperandRange values) {
      return llvm::map_to_vector(values.drop_front(distributed),
                                 [&](Value v) { return map.lookupOrDefault(v); });
    };
    auto inner = scf::ParallelOp::create(b, loc, inside(loop.getLowerBound()),
                                         inside(loop.getUpperBound()), inside(loop.getStep()));
    // A range-for would destroy the temporary vector of induction variables
    // before its body runs: hold it.
    SmallVector<Value> ivs = loop.getInductionVars(), innerIvs = inner.getInductionVars();
    for (auto [iv, innerIv] : llvm::zip(ArrayRef(ivs).drop_front(distributed), innerIvs))
      map.map(iv, innerIv);
    b.setInsertionPoint(inner.getBody()->getTerminator());
  }
  for (Operation &op : loop.getBody()->without_terminator())
    b.clone(op, map);
  return task;
}

namespace {
struct KilnOutlineParallelLoopsPass
    : mlir::kiln::impl::KilnCpuOutlineParallelLoopsBase<KilnOutlineParallelLoopsPass> {
  using KilnCpuOutlineParallelLoopsBase::KilnCpuOutlineParallelLoopsBase;

  void runOnOperation() override {
    SmallVector<func::FuncOp> funcs(getOperation().getOps<func::FuncOp>());
    for (func::FuncOp func : funcs) {
      if (func.isExternal() || func->hasAttr("kiln.parallel_task"))
        continue;
      int taskCount = 0;
      outlineIn(func.getBody(), func.getName(), taskCount);
    }
  }

  /// Outlines the outermost parallel loops of `region`. A loop whose
  /// iteration count is known only at run time (a batch of images, most
  /// often one) and that holds parallel loops stays a serial loop around
  /// them instead: its nested loops are outlined, so that one image still
  /// fills the pool.
  void outlineIn(Region &region, StringRef funcName, int &taskCount) {
    SmallVector<scf::ParallelOp> loops(region.getOps<scf::ParallelOp>());
    for (scf::ParallelOp loop : loops) {
      bool nested = !loop.getBody()->getOps<scf::ParallelOp>().empty();
      if (nested && !iterationCount(loop)) {
        outlineIn(loop.getRegion(), funcName, taskCount);
        continue;
      }
      if (outline(loop, (funcName + "_task" + Twine(taskCount)).str()))
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
    std::optional<int64_t> total = iterationCount(loop, distributed);
    if (total && *total < 2)
      return false;
    OpBuilder b(loop);
    Location loc = loop.getLoc();
    SmallVector<Value> flat;
    SmallVector<unsigned> arity;
    for (Value v : captures) {
      SmallVector<Value> parts = flattenCapture(b, loc, v);
      arity.push_back(parts.size());
      flat.append(parts);
    }
    func::FuncOp task = buildTask(loop, distributed, name, cloned, captures,
                                  ValueRange(flat).getTypes(), arity);
    IRMapping outside;
    Value count = arith::ConstantIndexOp::create(b, loc, total.value_or(1));
    for (unsigned d = 0; !total && d < distributed; ++d)
      count = arith::MulIOp::create(b, loc, count, tripCountValue(b, loc, loop, d, outside));
    SmallVector<Value> operands{arith::ConstantIndexOp::create(b, loc, 0), count};
    operands.append(flat.begin(), flat.end());
    func::CallOp::create(b, loc, task, operands);
    loop.erase();
    return true;
  }
};
} // namespace
