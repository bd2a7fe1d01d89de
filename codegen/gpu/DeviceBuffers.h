//===- DeviceBuffers.h - which host ops touch the kernels' memory -*- C++ -*-===//
#ifndef KILN_CODEGEN_GPU_DEVICEBUFFERS_H
#define KILN_CODEGEN_GPU_DEVICEBUFFERS_H

#include "mlir/IR/Operation.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLFunctionalExtras.h"

namespace mlir::kiln {

/// Marks a linalg op whose buffer kernels never read: each of its
/// elements is computed where a kernel loads it (kiln-gpu-compute-on-read).
/// kiln-gpu-conv-as-matmul's receptive fields carry it, and the transposes
/// kiln-gpu-transpose-on-read lets matmuls read in place; kiln-gpu-distribute
/// and kiln-gpu-distribute-buffers leave such ops out of the kernels.
inline constexpr llvm::StringLiteral kComputedOnRead = "kiln.gpu.computed_on_read";

/// The op marked kComputedOnRead that writes the buffer `value` is a view
/// of, or null.
Operation *computedOnReadBy(Value value);

/// The buffer `value` is a view of (through subviews, reshapes, casts, the
/// base buffer of its strided metadata): an allocation, an argument or a
/// global.
Value rootBuffer(Value value);

/// Whether `op` (or an op nested in it) may read or write (with
/// `writesOnly`, write) a buffer whose root `watched` accepts. An effect
/// on a buffer it does not name counts; so does an op whose effects are
/// unknown (no MemoryEffectOpInterface, no recursive effects) unless
/// `harmless` accepts it.
bool mayAccessBuffers(Operation *op, bool writesOnly, llvm::function_ref<bool(Value)> watched,
                      llvm::function_ref<bool(Operation *)> harmless);

/// Whether host op `op` (or an op nested in it) may read or write a buffer
/// whose root is in `deviceBuffers`, or whose root it cannot tell (a loop's
/// or branch's result). Ops of unknown effects may (calls), except
/// kiln_check_failed, which only ends the run.
bool touchesDeviceBuffers(Operation *op, const llvm::DenseSet<Value> &deviceBuffers);

} // namespace mlir::kiln

#endif
