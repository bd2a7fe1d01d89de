// RUN: kiln-opt %s --kiln-quantize-dynamic --split-input-file | FileCheck %s
// RUN: kiln-opt %s --kiln-quantize-dynamic=report=true --split-input-file 2>&1 >/dev/null | FileCheck %s --check-prefix=REPORT

// W = [[1, -4], [2, 0.5], [-3, 1]] (K = 3, N = 2). Per column:
//   ws = max |W| / 127 = [3/127, 4/127]
//   Wq = round(W / ws) = [[42, -127], [85, 16], [-127, 32]]  (42.33, 84.67, 15.875, 31.75)
//   colsum(Wq) = [0, -79]
// Blobs are little-endian: 42 = 2A, -127 = 81, 85 = 55, 16 = 10, 32 = 20;
// 3/127 = 0x3CC18306, 4/127 = 0x3D010204; -79 = 0xFFFFFFB1.
// CHECK-LABEL: func.func @matmul
// CHECK: %[[Q:.*]], %[[XS:.*]], %[[XZ:.*]] = kiln.dynamic_quantize %arg0 : tensor<4x3xf32> -> tensor<4x3xui8>, tensor<f32>, tensor<ui8>
// CHECK: %[[WQ:.*]] = kiln.constant dense_resource<[[WBLOB:int8_weight[_0-9]*]]> : tensor<3x2xi8>
// CHECK: %[[ACC:.*]] = kiln.matmul %[[Q]], %[[WQ]] : (tensor<4x3xui8>, tensor<3x2xi8>) -> tensor<4x2xi32>
// CHECK: %[[SUMS:.*]] = kiln.constant dense_resource<[[CBLOB:int8_weight_column_sums[_0-9]*]]> : tensor<2xi32>
// CHECK: %[[XZI:.*]] = kiln.cast %[[XZ]] : tensor<ui8> -> tensor<i32>
// CHECK: %[[OFF:.*]] = kiln.mul %[[XZI]], %[[SUMS]] : (tensor<i32>, tensor<2xi32>) -> tensor<2xi32>
// CHECK: %[[CEN:.*]] = kiln.sub %[[ACC]], %[[OFF]] : (tensor<4x2xi32>, tensor<2xi32>) -> tensor<4x2xi32>
// CHECK: %[[SCALES:.*]] = kiln.constant dense_resource<[[SBLOB:int8_weight_scales[_0-9]*]]> : tensor<2xf32>
// CHECK: %[[S:.*]] = kiln.mul %[[XS]], %[[SCALES]] : (tensor<f32>, tensor<2xf32>) -> tensor<2xf32>
// CHECK: %[[F:.*]] = kiln.cast %[[CEN]] : tensor<4x2xi32> -> tensor<4x2xf32>
// CHECK: %[[Y:.*]] = kiln.mul %[[F]], %[[S]] : (tensor<4x2xf32>, tensor<2xf32>) -> tensor<4x2xf32>
// CHECK: return %[[Y]]
// CHECK-DAG: [[WBLOB]]: "0x010000002A81551081
// CHECK-DAG: [[CBLOB]]: "0x0400000000000000B1FFFFFF"
// CHECK-DAG: [[SBLOB]]: "0x040000000683C13C0402013D"
// REPORT: remark: quant: matmul runs in int8 (weights per column, activations per tensor at run time)
func.func @matmul(%x: tensor<4x3xf32>) -> tensor<4x2xf32> {
  %w = kiln.constant dense<[[1.0, -4.0], [2.0, 0.5], [-3.0, 1.0]]> : tensor<3x2xf32> -> tensor<3x2xf32>
  %y = kiln.matmul %x, %w : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  return %y : tensor<4x2xf32>
}

// -----

// Gemm with trans_b, alpha and beta: B^T is quantized per column of B^T (per
// row of B); alpha multiplies the weight scales, beta the bias.
// W = B^T = [[2], [-1]] -> ws = 2/127, Wq = [127, -64] (-63.5 rounds to even -64).
// alpha = 0.5 -> scales 1/127 = 0x3C010204; beta * C = 2 * C.
// CHECK-LABEL: func.func @gemm
// CHECK: kiln.dynamic_quantize %arg0 : tensor<3x2xf32>
// CHECK: %[[WQ:.*]] = kiln.constant dense_resource<[[WBLOB:int8_weight[_0-9]*]]> : tensor<2x1xi8>
// CHECK: kiln.matmul {{.*}}, %[[WQ]] : (tensor<3x2xui8>, tensor<2x1xi8>) -> tensor<3x1xi32>
// CHECK: kiln.constant dense_resource<[[SBLOB:int8_weight_scales[_0-9]*]]> : tensor<1xf32>
// CHECK: %[[Y:.*]] = kiln.mul {{.*}} : (tensor<3x1xf32>, tensor<1xf32>) -> tensor<3x1xf32>
// CHECK: %[[BETA:.*]] = kiln.constant dense<2.000000e+00> : tensor<f32>
// CHECK: %[[BC:.*]] = kiln.mul %arg1, %[[BETA]] : (tensor<1xf32>, tensor<f32>) -> tensor<1xf32>
// CHECK: %[[R:.*]] = kiln.add %[[Y]], %[[BC]] : (tensor<3x1xf32>, tensor<1xf32>) -> tensor<3x1xf32>
// CHECK: return %[[R]]
// CHECK-DAG: [[WBLOB]]: "0x010000007FC0"
// CHECK-DAG: [[SBLOB]]: "0x040000000402013C"
// REPORT: remark: quant: gemm runs in int8
func.func @gemm(%x: tensor<3x2xf32>, %c: tensor<1xf32>) -> tensor<3x1xf32> {
  %b = kiln.constant dense<[[2.0, -1.0]]> : tensor<1x2xf32> -> tensor<1x2xf32>
  %y = kiln.gemm %x, %b, %c {alpha = 0.5 : f32, beta = 2.0 : f32, trans_b = true} : (tensor<3x2xf32>, tensor<1x2xf32>, tensor<1xf32>) -> tensor<3x1xf32>
  return %y : tensor<3x1xf32>
}

// -----

// Activations times activations, a transposed A and a vector left operand
// stay f32, each with its reason.
// CHECK-LABEL: func.func @kept
// CHECK-NOT: kiln.dynamic_quantize
// CHECK: kiln.matmul %arg0, %arg1 : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>
// CHECK: kiln.gemm
// CHECK: kiln.matmul %arg2
// REPORT: remark: quant: matmul stays f32: its right operand is not a constant
// REPORT: remark: quant: gemm stays f32: its activations are transposed (trans_a)
// REPORT: remark: quant: matmul stays f32: its left operand is a vector
func.func @kept(%a: tensor<2x3xf32>, %b: tensor<3x2xf32>, %v: tensor<3xf32>) -> (tensor<2x2xf32>, tensor<2x2xf32>, tensor<2xf32>) {
  %w = kiln.constant dense<1.0> : tensor<3x2xf32> -> tensor<3x2xf32>
  %y = kiln.matmul %a, %b : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>
  %at = kiln.constant dense<1.0> : tensor<3x2xf32> -> tensor<3x2xf32>
  %g = kiln.gemm %at, %w {trans_a = true} : (tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>
  %m = kiln.matmul %v, %w : (tensor<3xf32>, tensor<3x2xf32>) -> tensor<2xf32>
  return %y, %g, %m : tensor<2x2xf32>, tensor<2x2xf32>, tensor<2xf32>
}
