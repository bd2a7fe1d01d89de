// RUN: kiln-opt %s --split-input-file --kiln-fuse-sibling-matmuls=report=true --verify-diagnostics | FileCheck %s

// A transformer's three projections of one input, each plus its bias (on
// either side of the add): one matmul by the weights side by side (8 + 8 +
// 4 columns, row k of the weights the three rows k), one add of the
// biases, and each projection a slice of its columns.
// CHECK-LABEL: func.func @qkv
// CHECK-DAG: %[[W:.*]] = kiln.constant dense<"0x0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000004000000040000000400000004000000040000000400000004000000040000040400000404000004040000040400000803F{{.*}}00004040"> : tensor<8x20xf32>
// CHECK-DAG: %[[B:.*]] = kiln.constant dense<[5.000000e-01, {{.*}}, 2.500000e-01, {{.*}}, 1.250000e-01]> : tensor<20xf32>
// CHECK: %[[MM:.*]] = kiln.matmul %arg0, %[[W]] : (tensor<?x4x8xf32>, tensor<8x20xf32>) -> tensor<?x4x20xf32>
// CHECK: %[[ADD:.*]] = kiln.add %[[MM]], %[[B]]
// CHECK: %[[Q:.*]] = kiln.slice %[[ADD]] {starts = array<i64: 0, 0, 0>, steps = array<i64: 1, 1, 1>} : tensor<?x4x20xf32> -> tensor<?x4x8xf32>
// CHECK: %[[K:.*]] = kiln.slice %[[ADD]] {starts = array<i64: 0, 0, 8>, steps = array<i64: 1, 1, 1>} : tensor<?x4x20xf32> -> tensor<?x4x8xf32>
// CHECK: %[[V:.*]] = kiln.slice %[[ADD]] {starts = array<i64: 0, 0, 16>, steps = array<i64: 1, 1, 1>} : tensor<?x4x20xf32> -> tensor<?x4x4xf32>
// CHECK-NOT: kiln.matmul
// CHECK: return %[[Q]], %[[K]], %[[V]]
func.func @qkv(%x: tensor<?x4x8xf32>) -> (tensor<?x4x8xf32>, tensor<?x4x8xf32>, tensor<?x4x4xf32>) {
  %wq = kiln.constant dense<1.0> : tensor<8x8xf32> -> tensor<8x8xf32>
  %bq = kiln.constant dense<0.5> : tensor<8xf32> -> tensor<8xf32>
  %wk = kiln.constant dense<2.0> : tensor<8x8xf32> -> tensor<8x8xf32>
  %bk = kiln.constant dense<0.25> : tensor<8xf32> -> tensor<8xf32>
  %wv = kiln.constant dense<3.0> : tensor<8x4xf32> -> tensor<8x4xf32>
  %bv = kiln.constant dense<0.125> : tensor<4xf32> -> tensor<4xf32>
  // expected-remark @below {{fusion: 3 matmuls of one input by constant weights as one: kiln.matmul, kiln.matmul, kiln.matmul}}
  %q = kiln.matmul %x, %wq : (tensor<?x4x8xf32>, tensor<8x8xf32>) -> tensor<?x4x8xf32>
  %qb = kiln.add %q, %bq : (tensor<?x4x8xf32>, tensor<8xf32>) -> tensor<?x4x8xf32>
  %k = kiln.matmul %x, %wk : (tensor<?x4x8xf32>, tensor<8x8xf32>) -> tensor<?x4x8xf32>
  %kb = kiln.add %bk, %k : (tensor<8xf32>, tensor<?x4x8xf32>) -> tensor<?x4x8xf32>
  %v = kiln.matmul %x, %wv : (tensor<?x4x8xf32>, tensor<8x4xf32>) -> tensor<?x4x4xf32>
  %vb = kiln.add %v, %bv : (tensor<?x4x4xf32>, tensor<4xf32>) -> tensor<?x4x4xf32>
  return %qb, %kb, %vb : tensor<?x4x8xf32>, tensor<?x4x8xf32>, tensor<?x4x4xf32>
}

// -----

// Without biases: the matmul alone, its result sliced.
// CHECK-LABEL: func.func @no_bias
// CHECK: %[[MM:.*]] = kiln.matmul %arg0, %{{.*}} : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
// CHECK-NOT: kiln.add
// CHECK: kiln.slice %[[MM]] {starts = array<i64: 0, 0>
// CHECK: kiln.slice %[[MM]] {starts = array<i64: 0, 8>
func.func @no_bias(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %wa = kiln.constant dense<1.0> : tensor<8x8xf32> -> tensor<8x8xf32>
  %wb = kiln.constant dense<2.0> : tensor<8x8xf32> -> tensor<8x8xf32>
  // expected-remark @below {{fusion: 2 matmuls of one input by constant weights as one}}
  %a = kiln.matmul %x, %wa : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %b = kiln.matmul %x, %wb : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  return %a, %b : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// Left alone, two matmuls each: of different inputs; by a weight another
// op uses too (its copy would stay beside the concatenation); one with a
// bias, one without (a group each, of one); by a weight computed at run
// time; widening into f32 and not (bf16).
// CHECK-LABEL: func.func @different_inputs
// CHECK-COUNT-2: kiln.matmul
// CHECK-LABEL: func.func @shared_weight
// CHECK-COUNT-2: kiln.matmul
// CHECK-LABEL: func.func @one_bias
// CHECK-COUNT-2: kiln.matmul
// CHECK-LABEL: func.func @computed_weight
// CHECK-COUNT-2: kiln.matmul
// CHECK-LABEL: func.func @result_types
// CHECK-COUNT-2: kiln.matmul
// CHECK-NOT: kiln.slice
func.func @different_inputs(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %w1 = kiln.constant dense<1.0> : tensor<8x8xf32> -> tensor<8x8xf32>
  %w2 = kiln.constant dense<2.0> : tensor<8x8xf32> -> tensor<8x8xf32>
  %a = kiln.matmul %x, %w1 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %b = kiln.matmul %y, %w2 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  return %a, %b : tensor<4x8xf32>, tensor<4x8xf32>
}
func.func @shared_weight(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<8x8xf32>) {
  %w1 = kiln.constant dense<1.0> : tensor<8x8xf32> -> tensor<8x8xf32>
  %w2 = kiln.constant dense<2.0> : tensor<8x8xf32> -> tensor<8x8xf32>
  %a = kiln.matmul %x, %w1 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %b = kiln.matmul %x, %w2 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %twice = kiln.add %w2, %w2 : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  return %a, %b, %twice : tensor<4x8xf32>, tensor<4x8xf32>, tensor<8x8xf32>
}
func.func @one_bias(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %w1 = kiln.constant dense<1.0> : tensor<8x8xf32> -> tensor<8x8xf32>
  %w2 = kiln.constant dense<2.0> : tensor<8x8xf32> -> tensor<8x8xf32>
  %b1 = kiln.constant dense<0.5> : tensor<8xf32> -> tensor<8xf32>
  %a = kiln.matmul %x, %w1 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %ab = kiln.add %a, %b1 : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %b = kiln.matmul %x, %w2 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  return %ab, %b : tensor<4x8xf32>, tensor<4x8xf32>
}
func.func @computed_weight(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %w1 = kiln.constant dense<1.0> : tensor<8x8xf32> -> tensor<8x8xf32>
  %a = kiln.matmul %x, %w1 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %b = kiln.matmul %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  return %a, %b : tensor<4x8xf32>, tensor<4x8xf32>
}
func.func @result_types(%x: tensor<4x8xbf16>) -> (tensor<4x8xf32>, tensor<4x8xbf16>) {
  %w1 = kiln.constant dense<1.0> : tensor<8x8xbf16> -> tensor<8x8xbf16>
  %w2 = kiln.constant dense<2.0> : tensor<8x8xbf16> -> tensor<8x8xbf16>
  %a = kiln.matmul %x, %w1 : (tensor<4x8xbf16>, tensor<8x8xbf16>) -> tensor<4x8xf32>
  %b = kiln.matmul %x, %w2 : (tensor<4x8xbf16>, tensor<8x8xbf16>) -> tensor<4x8xbf16>
  return %a, %b : tensor<4x8xf32>, tensor<4x8xbf16>
}
