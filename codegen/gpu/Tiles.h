//===- Tiles.h - how the GPU pipeline tiles a linalg op ---------*- C++ -*-===//
#ifndef KILN_CODEGEN_GPU_TILES_H
#define KILN_CODEGEN_GPU_TILES_H

#include "codegen/gpu/GpuTarget.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include <optional>
#include <string>

namespace mlir::kiln {

/// Tile sizes per loop of one op (0: not tiled) for the workgroups and, in
/// a workgroup's tile, for its threads.
struct Tiles {
  SmallVector<int64_t> workgroup, thread;
  /// No parallel loop: nothing to distribute (the op stays on the host).
  bool none() const { return llvm::all_of(workgroup, [](int64_t s) { return s == 0; }); }
};

/// The target a GPU pass's `target` option names, or an error at `op`.
std::optional<GpuTarget> lookupGpuTarget(Operation *op, llvm::StringRef name);

/// Why `target`'s kernels cannot compute `op`, which then stays on the
/// host: f64 values (Metal), exp, log, ... of f64 values (GLSL's math is
/// 32-bit), or bf16 values (SPIR-V has no bf16 type); nothing if they can.
std::optional<std::string> unsupportedByKernels(Operation *op, const GpuTarget &target);

/// Workgroups a static contraction should have at least, by default: about
/// two per multiprocessor of a large GPU (an H100 has 132).
constexpr int64_t kEnoughWorkgroups = 256;

/// The tiles of `op` for `target` (see kiln-gpu-distribute's description);
/// a static f32 contraction's results per thread shrink while it has fewer
/// than `enoughWorkgroups` workgroups (0: never); with `wideTensorTiles`, a
/// 16-bit one of 8x8 results per thread on CUDA takes 8x16 where it still
/// has that many.
Tiles chooseTiles(linalg::LinalgOp op, const GpuTarget &target,
                  int64_t enoughWorkgroups, bool wideTensorTiles = false);

/// The workgroups chooseTiles gives a contraction of static parallel loops
/// at 4x4 results per thread (before it picks more or fewer), or nothing
/// for another op.
std::optional<int64_t> contractionWorkgroups(linalg::LinalgOp op, const GpuTarget &target);

/// A constant upper bound of size `d` of `tile` (a memref: its static
/// size, else what its view's sizes bound it by), or failure.
FailureOr<int64_t> sizeBound(Value tile, int64_t d);

/// Whether `type` (a memref) is a thread's private memory.
bool isPrivateMemory(Type type);

/// `launch`'s block size, if it is static.
std::optional<std::array<int64_t, 3>> staticBlockSize(gpu::LaunchOp launch);

/// A thread's linear id in `launch` (of static block size X x Y x Z):
/// x + X (y + Y z), its ids x, y, z as symbols 0, 1, 2.
AffineExpr linearThreadId(gpu::LaunchOp launch);

/// One mapping attribute per tiled loop, outermost first, the innermost
/// loop on block linear dimension 0 or thread x: blocks on linear
/// dimensions (any number of loops), threads on x, y, z.
SmallVector<Attribute> mappingFor(MLIRContext *ctx, ArrayRef<int64_t> tileSizes, bool threads);

/// A loop over workgroups that a pass builds itself (a kernel of its own
/// shape): an scf.forall from 0 to `ends` by `steps`, carrying `init`, one
/// block linear dimension per loop (the innermost on 0).
scf::ForallOp workgroupForall(OpBuilder &b, Location loc, ArrayRef<OpFoldResult> ends,
                              ArrayRef<OpFoldResult> steps, Value init);

} // namespace mlir::kiln

#endif
