//===- MmaSparse.cpp - 2:4-sparse weights on the tensor cores (mma.sp) ----===//
//
// A staged 16-bit matmul (as kiln-cuda-mma-sync takes it) one of whose
// operands is a constant weight with at most two nonzeros in every four
// consecutive steps of k (2:4: what --prune-pattern=2:4 leaves) runs on
// mma.sp.sync.aligned.m16n8k32, which multiplies a 16x32 block of a 2:4
// operand, given as its 16x16 nonzeros and 2-bit positions, by a dense
// 32x8 block: half the tensor-core work of the two m16n8k16 it replaces.
//
// mma.sp takes the sparse operand as its A, so the mma tile is 16 of the
// weight's rows (or columns) by 8 of the other operand's: a convolution's
// filter (the rows) as it is, a MatMul's or Gemm's weights (the columns)
// transposed, each lane's sums stored transposed after the loop.
//
// The weight is laid out anew at compile time, in place (same type, a new
// global): each run of 32 steps of k (a line of the weight along k, for
// every row or column) becomes
//   steps 0-15:  the 16 kept values, two per group of four steps, in order;
//   steps 16-17: the 16-bit metadata of groups 0-3 and 4-7, group j's two
//                positions (2 bits each, the lower first) at bits 4j;
//   steps 18-31: zero.
// The staging copies it as it copied the dense weight, its cp.async
// copies of steps 18-31 skipped (skipUnusedSteps), and the lanes find
// each 32-step block of a chunk where its dense steps were.
//
// Fragment layouts are PTX ISA 8.0's for the sparse m16n8k32 with f16 or
// bf16 (upstream MLIR's sparse-mma-2-4-f16 test agrees): the values as an
// m16n8k16's A fragment of the 16x16 compressed block; lane l (g = l / 4,
// t = l % 4) of sparsity selector 0 gives, where t < 2, the metadata of
// rows g (low half) and g + 8 (high half), groups 4t to 4t + 3; B's
// register r holds steps 2t + 8r + {0, 1} of column g; D as mma.sync's.
//
//===----------------------------------------------------------------------===//
#include "codegen/cuda/Fragments.h"
#include "codegen/cuda/Passes.h"
#include "codegen/cuda/StagedMatmul.h"
#include "codegen/gpu/Tiles.h"
#include "dialects/kiln/KilnDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"

#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNCUDAMMASPARSE
#include "codegen/cuda/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using namespace mlir::kiln;

namespace {

/// mma.sp's tile: 16 rows of the sparse operand, 8 of the dense, 32 steps.
constexpr int64_t kSparse = 16, kDense = 8, kSteps = 32;
/// Where a 32-step block of the laid-out weight keeps its metadata; the
/// steps from kUnusedStep on are zero, and never read.
constexpr int64_t kMetadataStep = 16, kUnusedStep = 18;

/// A constant weight as a launch reads it: `read` (of `global`) through
/// `reshapes` (row-major order kept) gives `viewed`, whose dimensions are
/// the staged chunk's; inside the launch only the staging reads it.
struct Weight {
  memref::GlobalOp global;
  memref::GetGlobalOp read;
  SmallVector<Operation *> reshapes; ///< from `read` to `viewed`
  Value viewed;
  ArrayRef<char> data;               ///< the global's row-major elements
  SmallVector<Operation *> reads;    ///< the staging's (cp.async copies, loads)
};

struct Matmul : StagedMatmul {
  bool sparseIsA;             ///< the weight holds the tile's rows
  int64_t warpSparse, warpDense; ///< a warp's block, in mma.sp tiles
  Weight weight;

  const StagedOperand &sparse() const { return sparseIsA ? a : b; }
  const StagedOperand &dense() const { return sparseIsA ? b : a; }
  int64_t sparseExtent() const { return sparseIsA ? rows : cols; }
  int64_t denseExtent() const { return sparseIsA ? cols : rows; }
};

/// What the staging of an operand reads: one memref, by `reads` (its
/// cp.async copies and loads).
struct Staging {
  Value source;
  llvm::SmallPtrSet<Operation *, 8> reads;

  /// Whether `read` reads `v`, the source so far (or the first).
  bool add(Operation *read, Value v) {
    if (!v || (source && source != v))
      return false;
    source = v;
    reads.insert(read);
    return true;
  }
};

/// Adds to `staging` the load that `value` is, looking through the
/// private buffer (registers) that the two-buffer staging holds the next
/// chunk in (each of its stores a load of the source); false where
/// `value` is something else.
bool addLoad(Staging &staging, Value value) {
  auto load = value.getDefiningOp<memref::LoadOp>();
  if (!load)
    return false;
  auto registers = load.getMemref().getDefiningOp<memref::AllocaOp>();
  if (!registers || !isPrivateMemory(registers.getType()))
    return staging.add(load, load.getMemref());
  for (Operation *user : registers->getUsers()) {
    if (isa<memref::LoadOp>(user))
      continue;
    auto store = dyn_cast<memref::StoreOp>(user);
    if (!store || !addLoad(staging, store.getValue()))
      return false;
  }
  return true;
}

/// How `operand`'s chunks are staged, where it copies from one memref (by
/// cp.async or by loads it stores into them).
std::optional<Staging> stagingOf(const StagedOperand &operand, linalg::GenericOp op) {
  Staging staging;
  for (Operation *user : bufferOf(operand)->getUsers()) {
    auto chunk = dyn_cast<memref::SubViewOp>(user);
    if (!chunk)
      return std::nullopt;
    for (Operation *access : chunk->getUsers()) {
      auto copy = dyn_cast<nvgpu::DeviceAsyncCopyOp>(access);
      auto store = dyn_cast<memref::StoreOp>(access);
      auto view = dyn_cast<memref::SubViewOp>(access);
      if (copy ? !staging.add(copy, copy.getSrc())
               : store ? !addLoad(staging, store.getValue())
                       : !view || !llvm::all_of(view->getUsers(),
                                                [&](Operation *u) { return u == op; }))
        return std::nullopt;
    }
  }
  if (!staging.source)
    return std::nullopt;
  return staging;
}

/// Whether every read of `v`'s elements inside `launch` is one of the
/// staging's (directly or through subviews; its address may be read too:
/// the staging's check that it starts on 16 bytes).
bool readOnlyByStaging(Value v, const Staging &staging, gpu::LaunchOp launch) {
  return llvm::all_of(v.getUsers(), [&](Operation *user) {
    if (!launch->isAncestor(user) || staging.reads.contains(user) ||
        isa<memref::ExtractAlignedPointerAsIndexOp, memref::ExtractStridedMetadataOp>(user))
      return true;
    auto view = dyn_cast<memref::SubViewOp>(user);
    return view && readOnlyByStaging(view.getResult(), staging, launch);
  });
}

/// Whether `view` starts its dimension `step` at a whole 32-step block,
/// with unit stride: the staged chunks' blocks are the laid-out lines'.
bool keepsBlocks(memref::SubViewOp view, unsigned step) {
  std::optional<int64_t> offset = getConstantIntValue(view.getMixedOffsets()[step]);
  std::optional<int64_t> stride = getConstantIntValue(view.getMixedStrides()[step]);
  return offset && *offset % kSteps == 0 && stride == 1;
}

/// The constant weight behind what `staging` reads (k its dimension
/// `step`): subviews of the same rank inside `launch` that keep its
/// 32-step blocks, reshapes outside it, a memref.get_global of a constant
/// global with row-major data; `why` not, where there is a global (empty
/// where the operand is no weight).
FailureOr<Weight> weightBehind(const Staging &staging, gpu::LaunchOp launch, unsigned step,
                               std::string &why) {
  Value viewed = staging.source;
  while (auto view = viewed.getDefiningOp<memref::SubViewOp>()) {
    if (!launch->isAncestor(view) || view.getSourceType().getRank() != view.getType().getRank())
      break;
    if (!keepsBlocks(view, step))
      return failure();
    viewed = view.getSource();
  }
  Operation *def = viewed.getDefiningOp();
  if (!def || launch->isAncestor(def))
    return failure();
  Weight weight;
  weight.viewed = viewed;
  Value v = viewed;
  while (Operation *reshape = v.getDefiningOp()) {
    if (!isa<memref::CollapseShapeOp, memref::ExpandShapeOp>(reshape))
      break;
    weight.reshapes.insert(weight.reshapes.begin(), reshape);
    v = reshape->getOperand(0);
  }
  weight.read = v.getDefiningOp<memref::GetGlobalOp>();
  if (!weight.read)
    return failure();
  weight.global = SymbolTable::lookupNearestSymbolFrom<memref::GlobalOp>(
      weight.read, weight.read.getNameAttr());
  auto value = weight.global ? dyn_cast_or_null<ElementsAttr>(weight.global.getConstantInitValue())
                             : ElementsAttr();
  std::optional<ArrayRef<char>> data = value ? rawElementsData(value) : std::nullopt;
  auto type = cast<MemRefType>(viewed.getType());
  if (!weight.global || !weight.global.getConstant() || !data || value.isSplat() ||
      !type.getLayout().isIdentity() || !type.hasStaticShape()) {
    why = "its weight is not a constant in the code (external, splat or strided)";
    return failure();
  }
  weight.data = *data;
  weight.reads.assign(staging.reads.begin(), staging.reads.end());
  if (!readOnlyByStaging(viewed, staging, launch)) {
    why = "its weight is read by more than the staging of its chunks";
    return failure();
  }
  return weight;
}

/// The weight of `shape` (16-bit elements, row-major `data`) laid out for
/// mma.sp along dimension `k` (a multiple of 32): see the file comment.
/// Fails, saying `why`, where a group of four steps holds more than two
/// nonzeros (-0 is zero).
FailureOr<std::vector<char>> layOutForMmaSp(ArrayRef<char> data, ArrayRef<int64_t> shape,
                                             unsigned k, std::string &why) {
  int64_t steps = shape[k], outer = 1, inner = 1;
  for (unsigned d = 0; d < k; ++d)
    outer *= shape[d];
  for (unsigned d = k + 1; d < shape.size(); ++d)
    inner *= shape[d];
  if (data.size() != static_cast<size_t>(outer * steps * inner * 2)) {
    why = "its weight is not of 16-bit elements";
    return failure();
  }
  auto in = reinterpret_cast<const uint16_t *>(data.data());
  std::vector<char> bytes(data.size(), 0);
  auto out = reinterpret_cast<uint16_t *>(bytes.data());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      int64_t line = o * steps * inner + i;
      auto at = [&](int64_t step) { return line + step * inner; };
      for (int64_t block = 0; block < steps; block += kSteps) {
        uint16_t metadata[2] = {0, 0};
        for (int64_t group = 0; group < kSteps / 4; ++group) {
          int64_t first = block + 4 * group;
          SmallVector<int64_t, 4> kept, zeros;
          for (int64_t s = 0; s < 4; ++s)
            ((in[at(first + s)] & 0x7fff) ? kept : zeros).push_back(s);
          if (kept.size() > 2) {
            why = "steps " + std::to_string(first) + "-" + std::to_string(first + 3) +
                  " of its weight hold " + std::to_string(kept.size()) +
                  " nonzeros, not 2:4 along k";
            return failure();
          }
          // Fewer than two nonzeros: zeros fill in, the positions in order.
          for (int64_t z : zeros)
            if (kept.size() < 2)
              kept.push_back(z);
          llvm::sort(kept);
          for (int64_t j = 0; j < 2; ++j)
            out[at(block + 2 * group + j)] = in[at(first + kept[j])];
          metadata[group / 4] |= (kept[0] | kept[1] << 2) << (4 * (group % 4));
        }
        out[at(block + kMetadataStep)] = metadata[0];
        out[at(block + kMetadataStep + 1)] = metadata[1];
      }
    }
  return bytes;
}

/// A warp's block of WS x WD mma.sp tiles for `warps` warps over a tile of
/// `sparseTiles` x `denseTiles`, the warps tiling it exactly: per 32
/// steps, a warp loads WS blocks of the weight (an ldmatrix and two
/// metadata loads each) and WD of the other operand (an ldmatrix each)
/// for WS * WD mma.sp; the block that loads least (2 WS + WD), the fewer
/// weight blocks on a tie.
std::optional<std::pair<int64_t, int64_t>> sparseWarpBlock(int64_t sparseTiles,
                                                           int64_t denseTiles, int64_t warps) {
  if ((sparseTiles * denseTiles) % warps != 0)
    return std::nullopt;
  int64_t perWarp = sparseTiles * denseTiles / warps;
  std::optional<std::pair<int64_t, int64_t>> best;
  for (int64_t ws = 1; ws <= std::min(sparseTiles, perWarp); ++ws) {
    int64_t wd = perWarp / ws;
    if (sparseTiles % ws != 0 || perWarp % ws != 0 || denseTiles % wd != 0)
      continue;
    if (!best || 2 * ws + wd < 2 * best->first + best->second)
      best = {ws, wd};
  }
  return best;
}

/// `op` as a Matmul whose warps can compute it by mma.sp, its weight 2:4;
/// `why` not where it has a constant weight (empty where it has none).
std::optional<Matmul> asMatmul(linalg::GenericOp op, const GpuTarget &target,
                               std::string &why) {
  std::optional<StagedMatmul> staged = asStagedMatmul(op, /*tf32=*/false, target);
  if (!staged || staged->perRegister != 2 || !staged->sum.isF32())
    return std::nullopt;
  Matmul m{*staged, false, 0, 0, {}};
  FailureOr<Weight> weight = failure();
  for (bool sparseIsA : {true, false}) {
    m.sparseIsA = sparseIsA;
    std::optional<Staging> staging = stagingOf(m.sparse(), op);
    std::string reason;
    if (staging &&
        succeeded(weight = weightBehind(*staging, m.launch, m.sparse().step, reason)))
      break;
    if (why.empty())
      why = reason;
  }
  if (failed(weight))
    return std::nullopt;
  why.clear();
  m.weight = *weight;
  auto type = cast<MemRefType>(m.weight.viewed.getType());
  int64_t steps = type.getDimSize(m.sparse().step);
  if (m.chunk % kSteps != 0 || steps % kSteps != 0) {
    why = "its chunks (" + std::to_string(m.chunk) + " steps) or its reduction (" +
          std::to_string(steps) + ") are not whole blocks of 32 steps";
    return std::nullopt;
  }
  if (m.sparseExtent() % kSparse != 0 || m.denseExtent() % kDense != 0) {
    why = "its tile is not a whole number of 16x8 tiles (16 along the weight)";
    return std::nullopt;
  }
  // An edge tile's rows past the weight would give mma.sp whatever its
  // chunk held as metadata (undefined where not a valid pair).
  if (type.getDimSize(m.sparse().position) % m.sparseExtent() != 0) {
    why = "its weight's " + std::to_string(type.getDimSize(m.sparse().position)) +
          " rows or columns are not whole tiles of " + std::to_string(m.sparseExtent());
    return std::nullopt;
  }
  auto block = sparseWarpBlock(m.sparseExtent() / kSparse, m.denseExtent() / kDense,
                               m.threads / kWarp);
  if (!block) {
    why = "its warps cannot share the tile's 16x8 tiles evenly";
    return std::nullopt;
  }
  std::tie(m.warpSparse, m.warpDense) = *block;
  return m;
}

/// Lane's 4 registers of the compressed 16x16 block of `sparse`'s chunk
/// at rows (columns) `at` on, steps `step` on (an m16n8k16's A fragment).
SmallVector<Value> loadValues(Lane &l, const StagedOperand &sparse, Value at, Value step) {
  if (readableWithLdmatrix(sparse))
    return ldmatrix16x16(l, sparse, at, step);
  SmallVector<Value> regs;
  for (int64_t r = 0; r < 4; ++r)
    regs.push_back(loadRegister(l, 2, sparse, l.at(step, l.quad, 2, 8 * (r / 2)),
                                l.at(at, l.group, 1, 8 * (r % 2))));
  return regs;
}

/// Lane's metadata register of the block at rows (columns) `at` on of the
/// 32 steps from `step` on: rows g and g + 8 of the half of the groups
/// the lane's t % 2 says (lanes of t >= 2 load what mma.sp ignores).
Value loadMetadata(Lane &l, const StagedOperand &sparse, Value at, int64_t step) {
  Value k = l.at(arith::ConstantIndexOp::create(l.b, l.loc, step + kMetadataStep),
                 [](AffineExpr lane) { return lane % 2; });
  SmallVector<Value> halves;
  for (int64_t half = 0; half < 2; ++half) {
    Value value = memref::LoadOp::create(
        l.b, l.loc, sparse.chunk(), sparse.indices(k, l.at(at, l.group, 1, 8 * half), l.zero));
    halves.push_back(arith::BitcastOp::create(l.b, l.loc, l.b.getI16Type(), value));
  }
  return packRegister(l.b, l.loc, halves);
}

/// Lane's 4 registers of the dense 32x8 block of `dense`'s chunk at rows
/// (columns) `at` on, steps `step` on: register r steps 8r on.
SmallVector<Value> loadDense(Lane &l, const StagedOperand &dense, Value at, Value step) {
  if (readableWithLdmatrix(dense))
    return ldmatrix(
        l, dense, 4, step, at, [](AffineExpr j) { return j; },
        [](AffineExpr j) { return j * 0; });
  SmallVector<Value> regs;
  for (int64_t r = 0; r < 4; ++r)
    regs.push_back(loadRegister(l, 2, dense, l.at(step, l.quad, 2, 8 * r),
                                l.at(at, l.group, 1, 0)));
  return regs;
}

/// A constant global of `w`'s type holding `bytes`, beside `w`'s.
memref::GlobalOp laidOutGlobal(Weight &w, ArrayRef<char> bytes, SymbolTable &symbols) {
  auto old = cast<ElementsAttr>(*w.global.getInitialValue());
  OpBuilder b(w.global);
  b.setInsertionPointAfter(w.global);
  auto global = cast<memref::GlobalOp>(b.clone(*w.global));
  std::string name = (w.global.getSymName() + "_2of4").str();
  global.setSymName(name);
  global.setInitialValueAttr(blobElements(cast<ShapedType>(old.getType()), name, bytes));
  symbols.insert(global); // (renamed if the name is taken)
  return global;
}

/// Has `m`'s launch read `global` (the weight laid out for mma.sp) in
/// place of its weight: read before the launch through the same reshapes.
void replaceWeight(Matmul &m, memref::GlobalOp global) {
  Weight &w = m.weight;
  OpBuilder b(m.launch);
  Value weight = memref::GetGlobalOp::create(b, w.read.getLoc(), w.read.getType(),
                                             global.getSymName());
  for (Operation *reshape : w.reshapes) {
    IRMapping map;
    map.map(reshape->getOperand(0), weight);
    weight = b.clone(*reshape, map)->getResult(0);
  }
  w.viewed.replaceUsesWithIf(weight, [&](OpOperand &use) {
    return m.launch->isAncestor(use.getOwner());
  });
}

/// Erases the weights' reads (and reshapes) that nothing reads any more,
/// then their globals where no read of them is left.
void eraseUnused(ArrayRef<Weight> weights, ModuleOp module) {
  llvm::SetVector<Operation *> readOps, globals;
  for (const Weight &w : weights) {
    for (Operation *op : llvm::reverse(w.reshapes))
      readOps.insert(op);
    readOps.insert(w.read);
    globals.insert(w.global);
  }
  SmallVector<Operation *> reads(readOps.begin(), readOps.end());
  for (bool erased = true; erased;) {
    erased = false;
    for (Operation *&op : reads)
      if (op && op->use_empty()) {
        op->erase();
        op = nullptr;
        erased = true;
      }
  }
  for (Operation *global : globals)
    if (SymbolTable::symbolKnownUseEmpty(global, module))
      global->erase();
}

/// Has the staging's cp.async copies read only the steps of each 32-step
/// block of the laid-out weight that hold something (0-17): each copy
/// whose first step is 18-31 of its block is skipped (a 16-byte run along
/// k from step 16 holds the metadata: it stays), so the chunks' steps
/// 18-31 are stale, and nothing reads them. Loads (a staging through
/// registers, the copy of a misaligned view) are left whole: a guard per
/// load took resnet18's convolutions past their registers (spills on
/// sm_80).
void skipUnusedSteps(Matmul &m) {
  unsigned k = m.sparse().step;
  for (Operation *read : m.weight.reads) {
    auto copy = dyn_cast<nvgpu::DeviceAsyncCopyOp>(read);
    if (!copy || !copy->use_empty()) // (a token waited on: it stays whole)
      continue;
    OpBuilder b(copy);
    Location loc = copy.getLoc();
    AffineExpr s0 = getAffineSymbolExpr(0, b.getContext());
    Value inBlock = affine::makeComposedAffineApply(b, loc, s0 % kSteps,
                                                    {copy.getSrcIndices()[k]});
    Value used = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, inBlock,
                                       arith::ConstantIndexOp::create(b, loc, kUnusedStep));
    auto guard = scf::IfOp::create(b, loc, used, /*withElseRegion=*/false);
    copy->moveBefore(guard.thenBlock()->getTerminator());
  }
}

/// Replaces `m.op` by the warps' mma.sp over each chunk, summing in a
/// private memref<tiles x 4 x f32>, and adds the sums to the thread's
/// accumulator after the chunk loop.
void rewrite(Matmul &m) {
  Location loc = m.op.getLoc();
  MLIRContext *ctx = m.op.getContext();
  OpBuilder b(ctx);
  int64_t tiles = m.warpSparse * m.warpDense;
  Type f32 = b.getF32Type();

  SmallVector<Value> chunks{bufferOf(m.a), bufferOf(m.b)};
  Value sumsOut = sumsBuffer(b, loc, m, chunks);

  Value sums = zeroSums(b, loc, m, {tiles, 4}, f32);
  int64_t blockSparse = kSparse * m.warpSparse, blockDense = kDense * m.warpDense;
  Lane lane = m.sparseIsA ? laneOf(b, loc, m, kWarp, blockSparse, blockDense)
                          : laneOf(b, loc, m, kWarp, blockDense, blockSparse);
  Value sparseOrigin = m.sparseIsA ? lane.rowOrigin : lane.colOrigin;
  Value denseOrigin = m.sparseIsA ? lane.colOrigin : lane.rowOrigin;
  auto index = [&](int64_t v) { return arith::ConstantIndexOp::create(b, loc, v).getResult(); };

  // In the chunk loop, where the op was, in every thread (mma.sp is a
  // warp's instruction).
  b.setInsertionPoint(m.guard ? m.guard.getOperation() : m.op.getOperation());
  Type struct4 = LLVM::LLVMStructType::getLiteral(ctx, {f32, f32, f32, f32});
  Value selector = arith::ConstantIntOp::create(b, loc, b.getI32Type(), 0);
  for (int64_t step = 0; step < m.chunk; step += kSteps) {
    SmallVector<SmallVector<Value>> values, dense;
    SmallVector<Value> metadata;
    for (int64_t i = 0; i < m.warpSparse; ++i) {
      Value at = lane.plus(sparseOrigin, kSparse * i);
      values.push_back(loadValues(lane, m.sparse(), at, index(step)));
      metadata.push_back(loadMetadata(lane, m.sparse(), at, step));
    }
    for (int64_t j = 0; j < m.warpDense; ++j)
      dense.push_back(loadDense(lane, m.dense(), lane.plus(denseOrigin, kDense * j), index(step)));
    for (int64_t i = 0; i < m.warpSparse; ++i)
      for (int64_t j = 0; j < m.warpDense; ++j) {
        accumulateTile(b, loc, sums, index(i * m.warpDense + j), [&](ValueRange c) {
          return NVVM::MmaSpOp::create(
              b, loc, struct4, values[i], dense[j], c, metadata[i], selector,
              {kSparse, kDense, kSteps}, std::nullopt,
              std::array<NVVM::MMATypes, 2>{m.sparseIsA ? m.typeA : m.typeB,
                                            m.sparseIsA ? m.typeB : m.typeA});
        });
      }
  }

  // After the loop: the lanes' sums to the workgroup's buffer. Element e
  // of a tile is the weight's row (column) g + 8 (e / 2), the other
  // operand's 2t + e % 2: transposed where the weight holds the columns.
  addSumsToAccumulators(b, loc, m, sumsOut, [&] {
    for (int64_t i = 0; i < m.warpSparse; ++i)
      for (int64_t j = 0; j < m.warpDense; ++j)
        for (int64_t e = 0; e < 4; ++e) {
          Value s = lane.at(sparseOrigin, lane.group, 1, kSparse * i + 8 * (e / 2));
          Value d = lane.at(denseOrigin, lane.quad, 2, kDense * j + e % 2);
          Value sum = memref::LoadOp::create(b, loc, sums,
                                             ValueRange{index(i * m.warpDense + j), index(e)});
          memref::StoreOp::create(b, loc, sum, sumsOut,
                                  m.sparseIsA ? ValueRange{s, d} : ValueRange{d, s});
        }
  });
}

struct KilnCudaMmaSparsePass
    : mlir::kiln::impl::KilnCudaMmaSparseBase<KilnCudaMmaSparsePass> {
  using KilnCudaMmaSparseBase::KilnCudaMmaSparseBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::optional<GpuTarget> target = lookupGpuTarget(module, targetName);
    if (!target)
      return signalPassFailure();
    std::vector<Matmul> matmuls;
    std::vector<std::vector<char>> weights;
    module.walk([&](linalg::GenericOp op) {
      std::string why;
      std::optional<Matmul> m = asMatmul(op, *target, why);
      std::vector<char> bytes;
      if (m) {
        auto type = cast<MemRefType>(m->weight.viewed.getType());
        FailureOr<std::vector<char>> laidOut =
            layOutForMmaSp(m->weight.data, type.getShape(), m->sparse().step, why);
        if (succeeded(laidOut)) {
          matmuls.push_back(*m);
          weights.push_back(std::move(*laidOut));
          return;
        }
      }
      if (report && !why.empty())
        emitRemark(op.getLoc()) << "placement: not on mma.sp: " << why;
    });
    SymbolTable symbols(module);
    // One laid-out global per weight and view of it.
    DenseMap<std::tuple<Operation *, Type, unsigned>, memref::GlobalOp> laidOut;
    SmallVector<Weight> replaced;
    for (auto [m, bytes] : llvm::zip(matmuls, weights)) {
      if (report)
        emitRemark(m.op.getLoc())
            << "placement: tensor cores (mma.sp.m16n8k32, "
            << stringifyMMATypes(m.sparseIsA ? m.typeA : m.typeB) << ", 2:4 weights as "
            << (m.sparseIsA ? "A" : "B") << "), each warp "
            << (m.sparseIsA ? kSparse * m.warpSparse : kDense * m.warpDense) << "x"
            << (m.sparseIsA ? kDense * m.warpDense : kSparse * m.warpSparse) << " of the "
            << m.rows << "x" << m.cols << " tile";
      memref::GlobalOp &global =
          laidOut[{m.weight.global, m.weight.viewed.getType(), m.sparse().step}];
      if (!global)
        global = laidOutGlobal(m.weight, bytes, symbols);
      replaceWeight(m, global);
      skipUnusedSteps(m);
      rewrite(m);
      replaced.push_back(m.weight);
    }
    eraseUnused(replaced, module);
  }
};

} // namespace
