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

// -----

// A half model's attention as kiln-compute-half-in-f32 leaves it for CPUs:
// each op in f32, its result rounded to f16 and widened again. Matched
// through the roundings, which go: the fused op computes in f32 from the
// widened Q, K^T, V and mask, and only its result is rounded.
// CHECK-LABEL: func.func @half_rounded
// CHECK-SAME: (%[[Q:.*]]: tensor<2x16x64xf16>, %[[KT:.*]]: tensor<2x64x32xf16>, %[[V:.*]]: tensor<2x32x8xf16>, %[[MASK:.*]]: tensor<2x16x32xf16>)
// CHECK-DAG: %[[Q32:.*]] = kiln.cast %[[Q]] : tensor<2x16x64xf16> -> tensor<2x16x64xf32>
// CHECK-DAG: %[[KT32:.*]] = kiln.cast %[[KT]] : tensor<2x64x32xf16> -> tensor<2x64x32xf32>
// CHECK-DAG: %[[V32:.*]] = kiln.cast %[[V]] : tensor<2x32x8xf16> -> tensor<2x32x8xf32>
// CHECK-DAG: %[[MASK32:.*]] = kiln.cast %[[MASK]] : tensor<2x16x32xf16> -> tensor<2x16x32xf32>
// CHECK: %[[A:.*]] = kiln.attention %[[Q32]], %[[KT32]], %[[V32]], %[[MASK32]] {scale = 1.250000e-01 : f32}
// CHECK: %[[OUT:.*]] = kiln.cast %[[A]] : tensor<2x16x8xf32> -> tensor<2x16x8xf16>
// CHECK-NOT: kiln.softmax
// CHECK-NOT: kiln.matmul
// CHECK: return %[[OUT]]
// REPORT: remark: fusion: attention kernel over blocks of keys: kiln.matmul, kiln.mul, kiln.add, kiln.softmax, kiln.matmul
func.func @half_rounded(%q: tensor<2x16x64xf16>, %kt: tensor<2x64x32xf16>, %v: tensor<2x32x8xf16>, %mask: tensor<2x16x32xf16>) -> tensor<2x16x8xf16> {
  %c = kiln.constant dense<0.125> : tensor<f32> -> tensor<f32>
  %q32 = kiln.cast %q : tensor<2x16x64xf16> -> tensor<2x16x64xf32>
  %kt32 = kiln.cast %kt : tensor<2x64x32xf16> -> tensor<2x64x32xf32>
  %s = kiln.matmul %q32, %kt32 : (tensor<2x16x64xf32>, tensor<2x64x32xf32>) -> tensor<2x16x32xf32>
  %s16 = kiln.cast %s : tensor<2x16x32xf32> -> tensor<2x16x32xf16>
  %s32 = kiln.cast %s16 : tensor<2x16x32xf16> -> tensor<2x16x32xf32>
  %d = kiln.mul %s32, %c : (tensor<2x16x32xf32>, tensor<f32>) -> tensor<2x16x32xf32>
  %d16 = kiln.cast %d : tensor<2x16x32xf32> -> tensor<2x16x32xf16>
  %d32 = kiln.cast %d16 : tensor<2x16x32xf16> -> tensor<2x16x32xf32>
  %mask32 = kiln.cast %mask : tensor<2x16x32xf16> -> tensor<2x16x32xf32>
  %m = kiln.add %d32, %mask32 : (tensor<2x16x32xf32>, tensor<2x16x32xf32>) -> tensor<2x16x32xf32>
  %m16 = kiln.cast %m : tensor<2x16x32xf32> -> tensor<2x16x32xf16>
  %m32 = kiln.cast %m16 : tensor<2x16x32xf16> -> tensor<2x16x32xf32>
  %p = kiln.softmax %m32 {axis = 2 : i64} : tensor<2x16x32xf32>
  %p16 = kiln.cast %p : tensor<2x16x32xf32> -> tensor<2x16x32xf16>
  %p32 = kiln.cast %p16 : tensor<2x16x32xf16> -> tensor<2x16x32xf32>
  %v32 = kiln.cast %v : tensor<2x32x8xf16> -> tensor<2x32x8xf32>
  %o = kiln.matmul %p32, %v32 : (tensor<2x16x32xf32>, tensor<2x32x8xf32>) -> tensor<2x16x8xf32>
  %o16 = kiln.cast %o : tensor<2x16x8xf32> -> tensor<2x16x8xf16>
  return %o16 : tensor<2x16x8xf16>
}

// -----

// The same for GPUs, whose matmuls take the 16-bit operands themselves and
// give f32 (bf16 here): the fused op's operands are widened.
// CHECK-LABEL: func.func @half_widening_matmuls
// CHECK-SAME: (%[[Q:.*]]: tensor<16x64xbf16>, %[[KT:.*]]: tensor<64x32xbf16>, %[[V:.*]]: tensor<32x8xbf16>)
// CHECK-DAG: %[[Q32:.*]] = kiln.cast %[[Q]] : tensor<16x64xbf16> -> tensor<16x64xf32>
// CHECK-DAG: %[[KT32:.*]] = kiln.cast %[[KT]] : tensor<64x32xbf16> -> tensor<64x32xf32>
// CHECK-DAG: %[[V32:.*]] = kiln.cast %[[V]] : tensor<32x8xbf16> -> tensor<32x8xf32>
// CHECK: %[[A:.*]] = kiln.attention %[[Q32]], %[[KT32]], %[[V32]] {scale = 1.000000e+00 : f32} : (tensor<16x64xf32>, tensor<64x32xf32>, tensor<32x8xf32>) -> tensor<16x8xf32>
// CHECK: kiln.cast %[[A]] : tensor<16x8xf32> -> tensor<16x8xbf16>
// CHECK-NOT: kiln.matmul
// REPORT: remark: fusion: attention kernel over blocks of keys: kiln.matmul, kiln.softmax, kiln.matmul
func.func @half_widening_matmuls(%q: tensor<16x64xbf16>, %kt: tensor<64x32xbf16>, %v: tensor<32x8xbf16>) -> tensor<16x8xbf16> {
  %s = kiln.matmul %q, %kt : (tensor<16x64xbf16>, tensor<64x32xbf16>) -> tensor<16x32xf32>
  %s16 = kiln.cast %s : tensor<16x32xf32> -> tensor<16x32xbf16>
  %s32 = kiln.cast %s16 : tensor<16x32xbf16> -> tensor<16x32xf32>
  %p = kiln.softmax %s32 {axis = 1 : i64} : tensor<16x32xf32>
  %p16 = kiln.cast %p : tensor<16x32xf32> -> tensor<16x32xbf16>
  %o = kiln.matmul %p16, %v : (tensor<16x32xbf16>, tensor<32x8xbf16>) -> tensor<16x8xf32>
  %o16 = kiln.cast %o : tensor<16x8xf32> -> tensor<16x8xbf16>
  return %o16 : tensor<16x8xbf16>
}

// -----

// A rounding that something else reads too is a value the model uses: not
// fused (the scores would be computed twice).
// CHECK-LABEL: func.func @half_scores_read
// CHECK: kiln.softmax
// REPORT: remark: fusion: not fused into an attention kernel: the scores' 16-bit rounding has other users
func.func @half_scores_read(%q: tensor<16x64xf16>, %kt: tensor<64x32xf16>, %v: tensor<32x8xf16>) -> (tensor<16x8xf32>, tensor<16x32xf16>) {
  %s = kiln.matmul %q, %kt : (tensor<16x64xf16>, tensor<64x32xf16>) -> tensor<16x32xf32>
  %s16 = kiln.cast %s : tensor<16x32xf32> -> tensor<16x32xf16>
  %s32 = kiln.cast %s16 : tensor<16x32xf16> -> tensor<16x32xf32>
  %p = kiln.softmax %s32 {axis = 1 : i64} : tensor<16x32xf32>
  %p16 = kiln.cast %p : tensor<16x32xf32> -> tensor<16x32xf16>
  %o = kiln.matmul %p16, %v : (tensor<16x32xf16>, tensor<32x8xf16>) -> tensor<16x8xf32>
  return %o, %s16 : tensor<16x8xf32>, tensor<16x32xf16>
}
