// RUN: kiln-opt %s --kiln-fuse-layer-norm --split-input-file | FileCheck %s
// RUN: kiln-opt %s --kiln-fuse-layer-norm=report=true --split-input-file 2>&1 >/dev/null | FileCheck %s --check-prefix=REPORT

// As Paddle2ONNX writes it (PP-OCRv4's text recognizer): Pow(c, 2), Div,
// then a scale and a bias of one value per column.
// CHECK-LABEL: func.func @paddle
// CHECK-SAME: (%[[X:.*]]: tensor<2x5x120xf32>, %[[G:.*]]: tensor<120xf32>, %[[B:.*]]: tensor<120xf32>)
// CHECK-NEXT: %[[Y:.*]] = kiln.layer_norm %[[X]], %[[G]], %[[B]] {axis = 2 : i64, epsilon = 9.99999974E-6 : f32} : (tensor<2x5x120xf32>, tensor<120xf32>, tensor<120xf32>) -> tensor<2x5x120xf32>
// CHECK-NEXT: return %[[Y]]
// REPORT: remark: fusion: layer norm of 9 ops: kiln.reduce_mean, kiln.sub, kiln.pow, kiln.reduce_mean, kiln.add, kiln.sqrt, kiln.div, kiln.mul, kiln.add
func.func @paddle(%x: tensor<2x5x120xf32>, %g: tensor<120xf32>, %b: tensor<120xf32>) -> tensor<2x5x120xf32> {
  %two = kiln.constant dense<2.0> : tensor<f32> -> tensor<f32>
  %eps = kiln.constant dense<1.0e-5> : tensor<f32> -> tensor<f32>
  %m = kiln.reduce_mean %x {axes = array<i64: 2>, keepdims = true} : tensor<2x5x120xf32> -> tensor<2x5x1xf32>
  %c = kiln.sub %x, %m : (tensor<2x5x120xf32>, tensor<2x5x1xf32>) -> tensor<2x5x120xf32>
  %sq = kiln.pow %c, %two : (tensor<2x5x120xf32>, tensor<f32>) -> tensor<2x5x120xf32>
  %v = kiln.reduce_mean %sq {axes = array<i64: 2>, keepdims = true} : tensor<2x5x120xf32> -> tensor<2x5x1xf32>
  %ve = kiln.add %v, %eps : (tensor<2x5x1xf32>, tensor<f32>) -> tensor<2x5x1xf32>
  %s = kiln.sqrt %ve : tensor<2x5x1xf32>
  %n = kiln.div %c, %s : (tensor<2x5x120xf32>, tensor<2x5x1xf32>) -> tensor<2x5x120xf32>
  %y0 = kiln.mul %n, %g : (tensor<2x5x120xf32>, tensor<120xf32>) -> tensor<2x5x120xf32>
  %y = kiln.add %y0, %b : (tensor<2x5x120xf32>, tensor<120xf32>) -> tensor<2x5x120xf32>
  return %y : tensor<2x5x120xf32>
}

// -----

// As the importer composes InstanceNormalization (and the transformer test
// model writes its second norm): Mul(c, c), c * Reciprocal(std), epsilon on
// the left; no scale (one of 1.0) and no bias; dynamic leading dimensions.
// CHECK-LABEL: func.func @square_and_reciprocal
// CHECK-SAME: (%[[X:.*]]: tensor<?x?x8xf32>)
// CHECK-NEXT: %[[ONE:.*]] = kiln.constant dense<1.000000e+00> : tensor<1xf32> -> tensor<1xf32>
// CHECK-NEXT: %[[Y:.*]] = kiln.layer_norm %[[X]], %[[ONE]] {axis = 2 : i64, epsilon = 1.000000e-03 : f32} : (tensor<?x?x8xf32>, tensor<1xf32>) -> tensor<?x?x8xf32>
// CHECK-NEXT: return %[[Y]]
// REPORT: remark: fusion: layer norm of 8 ops
func.func @square_and_reciprocal(%x: tensor<?x?x8xf32>) -> tensor<?x?x8xf32> {
  %eps = kiln.constant dense<1.0e-3> : tensor<1xf32> -> tensor<1xf32>
  %m = kiln.reduce_mean %x {axes = array<i64: 2>, keepdims = true} : tensor<?x?x8xf32> -> tensor<?x?x1xf32>
  %c = kiln.sub %x, %m : (tensor<?x?x8xf32>, tensor<?x?x1xf32>) -> tensor<?x?x8xf32>
  %sq = kiln.mul %c, %c : (tensor<?x?x8xf32>, tensor<?x?x8xf32>) -> tensor<?x?x8xf32>
  %v = kiln.reduce_mean %sq {axes = array<i64: 2>, keepdims = true} : tensor<?x?x8xf32> -> tensor<?x?x1xf32>
  %ve = kiln.add %eps, %v : (tensor<1xf32>, tensor<?x?x1xf32>) -> tensor<?x?x1xf32>
  %s = kiln.sqrt %ve : tensor<?x?x1xf32>
  %r = kiln.reciprocal %s : tensor<?x?x1xf32>
  %n = kiln.mul %r, %c : (tensor<?x?x1xf32>, tensor<?x?x8xf32>) -> tensor<?x?x8xf32>
  return %n : tensor<?x?x8xf32>
}

// -----

// Two trailing dimensions, the means' axes out of order and listed in
// different orders (2, 1 and 1, 2: the same dimensions); a scale with a
// leading 1 (reshaped to the normalized rank) on the left of the Mul; a
// bias alone would be one too.
// CHECK-LABEL: func.func @two_axes
// CHECK-SAME: (%[[X:.*]]: tensor<3x4x6xf32>, %[[G:.*]]: tensor<1x4x6xf32>)
// CHECK-NEXT: %[[G2:.*]] = kiln.reshape %[[G]] : tensor<1x4x6xf32> -> tensor<4x6xf32>
// CHECK-NEXT: %[[Y:.*]] = kiln.layer_norm %[[X]], %[[G2]] {axis = 1 : i64, epsilon = 1.000000e-03 : f32} : (tensor<3x4x6xf32>, tensor<4x6xf32>) -> tensor<3x4x6xf32>
// CHECK-NEXT: return %[[Y]]
func.func @two_axes(%x: tensor<3x4x6xf32>, %g: tensor<1x4x6xf32>) -> tensor<3x4x6xf32> {
  %eps = kiln.constant dense<1.0e-3> : tensor<f32> -> tensor<f32>
  %m = kiln.reduce_mean %x {axes = array<i64: 2, 1>, keepdims = true} : tensor<3x4x6xf32> -> tensor<3x1x1xf32>
  %c = kiln.sub %x, %m : (tensor<3x4x6xf32>, tensor<3x1x1xf32>) -> tensor<3x4x6xf32>
  %sq = kiln.mul %c, %c : (tensor<3x4x6xf32>, tensor<3x4x6xf32>) -> tensor<3x4x6xf32>
  %v = kiln.reduce_mean %sq {axes = array<i64: 1, 2>, keepdims = true} : tensor<3x4x6xf32> -> tensor<3x1x1xf32>
  %ve = kiln.add %v, %eps : (tensor<3x1x1xf32>, tensor<f32>) -> tensor<3x1x1xf32>
  %s = kiln.sqrt %ve : tensor<3x1x1xf32>
  %n = kiln.div %c, %s : (tensor<3x4x6xf32>, tensor<3x1x1xf32>) -> tensor<3x4x6xf32>
  %y = kiln.mul %g, %n : (tensor<1x4x6xf32>, tensor<3x4x6xf32>) -> tensor<3x4x6xf32>
  return %y : tensor<3x4x6xf32>
}

// -----

// A bias without a scale; then a Mul by a value per row, which is not the
// layer norm's scale: it stays an op after it.
// CHECK-LABEL: func.func @bias_then_per_row
// CHECK-SAME: (%[[X:.*]]: tensor<5x8xf32>, %[[B:.*]]: tensor<8xf32>, %[[R:.*]]: tensor<5x1xf32>)
// CHECK: %[[ONE:.*]] = kiln.constant dense<1.000000e+00> : tensor<1xf32>
// CHECK-NEXT: %[[Y:.*]] = kiln.layer_norm %[[X]], %[[ONE]], %[[B]] {axis = 1 : i64
// CHECK-NEXT: %[[Z:.*]] = kiln.mul %[[Y]], %[[R]]
// CHECK-NEXT: return %[[Z]]
func.func @bias_then_per_row(%x: tensor<5x8xf32>, %b: tensor<8xf32>, %row: tensor<5x1xf32>) -> tensor<5x8xf32> {
  %eps = kiln.constant dense<1.0e-5> : tensor<f32> -> tensor<f32>
  %m = kiln.reduce_mean %x {axes = array<i64: 1>, keepdims = true} : tensor<5x8xf32> -> tensor<5x1xf32>
  %c = kiln.sub %x, %m : (tensor<5x8xf32>, tensor<5x1xf32>) -> tensor<5x8xf32>
  %sq = kiln.mul %c, %c : (tensor<5x8xf32>, tensor<5x8xf32>) -> tensor<5x8xf32>
  %v = kiln.reduce_mean %sq {axes = array<i64: 1>, keepdims = true} : tensor<5x8xf32> -> tensor<5x1xf32>
  %ve = kiln.add %v, %eps : (tensor<5x1xf32>, tensor<f32>) -> tensor<5x1xf32>
  %s = kiln.sqrt %ve : tensor<5x1xf32>
  %n = kiln.div %c, %s : (tensor<5x8xf32>, tensor<5x1xf32>) -> tensor<5x8xf32>
  %y = kiln.add %n, %b : (tensor<5x8xf32>, tensor<8xf32>) -> tensor<5x8xf32>
  %z = kiln.mul %y, %row : (tensor<5x8xf32>, tensor<5x1xf32>) -> tensor<5x8xf32>
  return %z : tensor<5x8xf32>
}

// -----

// Two layer norms in a row, the second over the first's result.
// CHECK-LABEL: func.func @two_in_a_row
// CHECK: kiln.layer_norm
// CHECK: kiln.layer_norm
// CHECK-NOT: kiln.reduce_mean
// REPORT: remark: fusion: layer norm of 7 ops
// REPORT: remark: fusion: layer norm of 7 ops
func.func @two_in_a_row(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %eps = kiln.constant dense<1.0e-5> : tensor<f32> -> tensor<f32>
  %m = kiln.reduce_mean %x {axes = array<i64: 1>, keepdims = true} : tensor<4x8xf32> -> tensor<4x1xf32>
  %c = kiln.sub %x, %m : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %sq = kiln.mul %c, %c : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %v = kiln.reduce_mean %sq {axes = array<i64: 1>, keepdims = true} : tensor<4x8xf32> -> tensor<4x1xf32>
  %ve = kiln.add %v, %eps : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %s = kiln.sqrt %ve : tensor<4x1xf32>
  %n = kiln.div %c, %s : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %m2 = kiln.reduce_mean %n {axes = array<i64: 1>, keepdims = true} : tensor<4x8xf32> -> tensor<4x1xf32>
  %c2 = kiln.sub %n, %m2 : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %sq2 = kiln.mul %c2, %c2 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %v2 = kiln.reduce_mean %sq2 {axes = array<i64: 1>, keepdims = true} : tensor<4x8xf32> -> tensor<4x1xf32>
  %ve2 = kiln.add %v2, %eps : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %s2 = kiln.sqrt %ve2 : tensor<4x1xf32>
  %n2 = kiln.div %c2, %s2 : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  return %n2 : tensor<4x8xf32>
}

// -----

// The statistics are outputs too (LayerNormalization's Mean, a model's
// own): the ops stay.
// CHECK-LABEL: func.func @mean_returned
// CHECK-NOT: kiln.layer_norm
// REPORT: remark: fusion: not fused into a layer norm: the mean has other users
func.func @mean_returned(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x1xf32>) {
  %eps = kiln.constant dense<1.0e-5> : tensor<f32> -> tensor<f32>
  %m = kiln.reduce_mean %x {axes = array<i64: 1>, keepdims = true} : tensor<4x8xf32> -> tensor<4x1xf32>
  %c = kiln.sub %x, %m : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %sq = kiln.mul %c, %c : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %v = kiln.reduce_mean %sq {axes = array<i64: 1>, keepdims = true} : tensor<4x8xf32> -> tensor<4x1xf32>
  %ve = kiln.add %v, %eps : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %s = kiln.sqrt %ve : tensor<4x1xf32>
  %n = kiln.div %c, %s : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  return %n, %m : tensor<4x8xf32>, tensor<4x1xf32>
}

// -----

// The centered values are an output too.
// CHECK-LABEL: func.func @centered_returned
// CHECK-NOT: kiln.layer_norm
// REPORT: remark: fusion: not fused into a layer norm: the centered values have other users
func.func @centered_returned(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %eps = kiln.constant dense<1.0e-5> : tensor<f32> -> tensor<f32>
  %m = kiln.reduce_mean %x {axes = array<i64: 1>, keepdims = true} : tensor<4x8xf32> -> tensor<4x1xf32>
  %c = kiln.sub %x, %m : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %sq = kiln.mul %c, %c : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %v = kiln.reduce_mean %sq {axes = array<i64: 1>, keepdims = true} : tensor<4x8xf32> -> tensor<4x1xf32>
  %ve = kiln.add %v, %eps : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %s = kiln.sqrt %ve : tensor<4x1xf32>
  %n = kiln.div %c, %s : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  return %n, %c : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// Centered over a leading dimension (a batch norm's statistics): not a
// layer norm.
// CHECK-LABEL: func.func @leading_axis
// CHECK-NOT: kiln.layer_norm
// REPORT: remark: fusion: not fused into a layer norm: the mean is not over the trailing dimensions
func.func @leading_axis(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %m = kiln.reduce_mean %x {axes = array<i64: 0>, keepdims = true} : tensor<4x8xf32> -> tensor<1x8xf32>
  %c = kiln.sub %x, %m : (tensor<4x8xf32>, tensor<1x8xf32>) -> tensor<4x8xf32>
  return %c : tensor<4x8xf32>
}

// -----

// Without keepdims, x - mean broadcasts the means along the rows.
// CHECK-LABEL: func.func @mean_not_kept
// CHECK-NOT: kiln.layer_norm
// REPORT: remark: fusion: not fused into a layer norm: the mean is not kept as dimensions of size 1
func.func @mean_not_kept(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %m = kiln.reduce_mean %x {axes = array<i64: 1>, keepdims = false} : tensor<4x4xf32> -> tensor<4xf32>
  %c = kiln.sub %x, %m : (tensor<4x4xf32>, tensor<4xf32>) -> tensor<4x4xf32>
  return %c : tensor<4x4xf32>
}

// -----

// The mean of cubes is not a variance.
// CHECK-LABEL: func.func @cubed
// CHECK-NOT: kiln.layer_norm
// REPORT: remark: fusion: not fused into a layer norm: the centered values' squares are not averaged over the same dimensions
func.func @cubed(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %three = kiln.constant dense<3.0> : tensor<f32> -> tensor<f32>
  %eps = kiln.constant dense<1.0e-5> : tensor<f32> -> tensor<f32>
  %m = kiln.reduce_mean %x {axes = array<i64: 1>, keepdims = true} : tensor<4x8xf32> -> tensor<4x1xf32>
  %c = kiln.sub %x, %m : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %sq = kiln.pow %c, %three : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %v = kiln.reduce_mean %sq {axes = array<i64: 1>, keepdims = true} : tensor<4x8xf32> -> tensor<4x1xf32>
  %ve = kiln.add %v, %eps : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %s = kiln.sqrt %ve : tensor<4x1xf32>
  %n = kiln.div %c, %s : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  return %n : tensor<4x8xf32>
}

// -----

// An epsilon known only at run time.
// CHECK-LABEL: func.func @runtime_epsilon
// CHECK-NOT: kiln.layer_norm
// REPORT: remark: fusion: not fused into a layer norm: no one-element f32 constant epsilon is added to the variance
func.func @runtime_epsilon(%x: tensor<4x8xf32>, %eps: tensor<1xf32>) -> tensor<4x8xf32> {
  %m = kiln.reduce_mean %x {axes = array<i64: 1>, keepdims = true} : tensor<4x8xf32> -> tensor<4x1xf32>
  %c = kiln.sub %x, %m : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %sq = kiln.mul %c, %c : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %v = kiln.reduce_mean %sq {axes = array<i64: 1>, keepdims = true} : tensor<4x8xf32> -> tensor<4x1xf32>
  %ve = kiln.add %v, %eps : (tensor<4x1xf32>, tensor<1xf32>) -> tensor<4x1xf32>
  %s = kiln.sqrt %ve : tensor<4x1xf32>
  %n = kiln.div %c, %s : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  return %n : tensor<4x8xf32>
}

// -----

// Divided by the variance, not by its square root.
// CHECK-LABEL: func.func @no_sqrt
// CHECK-NOT: kiln.layer_norm
// REPORT: remark: fusion: not fused into a layer norm: the variance plus epsilon has no square root of its own
func.func @no_sqrt(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %eps = kiln.constant dense<1.0e-5> : tensor<f32> -> tensor<f32>
  %m = kiln.reduce_mean %x {axes = array<i64: 1>, keepdims = true} : tensor<4x8xf32> -> tensor<4x1xf32>
  %c = kiln.sub %x, %m : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %sq = kiln.mul %c, %c : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %v = kiln.reduce_mean %sq {axes = array<i64: 1>, keepdims = true} : tensor<4x8xf32> -> tensor<4x1xf32>
  %ve = kiln.add %v, %eps : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %n = kiln.div %c, %ve : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  return %n : tensor<4x8xf32>
}

// -----

// The standard deviation divides something else.
// CHECK-LABEL: func.func @divides_input
// CHECK-NOT: kiln.layer_norm
// REPORT: remark: fusion: not fused into a layer norm: the centered values are not divided by the square root of the variance plus epsilon
func.func @divides_input(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %eps = kiln.constant dense<1.0e-5> : tensor<f32> -> tensor<f32>
  %m = kiln.reduce_mean %x {axes = array<i64: 1>, keepdims = true} : tensor<4x8xf32> -> tensor<4x1xf32>
  %c = kiln.sub %x, %m : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %sq = kiln.mul %c, %c : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %v = kiln.reduce_mean %sq {axes = array<i64: 1>, keepdims = true} : tensor<4x8xf32> -> tensor<4x1xf32>
  %ve = kiln.add %v, %eps : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %s = kiln.sqrt %ve : tensor<4x1xf32>
  %n = kiln.div %x, %s : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  return %n, %c : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// f16: kiln.layer_norm would sum the statistics in 16 bits (in the
// pipeline, kiln-compute-half-in-f32 has already widened each op).
// CHECK-LABEL: func.func @half
// CHECK-NOT: kiln.layer_norm
// REPORT: remark: fusion: not fused into a layer norm: its input is not f32
func.func @half(%x: tensor<4x8xf16>) -> tensor<4x8xf16> {
  %m = kiln.reduce_mean %x {axes = array<i64: 1>, keepdims = true} : tensor<4x8xf16> -> tensor<4x1xf16>
  %c = kiln.sub %x, %m : (tensor<4x8xf16>, tensor<4x1xf16>) -> tensor<4x8xf16>
  return %c : tensor<4x8xf16>
}

// -----

// A mean that nothing centers is not a layer norm's, and gets no remark.
// CHECK-LABEL: func.func @plain_mean
// CHECK: kiln.reduce_mean
// REPORT-NOT: remark
func.func @plain_mean(%x: tensor<4x8xf32>) -> tensor<4x1xf32> {
  %m = kiln.reduce_mean %x {axes = array<i64: 1>, keepdims = true} : tensor<4x8xf32> -> tensor<4x1xf32>
  return %m : tensor<4x1xf32>
}
