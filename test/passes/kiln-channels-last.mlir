// RUN: kiln-opt %s --kiln-channels-last --split-input-file | FileCheck %s

// Two int8 convolutions with the dequantize/relu/requantize between them
// (as kiln-quantize-static writes them): both run channels-last, every op
// between them works on NHWC (the per-channel [4, 1, 1] constants become
// [1, 1, 1, 4] constants, reshaped at compile time), the global pooling is
// a mean over H and W, and the only transposes left are the input's to NHWC
// and the pooled result's to NCHW.
// CHECK-LABEL: func.func @int8_chain
// CHECK-DAG: %[[OFF:.*]] = kiln.constant dense<5> : tensor<1x1x1x4xi32>
// CHECK-DAG: %[[SCALE:.*]] = kiln.constant dense<5.000000e-01> : tensor<1x1x1x4xf32>
// CHECK: %[[IN:.*]] = kiln.transpose %arg0 {perm = array<i64: 0, 2, 3, 1>} : tensor<1x3x8x8xui8> -> tensor<1x8x8x3xui8>
// CHECK: %[[C1:.*]] = kiln.conv %[[IN]], %{{.*}} {channels_last, {{.*}}} : (tensor<1x8x8x3xui8>, tensor<4x3x3x3xi8>) -> tensor<1x6x6x4xi32>
// CHECK: kiln.sub %[[C1]], %[[OFF]] : (tensor<1x6x6x4xi32>, tensor<1x1x1x4xi32>) -> tensor<1x6x6x4xi32>
// CHECK: kiln.cast %{{.*}} : tensor<1x6x6x4xi32> -> tensor<1x6x6x4xf32>
// CHECK: kiln.mul %{{.*}}, %[[SCALE]] : (tensor<1x6x6x4xf32>, tensor<1x1x1x4xf32>) -> tensor<1x6x6x4xf32>
// CHECK: kiln.relu %{{.*}} : tensor<1x6x6x4xf32>
// CHECK: kiln.quantize %{{.*}} : tensor<1x6x6x4xf32> -> tensor<1x6x6x4x!quant.uniform<u8:f32, 1.000000e-01:7>>
// CHECK: kiln.storage_cast %{{.*}} : tensor<1x6x6x4x!quant.uniform<u8:f32, 1.000000e-01:7>> -> tensor<1x6x6x4xui8>
// CHECK: kiln.pad %{{.*}} {mode = "constant", pads = array<i64: 0, 1, 1, 0, 0, 1, 1, 0>, value = 7.000000e+00 : f64} : tensor<1x6x6x4xui8> -> tensor<1x8x8x4xui8>
// CHECK: %[[C2:.*]] = kiln.conv %{{.*}}, %{{.*}} {channels_last, {{.*}}} : (tensor<1x8x8x4xui8>, tensor<2x4x3x3xi8>) -> tensor<1x6x6x2xi32>
// CHECK: %[[F:.*]] = kiln.cast %[[C2]] : tensor<1x6x6x2xi32> -> tensor<1x6x6x2xf32>
// CHECK: %[[MEAN:.*]] = kiln.reduce_mean %[[F]] {axes = array<i64: 1, 2>, keepdims = true} : tensor<1x6x6x2xf32> -> tensor<1x1x1x2xf32>
// CHECK: %[[OUT:.*]] = kiln.transpose %[[MEAN]] {perm = array<i64: 0, 3, 1, 2>} : tensor<1x1x1x2xf32> -> tensor<1x2x1x1xf32>
// CHECK-NOT: kiln.transpose
// CHECK: return %[[OUT]]
func.func @int8_chain(%x: tensor<1x3x8x8xui8>) -> tensor<1x2x1x1xf32> {
  %w1 = kiln.constant dense<1> : tensor<4x3x3x3xi8> -> tensor<4x3x3x3xi8>
  %off = kiln.constant dense<5> : tensor<4x1x1xi32> -> tensor<4x1x1xi32>
  %scale = kiln.constant dense<0.5> : tensor<4x1x1xf32> -> tensor<4x1x1xf32>
  %w2 = kiln.constant dense<2> : tensor<2x4x3x3xi8> -> tensor<2x4x3x3xi8>
  %c1 = kiln.conv %x, %w1 {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, group = 1 : i64} : (tensor<1x3x8x8xui8>, tensor<4x3x3x3xi8>) -> tensor<1x4x6x6xi32>
  %s = kiln.sub %c1, %off : (tensor<1x4x6x6xi32>, tensor<4x1x1xi32>) -> tensor<1x4x6x6xi32>
  %f = kiln.cast %s : tensor<1x4x6x6xi32> -> tensor<1x4x6x6xf32>
  %m = kiln.mul %f, %scale : (tensor<1x4x6x6xf32>, tensor<4x1x1xf32>) -> tensor<1x4x6x6xf32>
  %r = kiln.relu %m : tensor<1x4x6x6xf32>
  %qq = kiln.quantize %r : tensor<1x4x6x6xf32> -> tensor<1x4x6x6x!quant.uniform<u8:f32, 0.1:7>>
  %q = kiln.storage_cast %qq : tensor<1x4x6x6x!quant.uniform<u8:f32, 0.1:7>> -> tensor<1x4x6x6xui8>
  %p = kiln.pad %q {mode = "constant", pads = array<i64: 0, 0, 1, 1, 0, 0, 1, 1>, value = 7.0 : f64} : tensor<1x4x6x6xui8> -> tensor<1x4x8x8xui8>
  %c2 = kiln.conv %p, %w2 {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, group = 1 : i64} : (tensor<1x4x8x8xui8>, tensor<2x4x3x3xi8>) -> tensor<1x2x6x6xi32>
  %cf = kiln.cast %c2 : tensor<1x2x6x6xi32> -> tensor<1x2x6x6xf32>
  %g = kiln.global_average_pool %cf : tensor<1x2x6x6xf32> -> tensor<1x2x1x1xf32>
  return %g : tensor<1x2x1x1xf32>
}

// -----

// Max pooling follows in NHWC; a residual operand that arrives in NCHW (the
// function's argument) is transposed to NHWC for the add.
// CHECK-LABEL: func.func @pool_and_residual
// CHECK: %[[C:.*]] = kiln.conv %{{.*}} {channels_last, {{.*}}} : (tensor<1x8x8x4xbf16>, tensor<4x4x1x1xbf16>) -> tensor<1x8x8x4xf32>
// CHECK: %[[P:.*]] = kiln.max_pool %[[C]] {channels_last, {{.*}}} : tensor<1x8x8x4xf32> -> tensor<1x4x4x4xf32>
// CHECK: %[[Y:.*]] = kiln.transpose %arg1 {perm = array<i64: 0, 2, 3, 1>} : tensor<1x4x4x4xf32> -> tensor<1x4x4x4xf32>
// CHECK: %[[A:.*]] = kiln.add %[[P]], %[[Y]]
// CHECK: %[[R:.*]] = kiln.transpose %[[A]] {perm = array<i64: 0, 3, 1, 2>}
// CHECK: return %[[R]]
func.func @pool_and_residual(%x: tensor<1x4x8x8xbf16>, %y: tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32> {
  %w = kiln.constant dense<1.0> : tensor<4x4x1x1xbf16> -> tensor<4x4x1x1xbf16>
  %c = kiln.conv %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, group = 1 : i64} : (tensor<1x4x8x8xbf16>, tensor<4x4x1x1xbf16>) -> tensor<1x4x8x8xf32>
  %p = kiln.max_pool %c {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : tensor<1x4x8x8xf32> -> tensor<1x4x4x4xf32>
  %a = kiln.add %p, %y : (tensor<1x4x4x4xf32>, tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  return %a : tensor<1x4x4x4xf32>
}

// -----

// f32 convolutions with a filter known only at run time stay NCHW (their
// filter could not be relaid out at compile time), as do grouped ones.
// CHECK-LABEL: func.func @float_conv
// CHECK-NOT: kiln.transpose
// CHECK-NOT: channels_last
func.func @float_conv(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x1x1xf32>) -> (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) {
  %c = kiln.conv %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, group = 1 : i64} : (tensor<1x4x8x8xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x8x8xf32>
  %wg = kiln.constant dense<1.0> : tensor<4x2x1x1xf32> -> tensor<4x2x1x1xf32>
  %g = kiln.conv %x, %wg {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, group = 2 : i64} : (tensor<1x4x8x8xf32>, tensor<4x2x1x1xf32>) -> tensor<1x4x8x8xf32>
  return %c, %g : tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>
}

// -----

// A MobileNet-style f32 block with constant filters: pointwise conv (with
// bias) -> depthwise conv -> squeeze-and-excitation (global average pool,
// 1x1 conv, sigmoid, multiply) -> concatenation with the block's input.
// All of it runs in NHWC: the global pool becomes a mean over H and W, the
// concatenation runs along the channels (axis 3); the only transposes are
// the input's and the result's.
// CHECK-LABEL: func.func @float_block
// CHECK: %[[IN:.*]] = kiln.transpose %arg0 {perm = array<i64: 0, 2, 3, 1>} : tensor<1x4x8x8xf32> -> tensor<1x8x8x4xf32>
// CHECK: %[[PW:.*]] = kiln.conv %[[IN]], %{{.*}}, %{{.*}} {channels_last, {{.*}}group = 1 : i64{{.*}}} : (tensor<1x8x8x4xf32>, tensor<8x4x1x1xf32>, tensor<8xf32>) -> tensor<1x8x8x8xf32>
// CHECK: %[[DW:.*]] = kiln.conv %[[PW]], %{{.*}} {channels_last, {{.*}}group = 8 : i64{{.*}}} : (tensor<1x8x8x8xf32>, tensor<8x1x3x3xf32>) -> tensor<1x8x8x8xf32>
// CHECK: %[[MEAN:.*]] = kiln.reduce_mean %[[DW]] {axes = array<i64: 1, 2>, keepdims = true} : tensor<1x8x8x8xf32> -> tensor<1x1x1x8xf32>
// CHECK: %[[SE:.*]] = kiln.conv %[[MEAN]], %{{.*}} {channels_last, {{.*}}} : (tensor<1x1x1x8xf32>, tensor<8x8x1x1xf32>) -> tensor<1x1x1x8xf32>
// CHECK: %[[GATE:.*]] = kiln.sigmoid %[[SE]] : tensor<1x1x1x8xf32>
// CHECK: %[[M:.*]] = kiln.mul %[[DW]], %[[GATE]] : (tensor<1x8x8x8xf32>, tensor<1x1x1x8xf32>) -> tensor<1x8x8x8xf32>
// CHECK: %[[IN2:.*]] = kiln.transpose %arg0 {perm = array<i64: 0, 2, 3, 1>}
// CHECK: %[[CAT:.*]] = kiln.concat %[[M]], %[[IN2]] {axis = 3 : i64} : (tensor<1x8x8x8xf32>, tensor<1x8x8x4xf32>) -> tensor<1x8x8x12xf32>
// CHECK: %[[OUT:.*]] = kiln.transpose %[[CAT]] {perm = array<i64: 0, 3, 1, 2>} : tensor<1x8x8x12xf32> -> tensor<1x12x8x8xf32>
// CHECK: return %[[OUT]]
func.func @float_block(%x: tensor<1x4x8x8xf32>) -> tensor<1x12x8x8xf32> {
  %wp = kiln.constant dense<0.5> : tensor<8x4x1x1xf32> -> tensor<8x4x1x1xf32>
  %bp = kiln.constant dense<0.25> : tensor<8xf32> -> tensor<8xf32>
  %wd = kiln.constant dense<0.125> : tensor<8x1x3x3xf32> -> tensor<8x1x3x3xf32>
  %ws = kiln.constant dense<2.0> : tensor<8x8x1x1xf32> -> tensor<8x8x1x1xf32>
  %pw = kiln.conv %x, %wp, %bp {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, group = 1 : i64} : (tensor<1x4x8x8xf32>, tensor<8x4x1x1xf32>, tensor<8xf32>) -> tensor<1x8x8x8xf32>
  %dw = kiln.conv %pw, %wd {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, group = 8 : i64} : (tensor<1x8x8x8xf32>, tensor<8x1x3x3xf32>) -> tensor<1x8x8x8xf32>
  %g = kiln.global_average_pool %dw : tensor<1x8x8x8xf32> -> tensor<1x8x1x1xf32>
  %se = kiln.conv %g, %ws {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, group = 1 : i64} : (tensor<1x8x1x1xf32>, tensor<8x8x1x1xf32>) -> tensor<1x8x1x1xf32>
  %gate = kiln.sigmoid %se : tensor<1x8x1x1xf32>
  %m = kiln.mul %dw, %gate : (tensor<1x8x8x8xf32>, tensor<1x8x1x1xf32>) -> tensor<1x8x8x8xf32>
  %cat = kiln.concat %m, %x {axis = 1 : i64} : (tensor<1x8x8x8xf32>, tensor<1x4x8x8xf32>) -> tensor<1x12x8x8xf32>
  return %cat : tensor<1x12x8x8xf32>
}
