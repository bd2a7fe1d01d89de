//===- PackParams.cpp - a kernel's scalars and shapes in one buffer -------===//
//
// A Vulkan kernel's arguments are storage buffers: a scalar argument, or a
// buffer whose sizes or strides are only known at run time, has no direct
// form. Each kernel gets one `params` buffer of 32-bit words instead, which
// the host fills per launch: its scalar arguments, and for every buffer of
// dynamic shape or layout the offset, sizes and strides with which the
// kernel addresses it as a flat array (those of them its type knows, the
// kernel takes as constants).
//
//===----------------------------------------------------------------------===//
#include "codegen/gpu/Passes.h"

#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNGPUPACKPARAMS
#include "codegen/gpu/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;

namespace {

/// Whether kernels address a buffer of `type` as it is: static sizes and
/// strides, at the start of its buffer. (The SPIR-V conversion drops the
/// offset of a 0-d view: a view with an offset is linearized here, by the
/// same rule for every rank.)
bool isStaticBuffer(MemRefType type) {
  SmallVector<int64_t> strides;
  int64_t offset;
  return type.hasStaticShape() && succeeded(type.getStridesAndOffset(strides, offset)) &&
         offset == 0 && !llvm::any_of(strides, ShapedType::isDynamic);
}

/// How one kernel argument is passed.
struct ArgPlan {
  enum Kind { Keep, Scalar, Flat } kind = Keep;
  unsigned firstWord = 0; ///< Scalar: its word; Flat: offset, then sizes, then strides
  unsigned newIndex = 0;  ///< Keep, Flat: the argument's index in the new signature
};

/// Words of params a scalar of `type` takes: 2 for 64 bits, else 1; 0 for
/// what kernels cannot be passed.
unsigned wordsOf(Type type) {
  if (type.isIndex() || type.isF32() || type.isF16() || type.isBF16() ||
      (type.isInteger() && type.getIntOrFloatBitWidth() <= 32))
    return 1;
  return type.isInteger(64) || type.isF64() ? 2 : 0;
}

/// The host value of a 64-bit scalar as two i32 words, low first.
std::pair<Value, Value> toWords(OpBuilder &b, Location loc, Value value) {
  Type i32 = b.getI32Type(), i64 = b.getI64Type();
  if (value.getType().isF64())
    value = arith::BitcastOp::create(b, loc, i64, value);
  Value high = arith::ShRUIOp::create(b, loc, value, arith::ConstantIntOp::create(b, loc, i64, 32));
  return {arith::TruncIOp::create(b, loc, i32, value), arith::TruncIOp::create(b, loc, i32, high)};
}

/// The kernel's 64-bit value of `type` from its two words.
Value fromWords(OpBuilder &b, Location loc, Value low, Value high, Type type) {
  Type i64 = b.getI64Type();
  Value shifted = arith::ShLIOp::create(b, loc, arith::ExtUIOp::create(b, loc, i64, high),
                                        arith::ConstantIntOp::create(b, loc, i64, 32));
  Value value =
      arith::OrIOp::create(b, loc, shifted, arith::ExtUIOp::create(b, loc, i64, low));
  return type.isF64() ? arith::BitcastOp::create(b, loc, type, value).getResult() : value;
}

/// The host value of scalar `value` (of one word) as an i32.
Value toWord(OpBuilder &b, Location loc, Value value) {
  Type type = value.getType();
  Type i32 = b.getI32Type();
  if (type.isIndex())
    return b.createOrFold<arith::IndexCastOp>(loc, i32, value);
  if (type.isInteger(32))
    return value;
  if (type.isInteger())
    return b.createOrFold<arith::ExtUIOp>(loc, i32, value);
  if (type.isF32())
    return b.createOrFold<arith::BitcastOp>(loc, i32, value);
  Value bits = arith::BitcastOp::create(b, loc, b.getI16Type(), value); // f16, bf16
  return b.createOrFold<arith::ExtUIOp>(loc, i32, bits);
}

/// The kernel's value of `type` from its i32 word.
Value fromWord(OpBuilder &b, Location loc, Value word, Type type) {
  if (type.isIndex())
    return arith::IndexCastOp::create(b, loc, type, word);
  if (type.isInteger(32))
    return word;
  if (type.isInteger())
    return arith::TruncIOp::create(b, loc, type, word);
  if (type.isF32())
    return arith::BitcastOp::create(b, loc, type, word);
  Value bits = arith::TruncIOp::create(b, loc, b.getI16Type(), word);
  return arith::BitcastOp::create(b, loc, type, bits);
}

/// Rewrites the kernel's accesses of flat argument `arg` (a buffer of
/// `type`, now a 1-D array) through `offset` and `strides`, its memref.dim
/// queries to `sizes`.
LogicalResult linearizeAccesses(BlockArgument arg, MemRefType type, Value offset,
                                ArrayRef<Value> sizes, ArrayRef<Value> strides) {
  auto linear = [&](OpBuilder &b, Location loc, ValueRange indices) {
    Value at = offset;
    for (auto [index, stride] : llvm::zip(indices, strides))
      at = arith::AddIOp::create(b, loc, at, arith::MulIOp::create(b, loc, index, stride));
    return at;
  };
  for (Operation *user : llvm::make_early_inc_range(arg.getUsers())) {
    OpBuilder b(user);
    if (auto load = dyn_cast<memref::LoadOp>(user)) {
      Value at = linear(b, load.getLoc(), load.getIndices());
      load->setOperands(ValueRange{arg, at});
      continue;
    }
    if (auto store = dyn_cast<memref::StoreOp>(user)) {
      Value at = linear(b, store.getLoc(), store.getIndices());
      store->setOperands(ValueRange{store.getValueToStore(), arg, at});
      continue;
    }
    // CUDA's asynchronous copies (kiln-gpu-promote-operands) read it like
    // loads, and check where the view starts: the flat buffer starts where
    // the original did (a view of it from its buffer's start), the view at
    // `offset` in it.
    if (auto copy = dyn_cast<nvgpu::DeviceAsyncCopyOp>(user); copy && copy.getDst() != arg) {
      Value at = linear(b, copy.getLoc(), copy.getSrcIndices());
      copy.getSrcIndicesMutable().assign(at);
      continue;
    }
    if (isa<memref::ExtractAlignedPointerAsIndexOp>(user))
      continue;
    if (auto metadata = dyn_cast<memref::ExtractStridedMetadataOp>(user);
        metadata && metadata.getBaseBuffer().use_empty()) {
      metadata.getOffset().replaceAllUsesWith(offset);
      for (auto [result, size] : llvm::zip(metadata.getSizes(), sizes))
        result.replaceAllUsesWith(size);
      for (auto [result, stride] : llvm::zip(metadata.getStrides(), strides))
        result.replaceAllUsesWith(stride);
      metadata.erase();
      continue;
    }
    if (auto dim = dyn_cast<memref::DimOp>(user)) {
      std::optional<int64_t> index = dim.getConstantIndex();
      if (!index)
        return dim.emitError("kiln-gpu-pack-params: a kernel's memref.dim needs a constant "
                             "dimension");
      dim.replaceAllUsesWith(sizes[*index]);
      dim.erase();
      continue;
    }
    return user->emitError("kiln-gpu-pack-params: a buffer of dynamic shape or layout (")
           << type << ") is read or written by '" << user->getName()
           << "'; kernels address such buffers through loads, stores and asynchronous "
              "copies only";
  }
  return success();
}

/// The words and the new argument types of `kernel`'s plan.
struct KernelPlan {
  SmallVector<ArgPlan> args;
  SmallVector<Type> newTypes; ///< without the params buffer
  unsigned words = 0;
};

FailureOr<KernelPlan> planKernel(gpu::GPUFuncOp kernel) {
  KernelPlan plan;
  for (BlockArgument arg : kernel.getArguments()) {
    ArgPlan p;
    auto type = dyn_cast<MemRefType>(arg.getType());
    if (!type) {
      unsigned words = wordsOf(arg.getType());
      if (!words)
        return kernel.emitError("kiln-gpu-pack-params: kernel argument ")
               << arg.getArgNumber() << " is a " << arg.getType()
               << ", which kernels cannot be passed";
      p.kind = ArgPlan::Scalar;
      p.firstWord = plan.words;
      plan.words += words;
    } else if (isStaticBuffer(type)) {
      p.newIndex = plan.newTypes.size();
      plan.newTypes.push_back(type);
    } else {
      p.kind = ArgPlan::Flat;
      p.firstWord = plan.words;
      plan.words += 1 + 2 * type.getRank();
      p.newIndex = plan.newTypes.size();
      plan.newTypes.push_back(MemRefType::get({ShapedType::kDynamic}, type.getElementType(),
                                              MemRefLayoutAttrInterface(),
                                              type.getMemorySpace()));
    }
    plan.args.push_back(p);
  }
  return plan;
}

/// Rewrites `kernel` to take `plan`'s arguments and a params buffer.
LogicalResult rewriteKernel(gpu::GPUFuncOp kernel, const KernelPlan &plan, Type paramsType) {
  unsigned oldCount = plan.args.size();
  Location loc = kernel.getLoc();
  if (failed(kernel.insertArgument(oldCount, paramsType, DictionaryAttr(), loc)))
    return failure();
  Block &entry = kernel.getBody().front();
  OpBuilder b = OpBuilder::atBlockBegin(&entry);
  Value params = entry.getArgument(oldCount);
  auto word = [&](unsigned i) {
    Value w = memref::LoadOp::create(b, loc, params,
                                     ValueRange{arith::ConstantIndexOp::create(b, loc, i)});
    return w;
  };
  auto indexWord = [&](unsigned i) { return fromWord(b, loc, word(i), b.getIndexType()); };
  for (auto [i, p] : llvm::enumerate(plan.args)) {
    BlockArgument arg = entry.getArgument(i);
    if (p.kind == ArgPlan::Scalar) {
      Type type = arg.getType();
      arg.replaceAllUsesWith(
          wordsOf(type) == 2
              ? fromWords(b, loc, word(p.firstWord), word(p.firstWord + 1), type)
              : fromWord(b, loc, word(p.firstWord), type));
    } else if (p.kind == ArgPlan::Flat) {
      auto type = cast<MemRefType>(arg.getType());
      // What the type knows is a constant, the rest comes from params:
      // with its strides constant, a thread's addresses into a view are
      // one base and immediate offsets, where loaded strides made each a
      // register of its own (a chunk of a convolution's output, at a
      // static offset: 241 registers a thread instead of 103).
      int64_t rank = type.getRank(), staticOffset;
      SmallVector<int64_t> staticStrides;
      if (failed(type.getStridesAndOffset(staticStrides, staticOffset))) {
        staticStrides.assign(rank, ShapedType::kDynamic);
        staticOffset = ShapedType::kDynamic;
      }
      auto known = [&](int64_t value, unsigned w) -> Value {
        if (ShapedType::isDynamic(value))
          return indexWord(w);
        return arith::ConstantIndexOp::create(b, loc, value);
      };
      Value offset = known(staticOffset, p.firstWord);
      SmallVector<Value> sizes, strides;
      for (int64_t d = 0; d < rank; ++d)
        sizes.push_back(known(type.getDimSize(d), p.firstWord + 1 + d));
      for (int64_t d = 0; d < rank; ++d)
        strides.push_back(known(staticStrides[d], p.firstWord + 1 + rank + d));
      arg.setType(plan.newTypes[p.newIndex]);
      if (failed(linearizeAccesses(arg, type, offset, sizes, strides)))
        return failure();
    }
  }
  // The new arguments: the buffers kept or flattened, then params.
  llvm::BitVector erase(oldCount + 1);
  for (auto [i, p] : llvm::enumerate(plan.args))
    if (p.kind == ArgPlan::Scalar)
      erase.set(i);
  SmallVector<Type> types(plan.newTypes);
  types.push_back(paramsType);
  if (failed(kernel.eraseArguments(erase)))
    return failure();
  kernel.setFunctionType(FunctionType::get(kernel.getContext(), types, {}));
  return success();
}

/// The operands of `launch` under `plan`: its buffers (flat ones as 1-D
/// views of their whole extent), then a params array on the stack.
LogicalResult rewriteLaunch(gpu::LaunchFuncOp launch, const KernelPlan &plan,
                            MemRefType paramsType) {
  OpBuilder b(launch);
  Location loc = launch.getLoc();
  auto params = memref::AllocaOp::create(b, loc, paramsType);
  params->setAttr("kiln.params", b.getUnitAttr());
  auto store = [&](Value word, unsigned i) {
    memref::StoreOp::create(b, loc, word, params,
                            ValueRange{arith::ConstantIndexOp::create(b, loc, i)});
  };
  auto storeIndex = [&](OpFoldResult v, unsigned i) {
    store(toWord(b, loc, getValueOrCreateConstantIndexOp(b, loc, v)), i);
  };
  SmallVector<Value> operands(plan.newTypes.size());
  for (auto [p, operand] : llvm::zip(plan.args, launch.getKernelOperands())) {
    if (p.kind == ArgPlan::Keep) {
      operands[p.newIndex] = operand;
      continue;
    }
    if (p.kind == ArgPlan::Scalar && wordsOf(operand.getType()) == 2) {
      auto [low, high] = toWords(b, loc, operand);
      store(low, p.firstWord);
      store(high, p.firstWord + 1);
      continue;
    }
    if (p.kind == ArgPlan::Scalar) {
      store(toWord(b, loc, operand), p.firstWord);
      continue;
    }
    auto meta = memref::ExtractStridedMetadataOp::create(b, loc, operand);
    int64_t rank = cast<MemRefType>(operand.getType()).getRank();
    storeIndex(meta.getOffset(), p.firstWord);
    // The flat view reaches from the buffer's start to the last element.
    Value extent = arith::AddIOp::create(b, loc, meta.getOffset(),
                                         arith::ConstantIndexOp::create(b, loc, 1));
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    for (int64_t d = 0; d < rank; ++d) {
      Value size = meta.getSizes()[d], stride = meta.getStrides()[d];
      storeIndex(size, p.firstWord + 1 + d);
      storeIndex(stride, p.firstWord + 1 + rank + d);
      Value last = arith::MulIOp::create(b, loc, arith::SubIOp::create(b, loc, size, one),
                                         stride);
      extent = arith::AddIOp::create(b, loc, extent, last);
    }
    extent = arith::MaxSIOp::create(b, loc, extent, one); // an empty view
    auto flatType = cast<MemRefType>(plan.newTypes[p.newIndex]);
    operands[p.newIndex] = memref::ReinterpretCastOp::create(
        b, loc, flatType, meta.getBaseBuffer(), b.getIndexAttr(0), ArrayRef<OpFoldResult>{extent},
        ArrayRef<OpFoldResult>{b.getIndexAttr(1)});
  }
  operands.push_back(params);
  launch.getKernelOperandsMutable().assign(operands);
  return success();
}

struct KilnGpuPackParamsPass
    : mlir::kiln::impl::KilnGpuPackParamsBase<KilnGpuPackParamsPass> {
  void runOnOperation() override {
    ModuleOp top = getOperation();
    DenseMap<Operation *, SmallVector<gpu::LaunchFuncOp>> launches;
    top.walk([&](gpu::LaunchFuncOp launch) {
      if (auto kernel = SymbolTable::lookupNearestSymbolFrom<gpu::GPUFuncOp>(
              launch, launch.getKernel()))
        launches[kernel].push_back(launch);
    });
    SmallVector<gpu::GPUFuncOp> kernels;
    top.walk([&](gpu::GPUFuncOp kernel) {
      if (kernel.isKernel())
        kernels.push_back(kernel);
    });
    for (gpu::GPUFuncOp kernel : kernels) {
      FailureOr<KernelPlan> plan = planKernel(kernel);
      if (failed(plan))
        return signalPassFailure();
      if (plan->words == 0)
        continue;
      auto paramsType = MemRefType::get({plan->words}, IntegerType::get(&getContext(), 32));
      for (gpu::LaunchFuncOp launch : launches.lookup(kernel))
        if (failed(rewriteLaunch(launch, *plan, paramsType)))
          return signalPassFailure();
      if (failed(rewriteKernel(kernel, *plan, paramsType)))
        return signalPassFailure();
    }
  }
};

} // namespace
