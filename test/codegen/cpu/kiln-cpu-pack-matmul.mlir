// RUN: kiln-opt %s --kiln-cpu-pack-matmul=vector-width=2 --split-input-file | FileCheck %s

// A constant B [3 x 8] with 4-column tiles (two 2-lane registers) is packed at
// compile time into panels [2][3][4]: panel 0 holds columns 0-3 of every row,
// panel 1 columns 4-7. The non-constant A [2 x 3] is only viewed as
// [M/mr = 1][mr = 2][K = 3], and C as [1][2][2][4].
// CHECK-DAG: #[[A:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d1, d3, d2)>
// CHECK-DAG: #[[B:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d2, d4)>
// CHECK-DAG: #[[C:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d1, d3, d0, d4)>
// CHECK-LABEL: func.func @constant_rhs
// CHECK: %[[AV:.*]] = tensor.expand_shape %arg0 {{\[\[}}0, 1], [2]] output_shape [1, 2, 3]
// CHECK: %[[PACKED:.*]] = arith.constant dense<{{\[\[\[}}0.000000e+00, 1.000000e+00, 2.000000e+00, 3.000000e+00], [8.000000e+00, 9.000000e+00, 1.000000e+01, 1.100000e+01], [1.600000e+01, 1.700000e+01, 1.800000e+01, 1.900000e+01]], {{\[\[}}4.000000e+00, 5.000000e+00, 6.000000e+00, 7.000000e+00], [1.200000e+01, 1.300000e+01, 1.400000e+01, 1.500000e+01], [2.000000e+01, 2.100000e+01, 2.200000e+01, 2.300000e+01]]]> : tensor<2x3x4xf32>
// CHECK: %[[CV:.*]] = tensor.expand_shape %arg1 {{\[\[}}0, 1], [2, 3]] output_shape [1, 2, 2, 4]
// CHECK: %[[R:.*]] = linalg.contract indexing_maps = [#[[A]], #[[B]], #[[C]]] {kiln.packed, kiln.tile = array<i64: 2, 4>} ins(%[[AV]], %[[PACKED]] : tensor<1x2x3xf32>, tensor<2x3x4xf32>) outs(%[[CV]] : tensor<1x2x2x4xf32>)
// CHECK: %[[OUT:.*]] = tensor.collapse_shape %[[R]] {{\[\[}}0, 1], [2, 3]] : tensor<1x2x2x4xf32> into tensor<2x8xf32>
// CHECK: return %[[OUT]]
// CHECK-NOT: linalg.matmul
func.func @constant_rhs(%a: tensor<2x3xf32>, %c: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %b = arith.constant dense<[[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0],
                             [8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0],
                             [16.0, 17.0, 18.0, 19.0, 20.0, 21.0, 22.0, 23.0]]> : tensor<3x8xf32>
  %0 = linalg.matmul ins(%a, %b : tensor<2x3xf32>, tensor<3x8xf32>) outs(%c : tensor<2x8xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

// A non-constant B with two panels is packed per run by a copy (tagged for
// the schedule, which vectorizes it) from B viewed as [K][N/nr][nr]: its
// input map is then a permutation.
// CHECK-DAG: #[[READ:.*]] = affine_map<(d0, d1, d2) -> (d1, d0, d2)>
// CHECK-LABEL: func.func @runtime_rhs
// CHECK: %[[PANELS:.*]] = tensor.expand_shape %arg1 {{\[\[}}0], [1, 2]] output_shape [3, 2, 4] : tensor<3x8xf32> into tensor<3x2x4xf32>
// CHECK: %[[BP:.*]] = linalg.generic {indexing_maps = [#[[READ]], #{{.*}}], iterator_types = ["parallel", "parallel", "parallel"]} ins(%[[PANELS]] : tensor<3x2x4xf32>) outs(%{{.*}} : tensor<2x3x4xf32>) attrs = {kiln.pack}
// CHECK: linalg.contract {{.*}} ins(%{{.*}}, %[[BP]] : tensor<1x2x3xf32>, tensor<2x3x4xf32>)
func.func @runtime_rhs(%a: tensor<2x3xf32>, %b: tensor<3x8xf32>, %c: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %0 = linalg.matmul ins(%a, %b : tensor<2x3xf32>, tensor<3x8xf32>) outs(%c : tensor<2x8xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

// A constant A [4 x 2] (a convolution filter, say) is packed into
// [M/mr = 1][K = 2][mr = 4], so one K step broadcasts from one cache line; it
// is found behind the reshapes between it and the matmul. A B of a single
// panel needs no copy: it is viewed as [1][K][N].
// CHECK-DAG: #[[PA:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d1, d2, d3)>
// CHECK-LABEL: func.func @constant_lhs
// CHECK: %[[AP:.*]] = arith.constant dense<{{\[\[\[}}1.000000e+00, 3.000000e+00, 5.000000e+00, 7.000000e+00], [2.000000e+00, 4.000000e+00, 6.000000e+00, 8.000000e+00]]]> : tensor<1x2x4xf32>
// CHECK: %[[BV:.*]] = tensor.expand_shape %arg0 {{\[\[}}0, 1], [2]] output_shape [1, 2, 2]
// CHECK-NOT: linalg.generic
// CHECK: linalg.contract indexing_maps = [#[[PA]], #{{.*}}, #{{.*}}] {kiln.packed, kiln.tile = array<i64: 4, 2>} ins(%[[AP]], %[[BV]] : tensor<1x2x4xf32>, tensor<1x2x2xf32>)
func.func @constant_lhs(%b: tensor<2x2xf32>, %c: tensor<4x2xf32>) -> tensor<4x2xf32> {
  %w = arith.constant dense<[[[1.0, 2.0]], [[3.0, 4.0]], [[5.0, 6.0]], [[7.0, 8.0]]]> : tensor<4x1x2xf32>
  %a = tensor.collapse_shape %w [[0], [1, 2]] : tensor<4x1x2xf32> into tensor<4x2xf32>
  %0 = linalg.matmul ins(%a, %b : tensor<4x2xf32>, tensor<2x2xf32>) outs(%c : tensor<4x2xf32>) -> tensor<4x2xf32>
  return %0 : tensor<4x2xf32>
}

// -----

// N = 3 has no whole-vector divisor but M = 4 does (a late convolution: many
// channels, few pixels), so C^T = B^T A^T is computed, vectorized along M:
// B [K = 2][N = 3] is only viewed as [K][N/mr = 1][mr = 3], the constant A
// [4 x 2] is packed transposed into [1][K][4], the fill is redone for C^T,
// and one transpose at the end gives C.
// CHECK-DAG: #[[LT:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d2, d1, d3)>
// CHECK-LABEL: func.func @transposed
// CHECK: %[[BV:.*]] = tensor.expand_shape %arg0 {{\[\[}}0], [1, 2]] output_shape [2, 1, 3]
// CHECK: %[[AT:.*]] = arith.constant dense<{{\[\[\[}}1.000000e+00, 3.000000e+00, 5.000000e+00, 7.000000e+00], [2.000000e+00, 4.000000e+00, 6.000000e+00, 8.000000e+00]]]> : tensor<1x2x4xf32>
// CHECK: %[[CT:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<3x4xf32>)
// CHECK: %[[CTV:.*]] = tensor.expand_shape %[[CT]] {{\[\[}}0, 1], [2, 3]] output_shape [1, 3, 1, 4]
// CHECK: %[[R:.*]] = linalg.contract indexing_maps = [#[[LT]], #{{.*}}, #{{.*}}] {kiln.packed, kiln.tile = array<i64: 3, 4>} ins(%[[BV]], %[[AT]] : tensor<2x1x3xf32>, tensor<1x2x4xf32>) outs(%[[CTV]] : tensor<1x3x1x4xf32>)
// CHECK: %[[RC:.*]] = tensor.collapse_shape %[[R]] {{\[\[}}0, 1], [2, 3]] : tensor<1x3x1x4xf32> into tensor<3x4xf32>
// CHECK: %[[OUT:.*]] = linalg.transpose ins(%[[RC]] : tensor<3x4xf32>) outs(%{{.*}} : tensor<4x3xf32>) permutation = [1, 0]
// CHECK: return %[[OUT]]
func.func @transposed(%b: tensor<2x3xf32>) -> tensor<4x3xf32> {
  %w = arith.constant dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0]]> : tensor<4x2xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x3xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<4x3xf32>) -> tensor<4x3xf32>
  %0 = linalg.matmul ins(%w, %b : tensor<4x2xf32>, tensor<2x3xf32>) outs(%c : tensor<4x3xf32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

// Dynamic shapes are left to the generic schedule.
// CHECK-LABEL: func.func @dynamic
// CHECK: linalg.matmul
// CHECK-NOT: linalg.contract
func.func @dynamic(%a: tensor<?x3xf32>, %b: tensor<3x8xf32>, %c: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %0 = linalg.matmul ins(%a, %b : tensor<?x3xf32>, tensor<3x8xf32>) outs(%c : tensor<?x8xf32>) -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}
