// RUN: kiln-opt %s --kiln-quantize-static --split-input-file | FileCheck %s
// RUN: kiln-opt %s --kiln-quantize-static=report=true --split-input-file 2>&1 >/dev/null | FileCheck %s --check-prefix=REPORT

// Activations calibrated to [-1, 3]: scale = 4 / 255, zero point =
// round(1 / (4 / 255)) = round(63.75) = 64, both fixed at compile time; the
// int8 product is kiln-quantize-dynamic's (see its test for the weights).
// CHECK-LABEL: func.func @matmul
// CHECK-NOT: kiln.dynamic_quantize
// CHECK: %[[QQ:.*]] = kiln.quantize %arg0 : tensor<4x3xf32> -> tensor<4x3x!quant.uniform<u8:f32, 0.015686275437474251:64>>
// CHECK: %[[Q:.*]] = kiln.storage_cast %[[QQ]] : tensor<4x3x!quant.uniform<u8:f32, 0.015686275437474251:64>> -> tensor<4x3xui8>
// CHECK: %[[S:.*]] = kiln.constant dense<0.0156862754> : tensor<f32>
// CHECK: %[[Z:.*]] = kiln.constant dense<64> : tensor<ui8>
// CHECK: %[[ACC:.*]] = kiln.matmul %[[Q]], %{{.*}} : (tensor<4x3xui8>, tensor<3x2xi8>) -> tensor<4x2xi32>
// CHECK: kiln.cast %[[Z]] : tensor<ui8> -> tensor<i32>
// CHECK: kiln.mul %[[S]], %{{.*}} : (tensor<f32>, tensor<2xf32>) -> tensor<2xf32>
// REPORT: remark: quant: matmul runs in int8 (weights per output channel, activations in [-1, 3]: scale 0.01569, zero point 64)
func.func @matmul(%x: tensor<4x3xf32>) -> tensor<4x2xf32> {
  %w = kiln.constant dense<[[1.0, -4.0], [2.0, 0.5], [-3.0, 1.0]]> : tensor<3x2xf32> -> tensor<3x2xf32>
  %y = kiln.matmul %x, %w {kiln.activation_range = array<f32: -1.0, 3.0>} : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  return %y : tensor<4x2xf32>
}

// -----

// Without a range, or with an all-zero one, the op stays f32.
// CHECK-LABEL: func.func @uncalibrated
// CHECK-NOT: kiln.quantize
// CHECK: kiln.matmul %arg0, %{{.*}} : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
// CHECK: kiln.gemm
// REPORT: remark: quant: matmul stays f32: its activations were not calibrated
// REPORT: remark: quant: gemm stays f32: its activations were all zero in calibration
func.func @uncalibrated(%x: tensor<4x3xf32>) -> (tensor<4x2xf32>, tensor<4x2xf32>) {
  %w = kiln.constant dense<1.0> : tensor<3x2xf32> -> tensor<3x2xf32>
  %y = kiln.matmul %x, %w : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  %g = kiln.gemm %x, %w {kiln.activation_range = array<f32: 0.0, 0.0>} : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  return %y, %g : tensor<4x2xf32>, tensor<4x2xf32>
}
