// RUN: kiln-opt %s --kiln-fuse-attention --split-input-file | FileCheck %s
// RUN: kiln-opt %s --kiln-fuse-attention=report=true --split-input-file 2>&1 >/dev/null | FileCheck %s --check-prefix=REPORT

// Div by sqrt(64) = 8 is scale 0.125; the rank-2 mask is reshaped to the
// scores' rank (broadcast over the batch).
// CHECK-LABEL: func.func @scaled_masked
// CHECK: %[[M:.*]] = kiln.reshape %arg3 : tensor<16x32xf32> -> tensor<1x16x32xf32>
// CHECK: %[[A:.*]] = kiln.attention %arg0, %arg1, %arg2, %[[M]] {scale = 1.250000e-01 : f32} : (tensor<2x16x64xf32>, tensor<2x64x32xf32>, tensor<2x32x8xf32>, tensor<1x16x32xf32>) -> tensor<2x16x8xf32>
// CHECK-NOT: kiln.softmax
// CHECK-NOT: kiln.matmul
// CHECK: return %[[A]]
// REPORT: remark: fusion: attention kernel over blocks of keys: kiln.matmul, kiln.div, kiln.add, kiln.softmax, kiln.matmul
func.func @scaled_masked(%q: tensor<2x16x64xf32>, %kt: tensor<2x64x32xf32>, %v: tensor<2x32x8xf32>, %mask: tensor<16x32xf32>) -> tensor<2x16x8xf32> {
  %c = kiln.constant dense<8.0> : tensor<f32> -> tensor<f32>
  %s = kiln.matmul %q, %kt : (tensor<2x16x64xf32>, tensor<2x64x32xf32>) -> tensor<2x16x32xf32>
  %d = kiln.div %s, %c : (tensor<2x16x32xf32>, tensor<f32>) -> tensor<2x16x32xf32>
  %m = kiln.add %mask, %d : (tensor<16x32xf32>, tensor<2x16x32xf32>) -> tensor<2x16x32xf32>
  %p = kiln.softmax %m {axis = 2 : i64} : tensor<2x16x32xf32>
  %o = kiln.matmul %p, %v : (tensor<2x16x32xf32>, tensor<2x32x8xf32>) -> tensor<2x16x8xf32>
  return %o : tensor<2x16x8xf32>
}

// -----

// A constant on the left of a Mul scales too; plain 2-D attention.
// CHECK-LABEL: func.func @mul_left
// CHECK: kiln.attention %arg0, %arg1, %arg2 {scale = 5.000000e-01 : f32} : (tensor<4x8xf32>, tensor<8x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
// REPORT: remark: fusion: attention kernel over blocks of keys: kiln.matmul, kiln.mul, kiln.softmax, kiln.matmul
func.func @mul_left(%q: tensor<4x8xf32>, %kt: tensor<8x16xf32>, %v: tensor<16x8xf32>) -> tensor<4x8xf32> {
  %c = kiln.constant dense<0.5> : tensor<1xf32> -> tensor<1xf32>
  %s = kiln.matmul %q, %kt : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %d = kiln.mul %c, %s : (tensor<1xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %p = kiln.softmax %d {axis = 1 : i64} : tensor<4x16xf32>
  %o = kiln.matmul %p, %v : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  return %o : tensor<4x8xf32>
}

// -----

// Scores used elsewhere must be materialized anyway: not fused.
// CHECK-LABEL: func.func @scores_used_twice
// CHECK-NOT: kiln.attention
// REPORT: remark: fusion: not fused into an attention kernel: the scores have other users
func.func @scores_used_twice(%q: tensor<4x8xf32>, %kt: tensor<8x16xf32>, %v: tensor<16x8xf32>) -> (tensor<4x8xf32>, tensor<4x16xf32>) {
  %s = kiln.matmul %q, %kt : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %p = kiln.softmax %s {axis = 1 : i64} : tensor<4x16xf32>
  %o = kiln.matmul %p, %v : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  return %o, %s : tensor<4x8xf32>, tensor<4x16xf32>
}

// -----

// CHECK-LABEL: func.func @probabilities_returned
// CHECK-NOT: kiln.attention
// REPORT: remark: fusion: not fused into an attention kernel: its result is not used only as the left operand of a matmul
func.func @probabilities_returned(%q: tensor<4x8xf32>, %kt: tensor<8x16xf32>, %v: tensor<16x8xf32>) -> (tensor<4x8xf32>, tensor<4x16xf32>) {
  %s = kiln.matmul %q, %kt : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %p = kiln.softmax %s {axis = 1 : i64} : tensor<4x16xf32>
  %o = kiln.matmul %p, %v : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  return %o, %p : tensor<4x8xf32>, tensor<4x16xf32>
}

// -----

// CHECK-LABEL: func.func @not_last_axis
// CHECK-NOT: kiln.attention
// REPORT: remark: fusion: not fused into an attention kernel: it does not run along the last axis
func.func @not_last_axis(%q: tensor<16x8xf32>, %kt: tensor<8x16xf32>, %v: tensor<16x8xf32>) -> tensor<16x8xf32> {
  %s = kiln.matmul %q, %kt : (tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<16x16xf32>
  %p = kiln.softmax %s {axis = 0 : i64} : tensor<16x16xf32>
  %o = kiln.matmul %p, %v : (tensor<16x16xf32>, tensor<16x8xf32>) -> tensor<16x8xf32>
  return %o : tensor<16x8xf32>
}

// -----

// A scale that is not a constant is not folded into the kernel.
// CHECK-LABEL: func.func @scale_not_constant
// CHECK-NOT: kiln.attention
// REPORT: remark: fusion: not fused into an attention kernel: its input is not a matmul, scaled by a constant and masked at most
func.func @scale_not_constant(%q: tensor<4x8xf32>, %kt: tensor<8x16xf32>, %v: tensor<16x8xf32>, %c: tensor<f32>) -> tensor<4x8xf32> {
  %s = kiln.matmul %q, %kt : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %d = kiln.mul %s, %c : (tensor<4x16xf32>, tensor<f32>) -> tensor<4x16xf32>
  %p = kiln.softmax %d {axis = 1 : i64} : tensor<4x16xf32>
  %o = kiln.matmul %p, %v : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  return %o : tensor<4x8xf32>
}

// -----

// CHECK-LABEL: func.func @broadcast_batch
// CHECK-NOT: kiln.attention
// REPORT: remark: fusion: not fused into an attention kernel: the matmuls broadcast their batch dimensions
func.func @broadcast_batch(%q: tensor<2x4x8xf32>, %kt: tensor<8x16xf32>, %v: tensor<2x16x8xf32>) -> tensor<2x4x8xf32> {
  %s = kiln.matmul %q, %kt : (tensor<2x4x8xf32>, tensor<8x16xf32>) -> tensor<2x4x16xf32>
  %p = kiln.softmax %s {axis = 2 : i64} : tensor<2x4x16xf32>
  %o = kiln.matmul %p, %v : (tensor<2x4x16xf32>, tensor<2x16x8xf32>) -> tensor<2x4x8xf32>
  return %o : tensor<2x4x8xf32>
}

// -----

// CHECK-LABEL: func.func @mask_per_batch_not_head
// CHECK-NOT: kiln.attention
// REPORT: remark: fusion: not fused into an attention kernel: the mask broadcasts over some batch dimensions but not all
func.func @mask_per_batch_not_head(%q: tensor<2x3x4x8xf32>, %kt: tensor<2x3x8x16xf32>, %v: tensor<2x3x16x8xf32>, %mask: tensor<2x1x1x16xf32>) -> tensor<2x3x4x8xf32> {
  %s = kiln.matmul %q, %kt : (tensor<2x3x4x8xf32>, tensor<2x3x8x16xf32>) -> tensor<2x3x4x16xf32>
  %m = kiln.add %s, %mask : (tensor<2x3x4x16xf32>, tensor<2x1x1x16xf32>) -> tensor<2x3x4x16xf32>
  %p = kiln.softmax %m {axis = 3 : i64} : tensor<2x3x4x16xf32>
  %o = kiln.matmul %p, %v : (tensor<2x3x4x16xf32>, tensor<2x3x16x8xf32>) -> tensor<2x3x4x8xf32>
  return %o : tensor<2x3x4x8xf32>
}
