// RUN: kiln-opt %s --kiln-fuse-qdq --canonicalize --split-input-file | FileCheck %s
// RUN: kiln-opt %s --kiln-fuse-qdq=report=true --split-input-file 2>&1 >/dev/null | FileCheck %s --check-prefix=REPORT

// A QDQ matmul as imported: uint8 activations q dequantized per tensor
// (scale 0.5, zero point 10), int8 weights dequantized per column (scales
// 0.25 and 2, zero points 0). The product runs on q and the model's own
// weights: sum_k (q - 10) * w = q x w - 10 * colsum(w), colsum = [-2, 7],
// times 0.5 * [0.25, 2].
// CHECK-LABEL: func.func @matmul
// CHECK-DAG: %[[W:.*]] = kiln.constant dense_resource<{{int8_weight[_0-9]*}}> : tensor<3x2xi8>
// CHECK-DAG: %[[SUMS:.*]] = kiln.constant dense_resource<{{int8_weight_column_sums[_0-9]*}}> : tensor<2xi32>
// CHECK-DAG: %[[SCALES:.*]] = kiln.constant dense_resource<{{int8_weight_scales[_0-9]*}}> : tensor<2xf32>
// CHECK: %[[ACC:.*]] = kiln.matmul %arg0, %[[W]] : (tensor<4x3xui8>, tensor<3x2xi8>) -> tensor<4x2xi32>
// CHECK-NOT: kiln.matmul
// CHECK: return
// The constants: w is [[1, -4], [2, 5], [-5, 6]] row-major, its column
// sums -2 and 7, and the scales 0.25 and 2 as f32.
// CHECK-DAG: int8_weight{{[_0-9]*}}: "0x0100000001FC0205FB06"
// CHECK-DAG: int8_weight_column_sums{{[_0-9]*}}: "0x04000000FEFFFFFF07000000"
// CHECK-DAG: int8_weight_scales{{[_0-9]*}}: "0x040000000000803E00000040"
// REPORT: remark: quant: matmul runs in int8 (QDQ: the model's int8 weights, activations uint8, scale 0.5, zero point 10)
func.func @matmul(%q: tensor<4x3xui8>) -> tensor<4x2xf32> {
  %s = kiln.constant dense<0.5> : tensor<f32> -> tensor<f32>
  %z = kiln.constant dense<10> : tensor<ui8> -> tensor<ui8>
  %qf = kiln.cast %q : tensor<4x3xui8> -> tensor<4x3xf32>
  %zf = kiln.cast %z : tensor<ui8> -> tensor<f32>
  %c = kiln.sub %qf, %zf : (tensor<4x3xf32>, tensor<f32>) -> tensor<4x3xf32>
  %x = kiln.mul %c, %s : (tensor<4x3xf32>, tensor<f32>) -> tensor<4x3xf32>
  %wq = kiln.constant dense<[[1, -4], [2, 5], [-5, 6]]> : tensor<3x2xi8> -> tensor<3x2xi8>
  %ws = kiln.constant dense<[0.25, 2.0]> : tensor<2xf32> -> tensor<2xf32>
  %wz = kiln.constant dense<0> : tensor<2xi8> -> tensor<2xi8>
  %wf = kiln.cast %wq : tensor<3x2xi8> -> tensor<3x2xf32>
  %wz2 = kiln.reshape %wz : tensor<2xi8> -> tensor<1x2xi8>
  %wzf = kiln.cast %wz2 : tensor<1x2xi8> -> tensor<1x2xf32>
  %wc = kiln.sub %wf, %wzf : (tensor<3x2xf32>, tensor<1x2xf32>) -> tensor<3x2xf32>
  %ws2 = kiln.reshape %ws : tensor<2xf32> -> tensor<1x2xf32>
  %w = kiln.mul %wc, %ws2 : (tensor<3x2xf32>, tensor<1x2xf32>) -> tensor<3x2xf32>
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
  %s = kiln.constant dense<0.1> : tensor<f32> -> tensor<f32>
  %z = kiln.constant dense<-3> : tensor<i8> -> tensor<i8>
  %qf = kiln.cast %q : tensor<1x2x4x4xi8> -> tensor<1x2x4x4xf32>
  %zf = kiln.cast %z : tensor<i8> -> tensor<f32>
  %c = kiln.sub %qf, %zf : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %x = kiln.mul %c, %s : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %wq = kiln.constant dense<7> : tensor<3x2x3x3xi8> -> tensor<3x2x3x3xi8>
  %ws = kiln.constant dense<[0.5, 0.25, 0.125]> : tensor<3xf32> -> tensor<3xf32>
  %wf = kiln.cast %wq : tensor<3x2x3x3xi8> -> tensor<3x2x3x3xf32>
  %ws2 = kiln.reshape %ws : tensor<3xf32> -> tensor<3x1x1x1xf32>
  %w = kiln.mul %wf, %ws2 : (tensor<3x2x3x3xf32>, tensor<3x1x1x1xf32>) -> tensor<3x2x3x3xf32>
  %y = kiln.conv %x, %w {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x2x4x4xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x4x4xf32>
  return %y : tensor<1x3x4x4xf32>
}

// -----

// What stays f32, with the reason: activations dequantized per axis, and
// weights with nonzero zero points. Ops that read no DequantizeLinear are
// not QDQ and get no remark.
// CHECK-LABEL: func.func @not_fused
// CHECK-COUNT-3: kiln.matmul %{{.*}} : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
// REPORT: remark: quant: matmul stays f32 (QDQ not fused): its activations are not quantized per tensor
// REPORT: remark: quant: matmul stays f32 (QDQ not fused): its weights have nonzero zero points
// REPORT-NOT: remark
func.func @not_fused(%q: tensor<4x3xui8>, %f: tensor<4x3xf32>) -> (tensor<4x2xf32>, tensor<4x2xf32>, tensor<4x2xf32>) {
  %qf = kiln.cast %q : tensor<4x3xui8> -> tensor<4x3xf32>
  %axis = kiln.constant dense<[[0.5, 0.25, 1.0]]> : tensor<1x3xf32> -> tensor<1x3xf32>
  %x1 = kiln.mul %qf, %axis : (tensor<4x3xf32>, tensor<1x3xf32>) -> tensor<4x3xf32>
  %s = kiln.constant dense<0.5> : tensor<f32> -> tensor<f32>
  %x2 = kiln.mul %qf, %s : (tensor<4x3xf32>, tensor<f32>) -> tensor<4x3xf32>
  %wq = kiln.constant dense<[[1, -4], [2, 5], [-5, 6]]> : tensor<3x2xi8> -> tensor<3x2xi8>
  %wf = kiln.cast %wq : tensor<3x2xi8> -> tensor<3x2xf32>
  %w = kiln.mul %wf, %s : (tensor<3x2xf32>, tensor<f32>) -> tensor<3x2xf32>
  %wz = kiln.constant dense<1.0> : tensor<f32> -> tensor<f32>
  %wc = kiln.sub %wf, %wz : (tensor<3x2xf32>, tensor<f32>) -> tensor<3x2xf32>
  %w2 = kiln.mul %wc, %s : (tensor<3x2xf32>, tensor<f32>) -> tensor<3x2xf32>
  %y1 = kiln.matmul %x1, %w : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  %y2 = kiln.matmul %x2, %w2 : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  %y3 = kiln.matmul %f, %w : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  return %y1, %y2, %y3 : tensor<4x2xf32>, tensor<4x2xf32>, tensor<4x2xf32>
}
