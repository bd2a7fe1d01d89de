// RUN: kiln-opt %s --split-input-file --kiln-gpu-round-on-read | FileCheck %s
// RUN: kiln-opt %s --split-input-file --kiln-gpu-round-on-read=target=cuda-sm90a | FileCheck %s --check-prefix=CUDA

// An activation rounded to bf16 for a convolution's receptive fields
// alone, read as their input: the rounding is computed where the fields
// are (marked), not by a kernel of its own.
// CHECK-LABEL: func.func @fields_input
// CHECK: linalg.generic {{.*}} ins(%{{.*}} : tensor<1x2x4x4xf32>) {{.*}} attrs = {kiln.gpu.computed_on_read}
// CHECK-NEXT: ^bb0
// CHECK-NEXT: arith.truncf
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#id6 = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3, d4, d5)>
#read = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2 + d4, d3 + d5)>
func.func @fields_input(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x3x3x2x2xbf16> {
  %e = tensor.empty() : tensor<1x2x4x4xbf16>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x : tensor<1x2x4x4xf32>) outs(%e : tensor<1x2x4x4xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %t = arith.truncf %in : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<1x2x4x4xbf16>
  %fe = tensor.empty() : tensor<1x2x3x3x2x2xbf16>
  %f = linalg.generic {indexing_maps = [#read, #id6], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%r : tensor<1x2x4x4xbf16>) outs(%fe : tensor<1x2x3x3x2x2xbf16>) attrs = {kiln.gpu.computed_on_read} {
  ^bb0(%in: bf16, %out: bf16):
    linalg.yield %in : bf16
  } -> tensor<1x2x3x3x2x2xbf16>
  return %f : tensor<1x2x3x3x2x2xbf16>
}

// -----

// Read by two sets of fields, through tensor.extract in their bodies (a
// padded convolution's, after kiln-gpu-read-through-padding): marked.
// CHECK-LABEL: func.func @padded_fields
// CHECK: linalg.generic {{.*}} ins(%{{.*}} : tensor<1x2x4x4xf32>) {{.*}} attrs = {kiln.gpu.computed_on_read}
// CHECK-NEXT: ^bb0
// CHECK-NEXT: arith.truncf
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#id6 = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3, d4, d5)>
func.func @padded_fields(%x: tensor<1x2x4x4xf32>) -> (tensor<1x2x3x3x4x4xf16>, tensor<1x2x3x3x4x4xf16>) {
  %c0 = arith.constant 0 : index
  %true = arith.constant true
  %zero = arith.constant 0.0 : f16
  %e = tensor.empty() : tensor<1x2x4x4xf16>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x : tensor<1x2x4x4xf32>) outs(%e : tensor<1x2x4x4xf16>) {
  ^bb0(%in: f32, %out: f16):
    %t = arith.truncf %in : f32 to f16
    linalg.yield %t : f16
  } -> tensor<1x2x4x4xf16>
  %fe = tensor.empty() : tensor<1x2x3x3x4x4xf16>
  %f1 = linalg.generic {indexing_maps = [#id6], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel"]} outs(%fe : tensor<1x2x3x3x4x4xf16>) attrs = {kiln.gpu.computed_on_read} {
  ^bb0(%out: f16):
    %c = linalg.index 1 : index
    %h = linalg.index 4 : index
    %w = linalg.index 5 : index
    %v = tensor.extract %r[%c0, %c, %h, %w] : tensor<1x2x4x4xf16>
    linalg.yield %v : f16
  } -> tensor<1x2x3x3x4x4xf16>
  %f2 = linalg.generic {indexing_maps = [#id6], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel"]} outs(%fe : tensor<1x2x3x3x4x4xf16>) attrs = {kiln.gpu.computed_on_read} {
  ^bb0(%out: f16):
    %c = linalg.index 1 : index
    %h = linalg.index 4 : index
    %v = tensor.extract %r[%c0, %c, %h, %h] : tensor<1x2x4x4xf16>
    %s = arith.select %true, %v, %zero : f16
    linalg.yield %s : f16
  } -> tensor<1x2x3x3x4x4xf16>
  return %f1, %f2 : tensor<1x2x3x3x4x4xf16>, tensor<1x2x3x3x4x4xf16>
}

// -----

// Also read by a pointwise convolution's matmul (its input is its fields,
// staged with cp.async where it can be): the rounding stays a kernel.
// CHECK-LABEL: func.func @also_read_by_a_matmul
// CHECK: linalg.generic {{.*}} ins(%{{.*}} : tensor<1x2x4x4xf32>) outs(%{{.*}} : tensor<1x2x4x4xbf16>) {
// CHECK-NEXT: ^bb0
// CHECK-NEXT: arith.truncf
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#id6 = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3, d4, d5)>
#read = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2 + d4, d3 + d5)>
func.func @also_read_by_a_matmul(%x: tensor<1x2x4x4xf32>, %w: tensor<3x2xbf16>) -> (tensor<1x2x3x3x2x2xbf16>, tensor<1x3x16xf32>) {
  %e = tensor.empty() : tensor<1x2x4x4xbf16>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x : tensor<1x2x4x4xf32>) outs(%e : tensor<1x2x4x4xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %t = arith.truncf %in : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<1x2x4x4xbf16>
  %fe = tensor.empty() : tensor<1x2x3x3x2x2xbf16>
  %f = linalg.generic {indexing_maps = [#read, #id6], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%r : tensor<1x2x4x4xbf16>) outs(%fe : tensor<1x2x3x3x2x2xbf16>) attrs = {kiln.gpu.computed_on_read} {
  ^bb0(%in: bf16, %out: bf16):
    linalg.yield %in : bf16
  } -> tensor<1x2x3x3x2x2xbf16>
  %flat = tensor.collapse_shape %r [[0], [1], [2, 3]] : tensor<1x2x4x4xbf16> into tensor<1x2x16xbf16>
  %zero = arith.constant 0.0 : f32
  %oe = tensor.empty() : tensor<1x3x16xf32>
  %o = linalg.fill ins(%zero : f32) outs(%oe : tensor<1x3x16xf32>) -> tensor<1x3x16xf32>
  %m = linalg.generic {indexing_maps = [affine_map<(n, f, p, k) -> (n, k, p)>, affine_map<(n, f, p, k) -> (f, k)>, affine_map<(n, f, p, k) -> (n, f, p)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%flat, %w : tensor<1x2x16xbf16>, tensor<3x2xbf16>) outs(%o : tensor<1x3x16xf32>) {
  ^bb0(%a: bf16, %b: bf16, %acc: f32):
    %a32 = arith.extf %a : bf16 to f32
    %b32 = arith.extf %b : bf16 to f32
    %p = arith.mulf %a32, %b32 : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<1x3x16xf32>
  return %f, %m : tensor<1x2x3x3x2x2xbf16>, tensor<1x3x16xf32>
}

// -----

// Not a rounding alone: a bias and a Relu before it (a convolution's
// epilogue, computed once per element where it is a kernel) stay.
// CHECK-LABEL: func.func @more_than_a_rounding
// CHECK: linalg.generic {{.*}} ins(%{{.*}} : tensor<1x2x4x4xf32>) outs(%{{.*}} : tensor<1x2x4x4xbf16>) {
// CHECK-NEXT: ^bb0
// CHECK-NEXT: arith.maximumf
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#id6 = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3, d4, d5)>
#read = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2 + d4, d3 + d5)>
func.func @more_than_a_rounding(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x3x3x2x2xbf16> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x2x4x4xbf16>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x : tensor<1x2x4x4xf32>) outs(%e : tensor<1x2x4x4xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %m = arith.maximumf %in, %zero : f32
    %t = arith.truncf %m : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<1x2x4x4xbf16>
  %fe = tensor.empty() : tensor<1x2x3x3x2x2xbf16>
  %f = linalg.generic {indexing_maps = [#read, #id6], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%r : tensor<1x2x4x4xbf16>) outs(%fe : tensor<1x2x3x3x2x2xbf16>) attrs = {kiln.gpu.computed_on_read} {
  ^bb0(%in: bf16, %out: bf16):
    linalg.yield %in : bf16
  } -> tensor<1x2x3x3x2x2xbf16>
  return %f : tensor<1x2x3x3x2x2xbf16>
}

// -----

// Fields that a large contraction reads (256 filters by 64x128 pixels:
// 8x8 results per thread on CUDA, kiln-gpu-distribute's tiles): its
// threads' registers are full, and f32 fields would spill. The rounding
// stays a kernel.
// CUDA-LABEL: func.func @read_by_large_tiles
// CUDA: linalg.generic {{.*}} ins(%{{.*}} : tensor<1x16x66x130xf32>) outs(%{{.*}} : tensor<1x16x66x130xbf16>) {
// CUDA-NEXT: ^bb0
// CUDA-NEXT: arith.truncf
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#id6 = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3, d4, d5)>
#read = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2 + d4, d3 + d5)>
func.func @read_by_large_tiles(%x: tensor<1x16x66x130xf32>, %w: tensor<256x144xbf16>) -> tensor<1x256x8192xf32> {
  %e = tensor.empty() : tensor<1x16x66x130xbf16>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x : tensor<1x16x66x130xf32>) outs(%e : tensor<1x16x66x130xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %t = arith.truncf %in : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<1x16x66x130xbf16>
  %fe = tensor.empty() : tensor<1x16x3x3x64x128xbf16>
  %f = linalg.generic {indexing_maps = [#read, #id6], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%r : tensor<1x16x66x130xbf16>) outs(%fe : tensor<1x16x3x3x64x128xbf16>) attrs = {kiln.gpu.computed_on_read} {
  ^bb0(%in: bf16, %out: bf16):
    linalg.yield %in : bf16
  } -> tensor<1x16x3x3x64x128xbf16>
  %flat = tensor.collapse_shape %f [[0], [1, 2, 3], [4, 5]] : tensor<1x16x3x3x64x128xbf16> into tensor<1x144x8192xbf16>
  %zero = arith.constant 0.0 : f32
  %oe = tensor.empty() : tensor<1x256x8192xf32>
  %o = linalg.fill ins(%zero : f32) outs(%oe : tensor<1x256x8192xf32>) -> tensor<1x256x8192xf32>
  %m = linalg.generic {indexing_maps = [affine_map<(n, f, p, k) -> (n, k, p)>, affine_map<(n, f, p, k) -> (f, k)>, affine_map<(n, f, p, k) -> (n, f, p)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%flat, %w : tensor<1x144x8192xbf16>, tensor<256x144xbf16>) outs(%o : tensor<1x256x8192xf32>) {
  ^bb0(%a: bf16, %b: bf16, %acc: f32):
    %a32 = arith.extf %a : bf16 to f32
    %b32 = arith.extf %b : bf16 to f32
    %p = arith.mulf %a32, %b32 : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<1x256x8192xf32>
  return %m : tensor<1x256x8192xf32>
}
