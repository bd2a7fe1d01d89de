// RUN: kiln-opt %s --kiln-convert-to-half --split-input-file | FileCheck %s
// RUN: kiln-opt %s --kiln-convert-to-half=report=true --split-input-file 2>&1 >/dev/null | FileCheck %s --check-prefix=REPORT
// RUN: kiln-opt %s --kiln-convert-to-half=type=f16 --split-input-file | FileCheck %s --check-prefix=F16
// RUN: kiln-opt %s "--kiln-convert-to-half=type=f16 report=true" --split-input-file 2>&1 >/dev/null | FileCheck %s --check-prefix=F16-REPORT
// RUN: not kiln-opt %s --kiln-convert-to-half=type=f8 2>&1 | FileCheck %s --check-prefix=TYPE
// TYPE: error: kiln-convert-to-half: unknown type 'f8' (expected bf16 or f16)

// W = [[1, -4], [2, 0.5], [-3, 1]] in bf16 (exact): 3F80 C080 4000 3F00 C040
// 3F80, little-endian in the blob; the activations are cast at run time.
// CHECK-LABEL: func.func @matmul
// CHECK: %[[X:.*]] = kiln.cast %arg0 : tensor<4x3xf32> -> tensor<4x3xbf16>
// CHECK: %[[W:.*]] = kiln.constant dense_resource<[[WBLOB:bf16_weight[_0-9]*]]> : tensor<3x2xbf16>
// CHECK: %[[Y:.*]] = kiln.matmul %[[X]], %[[W]] : (tensor<4x3xbf16>, tensor<3x2xbf16>) -> tensor<4x2xf32>
// CHECK: return %[[Y]]
// CHECK: [[WBLOB]]: "0x02000000803F80C00040003F40C0803F"
// REPORT: remark: quant: matmul runs in bf16 (f32 sums)
// In f16: 3C00 C400 4000 3800 C200 3C00.
// F16-LABEL: func.func @matmul
// F16: %[[X:.*]] = kiln.cast %arg0 : tensor<4x3xf32> -> tensor<4x3xf16>
// F16: %[[W:.*]] = kiln.constant dense_resource<[[WBLOB:f16_weight[_0-9]*]]> : tensor<3x2xf16>
// F16: kiln.matmul %[[X]], %[[W]] : (tensor<4x3xf16>, tensor<3x2xf16>) -> tensor<4x2xf32>
// F16: [[WBLOB]]: "0x02000000003C00C40040003800C2003C"
// F16-REPORT: remark: quant: matmul runs in f16 (f32 sums)
func.func @matmul(%x: tensor<4x3xf32>) -> tensor<4x2xf32> {
  %w = kiln.constant dense<[[1.0, -4.0], [2.0, 0.5], [-3.0, 1.0]]> : tensor<3x2xf32> -> tensor<3x2xf32>
  %y = kiln.matmul %x, %w : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  return %y : tensor<4x2xf32>
}

// -----

// A Gemm's trans_b is applied to the constant; alpha and beta * C follow.
// 1.00390625 rounds to 1.0 (3F80): bf16 keeps 8 bits of mantissa.
// CHECK-LABEL: func.func @gemm
// CHECK: %[[W:.*]] = kiln.constant dense_resource<[[WBLOB:bf16_weight[_0-9]*]]> : tensor<2x1xbf16>
// CHECK: %[[P:.*]] = kiln.matmul %{{.*}}, %[[W]] : (tensor<3x2xbf16>, tensor<2x1xbf16>) -> tensor<3x1xf32>
// CHECK: %[[A:.*]] = kiln.constant dense<5.000000e-01> : tensor<f32>
// CHECK: %[[Y:.*]] = kiln.mul %[[P]], %[[A]] : (tensor<3x1xf32>, tensor<f32>) -> tensor<3x1xf32>
// CHECK: %[[B:.*]] = kiln.constant dense<2.000000e+00> : tensor<f32>
// CHECK: %[[C:.*]] = kiln.mul %arg1, %[[B]] : (tensor<1xf32>, tensor<f32>) -> tensor<1xf32>
// CHECK: kiln.add %[[Y]], %[[C]] : (tensor<3x1xf32>, tensor<1xf32>) -> tensor<3x1xf32>
// CHECK: [[WBLOB]]: "0x02000000803F00C0"
// REPORT: remark: quant: gemm runs in bf16 (f32 sums)
// f16 keeps 11 bits: 1.00390625 is 3C04.
// F16-LABEL: func.func @gemm
// F16: kiln.matmul %{{.*}}, %{{.*}} : (tensor<3x2xf16>, tensor<2x1xf16>) -> tensor<3x1xf32>
// F16: "0x02000000043C00C0"
// F16-REPORT: remark: quant: gemm runs in f16 (f32 sums)
func.func @gemm(%x: tensor<3x2xf32>, %c: tensor<1xf32>) -> tensor<3x1xf32> {
  %b = kiln.constant dense<[[1.00390625, -2.0]]> : tensor<1x2xf32> -> tensor<1x2xf32>
  %y = kiln.gemm %x, %b, %c {alpha = 0.5 : f32, beta = 2.0 : f32, trans_b = true} : (tensor<3x2xf32>, tensor<1x2xf32>, tensor<1xf32>) -> tensor<3x1xf32>
  return %y : tensor<3x1xf32>
}

// -----

// Activations times activations stay f32.
// CHECK-LABEL: func.func @kept
// CHECK: kiln.matmul %arg0, %arg1 : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>
// REPORT: remark: quant: matmul stays f32: its right operand is not a constant
// F16-REPORT: remark: quant: matmul stays f32: its right operand is not a constant
func.func @kept(%a: tensor<2x3xf32>, %b: tensor<3x2xf32>) -> tensor<2x2xf32> {
  %y = kiln.matmul %a, %b : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>
  return %y : tensor<2x2xf32>
}

// -----

// 70000 is beyond f16's range (it would be infinite): in f16 the matmul
// stays f32; bf16 reaches it.
// CHECK-LABEL: func.func @large
// CHECK: kiln.matmul %{{.*}}, %{{.*}} : (tensor<1x2xbf16>, tensor<2x1xbf16>) -> tensor<1x1xf32>
// REPORT: remark: quant: matmul runs in bf16 (f32 sums)
// F16-LABEL: func.func @large
// F16: kiln.matmul %arg0, %{{.*}} : (tensor<1x2xf32>, tensor<2x1xf32>) -> tensor<1x1xf32>
// F16-REPORT: remark: quant: matmul stays f32: a weight is beyond f16's range (65504)
func.func @large(%x: tensor<1x2xf32>) -> tensor<1x1xf32> {
  %w = kiln.constant dense<[[70000.0], [1.0]]> : tensor<2x1xf32> -> tensor<2x1xf32>
  %y = kiln.matmul %x, %w : (tensor<1x2xf32>, tensor<2x1xf32>) -> tensor<1x1xf32>
  return %y : tensor<1x1xf32>
}
