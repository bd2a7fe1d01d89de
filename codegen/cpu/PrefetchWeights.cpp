//===- PrefetchWeights.cpp - prefetch large weights ahead of their loop ---===//
//
// A model's weights together are larger than this machine's caches, so a
// weight matrix of some megabytes comes from memory on every run, as one
// stream per register tile's K loop. The hardware prefetchers stop at page
// boundaries and ramp up again; at one panel row per few cycles the loop
// then waits for memory. Here each vector read of a large constant inside
// an scf.for whose index follows the loop's induction variable gets a
// software prefetch of the same read `distance` iterations ahead, one per
// cache line it covers.
//
//===----------------------------------------------------------------------===//
#include "codegen/cpu/Passes.h"

#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "llvm/ADT/SmallBitVector.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNCPUPREFETCHWEIGHTS
#include "codegen/cpu/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;

namespace {
constexpr int64_t kLineBytes = 64;

/// One index of a read into a constant global: the sum of these terms (the
/// read's own index and the offsets of the subviews it reads through).
using GlobalIndex = SmallVector<OpFoldResult, 2>;

/// The constant global a read reads (directly or through subviews of unit
/// strides, as tiling leaves) and its indices into it; nothing otherwise.
std::optional<std::pair<Value, SmallVector<GlobalIndex>>>
resolveGlobalRead(vector::TransferReadOp read) {
  Value base = read.getBase();
  SmallVector<GlobalIndex> indices;
  for (Value index : read.getIndices())
    indices.push_back({index});
  while (auto view = base.getDefiningOp<memref::SubViewOp>()) {
    if (!llvm::all_of(view.getStaticStrides(), [](int64_t s) { return s == 1; }))
      return std::nullopt;
    llvm::SmallBitVector dropped = view.getDroppedDims();
    SmallVector<GlobalIndex> inSource;
    auto next = indices.begin();
    for (auto [d, offset] : llvm::enumerate(view.getMixedOffsets())) {
      GlobalIndex terms = dropped.test(d) ? GlobalIndex() : *next++;
      terms.push_back(offset);
      inSource.push_back(terms);
    }
    base = view.getSource();
    indices = std::move(inSource);
  }
  auto get = base.getDefiningOp<memref::GetGlobalOp>();
  auto global = get ? SymbolTable::lookupNearestSymbolFrom<memref::GlobalOp>(get, get.getNameAttr())
                    : memref::GlobalOp();
  if (!global || !global.getConstant())
    return std::nullopt;
  return std::make_pair(base, indices);
}

/// Whether `v` is the same in every iteration of `loop`.
bool invariant(OpFoldResult v, scf::ForOp loop) {
  auto value = dyn_cast<Value>(v);
  return !value || loop.isDefinedOutsideOfLoop(value);
}

/// Whether `v` is the loop's induction variable plus invariant terms (the
/// form in which the kernels' K loops index their weights).
bool followsInductionVariable(OpFoldResult v, scf::ForOp loop) {
  auto value = dyn_cast<Value>(v);
  while (value && value != loop.getInductionVar()) {
    auto add = value.getDefiningOp<arith::AddIOp>();
    if (!add)
      return false;
    if (loop.isDefinedOutsideOfLoop(add.getRhs()))
      value = add.getLhs();
    else if (loop.isDefinedOutsideOfLoop(add.getLhs()))
      value = add.getRhs();
    else
      return false;
  }
  return static_cast<bool>(value);
}

/// Whether one term of `index` follows the loop and the others are invariant.
bool followsInductionVariable(const GlobalIndex &index, scf::ForOp loop) {
  int64_t following = 0;
  for (OpFoldResult term : index) {
    if (followsInductionVariable(term, loop))
      ++following;
    else if (!invariant(term, loop))
      return false;
  }
  return following == 1;
}

struct KilnPrefetchWeightsPass
    : mlir::kiln::impl::KilnCpuPrefetchWeightsBase<KilnPrefetchWeightsPass> {
  using KilnCpuPrefetchWeightsBase::KilnCpuPrefetchWeightsBase;

  void runOnOperation() override {
    SmallVector<vector::TransferReadOp> reads;
    getOperation().walk([&](vector::TransferReadOp read) {
      if (isa<scf::ForOp>(read->getParentOp()) && read.getPermutationMap().isMinorIdentity())
        reads.push_back(read);
    });
    for (vector::TransferReadOp read : reads)
      prefetchAhead(read);
  }

  /// Prefetches what `read` will read `distance` iterations later, when it
  /// reads a large constant at an index that follows its loop.
  void prefetchAhead(vector::TransferReadOp read) {
    auto loop = cast<scf::ForOp>(read->getParentOp());
    std::optional<int64_t> step = getConstantIntValue(loop.getStep());
    auto target = resolveGlobalRead(read);
    if (!step || !target)
      return;
    auto type = cast<MemRefType>(target->first.getType());
    int64_t elementBytes = type.getElementTypeBitWidth() / 8;
    if (!type.hasStaticShape() || type.getNumElements() * elementBytes <= minBytes)
      return;
    for (auto [d, index] : llvm::enumerate(target->second))
      if (followsInductionVariable(index, loop)) {
        prefetch(read, target->first, target->second, d, distance * *step, elementBytes);
        return;
      }
  }

  /// Prefetches `indices` of `memref` moved `ahead` along dimension `d`
  /// (clamped to its last index), one request per cache line of the row
  /// that `read` reads.
  void prefetch(vector::TransferReadOp read, Value memref, ArrayRef<GlobalIndex> indices, int64_t d,
                int64_t ahead, int64_t elementBytes) {
    OpBuilder b(read);
    Location loc = read.getLoc();
    auto type = cast<MemRefType>(memref.getType());
    auto constant = [&](int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); };
    SmallVector<Value> at;
    for (const GlobalIndex &terms : indices) {
      Value sum;
      for (OpFoldResult term : terms) {
        if (isConstantIntValue(term, 0))
          continue;
        Value v = getValueOrCreateConstantIndexOp(b, loc, term);
        sum = sum ? arith::AddIOp::create(b, loc, sum, v).getResult() : v;
      }
      at.push_back(sum ? sum : constant(0));
    }
    Value further = arith::AddIOp::create(b, loc, at[d], constant(ahead));
    at[d] = arith::MinUIOp::create(b, loc, further, constant(type.getDimSize(d) - 1));
    int64_t width = read.getVectorType().getShape().back();
    int64_t lineElements = std::max<int64_t>(1, kLineBytes / elementBytes);
    Value rowStart = at.back();
    for (int64_t offset = 0; offset < width; offset += lineElements) {
      if (offset > 0)
        at.back() = arith::AddIOp::create(b, loc, rowStart, constant(offset));
      memref::PrefetchOp::create(b, loc, memref, at, /*isWrite=*/false, /*localityHint=*/3,
                                 /*isDataCache=*/true);
    }
  }
};
} // namespace
