// RUN: kiln-opt %s --pass-pipeline='builtin.module(func.func(kiln-distinct-results))' | FileCheck %s

// A value returned twice gets a copy for its second use; distinct values
// and arguments are returned as they are.
// CHECK-LABEL: func.func @twice
// CHECK: %[[FILL:.*]] = linalg.fill
// CHECK-NEXT: %[[COPY:.*]] = bufferization.alloc_tensor() copy(%[[FILL]]) : tensor<2x3xf32>
// CHECK-NEXT: return %[[FILL]], %[[COPY]], %arg0 : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>
func.func @twice(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) {
  %cst = arith.constant 1.0 : f32
  %0 = tensor.empty() : tensor<2x3xf32>
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<2x3xf32>) -> tensor<2x3xf32>
  return %1, %1, %x : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>
}

// CHECK-LABEL: func.func @once
// CHECK-NOT: alloc_tensor
func.func @once(%x: tensor<2x3xf32>, %y: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>) {
  return %x, %y : tensor<2x3xf32>, tensor<2x3xf32>
}
