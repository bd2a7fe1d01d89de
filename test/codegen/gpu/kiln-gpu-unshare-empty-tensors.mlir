// RUN: kiln-opt %s --split-input-file --kiln-gpu-unshare-empty-tensors | FileCheck %s

// One tensor.empty (merged by CSE) that two fills share, and a dynamic one
// that a fill and a fill in a loop share: each use gets a clone just before
// its user (in the loop for the last), with the same sizes; the originals
// go.
// CHECK-LABEL: func.func @shared
// CHECK-SAME: (%[[N:.*]]: index)
// CHECK:   %[[E0:.*]] = tensor.empty() : tensor<4x8xf32>
// CHECK:   linalg.fill ins(%{{.*}} : f32) outs(%[[E0]] : tensor<4x8xf32>)
// CHECK:   %[[E1:.*]] = tensor.empty() : tensor<4x8xf32>
// CHECK:   linalg.fill ins(%{{.*}} : f32) outs(%[[E1]] : tensor<4x8xf32>)
// CHECK:   %[[D0:.*]] = tensor.empty(%[[N]]) : tensor<?xf32>
// CHECK:   linalg.fill ins(%{{.*}} : f32) outs(%[[D0]] : tensor<?xf32>)
// CHECK:   scf.for
// CHECK:     %[[D1:.*]] = tensor.empty(%[[N]]) : tensor<?xf32>
// CHECK:     linalg.fill ins(%{{.*}} : f32) outs(%[[D1]] : tensor<?xf32>)
// CHECK-NOT: tensor.empty
// CHECK:   return
func.func @shared(%n: index) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<?xf32>, tensor<?xf32>) {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c1 = arith.constant 1 : index
  %e = tensor.empty() : tensor<4x8xf32>
  %d = tensor.empty(%n) : tensor<?xf32>
  %a = linalg.fill ins(%zero : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %b = linalg.fill ins(%one : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %c = linalg.fill ins(%zero : f32) outs(%d : tensor<?xf32>) -> tensor<?xf32>
  %r = scf.for %i = %c0 to %c2 step %c1 iter_args(%acc = %c) -> tensor<?xf32> {
    %f = linalg.fill ins(%one : f32) outs(%d : tensor<?xf32>) -> tensor<?xf32>
    scf.yield %f : tensor<?xf32>
  }
  return %a, %b, %c, %r : tensor<4x8xf32>, tensor<4x8xf32>, tensor<?xf32>, tensor<?xf32>
}

// -----

// A reshape of a tensor.empty that CSE gave two users (two matmuls'
// collapsed outputs) is a tensor.empty of its own shape, then one per use.
// CHECK-LABEL: func.func @reshaped
// CHECK:   %[[A:.*]] = tensor.empty() : tensor<2x12xf32>
// CHECK:   linalg.fill ins(%{{.*}} : f32) outs(%[[A]] : tensor<2x12xf32>)
// CHECK:   %[[B:.*]] = tensor.empty() : tensor<2x12xf32>
// CHECK:   linalg.fill ins(%{{.*}} : f32) outs(%[[B]] : tensor<2x12xf32>)
// CHECK-NOT: tensor.collapse_shape
func.func @reshaped() -> (tensor<2x12xf32>, tensor<2x12xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x3x4xf32>
  %c = tensor.collapse_shape %e [[0], [1, 2]] : tensor<2x3x4xf32> into tensor<2x12xf32>
  %a = linalg.fill ins(%zero : f32) outs(%c : tensor<2x12xf32>) -> tensor<2x12xf32>
  %b = linalg.fill ins(%zero : f32) outs(%c : tensor<2x12xf32>) -> tensor<2x12xf32>
  return %a, %b : tensor<2x12xf32>, tensor<2x12xf32>
}
