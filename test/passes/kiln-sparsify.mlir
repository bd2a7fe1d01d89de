// RUN: kiln-opt %s --split-input-file --kiln-sparsify | FileCheck %s
// RUN: kiln-opt %s --split-input-file --kiln-sparsify=report=true 2>&1 >/dev/null | FileCheck %s --check-prefix=REPORT
// RUN: kiln-opt %s --split-input-file --kiln-sparsify="expand-load=true report=true" 2>&1 | FileCheck %s --check-prefix=BITMAP
// RUN: kiln-opt %s --split-input-file --kiln-sparsify="int8-bitmaps=true" | FileCheck %s --check-prefix=INT8
// RUN: kiln-opt %s --split-input-file --kiln-sparsify="int8-bitmaps=true report=true" 2>&1 >/dev/null | FileCheck %s --check-prefix=INT8-REPORT

// W [K = 4, N = 2] with one nonzero per column: compressed columns (B = 1).
// Column 0 has row 1 (2.0), column 1 row 3 (-3.0): offsets [0, 1, 2],
// indices [1, 3] (i16), values [[2], [-3]] (2 = 00000040, -3 = 000040C0).
// CHECK-LABEL: func.func @columns
// CHECK-DAG: %[[O:.*]] = kiln.constant dense_resource<[[OB:sparse_offsets[_0-9]*]]> : tensor<3xi32>
// CHECK-DAG: %[[I:.*]] = kiln.constant dense_resource<[[IB:sparse_indices[_0-9]*]]> : tensor<2xi16>
// CHECK-DAG: %[[V:.*]] = kiln.constant dense_resource<[[VB:sparse_values[_0-9]*]]> : tensor<2x1xf32>
// CHECK: %[[Y:.*]] = kiln.sparse_matmul %arg0, %[[O]], %[[I]], %[[V]] : (tensor<1x4xf32>, tensor<3xi32>, tensor<2xi16>, tensor<2x1xf32>) -> tensor<1x2xf32>
// CHECK-NOT: kiln.matmul
// CHECK: return %[[Y]]
// CHECK-DAG: [[OB]]: "0x04000000000000000100000002000000"
// CHECK-DAG: [[IB]]: "0x0200000001000300"
// CHECK-DAG: [[VB]]: "0x0400000000000040000040C0"
// REPORT: remark: sparsity: 75.0% zeros: sparse, compressed columns, predicted 1.60x as fast as dense
func.func @columns(%x: tensor<1x4xf32>) -> tensor<1x2xf32> {
  %w = kiln.constant dense<[[0.0, 0.0], [2.0, 0.0], [0.0, 0.0], [0.0, -3.0]]> : tensor<4x2xf32> -> tensor<4x2xf32>
  %y = kiln.matmul %x, %w : (tensor<1x4xf32>, tensor<4x2xf32>) -> tensor<1x2xf32>
  return %y : tensor<1x2xf32>
}

// -----

// A gemm: B is [N, K] (trans_b), alpha = 2 is folded into the values
// (4 = 00008040, -6 = 0000C0C0), beta * C follows.
// CHECK-LABEL: func.func @gemm
// CHECK-DAG: kiln.constant dense_resource<[[GV:sparse_values[_0-9]*]]> : tensor<2x1xf32>
// CHECK: %[[Y:.*]] = kiln.sparse_matmul %arg0
// CHECK: %[[BETA:.*]] = kiln.constant dense<5.000000e-01> : tensor<f32>
// CHECK: %[[C:.*]] = kiln.mul %arg1, %[[BETA]]
// CHECK: %[[R:.*]] = kiln.add %[[Y]], %[[C]]
// CHECK: return %[[R]]
// CHECK: [[GV]]: "0x04000000000080400000C0C0"
func.func @gemm(%x: tensor<1x4xf32>, %c: tensor<2xf32>) -> tensor<1x2xf32> {
  %w = kiln.constant dense<[[0.0, 2.0, 0.0, 0.0], [0.0, 0.0, 0.0, -3.0]]> : tensor<2x4xf32> -> tensor<2x4xf32>
  %y = kiln.gemm %x, %w, %c {trans_b = true, alpha = 2.0 : f32, beta = 0.5 : f32} : (tensor<1x4xf32>, tensor<2x4xf32>, tensor<2xf32>) -> tensor<1x2xf32>
  return %y : tensor<1x2xf32>
}

// -----

// 16 outputs, row 0 all zero and row 1 dense: 16x1 blocks keep one entry
// (row 1), where compressed columns would keep 16.
// CHECK-LABEL: func.func @blocks
// CHECK: kiln.sparse_matmul %arg0, %{{.*}}, %{{.*}}, %{{.*}} : (tensor<1x2xf32>, tensor<2xi32>, tensor<1xi16>, tensor<1x16xf32>) -> tensor<1x16xf32>
// REPORT: remark: sparsity: 50.0% zeros: sparse, 16x1 blocks, predicted 1.83x as fast as dense
func.func @blocks(%x: tensor<1x2xf32>) -> tensor<1x16xf32> {
  %w = kiln.constant dense<[[0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
                            [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]]> : tensor<2x16xf32> -> tensor<2x16xf32>
  %y = kiln.matmul %x, %w : (tensor<1x2xf32>, tensor<2x16xf32>) -> tensor<1x16xf32>
  return %y : tensor<1x16xf32>
}

// -----

// Dense weights, and weights that are not constants, stay kiln.matmul.
// CHECK-LABEL: func.func @dense
// CHECK: kiln.matmul
// CHECK: kiln.matmul
// CHECK-NOT: kiln.sparse_matmul
// REPORT: remark: sparsity: 0.0% zeros: dense (the best sparse kernel, compressed columns, is predicted 0.56x as fast)
// REPORT: remark: sparsity: dense: its right operand is not a constant
func.func @dense(%x: tensor<1x4xf32>, %v: tensor<2x2xf32>) -> tensor<1x2xf32> {
  %w = kiln.constant dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0]]> : tensor<4x2xf32> -> tensor<4x2xf32>
  %y = kiln.matmul %x, %w : (tensor<1x4xf32>, tensor<4x2xf32>) -> tensor<1x2xf32>
  %z = kiln.matmul %y, %v : (tensor<1x2xf32>, tensor<2x2xf32>) -> tensor<1x2xf32>
  return %z : tensor<1x2xf32>
}

// -----

// Half the weights zero: with expand-load, bitmaps. K = 4 rows in 4
// segments of one row: starts [0, 8, 16, 24, 32]; masks 0x5555 (outputs
// 0, 2, ...) and 0xAAAA (1, 3, ...) alternately.
// BITMAP: remark: sparsity: 50.0% zeros: sparse, bitmaps, predicted 1.83x as fast as dense
// BITMAP: func.func @bitmap
// BITMAP-DAG: %[[S:.*]] = kiln.constant dense_resource<[[SB:bitmap_starts[_0-9]*]]> : tensor<5xi32>
// BITMAP-DAG: %[[M:.*]] = kiln.constant dense_resource<[[MB:bitmap_masks[_0-9]*]]> : tensor<1x4xi16>
// BITMAP-DAG: %[[V:.*]] = kiln.constant dense_resource<{{.*}}> : tensor<32xf32>
// BITMAP: kiln.bitmap_matmul %arg0, %[[S]], %[[M]], %[[V]] : (tensor<1x4xf32>, tensor<5xi32>, tensor<1x4xi16>, tensor<32xf32>) -> tensor<1x16xf32>
// BITMAP-DAG: [[SB]]: "0x04000000000000000800000010000000180000002000000
// BITMAP-DAG: [[MB]]: "0x020000005555AAAA5555AAAA"
func.func @bitmap(%x: tensor<1x4xf32>) -> tensor<1x16xf32> {
  %w = kiln.constant dense<[[1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0],
                            [0.0, 2.0, 0.0, 2.0, 0.0, 2.0, 0.0, 2.0, 0.0, 2.0, 0.0, 2.0, 0.0, 2.0, 0.0, 2.0],
                            [3.0, 0.0, 3.0, 0.0, 3.0, 0.0, 3.0, 0.0, 3.0, 0.0, 3.0, 0.0, 3.0, 0.0, 3.0, 0.0],
                            [0.0, 4.0, 0.0, 4.0, 0.0, 4.0, 0.0, 4.0, 0.0, 4.0, 0.0, 4.0, 0.0, 4.0, 0.0, 4.0]]> : tensor<4x16xf32> -> tensor<4x16xf32>
  %y = kiln.matmul %x, %w : (tensor<1x4xf32>, tensor<4x16xf32>) -> tensor<1x16xf32>
  return %y : tensor<1x16xf32>
}

// -----

// The int8 product of --quantize (uint8 activations, constant int8
// weights, i32 sums) with 3 nonzeros: int8 bitmaps. K = 4 is one group of
// 4 rows (all 4 segments start at it: starts [0, 0, 0, 0, 3]); bit 4 l + t
// stands for W[t, l]: W[0, 0] = 5 (bit 0), W[1, 0] = -6 (bit 1), W[3, 15]
// = 7 (bit 63), so the mask is 0x8000000000000003 and the values 05 FA 07.
// Without int8-bitmaps (no VNNI and VBMI2) the product stays dense.
// INT8-REPORT: remark: sparsity: 95.3% zeros: sparse, int8 bitmaps, predicted 2.00x as fast as dense
// INT8: func.func @int8_bitmap
// INT8-DAG: %[[S:.*]] = kiln.constant dense_resource<[[SB:bitmap_starts[_0-9]*]]> : tensor<5xi32>
// INT8-DAG: %[[M:.*]] = kiln.constant dense_resource<[[MB:bitmap_masks[_0-9]*]]> : tensor<1x1xi64>
// INT8-DAG: %[[V:.*]] = kiln.constant dense_resource<[[VB:bitmap_values[_0-9]*]]> : tensor<3xi8>
// INT8: %[[Y:.*]] = kiln.bitmap_matmul %arg0, %[[S]], %[[M]], %[[V]] : (tensor<1x4xui8>, tensor<5xi32>, tensor<1x1xi64>, tensor<3xi8>) -> tensor<1x16xi32>
// INT8-NOT: kiln.matmul
// INT8: return %[[Y]]
// INT8-DAG: [[SB]]: "0x040000000000000000000000000000000000000003000000"
// INT8-DAG: [[MB]]: "0x080000000300000000000080"
// INT8-DAG: [[VB]]: "0x0100000005FA07"
// REPORT: remark: sparsity: dense: int8 sparse kernels need AVX512-VNNI and AVX512-VBMI2
func.func @int8_bitmap(%x: tensor<1x4xui8>) -> tensor<1x16xi32> {
  %w = kiln.constant dense<[[5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
                            [-6, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
                            [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
                            [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7]]> : tensor<4x16xi8> -> tensor<4x16xi8>
  %y = kiln.matmul %x, %w : (tensor<1x4xui8>, tensor<4x16xi8>) -> tensor<1x16xi32>
  return %y : tensor<1x16xi32>
}

// -----

// Over 8 rows, int8 weights with one nonzero block of 4 rows (4..7) by 16
// outputs (16..31): int8 16x4 blocks. Column block 0 has no entry, block 1
// the one at row 4 (offsets [0, 0, 1], indices [4]); its 64 bytes are
// output-major: W[4..7, 16] = 1 2 3 4, then zeros, and W[7, 31] = 5 last.
// INT8-REPORT: remark: sparsity: 98.0% zeros: sparse, int8 16x4 blocks, predicted 2.55x as fast as dense
// INT8: func.func @int8_blocks
// INT8-DAG: %[[O:.*]] = kiln.constant dense_resource<[[OB:sparse_offsets[_0-9]*]]> : tensor<3xi32>
// INT8-DAG: %[[I:.*]] = kiln.constant dense_resource<[[IB:sparse_indices[_0-9]*]]> : tensor<1xi16>
// INT8-DAG: %[[V:.*]] = kiln.constant dense_resource<[[VB:sparse_values[_0-9]*]]> : tensor<1x64xi8>
// INT8: kiln.sparse_matmul %arg0, %[[O]], %[[I]], %[[V]] : (tensor<8x8xui8>, tensor<3xi32>, tensor<1xi16>, tensor<1x64xi8>) -> tensor<8x32xi32>
// INT8-DAG: [[OB]]: "0x04000000000000000000000001000000"
// INT8-DAG: [[IB]]: "0x020000000400"
// INT8-DAG: [[VB]]: "0x0100000001020304{{(00)+}}05"
func.func @int8_blocks(%x: tensor<8x8xui8>) -> tensor<8x32xi32> {
  %w = kiln.constant dense<[[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
                            [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
                            [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
                            [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
                            [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
                            [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
                            [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
                            [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5]]> : tensor<8x32xi8> -> tensor<8x32xi8>
  %y = kiln.matmul %x, %w : (tensor<8x8xui8>, tensor<8x32xi8>) -> tensor<8x32xi32>
  return %y : tensor<8x32xi32>
}

// -----

// An int8 product whose activations' K is dynamic stays dense (the sparse
// ops need a static K).
// INT8-LABEL: func.func @int8_dynamic_k
// INT8: kiln.matmul
// INT8-REPORT: remark: sparsity: dense: the activations' last dimension is dynamic
func.func @int8_dynamic_k(%x: tensor<1x?xui8>) -> tensor<1x16xi32> {
  %w = kiln.constant dense<[[5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
                            [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
                            [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
                            [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7]]> : tensor<4x16xi8> -> tensor<4x16xi8>
  %y = kiln.matmul %x, %w : (tensor<1x?xui8>, tensor<4x16xi8>) -> tensor<1x16xi32>
  return %y : tensor<1x16xi32>
}
