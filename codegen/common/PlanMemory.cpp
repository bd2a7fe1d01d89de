//===- PlanMemory.cpp - intermediate buffers packed into one arena --------===//
//
// After bufferization every intermediate tensor of a function is a
// memref.alloc. This pass gives each statically sized one an offset in a
// single arena, so that buffers whose lifetimes do not overlap share memory:
// the arena is one allocation per run, sized at compile time, and far
// smaller than the sum of the buffers.
//
// A buffer is live from the first to the last top-level op of the function
// that uses it or a view of it. Top-level ops run one after another (parallel
// loops join before the next op starts), so buffers whose top-level intervals
// do not overlap never hold data at the same time.
//
//===----------------------------------------------------------------------===//
#include "codegen/common/Passes.h"
#include "codegen/common/BufferUses.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/DataLayoutInterfaces.h"
#include "llvm/Support/FormatVariadic.h"

#include <limits>
#include <map>

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNPLANMEMORY
#include "codegen/common/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using mlir::kiln::formatBytes;

std::string mlir::kiln::formatBytes(int64_t bytes) {
  if (bytes >= (1 << 20))
    return llvm::formatv("{0:F1} MiB", bytes / double(1 << 20)).str();
  if (bytes >= (1 << 10))
    return llvm::formatv("{0:F1} KiB", bytes / double(1 << 10)).str();
  return llvm::formatv("{0} B", bytes).str();
}

namespace {

constexpr int64_t kArenaAlignment = 64;

/// One planned buffer: its allocation, size and top-level lifetime.
struct Buffer {
  memref::AllocOp alloc;
  int64_t bytes;
  int64_t alignment;
  unsigned first, last; // indices of top-level ops, inclusive
  int64_t offset = 0;

  bool overlaps(const Buffer &other) const {
    return first <= other.last && other.first <= last;
  }
};

/// Why an allocation keeps a memory block of its own, or nothing if it can
/// be planned.
std::optional<StringRef> unplannable(memref::AllocOp alloc) {
  MemRefType type = alloc.getType();
  if (!type.hasStaticShape())
    return StringRef("dynamic size");
  if (!type.getLayout().isIdentity() || type.getMemorySpace())
    return StringRef("non-default layout or memory space");
  if (type.getNumElements() == 0)
    return StringRef("empty");
  return std::nullopt;
}

/// Index of each top-level op of `body`.
DenseMap<Operation *, unsigned> numberOps(Block &body) {
  DenseMap<Operation *, unsigned> index;
  unsigned i = 0;
  for (Operation &op : body)
    index[&op] = i++;
  return index;
}

/// Extends [first, last] over every use of `value` and of the views of it;
/// fails where the buffer escapes (forEachBufferUser).
LogicalResult extendLifetime(Value value, Block &body,
                             const DenseMap<Operation *, unsigned> &index, unsigned &first,
                             unsigned &last) {
  bool outside = false;
  LogicalResult walked = mlir::kiln::forEachBufferUser(value, [&](Operation *user) {
    Operation *top = body.findAncestorOpInBlock(*user);
    if (!top) {
      outside = true;
      return;
    }
    unsigned at = index.lookup(top);
    first = std::min(first, at);
    last = std::max(last, at);
  });
  return success(succeeded(walked) && !outside);
}

/// Places the buffers, largest first, each at the lowest aligned offset that
/// no buffer with an overlapping lifetime occupies. Returns the arena size.
int64_t assignOffsets(MutableArrayRef<Buffer> buffers) {
  SmallVector<Buffer *> order;
  for (Buffer &b : buffers)
    order.push_back(&b);
  llvm::stable_sort(order, [](const Buffer *a, const Buffer *b) { return a->bytes > b->bytes; });
  SmallVector<Buffer *> placed;
  int64_t arenaBytes = 0;
  for (Buffer *buffer : order) {
    SmallVector<Buffer *> live;
    for (Buffer *other : placed)
      if (buffer->overlaps(*other))
        live.push_back(other);
    llvm::sort(live, [](const Buffer *a, const Buffer *b) { return a->offset < b->offset; });
    int64_t offset = 0;
    for (Buffer *other : live) {
      if (offset + buffer->bytes <= other->offset)
        break;
      int64_t next = llvm::alignTo(other->offset + other->bytes, buffer->alignment);
      offset = std::max(offset, next);
    }
    buffer->offset = offset;
    arenaBytes = std::max(arenaBytes, offset + buffer->bytes);
    placed.push_back(buffer);
  }
  return arenaBytes;
}

/// The most bytes live at once: a lower bound for any arena.
int64_t peakLiveBytes(ArrayRef<Buffer> buffers, unsigned numOps) {
  SmallVector<int64_t> delta(numOps + 1, 0);
  for (const Buffer &b : buffers) {
    delta[b.first] += b.bytes;
    delta[b.last + 1] -= b.bytes;
  }
  int64_t live = 0, peak = 0;
  for (int64_t d : delta)
    peak = std::max(peak, live += d);
  return peak;
}

/// Replaces each buffer's allocation with a view of one arena allocated at
/// the start of the function.
void rewriteIntoArena(func::FuncOp func, MutableArrayRef<Buffer> buffers, int64_t arenaBytes) {
  int64_t alignment = kArenaAlignment;
  for (const Buffer &b : buffers)
    alignment = std::max(alignment, b.alignment);
  OpBuilder builder = OpBuilder::atBlockBegin(&func.getBody().front());
  auto arenaType = MemRefType::get({arenaBytes}, builder.getI8Type());
  Value arena = memref::AllocOp::create(builder, func.getLoc(), arenaType,
                                        builder.getI64IntegerAttr(alignment));
  for (Buffer &b : buffers) {
    builder.setInsertionPoint(b.alloc);
    Location loc = b.alloc.getLoc();
    Value offset = arith::ConstantIndexOp::create(builder, loc, b.offset);
    Value view =
        memref::ViewOp::create(builder, loc, b.alloc.getType(), arena, offset, ValueRange{});
    b.alloc.replaceAllUsesWith(view);
    b.alloc.erase();
  }
}

/// Erases allocations that nothing reads, with their writes. Vectorized
/// reductions leave one per row: the partial sums' initial value written to
/// a buffer of its own, while the loop carries them in registers; each was a
/// call into the runtime (under its arena's lock) per row, and is now a stack
/// buffer of the row's iteration (kiln-hoist-loop-buffers runs first).
void eraseWriteOnlyAllocations(ModuleOp module) {
  SmallVector<Operation *> dead;
  module.walk([&](Operation *op) {
    if (!isa<memref::AllocOp, memref::AllocaOp>(op))
      return;
    Value buffer = op->getResult(0);
    bool writeOnly = llvm::all_of(buffer.getUses(), [&](OpOperand &use) {
      auto write = dyn_cast<vector::TransferWriteOp>(use.getOwner());
      auto store = dyn_cast<memref::StoreOp>(use.getOwner());
      return (write && write.getBase() == buffer && !write.getMask()) ||
             (store && store.getMemRef() == buffer);
    });
    if (writeOnly)
      dead.push_back(op);
  });
  for (Operation *allocation : dead) {
    for (Operation *user : llvm::make_early_inc_range(allocation->getUsers()))
      user->erase();
    allocation->erase();
  }
}

struct KilnPlanMemoryPass : mlir::kiln::impl::KilnPlanMemoryBase<KilnPlanMemoryPass> {
  using KilnPlanMemoryBase::KilnPlanMemoryBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    eraseWriteOnlyAllocations(module);
    int64_t moduleArena = 0;
    for (auto func : module.getOps<func::FuncOp>())
      if (!func.isExternal() && func.getBody().hasOneBlock())
        moduleArena += planFunction(func);
    module->setAttr("kiln.arena_bytes",
                    IntegerAttr::get(IntegerType::get(&getContext(), 64), moduleArena));
  }

  /// Plans the function's top-level allocations; returns its arena's size.
  int64_t planFunction(func::FuncOp func) {
    Block &body = func.getBody().front();
    DenseMap<Operation *, unsigned> index = numberOps(body);
    DataLayout layout = DataLayout::closest(func);
    SmallVector<Buffer> buffers;
    std::map<std::string, int64_t> separate; // reason -> count
    for (auto alloc : body.getOps<memref::AllocOp>()) {
      if (std::optional<StringRef> why = unplannable(alloc)) {
        ++separate[why->str()];
        continue;
      }
      // Live from the first use, not the allocation: bufferization puts
      // allocations wherever their tensors were created.
      Buffer b{alloc, 0, kArenaAlignment, std::numeric_limits<unsigned>::max(), 0};
      if (failed(extendLifetime(alloc, body, index, b.first, b.last))) {
        ++separate["its address escapes"];
        continue;
      }
      if (b.first > b.last) // unused
        b.first = b.last = index.lookup(alloc);
      MemRefType type = alloc.getType();
      b.bytes = llvm::alignTo(type.getNumElements() * layout.getTypeSize(type.getElementType()),
                              kArenaAlignment);
      if (std::optional<uint64_t> align = alloc.getAlignment())
        b.alignment = std::max<int64_t>(b.alignment, *align);
      buffers.push_back(b);
    }
    int64_t arenaBytes = assignOffsets(buffers);
    if (report && (!buffers.empty() || !separate.empty()))
      emitReport(func, buffers, arenaBytes, peakLiveBytes(buffers, index.size()), separate);
    if (!buffers.empty())
      rewriteIntoArena(func, buffers, arenaBytes);
    return arenaBytes;
  }

  void emitReport(func::FuncOp func, ArrayRef<Buffer> buffers, int64_t arenaBytes,
                  int64_t peakBytes, const std::map<std::string, int64_t> &separate) {
    int64_t total = 0;
    for (const Buffer &b : buffers)
      total += b.bytes;
    InFlightDiagnostic remark = emitRemark(func.getLoc());
    remark << "memory: @" << func.getSymName() << ": ";
    if (buffers.empty())
      remark << "no statically sized intermediate buffers";
    else
      remark << buffers.size() << " intermediate buffer" << (buffers.size() == 1 ? "" : "s")
             << ", " << total << " bytes (" << formatBytes(total)
             << ") in all, share an arena of " << arenaBytes << " bytes ("
             << formatBytes(arenaBytes) << "); at most " << peakBytes
             << " bytes are live at once";
    for (const auto &[why, count] : separate)
      remark << "; " << count << " buffer" << (count == 1 ? "" : "s")
             << " allocated separately (" << why << ")";
  }
};
} // namespace
