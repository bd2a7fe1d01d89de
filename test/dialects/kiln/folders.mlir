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
