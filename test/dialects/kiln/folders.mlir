// RUN: kiln-opt %s --canonicalize | FileCheck %s

// CHECK-LABEL: func.func @identities
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>)
// CHECK-NEXT: return %[[X]], %[[X]], %[[X]], %[[X]]
func.func @identities(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) {
  %zero = kiln.constant dense<0.0> : tensor<f32> -> tensor<f32>
  %one = kiln.constant dense<1.0> : tensor<f32> -> tensor<f32>
  %0 = kiln.add %x, %zero : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  %1 = kiln.mul %x, %one : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  %2 = kiln.transpose %x {perm = array<i64: 0, 1>} : tensor<2x3xf32> -> tensor<2x3xf32>
  %3 = kiln.reshape %x : tensor<2x3xf32> -> tensor<2x3xf32>
  return %0, %1, %2, %3 : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>
}

// Adding a zero that broadcasts x to a larger shape is not an identity.
// CHECK-LABEL: func.func @broadcasting_zero
// CHECK: kiln.add
func.func @broadcasting_zero(%x: tensor<3xf32>) -> tensor<2x3xf32> {
  %zero = kiln.constant dense<0.0> : tensor<2x3xf32> -> tensor<2x3xf32>
  %0 = kiln.add %x, %zero : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// Chained reshapes collapse into one.
// CHECK-LABEL: func.func @reshape_chain
// CHECK-NEXT: %[[R:.*]] = kiln.reshape %arg0 : tensor<2x3xf32> -> tensor<6xf32>
// CHECK-NEXT: return %[[R]]
func.func @reshape_chain(%x: tensor<2x3xf32>) -> tensor<6xf32> {
  %0 = kiln.reshape %x : tensor<2x3xf32> -> tensor<3x2xf32>
  %1 = kiln.reshape %0 : tensor<3x2xf32> -> tensor<6xf32>
  return %1 : tensor<6xf32>
}

// A check of a constant true condition, or of a condition already checked
// earlier in the block, is dropped; the first check of each condition stays.
// CHECK-LABEL: func.func @asserts
// CHECK-NEXT: kiln.assert %arg0, "first" : tensor<2xi1>
// CHECK-NEXT: kiln.assert %arg1, "other" : tensor<i1>
// CHECK-NEXT: return
func.func @asserts(%c: tensor<2xi1>, %d: tensor<i1>) {
  %true = kiln.constant dense<true> : tensor<2xi1> -> tensor<2xi1>
  kiln.assert %true, "always" : tensor<2xi1>
  kiln.assert %c, "first" : tensor<2xi1>
  kiln.assert %d, "other" : tensor<i1>
  kiln.assert %c, "again" : tensor<2xi1>
  return
}

// A transpose of a transpose that undoes it folds to the original; one that
// does not stays.
// CHECK-LABEL: func.func @transpose_pair
// CHECK-SAME: (%[[X:.*]]: tensor<1x2x3x4xf32>)
// CHECK: %[[T:.*]] = kiln.transpose %[[X]] {perm = array<i64: 0, 2, 3, 1>}
// CHECK: %[[U:.*]] = kiln.transpose %[[T]] {perm = array<i64: 0, 2, 3, 1>}
// CHECK: return %[[X]], %[[U]]
func.func @transpose_pair(%x: tensor<1x2x3x4xf32>) -> (tensor<1x2x3x4xf32>, tensor<1x4x2x3xf32>) {
  %t = kiln.transpose %x {perm = array<i64: 0, 2, 3, 1>} : tensor<1x2x3x4xf32> -> tensor<1x3x4x2xf32>
  %back = kiln.transpose %t {perm = array<i64: 0, 3, 1, 2>} : tensor<1x3x4x2xf32> -> tensor<1x2x3x4xf32>
  %twice = kiln.transpose %t {perm = array<i64: 0, 2, 3, 1>} : tensor<1x3x4x2xf32> -> tensor<1x4x2x3xf32>
  return %back, %twice : tensor<1x2x3x4xf32>, tensor<1x4x2x3xf32>
}

// Data movement of constants happens at compile time: an LSTM's gate
// weights, sliced, concatenated and transposed by the importer, reach the
// matmul as one constant. Each op's result is checked element by element:
// transpose, concat along 0 and along 1 (a splat part expanded), a strided
// slice with a negative step, and a reshape. A slice taking all of its input
// folds to the input.
// CHECK-LABEL: func.func @constant_movement
// CHECK-DAG: %[[T:.*]] = kiln.constant dense<{{\[\[}}1, 4], [2, 5], [3, 6]]> : tensor<3x2xi32>
// CHECK-DAG: %[[C0:.*]] = kiln.constant dense<{{\[\[}}1, 2, 3], [4, 5, 6], [7, 7, 7]]> : tensor<3x3xi32>
// CHECK-DAG: %[[C1:.*]] = kiln.constant dense<{{\[\[}}1, 2, 3, 7], [4, 5, 6, 7]]> : tensor<2x4xi32>
// CHECK-DAG: %[[S:.*]] = kiln.constant dense<{{\[\[}}6, 4]]> : tensor<1x2xi32>
// CHECK-DAG: %[[R:.*]] = kiln.constant dense<[1, 2, 3, 4, 5, 6]> : tensor<6xi32>
// CHECK: return %[[T]], %[[C0]], %[[C1]], %[[S]], %[[R]], %arg0
func.func @constant_movement(%x: tensor<2x3xf32>) -> (tensor<3x2xi32>, tensor<3x3xi32>, tensor<2x4xi32>, tensor<1x2xi32>, tensor<6xi32>, tensor<2x3xf32>) {
  %m = kiln.constant dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi32> -> tensor<2x3xi32>
  %row = kiln.constant dense<7> : tensor<1x3xi32> -> tensor<1x3xi32>
  %col = kiln.constant dense<7> : tensor<2x1xi32> -> tensor<2x1xi32>
  %t = kiln.transpose %m {perm = array<i64: 1, 0>} : tensor<2x3xi32> -> tensor<3x2xi32>
  %c0 = kiln.concat %m, %row {axis = 0 : i64} : (tensor<2x3xi32>, tensor<1x3xi32>) -> tensor<3x3xi32>
  %c1 = kiln.concat %m, %col {axis = 1 : i64} : (tensor<2x3xi32>, tensor<2x1xi32>) -> tensor<2x4xi32>
  %s = kiln.slice %m {starts = array<i64: 1, 2>, steps = array<i64: 1, -2>} : tensor<2x3xi32> -> tensor<1x2xi32>
  %r = kiln.reshape %m : tensor<2x3xi32> -> tensor<6xi32>
  %all = kiln.slice %x {starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : tensor<2x3xf32> -> tensor<2x3xf32>
  return %t, %c0, %c1, %s, %r, %all : tensor<3x2xi32>, tensor<3x3xi32>, tensor<2x4xi32>, tensor<1x2xi32>, tensor<6xi32>, tensor<2x3xf32>
}

// With ONNX bounds a slice of a dynamic dimension keeps its type even when
// it takes less than the whole dimension: it does not fold.
// CHECK-LABEL: func.func @onnx_bounds_stay
// CHECK: %[[S:.*]] = kiln.slice %arg0 {ends = array<i64: -1>, starts = array<i64: 0>, steps = array<i64: 1>}
// CHECK: return %[[S]]
func.func @onnx_bounds_stay(%x: tensor<?xf32>) -> tensor<?xf32> {
  %0 = kiln.slice %x {starts = array<i64: 0>, ends = array<i64: -1>, steps = array<i64: 1>} : tensor<?xf32> -> tensor<?xf32>
  return %0 : tensor<?xf32>
}
