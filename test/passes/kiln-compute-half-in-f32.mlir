// RUN: kiln-opt %s --kiln-compute-half-in-f32 --split-input-file | FileCheck %s
// RUN: kiln-opt %s --kiln-compute-half-in-f32=widen-matmuls=true --split-input-file | FileCheck %s --check-prefix=WIDEN

// A matmul of f16 operands runs on f32 ones and rounds its result once: the
// activation is cast, the constant weights are widened at compile time.
// CHECK-LABEL: func.func @matmul
// CHECK-DAG: %[[W:.*]] = kiln.constant dense_resource<[[BLOB:widened.*]]> : tensor<2x2xf32>
// CHECK-DAG: %[[X:.*]] = kiln.cast %arg0 : tensor<3x2xf16> -> tensor<3x2xf32>
// CHECK: %[[Y:.*]] = kiln.matmul %[[X]], %[[W]] : (tensor<3x2xf32>, tensor<2x2xf32>) -> tensor<3x2xf32>
// CHECK: %[[R:.*]] = kiln.cast %[[Y]] : tensor<3x2xf32> -> tensor<3x2xf16>
// CHECK: return %[[R]]
// The f32 weights [1, 2, 0.5, 0.25].
// CHECK: [[BLOB]]: "0x040000000000803F000000400000003F0000803E"
// With widen-matmuls (CUDA: the tensor cores read 16-bit operands), the
// operands stay f16 and the matmul sums in f32 (a widening matmul); its
// result is rounded once all the same.
// WIDEN-LABEL: func.func @matmul
// WIDEN: %[[W:.*]] = kiln.constant dense<{{.*}}> : tensor<2x2xf16>
// WIDEN: %[[Y:.*]] = kiln.matmul %arg0, %[[W]] : (tensor<3x2xf16>, tensor<2x2xf16>) -> tensor<3x2xf32>
// WIDEN: %[[R:.*]] = kiln.cast %[[Y]] : tensor<3x2xf32> -> tensor<3x2xf16>
// WIDEN: return %[[R]]
func.func @matmul(%x: tensor<3x2xf16>) -> tensor<3x2xf16> {
  %w = kiln.constant dense<[[1.0, 2.0], [0.5, 0.25]]> : tensor<2x2xf16> -> tensor<2x2xf16>
  %0 = kiln.matmul %x, %w : (tensor<3x2xf16>, tensor<2x2xf16>) -> tensor<3x2xf16>
  return %0 : tensor<3x2xf16>
}

// -----

// A Gemm alike: by default on f32 operands (the constant weights widened),
// rounded once. With widen-matmuls its operands stay f16: the transposed
// weights a transpose (exact), the product a widening matmul, alpha and
// beta * C in f32 (C cast), the result rounded once.
// CHECK-LABEL: func.func @gemm
// CHECK: kiln.gemm %{{.*}}, %{{.*}}, %{{.*}} {alpha = 5.000000e-01 : f32, beta = 2.000000e+00 : f32, trans_b = true} : (tensor<3x4xf32>, tensor<2x4xf32>, tensor<2xf32>) -> tensor<3x2xf32>
// WIDEN-LABEL: func.func @gemm
// WIDEN: %[[WT:.*]] = kiln.transpose %{{.*}} {perm = array<i64: 1, 0>} : tensor<2x4xf16> -> tensor<4x2xf16>
// WIDEN: %[[P:.*]] = kiln.matmul %arg0, %[[WT]] : (tensor<3x4xf16>, tensor<4x2xf16>) -> tensor<3x2xf32>
// WIDEN: %[[C:.*]] = kiln.cast %arg1 : tensor<2xf16> -> tensor<2xf32>
// WIDEN: %[[A:.*]] = kiln.mul %[[P]], %{{.*}} : (tensor<3x2xf32>, tensor<f32>) -> tensor<3x2xf32>
// WIDEN: %[[BC:.*]] = kiln.mul %[[C]], %{{.*}} : (tensor<2xf32>, tensor<f32>) -> tensor<2xf32>
// WIDEN: %[[Y:.*]] = kiln.add %[[A]], %[[BC]] : (tensor<3x2xf32>, tensor<2xf32>) -> tensor<3x2xf32>
// WIDEN: kiln.cast %[[Y]] : tensor<3x2xf32> -> tensor<3x2xf16>
func.func @gemm(%x: tensor<3x4xf16>, %c: tensor<2xf16>) -> tensor<3x2xf16> {
  %w = kiln.constant dense<[[1.0, 2.0, 0.5, 0.25], [1.0, 1.0, 1.0, 1.0]]> : tensor<2x4xf16> -> tensor<2x4xf16>
  %0 = kiln.gemm %x, %w, %c {trans_b = true, alpha = 0.5 : f32, beta = 2.0 : f32} : (tensor<3x4xf16>, tensor<2x4xf16>, tensor<2xf16>) -> tensor<3x2xf16>
  return %0 : tensor<3x2xf16>
}

// -----

// Each rounding op rounds its own result (as onnxruntime stores each op's
// f16 output); bf16 alike. A splat constant is widened as a splat.
// CHECK-LABEL: func.func @chain
// CHECK: %[[X:.*]] = kiln.cast %arg0 : tensor<8xbf16> -> tensor<8xf32>
// CHECK: %[[E:.*]] = kiln.exp %[[X]] : tensor<8xf32>
// CHECK: %[[E16:.*]] = kiln.cast %[[E]] : tensor<8xf32> -> tensor<8xbf16>
// CHECK-DAG: %[[H:.*]] = kiln.constant dense<5.000000e-01> : tensor<f32>
// CHECK-DAG: %[[E32:.*]] = kiln.cast %[[E16]] : tensor<8xbf16> -> tensor<8xf32>
// CHECK: kiln.mul %[[E32]], %[[H]] : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
func.func @chain(%x: tensor<8xbf16>) -> tensor<8xbf16> {
  %0 = kiln.exp %x : tensor<8xbf16>
  %h = kiln.constant dense<0.5> : tensor<bf16> -> tensor<bf16>
  %1 = kiln.mul %0, %h : (tensor<8xbf16>, tensor<bf16>) -> tensor<8xbf16>
  return %1 : tensor<8xbf16>
}

// -----

// Ops that move, select or compare are exact and stay in f16; so do f32
// ops and ops with f32 operands next to f16 ones.
// CHECK-LABEL: func.func @exact
// CHECK-NEXT: kiln.reshape %arg0 : tensor<2x4xf16> -> tensor<8xf16>
// CHECK-NEXT: kiln.relu %{{.*}} : tensor<8xf16>
// CHECK-NEXT: kiln.reduce %{{.*}} {axes = array<i64: 0>, keepdims = false, kind = "max"} : tensor<8xf16> -> tensor<f16>
// CHECK-NEXT: kiln.exp %arg1 : tensor<4xf32>
// CHECK-NEXT: return
func.func @exact(%x: tensor<2x4xf16>, %y: tensor<4xf32>) -> (tensor<f16>, tensor<4xf32>) {
  %0 = kiln.reshape %x : tensor<2x4xf16> -> tensor<8xf16>
  %1 = kiln.relu %0 : tensor<8xf16>
  %2 = kiln.reduce %1 {kind = "max", axes = array<i64: 0>, keepdims = false} : tensor<8xf16> -> tensor<f16>
  %3 = kiln.exp %y : tensor<4xf32>
  return %2, %3 : tensor<f16>, tensor<4xf32>
}
