// RUN: kiln-opt %s --kiln-fold-batch-norm --split-input-file | FileCheck %s
// RUN: kiln-opt %s --kiln-fold-batch-norm=report=true --split-input-file 2>&1 >/dev/null | FileCheck %s --check-prefix=REPORT

// s = scale / sqrt(var + eps) = [1 / sqrt(3 + 1), 2 / sqrt(0 + 1)] = [0.5, 2]
// W' = W * s = [2 * 0.5, 3 * 2] = [1, 6]              (blob: 0000803F 0000C040)
// b' = (b - mean) * s + bias = [(1 - 1) * 0.5 + 0.5, (-1 - 1) * 2 + 0] = [0.5, -4]
//                                                     (blob: 0000003F 000080C0)
// CHECK-LABEL: func.func @folded
// CHECK: %[[W:.*]] = kiln.constant dense_resource<[[WBLOB:folded_bn_weight[_0-9]*]]> : tensor<2x1x1x1xf32> -> tensor<2x1x1x1xf32>
// CHECK: %[[B:.*]] = kiln.constant dense_resource<[[BBLOB:folded_bn_bias[_0-9]*]]> : tensor<2xf32> -> tensor<2xf32>
// CHECK: %[[Y:.*]] = kiln.conv %arg0, %[[W]], %[[B]] {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>}
// CHECK-NOT: kiln.batch_norm
// CHECK: return %[[Y]]
// CHECK: [[WBLOB]]: "0x040000000000803F0000C040"
// CHECK: [[BBLOB]]: "0x040000000000003F000080C0"
// REPORT: remark: fusion: folded into the convolution that feeds it
func.func @folded(%x: tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %w = kiln.constant dense<[[[[2.0]]], [[[3.0]]]]> : tensor<2x1x1x1xf32> -> tensor<2x1x1x1xf32>
  %b = kiln.constant dense<[1.0, -1.0]> : tensor<2xf32> -> tensor<2xf32>
  %scale = kiln.constant dense<[1.0, 2.0]> : tensor<2xf32> -> tensor<2xf32>
  %shift = kiln.constant dense<[0.5, 0.0]> : tensor<2xf32> -> tensor<2xf32>
  %mean = kiln.constant dense<1.0> : tensor<2xf32> -> tensor<2xf32>
  %var = kiln.constant dense<[3.0, 0.0]> : tensor<2xf32> -> tensor<2xf32>
  %c = kiln.conv %x, %w, %b {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, group = 1 : i64} : (tensor<1x1x4x4xf32>, tensor<2x1x1x1xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32>
  %y = kiln.batch_norm %c, %scale, %shift, %mean, %var {epsilon = 1.0 : f32} : (tensor<1x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32>
  return %y : tensor<1x2x4x4xf32>
}

// -----

// The convolution's output is also returned: folding would change it.
// CHECK-LABEL: func.func @shared_conv
// CHECK: kiln.batch_norm
// REPORT: remark: fusion: not folded into a convolution: the convolution has other users
func.func @shared_conv(%x: tensor<1x1x4x4xf32>) -> (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) {
  %w = kiln.constant dense<1.0> : tensor<2x1x1x1xf32> -> tensor<2x1x1x1xf32>
  %p = kiln.constant dense<1.0> : tensor<2xf32> -> tensor<2xf32>
  %c = kiln.conv %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, group = 1 : i64} : (tensor<1x1x4x4xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x4x4xf32>
  %y = kiln.batch_norm %c, %p, %p, %p, %p {epsilon = 1.0e-5 : f32} : (tensor<1x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32>
  return %c, %y : tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>
}

// -----

// Weights that are a function argument are not known at compile time.
// CHECK-LABEL: func.func @runtime_weights
// CHECK: kiln.batch_norm
// REPORT: remark: fusion: not folded into a convolution: the weights or batch-norm parameters are not f32 constants
func.func @runtime_weights(%x: tensor<1x1x4x4xf32>, %w: tensor<2x1x1x1xf32>) -> tensor<1x2x4x4xf32> {
  %p = kiln.constant dense<1.0> : tensor<2xf32> -> tensor<2xf32>
  %c = kiln.conv %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, group = 1 : i64} : (tensor<1x1x4x4xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x4x4xf32>
  %y = kiln.batch_norm %c, %p, %p, %p, %p {epsilon = 1.0e-5 : f32} : (tensor<1x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32>
  return %y : tensor<1x2x4x4xf32>
}

// -----

// A batch norm after something other than a convolution stays.
// CHECK-LABEL: func.func @not_after_conv
// CHECK: kiln.batch_norm
// REPORT: remark: fusion: not folded into a convolution: its input is not a convolution
func.func @not_after_conv(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %p = kiln.constant dense<1.0> : tensor<2xf32> -> tensor<2xf32>
  %y = kiln.batch_norm %x, %p, %p, %p, %p {epsilon = 1.0e-5 : f32} : (tensor<1x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32>
  return %y : tensor<1x2x4x4xf32>
}
