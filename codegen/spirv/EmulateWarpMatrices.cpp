//===- EmulateWarpMatrices.cpp - CUDA's warp instructions on any GPU ------===//
//
// The tensor cores' kernels, checked without an NVIDIA GPU. For the targets
// vulkan-lavapipe-sm80 and -sm90a, the CUDA passes stage and compute the
// matmuls as they do for sm_80 (cp.async, ldmatrix, mma.sync, mma.sp) and
// sm_90a (wgmma); this pass then replaces each of those instructions by
// what PTX ISA 8.0 says it computes, with the workgroup's threads and
// memory, so that the kernels' fragment layouts, ldmatrix addresses,
// descriptors and copies run on any Vulkan device and their results can
// be compared with a reference.
//
//   cp.async          the copy, at once (its commit and wait: nothing)
//   ldmatrix          each lane stores its row addresses in workgroup
//                     memory; each lane loads the values it receives
//                     from the rows the others gave
//   mma.sync, mma.sp  each lane stores its A and B registers (and mma.sp's
//                     metadata) in workgroup memory; each lane sums its 4
//                     results of D = A B + C from the others' registers
//   wgmma             each thread sums its accumulators from the operands
//                     in shared memory, read through their descriptors;
//                     done when issued (its fences and waits: nothing)
//   cvt.rna.tf32.f32  the rounding, on the bits
//   gpu.shuffle xor   each lane stores its value in workgroup memory and
//                     loads lane ^ offset's (a warp of 32 threads, which a
//                     Vulkan subgroup need not be)
//
// The sums are unrolled, with no loop of the pass's own: lavapipe
// (llvmpipe) ends a shader's loops after 65535 iterations in all, and a
// loop per sum reached that in a reduction of 4096 steps (its last
// chunks' products silently dropped).
//
// A warp is 32 consecutive threads of the workgroup, as on NVIDIA GPUs. An
// exchange is stores, a barrier, loads and a barrier: the whole workgroup
// meets, which is correct because every thread runs each warp instruction
// (kiln-cuda-mma-sync emits them outside the threads' guards).
//
// The layouts are PTX ISA 8.0's (9.7.13.4.8, 9.7.13.4.15), written here
// from the ISA rather than from kiln-cuda-mma-sync's code, so that the one
// checks the other. Lane l has group g = l / 4 and t = l % 4; a 32-bit
// register holds P values (2 of 16 bits, 1 tf32, 4 bytes), the first in
// its lowest bits, and the instruction is m16n8kK with K = 8P:
//   A (16xK): register r holds A[g + 8 (r % 2)][P t + (K/2)(r / 2) + p]
//   B (Kx8):  register r holds B[P t + (K/2) r + p][g]
//   C, D:     element c is    C[g + 8 (c / 2)][2t + c % 2]
//   ldmatrix: lane l gives the address of row l % 8 of matrix l / 8 (8
//             16-bit values) and receives, of each matrix, row g's values
//             2t and 2t + 1 (with .trans: rows 2t and 2t + 1's value g).
//
//===----------------------------------------------------------------------===//
#include "codegen/cuda/Fragments.h"
#include "codegen/gpu/Tiles.h"
#include "codegen/spirv/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include "llvm/ADT/SetVector.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNSPIRVEMULATEWARPMATRICES
#include "codegen/spirv/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using namespace mlir::kiln;

namespace {

constexpr int64_t kWarp = 32;
/// 32-bit words a lane puts in the workgroup's exchange buffer at most:
/// mma.sp's 4 registers of A, 4 of B and its metadata (mma.sync's 4 and
/// 2; ldmatrix's indices).
constexpr int64_t kSlots = 9;

/// The element types of mma.sync's operands that this pass knows.
bool emulatedType(NVVM::MMATypes type) {
  switch (type) {
  case NVVM::MMATypes::f16:
  case NVVM::MMATypes::bf16:
  case NVVM::MMATypes::tf32:
  case NVVM::MMATypes::s8:
  case NVVM::MMATypes::u8:
    return true;
  default:
    return false;
  }
}

int64_t valuesPerRegister(NVVM::MMATypes type) {
  switch (type) {
  case NVVM::MMATypes::tf32:
    return 1;
  case NVVM::MMATypes::s8:
  case NVVM::MMATypes::u8:
    return 4;
  default:
    return 2;
  }
}

/// One gpu.launch's warp instructions, emulated.
class Emulator {
public:
  Emulator(gpu::LaunchOp launch, int64_t threads)
      : launch(launch), b(launch.getContext()), loc(launch.getLoc()) {
    b.setInsertionPointToStart(&launch.getBody().front());
    auto workgroup = gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Workgroup);
    exchange = memref::AllocOp::create(
        b, loc, MemRefType::get({threads / kWarp, kWarp, kSlots}, b.getI32Type(), nullptr,
                                workgroup));
    gpu::KernelDim3 ids = launch.getThreadIds();
    AffineExpr linear = linearThreadId(launch);
    SmallVector<OpFoldResult> operands{ids.x, ids.y, ids.z};
    lane = affine::makeComposedAffineApply(b, loc, linear % kWarp, operands);
    warp = affine::makeComposedAffineApply(b, loc, linear.floorDiv(kWarp), operands);
    group = affine::makeComposedAffineApply(b, loc, (linear % kWarp).floorDiv(4), operands);
    quad = affine::makeComposedAffineApply(b, loc, linear % 4, operands);
  }

  LogicalResult run();

private:
  gpu::LaunchOp launch;
  OpBuilder b;
  Location loc;
  Value exchange;
  Value lane, warp, group, quad;
  /// A register value (vector<2xf16>, i32, ...) to its 32 bits as an i32.
  DenseMap<Value, Value> words;
  /// The pointers taken of the launch's buffers, replaced by 0 at the end.
  SmallVector<memref::ExtractAlignedPointerAsIndexOp> addresses;
  /// The ops this pass replaced, erased at the end.
  llvm::SetVector<Operation *> replaced;
  void replace(Operation *op) { replaced.insert(op); }

  Value index(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value i32(int64_t v) { return arith::ConstantIntOp::create(b, loc, b.getI32Type(), v); }
  Value toIndex(Value v) { return arith::IndexCastOp::create(b, loc, b.getIndexType(), v); }
  Value toI32(Value v) { return arith::IndexCastOp::create(b, loc, b.getI32Type(), v); }
  Value add(Value x, int64_t c) {
    return c ? arith::AddIOp::create(b, loc, x, index(c)).getResult() : x;
  }
  void barrier() { gpu::BarrierOp::create(b, loc); }

  void store(Value word, int64_t slot) {
    memref::StoreOp::create(b, loc, word, exchange, ValueRange{warp, lane, index(slot)});
  }
  Value load(Value fromLane, Value slot) {
    return memref::LoadOp::create(b, loc, exchange, ValueRange{warp, fromLane, slot});
  }

  /// `v`'s bits (an i32 or a 32-bit vector register) as an i32, emulating
  /// the op that made it where it is an ldmatrix, a vector load or a cvt.
  FailureOr<Value> wordOf(Value v);

  LogicalResult emulateCopy(nvgpu::DeviceAsyncCopyOp copy);
  LogicalResult separateView(memref::ViewOp view);
  LogicalResult emulateLdmatrix(nvgpu::LdMatrixOp op);
  LogicalResult emulateVectorLoad(vector::LoadOp op);
  void emulateTf32(NVVM::ConvertFloatToTF32Op op);
  LogicalResult emulateShuffle(gpu::ShuffleOp op);
  LogicalResult emulateMma(NVVM::MmaOp op);
  LogicalResult emulateSparseMma(NVVM::MmaSpOp op);
  LogicalResult emulateWgmma(NVVM::WgmmaMmaAsyncOp op);
  /// A wgmma operand: its buffer and its descriptor's fields, decoded.
  struct Described {
    Value buffer;                  ///< 16-bit values
    Value start, leading, stride;  ///< in 16-byte units
    bool kMajor;
    NVVM::WGMMATypes type;
  };
  Described describe(Value buffer, Value descriptor, bool kMajor, NVVM::WGMMATypes type);
  /// The operand's element (mn, k) (k a constant step), as f32.
  Value elementOf(const Described &x, Value mn, int64_t k);
  /// Stores the words of `operands` (from slot 0), meets, builds D's 4
  /// values from `c`, each by `sum(c, acc, s)` for each of `steps` steps s
  /// (unrolled), and meets; then replaces `op`'s extractvalues by them.
  LogicalResult exchangeAndSum(Operation *op, ValueRange operands, ValueRange c,
                               function_ref<Value(int64_t c, Value acc, Value s)> sum,
                               int64_t steps);
  /// Replaces the extractvalues of `op`'s struct of sums by `d`.
  LogicalResult replaceSums(Operation *op, ArrayRef<Value> d);
  /// `e` of the lane's group g, quad t and a third value s (symbols 0-2):
  /// a step of k, or the warp in its warpgroup.
  Value apply(AffineExpr e, Value s) {
    return affine::makeComposedAffineApply(
               b, loc, e, {OpFoldResult(group), OpFoldResult(quad), OpFoldResult(s)})
        .getResult();
  }
  /// Value `p` (an i32) of the P in `word`, as f32 (floats) or i32.
  Value valueOf(Value word, Value p, NVVM::MMATypes type);
};

FailureOr<Value> Emulator::wordOf(Value v) {
  if (Value word = words.lookup(v))
    return word;
  Operation *def = v.getDefiningOp();
  if (auto cast = dyn_cast_if_present<LLVM::BitcastOp>(def)) {
    replace(cast);
    return wordOf(cast.getArg());
  }
  if (auto extract = dyn_cast_if_present<vector::ExtractOp>(def)) {
    auto ldmatrix = extract.getSource().getDefiningOp<nvgpu::LdMatrixOp>();
    if (!ldmatrix || failed(emulateLdmatrix(ldmatrix)))
      return failure();
    return words.lookup(v);
  }
  if (auto vectorLoad = dyn_cast_if_present<vector::LoadOp>(def)) {
    if (failed(emulateVectorLoad(vectorLoad)))
      return failure();
    return words.lookup(v);
  }
  if (auto tf32 = dyn_cast_if_present<NVVM::ConvertFloatToTF32Op>(def)) {
    emulateTf32(tf32);
    return words.lookup(v);
  }
  if (v.getType().isInteger(32))
    return v;
  return failure();
}

LogicalResult Emulator::emulateCopy(nvgpu::DeviceAsyncCopyOp copy) {
  if (!copy->use_empty() && !llvm::all_of(copy->getUsers(), [](Operation *user) {
        return isa<nvgpu::DeviceAsyncCreateGroupOp>(user);
      }))
    return copy.emitError("kiln-spirv-emulate-warp-matrices: a cp.async whose token is used");
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(copy);
  int64_t elements = copy.getDstElements().getSExtValue();
  SmallVector<Value> from(copy.getSrcIndices()), to(copy.getDstIndices());
  Value srcBase = from.back(), dstBase = to.back();
  Type element = copy.getDst().getType().getElementType();
  for (int64_t e = 0; e < elements; ++e) {
    from.back() = add(srcBase, e);
    to.back() = add(dstBase, e);
    Value value;
    if (Value present = copy.getSrcElements()) {
      // Past srcElements, cp.async writes zeros.
      Value inside = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, index(e), present);
      auto branch = scf::IfOp::create(b, loc, element, inside, /*withElseRegion=*/true);
      OpBuilder::InsertionGuard inner(b);
      b.setInsertionPointToStart(branch.thenBlock());
      scf::YieldOp::create(b, loc, memref::LoadOp::create(b, loc, copy.getSrc(), from).getResult());
      b.setInsertionPointToStart(branch.elseBlock());
      scf::YieldOp::create(b, loc, arith::ConstantOp::create(b, loc, b.getZeroAttr(element)).getResult());
      value = branch.getResult(0);
    } else {
      value = memref::LoadOp::create(b, loc, copy.getSrc(), from);
    }
    memref::StoreOp::create(b, loc, value, copy.getDst(), to);
  }
  replace(copy);
  return success();
}

/// kiln-cuda-mma-sync puts the sums where the staged chunks were (typed
/// views of one byte buffer) when both do not fit; SPIR-V has no typed
/// views of workgroup memory. The views are used one after the other, so
/// a buffer of each computes the same.
LogicalResult Emulator::separateView(memref::ViewOp view) {
  auto bytes = view.getSource().getDefiningOp<memref::AllocOp>();
  if (!bytes || !isa_and_present<gpu::AddressSpaceAttr>(view.getType().getMemorySpace()))
    return success();
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(view);
  auto own = memref::AllocOp::create(b, loc, view.getType());
  own.setAlignment(16);
  view.getResult().replaceAllUsesWith(own.getResult());
  replace(view);
  replace(bytes);
  return success();
}

LogicalResult Emulator::emulateLdmatrix(nvgpu::LdMatrixOp op) {
  if (replaced.contains(op))
    return success();
  SmallVector<Value> indices(op.getIndices());
  if (indices.empty() || (int64_t)indices.size() > kSlots)
    return op.emitError("kiln-spirv-emulate-warp-matrices: an ldmatrix of a buffer of rank ")
           << indices.size();
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(op);
  // Every lane's row address (its indices), then each lane's values.
  for (auto [d, i] : llvm::enumerate(indices))
    store(toI32(i), d);
  barrier();
  auto rowOf = [&](Value fromLane) {
    SmallVector<Value> row;
    for (size_t d = 0; d < indices.size(); ++d)
      row.push_back(toIndex(load(fromLane, index(d))));
    return row;
  };
  auto valueAt = [&](SmallVector<Value> at, Value column) {
    at.back() = arith::AddIOp::create(b, loc, at.back(), column);
    return memref::LoadOp::create(b, loc, op.getSrcMemref(), at).getResult();
  };
  AffineExpr g, t;
  bindSymbols(b.getContext(), g, t);
  auto apply = [&](AffineExpr e) {
    return affine::makeComposedAffineApply(b, loc, e, {OpFoldResult(group), OpFoldResult(quad)})
        .getResult();
  };
  SmallVector<Value> registers;
  for (int64_t j = 0; j < op.getNumTiles(); ++j) {
    SmallVector<Value> pair;
    if (!op.getTranspose()) {
      SmallVector<Value> row = rowOf(apply(g + 8 * j));
      for (int64_t h = 0; h < 2; ++h)
        pair.push_back(valueAt(row, apply(t * 2 + h)));
    } else {
      for (int64_t h = 0; h < 2; ++h)
        pair.push_back(valueAt(rowOf(apply(t * 2 + h + 8 * j)), group));
    }
    registers.push_back(packWord(b, loc, pair));
  }
  barrier();
  // The registers by their vector.extract's.
  for (Operation *user : op->getUsers()) {
    auto extract = dyn_cast<vector::ExtractOp>(user);
    std::optional<int64_t> r;
    if (extract && extract.getStaticPosition().size() == 1)
      r = extract.getStaticPosition()[0];
    if (!r || *r < 0 || *r >= (int64_t)registers.size())
      return op.emitError("kiln-spirv-emulate-warp-matrices: an ldmatrix whose registers are "
                          "read other than one at a time");
    words[extract.getResult()] = registers[*r];
    replace(extract);
  }
  replace(op);
  return success();
}

LogicalResult Emulator::emulateVectorLoad(vector::LoadOp op) {
  VectorType type = op.getVectorType();
  if (type.getRank() != 1 || type.getNumElements() * type.getElementTypeBitWidth() != 32)
    return op.emitError("kiln-spirv-emulate-warp-matrices: a register of ")
           << type << " (32 bits of values expected)";
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(op);
  SmallVector<Value> at(op.getIndices()), values;
  Value base = at.back();
  for (int64_t e = 0; e < type.getNumElements(); ++e) {
    at.back() = add(base, e);
    values.push_back(memref::LoadOp::create(b, loc, op.getBase(), at));
  }
  words[op.getResult()] = packWord(b, loc, values);
  replace(op);
  return success();
}

void Emulator::emulateTf32(NVVM::ConvertFloatToTF32Op op) {
  // Round to nearest, ties away from zero, at bit 13: add half of the
  // dropped bits' weight to the magnitude and drop them. Inf and NaN keep
  // their bits (a NaN's payload may lose its low bits, still a NaN).
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(op);
  Value bits = arith::BitcastOp::create(b, loc, b.getI32Type(), op.getSrc());
  Value exponent = arith::AndIOp::create(b, loc, bits, i32(0x7F800000));
  Value finite = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, exponent, i32(0x7F800000));
  Value rounded = arith::AndIOp::create(
      b, loc, arith::AddIOp::create(b, loc, bits, i32(0x1000)), i32(0xFFFFE000));
  words[op.getRes()] = arith::SelectOp::create(b, loc, finite, rounded, bits);
  replace(op);
}

LogicalResult Emulator::emulateShuffle(gpu::ShuffleOp op) {
  Type type = op.getValue().getType();
  std::optional<int64_t> offset = getConstantIntValue(op.getOffset());
  if (op.getMode() != gpu::ShuffleMode::XOR || !offset || *offset < 0 || *offset >= kWarp ||
      getConstantIntValue(op.getWidth()) != kWarp || !op.getValid().use_empty() ||
      !(type.isF32() || type.isInteger(32)))
    return op.emitError("kiln-spirv-emulate-warp-matrices: a gpu.shuffle other than an xor of "
                        "32 bits by a constant under 32 over a warp of 32, its validity unread");
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(op);
  Value word = op.getValue();
  if (type.isF32())
    word = arith::BitcastOp::create(b, loc, b.getI32Type(), word);
  store(word, 0);
  barrier();
  Value from = toIndex(arith::XOrIOp::create(b, loc, toI32(lane), op.getOffset()));
  Value got = load(from, index(0));
  barrier();
  if (type.isF32())
    got = arith::BitcastOp::create(b, loc, type, got);
  op.getShuffleResult().replaceAllUsesWith(got);
  replace(op);
  return success();
}

Value Emulator::valueOf(Value word, Value p, NVVM::MMATypes type) {
  Type f32 = b.getF32Type(), i16 = b.getI16Type();
  switch (type) {
  case NVVM::MMATypes::f16: {
    Value shift = arith::MulIOp::create(b, loc, p, i32(16));
    Value half = arith::TruncIOp::create(b, loc, i16,
                                         arith::ShRUIOp::create(b, loc, word, shift));
    Value f16 = arith::BitcastOp::create(b, loc, b.getF16Type(), half);
    return arith::ExtFOp::create(b, loc, f32, f16);
  }
  case NVVM::MMATypes::bf16: {
    // bf16 is the high half of an f32.
    Value shift = arith::MulIOp::create(b, loc, arith::SubIOp::create(b, loc, i32(1), p), i32(16));
    Value high = arith::AndIOp::create(b, loc, arith::ShLIOp::create(b, loc, word, shift),
                                       i32(0xFFFF0000));
    return arith::BitcastOp::create(b, loc, f32, high);
  }
  case NVVM::MMATypes::tf32: // the tensor cores read 19 bits of it
    return arith::BitcastOp::create(b, loc, f32,
                                    arith::AndIOp::create(b, loc, word, i32(0xFFFFE000)));
  case NVVM::MMATypes::s8: {
    Value up = arith::MulIOp::create(b, loc, arith::SubIOp::create(b, loc, i32(3), p), i32(8));
    return arith::ShRSIOp::create(b, loc, arith::ShLIOp::create(b, loc, word, up), i32(24));
  }
  default: { // u8
    Value down = arith::MulIOp::create(b, loc, p, i32(8));
    return arith::AndIOp::create(b, loc, arith::ShRUIOp::create(b, loc, word, down), i32(0xFF));
  }
  }
}

LogicalResult Emulator::emulateMma(NVVM::MmaOp op) {
  NVVM::MMAShapeAttr shape = op.getShape();
  std::optional<NVVM::MMATypes> typeA = op.getMultiplicandAPtxType();
  std::optional<NVVM::MMATypes> typeB = op.getMultiplicandBPtxType();
  if (!typeA)
    typeA = NVVM::MmaOp::inferOperandMMAType(
        getElementTypeOrSelf(op.getOperandA().front().getType()), false);
  if (!typeB)
    typeB = NVVM::MmaOp::inferOperandMMAType(
        getElementTypeOrSelf(op.getOperandB().front().getType()), false);
  if (!typeA || !typeB || !emulatedType(*typeA) || !emulatedType(*typeB) ||
      valuesPerRegister(*typeA) != valuesPerRegister(*typeB))
    return op.emitError("kiln-spirv-emulate-warp-matrices: an mma.sync of operand types it "
                        "does not know");
  int64_t perRegister = valuesPerRegister(*typeA), k = 8 * perRegister;
  if (shape.getM() != 16 || shape.getN() != 8 || shape.getK() != k ||
      op.getLayoutA() != NVVM::MMALayout::row || op.getLayoutB() != NVVM::MMALayout::col ||
      op.getOperandA().size() != 4 || op.getOperandB().size() != 2 ||
      op.getOperandC().size() != 4)
    return op.emitError("kiln-spirv-emulate-warp-matrices: an mma.sync other than "
                        "m16n8k") << k << ".row.col with 4 registers of A, 2 of B and 4 sums";
  bool integer = *typeA == NVVM::MMATypes::s8 || *typeA == NVVM::MMATypes::u8;
  int64_t half = k / 2;
  AffineExpr g, t, kk;
  bindSymbols(b.getContext(), g, t, kk);
  // Row g + 8 (c / 2), column 2t + c % 2: the sum over the K steps s of
  // A's value there (lane 4g + (s % K/2) / P, register c / 2 + 2 (s / K/2))
  // times B's (lane 4 (2t + c % 2) + (s % K/2) / P, register 4 + s / K/2).
  return exchangeAndSum(
      op, llvm::to_vector(llvm::concat<Value>(op.getOperandA(), op.getOperandB())),
      op.getOperandC(), [&](int64_t c, Value acc, Value s) {
        Value laneA = apply(g * 4 + (kk % half).floorDiv(perRegister), s);
        Value regA = apply(kk.floorDiv(half) * 2 + c / 2, s);
        Value laneB = apply((t * 2 + c % 2) * 4 + (kk % half).floorDiv(perRegister), s);
        Value regB = apply(kk.floorDiv(half) + 4, s);
        Value p = toI32(apply(kk % perRegister, s));
        Value a = valueOf(load(laneA, regA), p, *typeA);
        Value bv = valueOf(load(laneB, regB), p, *typeB);
        if (integer)
          return arith::AddIOp::create(b, loc, acc, arith::MulIOp::create(b, loc, a, bv))
              .getResult();
        return math::FmaOp::create(b, loc, a, bv, acc).getResult();
      }, k);
}

LogicalResult Emulator::emulateSparseMma(NVVM::MmaSpOp op) {
  NVVM::MMAShapeAttr shape = op.getShape();
  std::optional<NVVM::MMATypes> typeA = op.getMultiplicandAPtxType();
  std::optional<NVVM::MMATypes> typeB = op.getMultiplicandBPtxType();
  bool halves = typeA && typeB && *typeA == *typeB &&
                (*typeA == NVVM::MMATypes::f16 || *typeA == NVVM::MMATypes::bf16);
  std::optional<int64_t> selector = getConstantIntValue(op.getSparsitySelector());
  if (!halves || shape.getM() != 16 || shape.getN() != 8 || shape.getK() != 32 ||
      op.getOperandA().size() != 4 || op.getOperandB().size() != 4 ||
      op.getOperandC().size() != 4 || !selector || *selector < 0 || *selector > 1 ||
      op.getOrderedMetadata())
    return op.emitError("kiln-spirv-emulate-warp-matrices: an mma.sp other than "
                        "m16n8k32 of f16 or bf16 with a constant sparsity selector");
  // A is 16x32 with two nonzeros in each group of 4 steps, given as the
  // 16x16 of them (register r holds compressed steps 2t + 8 (r / 2) + {0,
  // 1} of row g + 8 (r % 2), as mma.sync's A) and their positions: lane
  // 4g + 2 selector + h holds in bits 16 i + 4 j' those of row g + 8 i,
  // group 4h + j' (its first step's position in the lower 2 bits). B is
  // 32x8: register r holds steps 2t + 8r + {0, 1} of column g.
  AffineExpr g, t, cc;
  bindSymbols(b.getContext(), g, t, cc);
  SmallVector<Value> operands(op.getOperandA());
  llvm::append_range(operands, op.getOperandB());
  operands.push_back(op.getSparseMetadata());
  return exchangeAndSum(op, operands, op.getOperandC(), [&](int64_t c, Value acc, Value s) {
    // Compressed step cc of row g + 8 (c / 2): its value, and the dense
    // step it stands for, 4 (cc / 2) + its position, of B's column 2t + c % 2.
    Value laneA = apply(g * 4 + (cc % 8).floorDiv(2), s);
    Value regA = apply(cc.floorDiv(8) * 2 + c / 2, s);
    Value p = toI32(apply(cc % 2, s));
    Value a = valueOf(load(laneA, regA), p, *typeA);
    Value laneE = apply(g * 4 + 2 * *selector + cc.floorDiv(8), s);
    Value bit = toI32(apply((cc.floorDiv(2) % 4) * 4 + (cc % 2) * 2 + 16 * (c / 2), s));
    Value position = arith::AndIOp::create(
        b, loc, arith::ShRUIOp::create(b, loc, load(laneE, index(8)), bit), i32(3));
    Value step = arith::AddIOp::create(b, loc, toIndex(position),
                                       apply(cc.floorDiv(2) * 4, s));
    // B's value at `step` (symbol 2 now) of column 2t + c % 2: lane
    // 4 column + (step % 8) / 2, register 4 + step / 8, value step % 2.
    Value laneB = apply((t * 2 + c % 2) * 4 + (cc % 8).floorDiv(2), step);
    Value regB = apply(cc.floorDiv(8) + 4, step);
    Value pB = toI32(apply(cc % 2, step));
    Value bv = valueOf(load(laneB, regB), pB, *typeB);
    return math::FmaOp::create(b, loc, a, bv, acc).getResult();
  }, 16);
}

/// The buffer whose address `descriptor` was made from: the one
/// memref.extract_aligned_pointer_as_index among the ops it is computed by.
Value bufferOfDescriptor(Value descriptor) {
  SmallVector<Value> work{descriptor};
  DenseSet<Value> seen;
  Value buffer;
  while (!work.empty()) {
    Value v = work.pop_back_val();
    Operation *def = v.getDefiningOp();
    if (!def || !seen.insert(v).second)
      continue;
    if (auto address = dyn_cast<memref::ExtractAlignedPointerAsIndexOp>(def)) {
      if (buffer && buffer != address.getSource())
        return Value();
      buffer = address.getSource();
      continue;
    }
    llvm::append_range(work, def->getOperands());
  }
  return buffer;
}

Emulator::Described Emulator::describe(Value buffer, Value descriptor, bool kMajor,
                                        NVVM::WGMMATypes type) {
  // A 64-bit descriptor (PTX ISA 8.0, Matrix Descriptor Format; layout
  // type 0, no swizzle): start address >> 4 in bits 0-13, the leading
  // byte offset >> 4 (between core matrices adjacent along k) in 16-29,
  // the stride byte offset >> 4 (along M or N) in 32-45.
  Type i64 = b.getI64Type();
  auto field = [&](int64_t shift) {
    Value shifted = arith::ShRUIOp::create(
        b, loc, descriptor, arith::ConstantIntOp::create(b, loc, i64, shift));
    Value units = arith::AndIOp::create(b, loc, shifted,
                                        arith::ConstantIntOp::create(b, loc, i64, 0x3FFF));
    return arith::IndexCastUIOp::create(b, loc, b.getIndexType(), units).getResult();
  };
  return Described{buffer, field(0), field(16), field(32), kMajor, type};
}

Value Emulator::elementOf(const Described &x, Value mn, int64_t k) {
  // A core matrix is 8 lines of 16 bytes: along k where the operand is
  // K-major, along M or N where it is MN-major (transposed).
  AffineExpr m, st, lb, sb;
  bindSymbols(b.getContext(), m, st, lb, sb);
  AffineExpr line = x.kMajor ? m % 8 : getAffineConstantExpr(k % 8, b.getContext());
  AffineExpr run = x.kMajor ? getAffineConstantExpr(k % 8, b.getContext()) : m % 8;
  AffineExpr bytes = st * 16 + (k / 8) * lb * 16 + m.floorDiv(8) * sb * 16 + line * 16 + run * 2;
  Value at = affine::makeComposedAffineApply(
      b, loc, bytes.floorDiv(2),
      {OpFoldResult(mn), OpFoldResult(x.start), OpFoldResult(x.leading), OpFoldResult(x.stride)});
  Value value = memref::LoadOp::create(b, loc, x.buffer, ValueRange{at});
  if (x.type == NVVM::WGMMATypes::bf16) {
    Value bits = arith::BitcastOp::create(b, loc, b.getI16Type(), value);
    Value wide = arith::ShLIOp::create(b, loc, arith::ExtUIOp::create(b, loc, b.getI32Type(), bits),
                                       i32(16));
    return arith::BitcastOp::create(b, loc, b.getF32Type(), wide);
  }
  return arith::ExtFOp::create(b, loc, b.getF32Type(), value);
}

LogicalResult Emulator::emulateWgmma(NVVM::WgmmaMmaAsyncOp op) {
  NVVM::MMAShapeAttr shape = op.getShape();
  bool halves = op.getTypeA() == op.getTypeB() &&
                (op.getTypeA() == NVVM::WGMMATypes::f16 ||
                 op.getTypeA() == NVVM::WGMMATypes::bf16);
  auto structType = dyn_cast<LLVM::LLVMStructType>(op.getInouts().getType());
  Value bufferA = bufferOfDescriptor(op.getDescriptorA());
  Value bufferB = bufferOfDescriptor(op.getDescriptorB());
  if (!halves || op.getTypeD() != NVVM::WGMMATypes::f32 || shape.getM() != 64 ||
      shape.getK() != 16 || !structType ||
      (int64_t)structType.getBody().size() != shape.getN() / 2 ||
      op.getScaleD() != NVVM::WGMMAScaleOut::one || op.getScaleA() != NVVM::WGMMAScaleIn::one ||
      op.getScaleB() != NVVM::WGMMAScaleIn::one)
    return op.emitError("kiln-spirv-emulate-warp-matrices: a wgmma other than m64nNk16 of f16 "
                        "or bf16 summed in f32, accumulating, unscaled");
  if (!bufferA || !bufferB)
    return op.emitError("kiln-spirv-emulate-warp-matrices: a wgmma descriptor not made from "
                        "one buffer's address");
  // The sums it adds to: the inserts that built its accumulator.
  int64_t regs = shape.getN() / 2;
  SmallVector<Value> c(regs);
  Value acc = op.getInouts();
  while (auto insert = acc.getDefiningOp<LLVM::InsertValueOp>()) {
    if (insert.getPosition().size() == 1 && !c[insert.getPosition()[0]])
      c[insert.getPosition()[0]] = insert.getValue();
    replace(insert);
    acc = insert.getContainer();
  }
  if (auto poison = acc.getDefiningOp<LLVM::PoisonOp>())
    replace(poison);
  if (llvm::is_contained(c, Value()))
    return op.emitError("kiln-spirv-emulate-warp-matrices: a wgmma whose accumulator is not "
                        "built value by value");

  // Thread t of the warpgroup (warp w = (t / 32) % 4, g, q) holds in
  // register d D[16 w + g + 8 ((d % 4) / 2)][8 (d / 4) + 2 q + d % 2]; both
  // operands come from shared memory, so each thread sums its own.
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(op);
  Described a = describe(bufferA, op.getDescriptorA(), op.getLayoutA() == NVVM::MMALayout::row,
                         op.getTypeA());
  Described bx = describe(bufferB, op.getDescriptorB(), op.getLayoutB() == NVVM::MMALayout::col,
                          op.getTypeB());
  // apply's third symbol here: the warp in its warpgroup.
  AffineExpr w, g, q;
  bindSymbols(b.getContext(), g, q, w);
  Value warpInGroup = affine::makeComposedAffineApply(
      b, loc, getAffineSymbolExpr(0, b.getContext()) % 4, {OpFoldResult(warp)});
  SmallVector<Value> d;
  for (int64_t r = 0; r < regs; ++r) {
    Value row = apply(w * 16 + g + 8 * ((r % 4) / 2), warpInGroup);
    Value col = apply(q * 2 + 8 * (r / 4) + r % 2, warpInGroup);
    Value sum = c[r];
    for (int64_t step = 0; step < 16; ++step) // unrolled (see the top of the file)
      sum = math::FmaOp::create(b, loc, elementOf(a, row, step), elementOf(bx, col, step), sum);
    d.push_back(sum);
  }
  return replaceSums(op, d);
}

LogicalResult Emulator::exchangeAndSum(Operation *op, ValueRange operands, ValueRange c,
                                       function_ref<Value(int64_t c, Value acc, Value s)> sum,
                                       int64_t steps) {
  SmallVector<Value> registers;
  for (Value v : operands) {
    FailureOr<Value> word = wordOf(v);
    if (failed(word))
      return op->emitError("kiln-spirv-emulate-warp-matrices: an operand of '")
             << op->getName() << "' made by "
             << (v.getDefiningOp() ? v.getDefiningOp()->getName().getStringRef() : "an argument");
    registers.push_back(*word);
  }
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(op);
  for (auto [slot, word] : llvm::enumerate(registers))
    store(word, slot);
  barrier();
  SmallVector<Value> d(c); // unrolled (see the top of the file)
  for (int64_t e = 0; e < 4; ++e)
    for (int64_t step = 0; step < steps; ++step)
      d[e] = sum(e, d[e], index(step));
  barrier();
  return replaceSums(op, d);
}

LogicalResult Emulator::replaceSums(Operation *op, ArrayRef<Value> d) {
  for (Operation *user : llvm::make_early_inc_range(op->getUsers())) {
    auto extract = dyn_cast<LLVM::ExtractValueOp>(user);
    if (!extract || extract.getPosition().size() != 1 ||
        extract.getPosition()[0] >= (int64_t)d.size())
      return op->emitError("kiln-spirv-emulate-warp-matrices: '")
             << op->getName() << "' whose sums are read other than one at a time";
    extract.getResult().replaceAllUsesWith(d[extract.getPosition()[0]]);
    replace(extract);
  }
  replace(op);
  return success();
}

LogicalResult Emulator::run() {
  SmallVector<Operation *> ops;
  launch.getBody().walk([&](Operation *op) { ops.push_back(op); });
  for (Operation *op : ops) {
    LogicalResult result = success();
    if (auto copy = dyn_cast<nvgpu::DeviceAsyncCopyOp>(op))
      result = emulateCopy(copy);
    else if (isa<NVVM::CpAsyncCommitGroupOp, NVVM::CpAsyncWaitGroupOp>(op))
      replace(op);
    else if (auto mma = dyn_cast<NVVM::MmaOp>(op))
      result = emulateMma(mma);
    else if (auto sparse = dyn_cast<NVVM::MmaSpOp>(op))
      result = emulateSparseMma(sparse);
    else if (auto shuffle = dyn_cast<gpu::ShuffleOp>(op))
      result = emulateShuffle(shuffle);
    else if (auto view = dyn_cast<memref::ViewOp>(op))
      result = separateView(view);
    else if (auto wgmma = dyn_cast<NVVM::WgmmaMmaAsyncOp>(op))
      result = emulateWgmma(wgmma);
    else if (isa<NVVM::FenceProxyOp, NVVM::WgmmaFenceAlignedOp, NVVM::WgmmaGroupSyncAlignedOp,
                 NVVM::WgmmaWaitGroupSyncOp>(op))
      replace(op); // the emulated wgmma are done when issued
    else if (auto address = dyn_cast<memref::ExtractAlignedPointerAsIndexOp>(op))
      addresses.push_back(address);
    if (failed(result))
      return failure();
  }
  // Where a buffer starts in the shared window (wgmma's descriptors,
  // after they found their buffers), or where a view starts, for the
  // choice between cp.async and copies of one element: 0. A descriptor
  // then holds its offset in its buffer, and a Vulkan buffer binding
  // starts on 16 bytes (its offset alignment is), so a view's offset
  // decides the other.
  for (memref::ExtractAlignedPointerAsIndexOp address : addresses) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(address);
    address.getResult().replaceAllUsesWith(index(0));
    replace(address);
  }
  // Users before what they use: a replaced op's users are replaced too.
  SmallVector<Operation *> pending = replaced.takeVector();
  for (size_t before = 0; before != pending.size();) {
    before = pending.size();
    llvm::erase_if(pending, [](Operation *op) {
      if (!op->use_empty())
        return false;
      op->erase();
      return true;
    });
  }
  if (!pending.empty())
    return pending.front()->emitError("kiln-spirv-emulate-warp-matrices: '")
           << pending.front()->getName() << "' is used by ops it does not emulate";
  WalkResult left = launch.getBody().walk([](Operation *op) {
    if (isa<NVVM::NVVMDialect, nvgpu::NVGPUDialect, LLVM::LLVMDialect>(op->getDialect())) {
      op->emitError("kiln-spirv-emulate-warp-matrices: cannot emulate '")
          << op->getName() << "'";
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return failure(left.wasInterrupted());
}

struct KilnSpirvEmulateWarpMatricesPass
    : mlir::kiln::impl::KilnSpirvEmulateWarpMatricesBase<KilnSpirvEmulateWarpMatricesPass> {
  void runOnOperation() override {
    SmallVector<gpu::LaunchOp> launches;
    getOperation().walk([&](gpu::LaunchOp launch) { launches.push_back(launch); });
    for (gpu::LaunchOp launch : launches) {
      bool warpInstructions = false;
      launch.getBody().walk([&](Operation *op) {
        if (isa<NVVM::NVVMDialect, nvgpu::NVGPUDialect>(op->getDialect()))
          warpInstructions = true;
      });
      if (!warpInstructions)
        continue;
      std::optional<std::array<int64_t, 3>> size = staticBlockSize(launch);
      int64_t threads = size ? (*size)[0] * (*size)[1] * (*size)[2] : 0;
      if (!threads || threads % kWarp != 0) {
        launch.emitError("kiln-spirv-emulate-warp-matrices: warp instructions in a workgroup "
                         "that is not a whole number of warps of 32 threads");
        return signalPassFailure();
      }
      if (failed(Emulator(launch, threads).run()))
        return signalPassFailure();
    }
  }
};

} // namespace
