// RUN: kiln-opt %s --kiln-fuse-qdq --canonicalize --split-input-file | FileCheck %s
// RUN: kiln-opt %s --kiln-fuse-qdq=report=true --split-input-file 2>&1 >/dev/null | FileCheck %s --check-prefix=REPORT

// A QDQ matmul as imported: uint8 activations q dequantized per tensor
// (scale 0.5, zero point 10, in their type), int8 weights dequantized per
// column (scales 0.25 and 2 along axis 1). The product runs on q and the
// model's own weights: sum_k (q - 10) * w = q x w - 10 * colsum(w),
// colsum = [-2, 7], times 0.5 * [0.25, 2].
// CHECK-LABEL: func.func @matmul
// CHECK-DAG: %[[W:.*]] = kiln.constant dense_resource<{{int8_weight[_0-9]*}}> : tensor<3x2xi8>
// CHECK-DAG: %[[SUMS:.*]] = kiln.constant dense_resource<{{int8_weight_column_sums[_0-9]*}}> : tensor<2xi32>
// CHECK-DAG: %[[SCALES:.*]] = kiln.constant dense_resource<{{int8_weight_scales[_0-9]*}}> : tensor<2xf32>
// CHECK: %[[ACC:.*]] = kiln.matmul %arg0, %[[W]] : (tensor<4x3xui8>, tensor<3x2xi8>) -> tensor<4x2xi32>
// CHECK-NOT: kiln.matmul
// CHECK-NOT: kiln.dequantize
// CHECK: return
// The constants: w is [[1, -4], [2, 5], [-5, 6]] row-major, its column
// sums -2 and 7, and the scales 0.25 and 2 as f32.
// CHECK-DAG: int8_weight{{[_0-9]*}}: "0x0100000001FC0205FB06"
// CHECK-DAG: int8_weight_column_sums{{[_0-9]*}}: "0x04000000FEFFFFFF07000000"
// CHECK-DAG: int8_weight_scales{{[_0-9]*}}: "0x040000000000803E00000040"
// REPORT: remark: quant: matmul runs in int8 (QDQ: the model's int8 weights, activations uint8, scale 0.5, zero point 10)
func.func @matmul(%q: tensor<4x3xui8>) -> tensor<4x2xf32> {
  %qq = kiln.storage_cast %q : tensor<4x3xui8> -> tensor<4x3x!quant.uniform<u8:f32, 0.5:10>>
  %x = kiln.dequantize %qq : tensor<4x3x!quant.uniform<u8:f32, 0.5:10>> -> tensor<4x3xf32>
  %wq = kiln.constant dense<[[1, -4], [2, 5], [-5, 6]]> : tensor<3x2xi8> -> tensor<3x2xi8>
  %wqq = kiln.storage_cast %wq : tensor<3x2xi8> -> tensor<3x2x!quant.uniform<i8:f32:1, {0.25, 2.0}>>
  %w = kiln.dequantize %wqq : tensor<3x2x!quant.uniform<i8:f32:1, {0.25, 2.0}>> -> tensor<3x2xf32>
  %y = kiln.matmul %x, %w : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  return %y : tensor<4x2xf32>
}

// -----

// A QDQ convolution with int8 activations (zero point -3) flattened before
// the DequantizeLinear's reader: the border is padded with the zero point,
// the filter per output channel (axis 0) becomes the widening conv's.
// CHECK-LABEL: func.func @conv
// CHECK: %[[P:.*]] = kiln.pad %arg0 {{.*}}value = -3.000000e+00 : f64} : tensor<1x2x4x4xi8> -> tensor<1x2x6x6xi8>
// CHECK: kiln.conv %[[P]], %{{.*}} {{.*}} : (tensor<1x2x6x6xi8>, tensor<3x2x3x3xi8>) -> tensor<1x3x4x4xi32>
// CHECK-NOT: tensor<1x2x4x4xf32>
// REPORT: remark: quant: conv runs in int8 (QDQ: the model's int8 weights, activations int8, scale 0.1, zero point -3)
func.func @conv(%q: tensor<1x2x4x4xi8>) -> tensor<1x3x4x4xf32> {
  %qq = kiln.storage_cast %q : tensor<1x2x4x4xi8> -> tensor<1x2x4x4x!quant.uniform<i8:f32, 0.1:-3>>
  %x = kiln.dequantize %qq : tensor<1x2x4x4x!quant.uniform<i8:f32, 0.1:-3>> -> tensor<1x2x4x4xf32>
  %wq = kiln.constant dense<7> : tensor<3x2x3x3xi8> -> tensor<3x2x3x3xi8>
  %wqq = kiln.storage_cast %wq : tensor<3x2x3x3xi8> -> tensor<3x2x3x3x!quant.uniform<i8:f32:0, {0.5, 0.25, 0.125}>>
  %w = kiln.dequantize %wqq : tensor<3x2x3x3x!quant.uniform<i8:f32:0, {0.5, 0.25, 0.125}>> -> tensor<3x2x3x3xf32>
  %y = kiln.conv %x, %w {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x2x4x4xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x4x4xf32>
  return %y : tensor<1x3x4x4xf32>
}

// -----

// A quantize -> dequantize pair (QuantizeLinear -> DequantizeLinear once
// their storage casts fold) is read through a new storage cast.
// CHECK-LABEL: func.func @quantized_in_graph
// CHECK: %[[Q:.*]] = kiln.quantize %arg0 : tensor<4x3xf32> -> tensor<4x3x!quant.uniform<u8:f32, 5.000000e-01:10>>
// CHECK: %[[S:.*]] = kiln.storage_cast %[[Q]] : tensor<4x3x!quant.uniform<u8:f32, 5.000000e-01:10>> -> tensor<4x3xui8>
// CHECK: kiln.matmul %[[S]], %{{.*}} : (tensor<4x3xui8>, tensor<3x2xi8>) -> tensor<4x2xi32>
// REPORT: remark: quant: matmul runs in int8 (QDQ: the model's int8 weights, activations uint8, scale 0.5, zero point 10)
func.func @quantized_in_graph(%f: tensor<4x3xf32>) -> tensor<4x2xf32> {
  %q = kiln.quantize %f : tensor<4x3xf32> -> tensor<4x3x!quant.uniform<u8:f32, 0.5:10>>
  %x = kiln.dequantize %q : tensor<4x3x!quant.uniform<u8:f32, 0.5:10>> -> tensor<4x3xf32>
  %wq = kiln.constant dense<[[1, -4], [2, 5], [-5, 6]]> : tensor<3x2xi8> -> tensor<3x2xi8>
  %wqq = kiln.storage_cast %wq : tensor<3x2xi8> -> tensor<3x2x!quant.uniform<i8:f32, 0.25>>
  %w = kiln.dequantize %wqq : tensor<3x2x!quant.uniform<i8:f32, 0.25>> -> tensor<3x2xf32>
  %y = kiln.matmul %x, %w : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  return %y : tensor<4x2xf32>
}

// -----

// What stays f32, with the reason: activations dequantized per axis,
// weights with nonzero zero points, weights quantized along their input
// dimension, and weights that are not constants. Ops that read no
// DequantizeLinear are not QDQ and get no remark.
// CHECK-LABEL: func.func @not_fused
// CHECK-COUNT-5: kiln.matmul %{{.*}} : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
// REPORT: remark: quant: matmul stays f32 (QDQ not fused): its activations are not quantized per tensor
// REPORT: remark: quant: matmul stays f32 (QDQ not fused): its weights have nonzero zero points
// REPORT: remark: quant: matmul stays f32 (QDQ not fused): its weights are not quantized per output channel
// REPORT: remark: quant: matmul stays f32 (QDQ not fused): its weights are not dequantized int8 constants
// REPORT-NOT: remark
func.func @not_fused(%q: tensor<4x3xui8>, %f: tensor<4x3xf32>, %wv: tensor<3x2xi8>) -> (tensor<4x2xf32>, tensor<4x2xf32>, tensor<4x2xf32>, tensor<4x2xf32>, tensor<4x2xf32>) {
  %qa = kiln.storage_cast %q : tensor<4x3xui8> -> tensor<4x3x!quant.uniform<u8:f32:1, {0.5, 0.25, 1.0}>>
  %x1 = kiln.dequantize %qa : tensor<4x3x!quant.uniform<u8:f32:1, {0.5, 0.25, 1.0}>> -> tensor<4x3xf32>
  %qt = kiln.storage_cast %q : tensor<4x3xui8> -> tensor<4x3x!quant.uniform<u8:f32, 0.5>>
  %x2 = kiln.dequantize %qt : tensor<4x3x!quant.uniform<u8:f32, 0.5>> -> tensor<4x3xf32>
  %wq = kiln.constant dense<[[1, -4], [2, 5], [-5, 6]]> : tensor<3x2xi8> -> tensor<3x2xi8>
  %wqq = kiln.storage_cast %wq : tensor<3x2xi8> -> tensor<3x2x!quant.uniform<i8:f32, 0.5>>
  %w = kiln.dequantize %wqq : tensor<3x2x!quant.uniform<i8:f32, 0.5>> -> tensor<3x2xf32>
  %wzq = kiln.storage_cast %wq : tensor<3x2xi8> -> tensor<3x2x!quant.uniform<i8:f32, 0.5:1>>
  %w2 = kiln.dequantize %wzq : tensor<3x2x!quant.uniform<i8:f32, 0.5:1>> -> tensor<3x2xf32>
  %wrq = kiln.storage_cast %wq : tensor<3x2xi8> -> tensor<3x2x!quant.uniform<i8:f32:0, {0.5, 0.25, 1.0}>>
  %w3 = kiln.dequantize %wrq : tensor<3x2x!quant.uniform<i8:f32:0, {0.5, 0.25, 1.0}>> -> tensor<3x2xf32>
  %wvq = kiln.storage_cast %wv : tensor<3x2xi8> -> tensor<3x2x!quant.uniform<i8:f32, 0.5>>
  %w4 = kiln.dequantize %wvq : tensor<3x2x!quant.uniform<i8:f32, 0.5>> -> tensor<3x2xf32>
  %y1 = kiln.matmul %x1, %w : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  %y2 = kiln.matmul %x2, %w2 : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  %y3 = kiln.matmul %x2, %w3 : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  %y4 = kiln.matmul %x2, %w4 : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  %y5 = kiln.matmul %f, %w : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  return %y1, %y2, %y3, %y4, %y5 : tensor<4x2xf32>, tensor<4x2xf32>, tensor<4x2xf32>, tensor<4x2xf32>, tensor<4x2xf32>
}
