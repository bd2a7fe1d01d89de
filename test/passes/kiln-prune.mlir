// RUN: kiln-opt %s --split-input-file --kiln-prune="fraction=0.5 prune-first-last=true" | FileCheck %s --check-prefix=UNSTRUCTURED
// RUN: kiln-opt %s --split-input-file --kiln-prune="pattern=2:4 prune-first-last=true" | FileCheck %s --check-prefix=NM
// RUN: kiln-opt %s --split-input-file --kiln-prune="fraction=0.5 pattern=block:1x2 prune-first-last=true" | FileCheck %s --check-prefix=BLOCK
// RUN: kiln-opt %s --split-input-file --kiln-prune="fraction=0.5 report=true" 2>&1 >/dev/null | FileCheck %s --check-prefix=REPORT
// RUN: kiln-opt %s --split-input-file --kiln-prune="fraction=0.5 prune-first-last=true skip=fc2 report=true" 2>&1 >/dev/null | FileCheck %s --check-prefix=SKIP
// RUN: kiln-opt %s --split-input-file --kiln-prune="fraction=0.5 prune-first-last=true" | FileCheck %s --check-prefix=CALIBRATED
// RUN: kiln-opt %s --split-input-file --kiln-prune="fraction=0.5 prune-first-last=true report=true" 2>&1 >/dev/null | FileCheck %s --check-prefix=CALIBRATED-REPORT
// RUN: kiln-opt %s --split-input-file --kiln-prune="fraction=0.5 pattern=block:1x2 prune-first-last=true report=true" 2>&1 >/dev/null | FileCheck %s --check-prefix=GPT-BLOCK
// RUN: kiln-opt %s --split-input-file --kiln-prune="fraction=0.5 layer-fractions=fc1=0.25,fc2=0 report=true" 2>&1 >/dev/null | FileCheck %s --check-prefix=OWN
// RUN: not kiln-opt %s --split-input-file --kiln-prune="layer-fractions=fc1=2" 2>&1 | FileCheck %s --check-prefix=BAD-OWN
// RUN: not kiln-opt %s --split-input-file --kiln-prune="pattern=4:2" 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not kiln-opt %s --split-input-file --kiln-prune="fraction=1.0" 2>&1 | FileCheck %s --check-prefix=FRACTION

// The weights seen as [K = 4 inputs, N = 2 outputs]:
//   W = [[0.5, -9], [-2, 1], [3, -7], [-4, 8]]
// unstructured 50%: the 4 of smallest |w| (0.5, 1, -2, 3) are zeroed;
// 2:4: per output, the 2 largest of its 4 inputs stay (3, -4 and -9, 8);
// block:1x2 50%: of the four 1-output x 2-input blocks (sums 2.5, 7, 10,
// 15), the two smallest (output 0's) are zeroed.
// Blobs are little-endian f32: -9 = 000010C1, 1 = 0000803F, 3 = 00004040,
// -4 = 000080C0, -7 = 0000E0C0, 8 = 00000041.
// UNSTRUCTURED-LABEL: func.func @matmul
// UNSTRUCTURED: kiln.constant dense_resource<[[U:pruned_weight[_0-9]*]]> : tensor<4x2xf32>
// UNSTRUCTURED: [[U]]: "0x0400000000000000000010C10000000000000000000000000000E0C0000080C000000041"
// NM: [[N:pruned_weight[_0-9]*]]: "0x0400000000000000000010C100000000000000000000404000000000000080C000000041"
// BLOCK: [[B:pruned_weight[_0-9]*]]: "0x0400000000000000000010C1000000000000803F000000000000E0C00000000000000041"
// The first and last layer stay dense by default.
// REPORT: remark: {{.*}}sparsity: not pruned: the first layer (--prune-first-last prunes it too)
// SKIP: remark: {{.*}}sparsity: pruned to 50.0% zeros (unstructured, magnitude)
// BAD: error: kiln-prune: unknown pattern '4:2' (expected unstructured, N:M with N < M, or block:RxC)
// FRACTION: error: kiln-prune: fraction 1.000000e+00 is not in [0, 1)
func.func @matmul(%x: tensor<3x4xf32>) -> tensor<3x2xf32> {
  %w = kiln.constant dense<[[0.5, -9.0], [-2.0, 1.0], [3.0, -7.0], [-4.0, 8.0]]> : tensor<4x2xf32> -> tensor<4x2xf32>
  %y = kiln.matmul %x, %w : (tensor<3x4xf32>, tensor<4x2xf32>) -> tensor<3x2xf32>
  return %y : tensor<3x2xf32>
}

// -----

// A gemm with trans_b stores the same W as [N, K]; 2:4 keeps the same
// weights, in that layout.
// NM-LABEL: func.func @gemm_trans_b
// NM: [[T:pruned_weight[_0-9]*]]: "0x04000000000000000000000000004040000080C0000010C1000000000000000000000041"
func.func @gemm_trans_b(%x: tensor<3x4xf32>) -> tensor<3x2xf32> {
  %w = kiln.constant dense<[[0.5, -2.0, 3.0, -4.0], [-9.0, 1.0, -7.0, 8.0]]> : tensor<2x4xf32> -> tensor<2x4xf32>
  %y = kiln.gemm %x, %w {trans_b = true} : (tensor<3x4xf32>, tensor<2x4xf32>) -> tensor<3x2xf32>
  return %y : tensor<3x2xf32>
}

// -----

// A conv's filter [F, C, KH, KW] is [N = F, K = C*KH*KW], stored
// output-major like the gemm's: the same pruned values.
// NM-LABEL: func.func @conv
// NM: [[C:pruned_weight[_0-9]*]]: "0x04000000000000000000000000004040000080C0000010C1000000000000000000000041"
func.func @conv(%x: tensor<1x1x3x3xf32>) -> tensor<1x2x2x2xf32> {
  %w = kiln.constant dense<[[[[0.5, -2.0], [3.0, -4.0]]], [[[-9.0, 1.0], [-7.0, 8.0]]]]> : tensor<2x1x2x2xf32> -> tensor<2x1x2x2xf32>
  %y = kiln.conv %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, group = 1 : i64} : (tensor<1x1x3x3xf32>, tensor<2x1x2x2xf32>) -> tensor<1x2x2x2xf32>
  return %y : tensor<1x2x2x2xf32>
}

// -----

// Three layers: without prune-first-last only the middle one is pruned;
// `skip` names ONNX nodes by their location.
// REPORT: remark: {{.*}}sparsity: not pruned: the first layer
// REPORT: remark: {{.*}}sparsity: pruned to 50.0% zeros (unstructured, magnitude)
// REPORT: remark: {{.*}}sparsity: not pruned: the last layer (--prune-first-last prunes it too)
// SKIP: remark: {{.*}}sparsity: pruned to 50.0% zeros (unstructured, magnitude)
// SKIP: remark: {{.*}}sparsity: not pruned: named in --prune-skip
// A layer's own fraction applies to the first layer too; 0 keeps it dense.
// OWN: remark: {{.*}}sparsity: pruned to 25.0% zeros (unstructured, magnitude)
// OWN: remark: {{.*}}sparsity: not pruned: its own fraction is 0
// OWN: remark: {{.*}}sparsity: not pruned: the last layer
// BAD-OWN: error: kiln-prune: layer-fractions entry 'fc1=2' is not NODE=FRACTION with a fraction in [0, 1)
// SKIP: remark: {{.*}}sparsity: pruned to 50.0% zeros (unstructured, magnitude)
func.func @three(%x: tensor<1x4xf32>) -> tensor<1x4xf32> {
  %w = kiln.constant dense<[[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0], [1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]]> : tensor<4x4xf32> -> tensor<4x4xf32>
  %a = kiln.matmul %x, %w : (tensor<1x4xf32>, tensor<4x4xf32>) -> tensor<1x4xf32> loc(#fc1)
  %b = kiln.matmul %a, %w : (tensor<1x4xf32>, tensor<4x4xf32>) -> tensor<1x4xf32> loc(#fc2)
  %c = kiln.matmul %b, %w : (tensor<1x4xf32>, tensor<4x4xf32>) -> tensor<1x4xf32> loc(#fc3)
  return %c : tensor<1x4xf32>
}
#fc1 = loc("fc1"("MatMul"))
#fc2 = loc("fc2"("MatMul"))
#fc3 = loc("fc3"("MatMul"))

// -----

// Weights that are not a constant are left alone.
// REPORT: remark: {{.*}}sparsity: not pruned: its right operand is not a constant
func.func @dynamic(%x: tensor<3x4xf32>, %w: tensor<4x2xf32>, %v: tensor<2x2xf32>, %u: tensor<2x2xf32>) -> tensor<3x2xf32> {
  %a = kiln.matmul %x, %w : (tensor<3x4xf32>, tensor<4x2xf32>) -> tensor<3x2xf32>
  %b = kiln.matmul %a, %v : (tensor<3x2xf32>, tensor<2x2xf32>) -> tensor<3x2xf32>
  %c = kiln.matmul %b, %u : (tensor<3x2xf32>, tensor<2x2xf32>) -> tensor<3x2xf32>
  return %c : tensor<3x2xf32>
}

// -----

// A depthwise convolution keeps its few taps (it is the middle layer here).
// REPORT: remark: {{.*}}sparsity: not pruned: a depthwise convolution (its few weights per output all count, and it costs little)
func.func @depthwise(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x1x1xf32> {
  %w = kiln.constant dense<[[[[0.5, -2.0], [3.0, -4.0]]], [[[-9.0, 1.0], [-7.0, 8.0]]]]> : tensor<2x1x2x2xf32> -> tensor<2x1x2x2xf32>
  %a = kiln.conv %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, group = 2 : i64} : (tensor<1x2x4x4xf32>, tensor<2x1x2x2xf32>) -> tensor<1x2x3x3xf32>
  %b = kiln.conv %a, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, group = 2 : i64} : (tensor<1x2x3x3xf32>, tensor<2x1x2x2xf32>) -> tensor<1x2x2x2xf32>
  %c = kiln.conv %b, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, group = 2 : i64} : (tensor<1x2x2x2xf32>, tensor<2x1x2x2xf32>) -> tensor<1x2x1x1xf32>
  return %c : tensor<1x2x1x1xf32>
}

// -----

// Wanda: with the norms of the input channels, the score is |w| * norm and
// each output keeps its 2 best inputs: output 0 scores (5, 2, 3, 0.4) and
// keeps 0.5 and 3; output 1 scores (90, 1, 7, 0.8) and keeps -9 and -7.
// 0.5 = 0000003F. The predicted SQNR weighs each weight by its norm:
// 10 log10(8188.8 / 5.8).
// CALIBRATED-REPORT: remark: {{.*}}sparsity: pruned to 50.0% zeros (unstructured, wanda), predicted SQNR 31.5 dB
// CALIBRATED-LABEL: func.func @wanda
// CALIBRATED-NOT: kiln.input_norms
// CALIBRATED: [[W:pruned_weight[_0-9]*]]: "0x040000000000003F000010C10000000000000000000040400000E0C00000000000000000"
func.func @wanda(%x: tensor<3x4xf32>) -> tensor<3x2xf32> {
  %w = kiln.constant dense<[[0.5, -9.0], [-2.0, 1.0], [3.0, -7.0], [-4.0, 8.0]]> : tensor<4x2xf32> -> tensor<4x2xf32>
  %y = kiln.matmul %x, %w {kiln.input_norms = array<f32: 10.0, 1.0, 1.0, 0.1>} : (tensor<3x4xf32>, tensor<4x2xf32>) -> tensor<3x2xf32>
  return %y : tensor<3x2xf32>
}

// -----

// SparseGPT: the Gram matrix X^T X of five input rows in which inputs 0
// and 1 move together. Both go, and inputs 2 and 3 take over what they
// did: the pruned [K, N] weights are [[0, 0], [0, 0], [2.062, -12.396],
// [-3.868, 8.759]] (their values are checked against a NumPy reference in
// test/unit/PruneTest.cpp), and their error on the calibration inputs gives
// the exact predicted SQNR, 10 log10(2182.1 / 810.59). Block patterns fall
// back to Wanda.
// CALIBRATED-REPORT: remark: {{.*}}sparsity: pruned to 50.0% zeros (unstructured, sparsegpt), predicted SQNR 4.3 dB
// CALIBRATED-LABEL: func.func @sparsegpt
// CALIBRATED-NOT: kiln.input_gram
// CALIBRATED: [[G:pruned_weight[_0-9]*]]: "0x0400000000000000000000000000000000000000{{[1-9A-F][0-9A-F]+}}"
// GPT-BLOCK: remark: {{.*}}sparsity: pruned to 50.0% zeros (block:1x2, wanda: SparseGPT prunes unstructured and N:M patterns, not blocks)
func.func @sparsegpt(%x: tensor<5x4xf32>) -> tensor<5x2xf32> {
  %w = kiln.constant dense<[[0.5, -9.0], [-2.0, 1.0], [3.0, -7.0], [-4.0, 8.0]]> : tensor<4x2xf32> -> tensor<4x2xf32>
  %y = kiln.matmul %x, %w {kiln.input_norms = array<f32: 3.873, 3.903, 2.449, 2.646>,
                            kiln.input_gram = dense<[[15.0, 15.1, 4.0, 0.0], [15.1, 15.23, 3.8, 0.0], [4.0, 3.8, 6.0, 1.0], [0.0, 0.0, 1.0, 7.0]]> : tensor<4x4xf32>}
      : (tensor<5x4xf32>, tensor<4x2xf32>) -> tensor<5x2xf32>
  return %y : tensor<5x2xf32>
}

