// RUN: kiln-opt %s --split-input-file --kiln-cpu-peel-dynamic-matmul=columns=32 | FileCheck %s

// Dynamic rows: full tiles of 8 rows, then the rest one row at a time; each
// iteration is a static matmul on slices, written back in parallel.
// CHECK-LABEL: func.func @rows(
// CHECK-SAME: %[[A:.*]]: tensor<?x16xf32>, %[[B:.*]]: tensor<16x32xf32>, %[[C:.*]]: tensor<?x32xf32>)
// CHECK: %[[M:.*]] = tensor.dim %[[A]], %c0
// CHECK: %[[TILES:.*]] = arith.divui %[[M]], %c8
// CHECK: %[[FULL:.*]] = arith.muli %[[TILES]], %c8
// CHECK: %[[MAIN:.*]] = scf.forall (%[[I:.*]]) = (0) to (%[[FULL]]) step (8) shared_outs(%[[OUT:.*]] = %[[C]])
// CHECK: %[[AT:.*]] = tensor.extract_slice %[[A]][%[[I]], 0] [8, 16] [1, 1] : tensor<?x16xf32> to tensor<8x16xf32>
// CHECK: %[[CT:.*]] = tensor.extract_slice %[[OUT]][%[[I]], 0] [8, 32] [1, 1]
// CHECK: %[[R:.*]] = linalg.matmul ins(%[[AT]], %[[B]] : tensor<8x16xf32>, tensor<16x32xf32>) outs(%[[CT]] : tensor<8x32xf32>)
// CHECK: tensor.parallel_insert_slice %[[R]] into %[[OUT]][%[[I]], 0] [8, 32] [1, 1]
// CHECK: %[[REST:.*]] = scf.forall (%[[J:.*]]) = (%[[FULL]]) to (%[[M]]) step (1) shared_outs(%{{.*}} = %[[MAIN]])
// CHECK: linalg.matmul ins(%{{.*}}, %[[B]] : tensor<1x16xf32>, tensor<16x32xf32>)
// CHECK: return %[[REST]]
func.func @rows(%a: tensor<?x16xf32>, %b: tensor<16x32xf32>, %c: tensor<?x32xf32>) -> tensor<?x32xf32> {
  %r = linalg.matmul ins(%a, %b : tensor<?x16xf32>, tensor<16x32xf32>) outs(%c : tensor<?x32xf32>) -> tensor<?x32xf32>
  return %r : tensor<?x32xf32>
}

// -----

// Dynamic columns (a convolution's pixels): tiles of 32 columns of B and C.
// CHECK-LABEL: func.func @columns(
// CHECK: scf.forall (%[[I:.*]]) = (0) to (%{{.*}}) step (32)
// CHECK: tensor.extract_slice %arg1[0, %[[I]]] [27, 32] [1, 1] : tensor<27x?xf32> to tensor<27x32xf32>
// CHECK: linalg.matmul ins(%arg0, %{{.*}} : tensor<8x27xf32>, tensor<27x32xf32>)
// CHECK: scf.forall (%{{.*}}) = (%{{.*}}) to (%{{.*}}) step (1)
// CHECK: linalg.matmul ins(%arg0, %{{.*}} : tensor<8x27xf32>, tensor<27x1xf32>)
func.func @columns(%w: tensor<8x27xf32>, %col: tensor<27x?xf32>, %c: tensor<8x?xf32>) -> tensor<8x?xf32> {
  %r = linalg.matmul ins(%w, %col : tensor<8x27xf32>, tensor<27x?xf32>) outs(%c : tensor<8x?xf32>) -> tensor<8x?xf32>
  return %r : tensor<8x?xf32>
}

// -----

// Dynamic rows and columns, or a dynamic K, stay as they are.
// CHECK-LABEL: func.func @both(
// CHECK-NOT: scf.forall
// CHECK: linalg.matmul ins(%arg0, %arg1 : tensor<?x16xf32>, tensor<16x?xf32>)
func.func @both(%a: tensor<?x16xf32>, %b: tensor<16x?xf32>, %c: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %r = linalg.matmul ins(%a, %b : tensor<?x16xf32>, tensor<16x?xf32>) outs(%c : tensor<?x?xf32>) -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}
