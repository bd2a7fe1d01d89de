// RUN: kiln-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(kiln-gpu-transpose-on-read{report=true}))' --verify-diagnostics | FileCheck %s

// Head transposes that a batch matmul reads through a reshape become
// copies computed where the matmul loads them (the permutation in the
// input's map): the queries' [B, S, H, D] to [B, H, S, D], and the keys'
// to [B, H, D, S], whose rows are the keys' columns
// (kiln-gpu-promote-operands copies such a chunk along the keys' rows).
// CHECK-DAG: #[[Q:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d2, d1, d3)>
// CHECK-DAG: #[[K:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d3, d1, d2)>
// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// CHECK-LABEL: func.func @heads
// CHECK: linalg.generic {indexing_maps = [#[[Q]], #[[ID]]]
// CHECK-SAME: ins(%arg0 : tensor<1x4x2x8xf32>) outs({{.*}} : tensor<1x2x4x8xf32>) attrs = {kiln.gpu.computed_on_read}
// CHECK: linalg.generic {indexing_maps = [#[[K]], #[[ID]]]
// CHECK-SAME: ins(%arg1 : tensor<1x4x2x8xf32>) outs({{.*}} : tensor<1x2x8x4xf32>) attrs = {kiln.gpu.computed_on_read}
// CHECK: linalg.batch_matmul
func.func @heads(%q: tensor<1x4x2x8xf32>, %k: tensor<1x4x2x8xf32>) -> tensor<2x4x4xf32> {
  %e0 = tensor.empty() : tensor<1x2x4x8xf32>
  // expected-remark @below {{placement: transpose read in place by the matmuls that read it, not copied}}
  %qt = linalg.transpose ins(%q : tensor<1x4x2x8xf32>) outs(%e0 : tensor<1x2x4x8xf32>) permutation = [0, 2, 1, 3]
  %e1 = tensor.empty() : tensor<1x2x8x4xf32>
  // expected-remark @below {{placement: transpose read in place by the matmuls that read it, not copied}}
  %kt = linalg.transpose ins(%k : tensor<1x4x2x8xf32>) outs(%e1 : tensor<1x2x8x4xf32>) permutation = [0, 2, 3, 1]
  %a = tensor.collapse_shape %qt [[0, 1], [2], [3]] : tensor<1x2x4x8xf32> into tensor<2x4x8xf32>
  %b = tensor.collapse_shape %kt [[0, 1], [2], [3]] : tensor<1x2x8x4xf32> into tensor<2x8x4xf32>
  %zero = arith.constant 0.0 : f32
  %e2 = tensor.empty() : tensor<2x4x4xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e2 : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %s = linalg.batch_matmul ins(%a, %b : tensor<2x4x8xf32>, tensor<2x8x4xf32>) outs(%acc : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  return %s : tensor<2x4x4xf32>
}

// -----

// A transpose the function returns, or an elementwise op reads, is
// written out by a kernel of its own: it stays.
// CHECK-LABEL: func.func @kept
// CHECK: linalg.transpose
// CHECK: linalg.transpose
// CHECK-NOT: computed_on_read
func.func @kept(%x: tensor<4x8x2xf32>) -> (tensor<8x4x2xf32>, tensor<8x4x2xf32>) {
  %e = tensor.empty() : tensor<8x4x2xf32>
  %t = linalg.transpose ins(%x : tensor<4x8x2xf32>) outs(%e : tensor<8x4x2xf32>) permutation = [1, 0, 2]
  %u = linalg.transpose ins(%x : tensor<4x8x2xf32>) outs(%e : tensor<8x4x2xf32>) permutation = [1, 0, 2]
  %v = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%u : tensor<8x4x2xf32>) outs(%e : tensor<8x4x2xf32>) {
  ^bb0(%in: f32, %out: f32):
    %n = arith.negf %in : f32
    linalg.yield %n : f32
  } -> tensor<8x4x2xf32>
  return %t, %v : tensor<8x4x2xf32>, tensor<8x4x2xf32>
}

// -----

// One reader that is no matmul keeps the copy for all.
// CHECK-LABEL: func.func @mixed
// CHECK: linalg.transpose
// CHECK-NOT: computed_on_read
func.func @mixed(%x: tensor<4x8x2xf32>, %w: tensor<8x2x4xf32>) -> (tensor<8x4x4xf32>, tensor<8x4x2xf32>) {
  %e = tensor.empty() : tensor<8x4x2xf32>
  %t = linalg.transpose ins(%x : tensor<4x8x2xf32>) outs(%e : tensor<8x4x2xf32>) permutation = [1, 0, 2]
  %zero = arith.constant 0.0 : f32
  %e2 = tensor.empty() : tensor<8x4x4xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e2 : tensor<8x4x4xf32>) -> tensor<8x4x4xf32>
  %m = linalg.batch_matmul ins(%t, %w : tensor<8x4x2xf32>, tensor<8x2x4xf32>) outs(%acc : tensor<8x4x4xf32>) -> tensor<8x4x4xf32>
  return %m, %t : tensor<8x4x4xf32>, tensor<8x4x2xf32>
}

// -----

// 16-bit heads too: their matmul copies the other operand by cp.async and
// this one through registers (kiln-gpu-promote-operands). Integers stay
// copies.
// CHECK-LABEL: func.func @half_heads
// CHECK: linalg.generic
// CHECK-SAME: ins(%arg0 : tensor<4x8xbf16>) outs({{.*}} : tensor<8x4xbf16>) attrs = {kiln.gpu.computed_on_read}
// CHECK: linalg.transpose ins(%arg2 : tensor<4x8xi8>)
// CHECK-NOT: computed_on_read
func.func @half_heads(%k: tensor<4x8xbf16>, %q: tensor<2x8xbf16>, %x: tensor<4x8xi8>, %y: tensor<2x8xi8>) -> (tensor<2x4xf32>, tensor<2x4xi32>) {
  %e0 = tensor.empty() : tensor<8x4xbf16>
  // expected-remark @below {{placement: transpose read in place by the matmuls that read it, not copied}}
  %kt = linalg.transpose ins(%k : tensor<4x8xbf16>) outs(%e0 : tensor<8x4xbf16>) permutation = [1, 0]
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<2x4xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e1 : tensor<2x4xf32>) -> tensor<2x4xf32>
  %s = linalg.matmul ins(%q, %kt : tensor<2x8xbf16>, tensor<8x4xbf16>) outs(%acc : tensor<2x4xf32>) -> tensor<2x4xf32>
  %e2 = tensor.empty() : tensor<8x4xi8>
  %xt = linalg.transpose ins(%x : tensor<4x8xi8>) outs(%e2 : tensor<8x4xi8>) permutation = [1, 0]
  %izero = arith.constant 0 : i32
  %e3 = tensor.empty() : tensor<2x4xi32>
  %iacc = linalg.fill ins(%izero : i32) outs(%e3 : tensor<2x4xi32>) -> tensor<2x4xi32>
  %i = linalg.matmul ins(%y, %xt : tensor<2x8xi8>, tensor<8x4xi8>) outs(%iacc : tensor<2x4xi32>) -> tensor<2x4xi32>
  return %s, %i : tensor<2x4xf32>, tensor<2x4xi32>
}
