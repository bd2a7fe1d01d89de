//===- GpuTarget.h - what the GPU pipeline knows about a device -*- C++ -*-===//
#ifndef KILN_CODEGEN_GPU_GPUTARGET_H
#define KILN_CODEGEN_GPU_GPUTARGET_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include <array>
#include <cstdint>
#include <optional>
#include <string>

namespace mlir::kiln {

/// The API a GPU target's kernels are shipped for.
enum class GpuApi { Vulkan, Cuda, Metal };

/// Matrix instructions a target may have, by the way they are programmed.
enum class MmaKind {
  CooperativeMatrix, ///< SPV_KHR_cooperative_matrix (Vulkan)
  MmaSync,           ///< mma.sync with ldmatrix (NVIDIA sm_80+)
  Wgmma,             ///< warpgroup wgmma with TMA (NVIDIA sm_90a)
  SimdgroupMatrix,   ///< simdgroup_matrix (Apple GPUs)
};

/// One GPU target: the limits the tiling and the kernels must respect, and
/// what the fastest instructions are. Sizes are per workgroup (threadgroup,
/// CUDA block) unless named otherwise.
struct GpuTarget {
  std::string name;
  GpuApi api;
  int64_t subgroupSize;      ///< threads that run in lockstep (warp, SIMD group)
  int64_t sharedMemoryBytes; ///< workgroup (shared, threadgroup) memory the tiling plans with
  int64_t maxSharedMemoryBytes; ///< what a kernel may take beyond that (CUDA: dynamic
                                ///< shared memory, the least of the chips compiled for)
  int64_t maxThreads;        ///< threads in one workgroup
  std::array<int64_t, 3> maxWorkgroupSize; ///< per dimension x, y, z
  int64_t loadBytes;         ///< the widest load or store of one thread
  llvm::ArrayRef<MmaKind> mma;
  bool f64;                  ///< f64 values in kernels (Metal: none)
  bool f64Math;              ///< exp, log, ... on f64 (Vulkan's GLSL.std.450: 32 bits at most)
  bool bf16;                 ///< bf16 values in kernels (SPIR-V: none without an extension)
  bool asyncCopies;          ///< copies from global to shared memory that run while the
                             ///< threads go on (cp.async, NVIDIA sm_80+)

  /// Threads the pipeline gives a workgroup: four subgroups, so that a
  /// compute unit has several to switch between, within the limit.
  int64_t workgroupThreads() const { return std::min(maxThreads, 4 * subgroupSize); }
  bool has(MmaKind kind) const { return llvm::is_contained(mma, kind); }
};

/// The target named `name` (see gpuTargetNames), or nothing.
std::optional<GpuTarget> lookupGpuTarget(llvm::StringRef name);
/// The names lookupGpuTarget knows, for --help and errors.
std::string gpuTargetNames();

} // namespace mlir::kiln

#endif
