// RUN: kiln-opt %s --split-input-file --verify-diagnostics --kiln-gpu-distribute="target=vulkan enough-workgroups=0" --canonicalize --cse | FileCheck %s
// RUN: kiln-opt %s --split-input-file --verify-diagnostics --kiln-gpu-distribute="target=vulkan-lavapipe enough-workgroups=0" --canonicalize --cse | FileCheck %s --check-prefix=LAVAPIPE
// RUN: not kiln-opt %s --split-input-file --kiln-gpu-distribute=target=vulkan-mystery 2>&1 | FileCheck %s --check-prefix=TARGET
// RUN: kiln-opt %s --split-input-file --kiln-gpu-distribute="target=vulkan report-fusion=true enough-workgroups=0" -o /dev/null 2>&1 | FileCheck %s --check-prefix=REPORT
// RUN: kiln-opt %s --split-input-file --kiln-gpu-distribute=target=vulkan --canonicalize --cse | FileCheck %s --check-prefix=SMALL
// RUN: kiln-opt %s --split-input-file --kiln-gpu-distribute=target=cuda --canonicalize --cse | FileCheck %s --check-prefix=CUDA
// RUN: kiln-opt %s --split-input-file "--kiln-gpu-distribute=target=cuda wide-tensor-tiles=true" --canonicalize --cse | FileCheck %s --check-prefix=WIDE
// RUN: kiln-opt %s --split-input-file "--kiln-gpu-distribute=target=vulkan-nvidia wide-tensor-tiles=true" --canonicalize --cse | FileCheck %s --check-prefix=CUDA
// TARGET: error: unknown GPU target 'vulkan-mystery' (expected one of vulkan, vulkan-lavapipe, vulkan-lavapipe-sm80, vulkan-lavapipe-sm90a, vulkan-nvidia, cuda, cuda-sm80, cuda-sm90a, metal)

// A matmul is a root: workgroups of 64x32 results (vulkan: 128 threads as
// 16 rows by 8 columns of 4x4 results) over the whole K, its zero fill fused
// into each thread's tile. The bias and ReLU that only read its result are
// its epilogue: each thread applies them to its 4x4 results in place,
// reading its 4 columns of the bias (a reduction is never fused into a
// consumer's tiles; the consumer comes to it instead).
// CHECK-LABEL: func.func @matmul_bias_relu
// CHECK: %[[MM:.*]] = scf.forall (%{{.*}}, %[[J:.*]]) = (0, 0) to (64, 96) step (64, 32)
// CHECK:   scf.forall (%{{.*}}, %[[TJ:.*]]) = (0, 0) to (64, 32) step (4, 4)
// CHECK:     linalg.fill {{.*}} -> tensor<4x4xf32>
// CHECK:     %[[TILE:.*]] = linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<4x128xf32>, tensor<128x4xf32>) outs(%{{.*}} : tensor<4x4xf32>)
// CHECK:     %[[COL:.*]] = affine.apply #{{.*}}()[%[[J]], %[[TJ]]]
// CHECK:     %[[BIAS:.*]] = tensor.extract_slice %{{.*}}[%[[COL]]] [4] [1] : tensor<96xf32> to tensor<4xf32>
// CHECK:     %[[OUT:.*]] = linalg.generic {{.*}} ins(%[[BIAS]] : tensor<4xf32>) outs(%[[TILE]] : tensor<4x4xf32>)
// CHECK:       arith.addf
// CHECK:       arith.maximumf
// CHECK:     tensor.parallel_insert_slice %[[OUT]]
// CHECK:   } {mapping = [#gpu.thread<y>, #gpu.thread<x>]}
// CHECK: } {mapping = [#gpu.block<linear_dim_1>, #gpu.block<linear_dim_0>]}
// CHECK-NOT: scf.forall (
// CHECK: return %[[MM]]
// REPORT: remark: fusion: linalg.generic applied by the kernel's threads to the results they hold (epilogue)
// LAVAPIPE-LABEL: func.func @matmul_bias_relu
// LAVAPIPE: scf.forall (%{{.*}}, %{{.*}}) = (0, 0) to (64, 96) step (16, 32)
// LAVAPIPE:   scf.forall (%{{.*}}, %{{.*}}) = (0, 0) to (16, 32) step (4, 4)
func.func @matmul_bias_relu(%a: tensor<64x128xf32>, %b: tensor<128x96xf32>, %bias: tensor<96xf32>) -> tensor<64x96xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x96xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<64x96xf32>) -> tensor<64x96xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<64x128xf32>, tensor<128x96xf32>) outs(%f : tensor<64x96xf32>) -> tensor<64x96xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%mm, %bias : tensor<64x96xf32>, tensor<96xf32>) outs(%e : tensor<64x96xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    %m = arith.maximumf %s, %zero : f32
    linalg.yield %m : f32
  } -> tensor<64x96xf32>
  return %r : tensor<64x96xf32>
}

// -----

// Dynamic rows. exp then square: the exp (used once) is fused into the
// square's tiles; the square, used by the sum and returned, is computed
// once, as a root. The row sums: one row per thread, 128 rows per
// workgroup (the last one partial), the zero fill fused.
// CHECK-LABEL: func.func @chain
// CHECK: %[[SQUARES:.*]] = scf.forall (%{{.*}}, %{{.*}}) = (0, 0) to (%{{.*}}, 256) step (1, 128)
// CHECK:   scf.forall (%{{.*}}) in (128)
// CHECK:     math.exp
// CHECK:     arith.mulf
// CHECK:   } {mapping = [#gpu.thread<x>]}
// CHECK: } {mapping = [#gpu.block<linear_dim_1>, #gpu.block<linear_dim_0>]}
// CHECK-NOT: math.exp
// CHECK: scf.forall (%[[R:.*]]) = (0) to (%{{.*}}) step (128)
// CHECK:   %[[ROWS:.*]] = affine.min #{{.*}}(%[[R]])
// CHECK:   tensor.extract_slice %[[SQUARES]][%[[R]], 0] [%[[ROWS]], 256]
// CHECK:   scf.forall (%{{.*}}) in (%[[ROWS]])
// CHECK:     linalg.fill {{.*}} -> tensor<1xf32>
// CHECK:     linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%{{.*}} : tensor<1x256xf32>) outs(%{{.*}} : tensor<1xf32>)
// CHECK: } {mapping = [#gpu.block<linear_dim_0>]}
// CHECK: return %[[SQUARES]]
#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>
func.func @chain(%x: tensor<?x256xf32>) -> (tensor<?x256xf32>, tensor<?xf32>) {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x256xf32>
  %e = tensor.empty(%n) : tensor<?x256xf32>
  %a = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<?x256xf32>) outs(%e : tensor<?x256xf32>) {
  ^bb0(%v: f32, %o: f32):
    %s = math.exp %v : f32
    linalg.yield %s : f32
  } -> tensor<?x256xf32>
  %b = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<?x256xf32>) outs(%e : tensor<?x256xf32>) {
  ^bb0(%v: f32, %o: f32):
    %s = arith.mulf %v, %v : f32
    linalg.yield %s : f32
  } -> tensor<?x256xf32>
  %zero = arith.constant 0.0 : f32
  %er = tensor.empty(%n) : tensor<?xf32>
  %f = linalg.fill ins(%zero : f32) outs(%er : tensor<?xf32>) -> tensor<?xf32>
  %sum = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%b : tensor<?x256xf32>) outs(%f : tensor<?xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %s = arith.addf %v, %acc : f32
    linalg.yield %s : f32
  } -> tensor<?xf32>
  return %b, %sum : tensor<?x256xf32>, tensor<?xf32>
}

// -----

// A chain of three elementwise ops, each used once: all in one loop nest.
// CHECK-LABEL: func.func @three_in_a_row
// CHECK: scf.forall
// CHECK:   scf.forall
// CHECK:     math.exp
// CHECK:     math.sqrt
// CHECK:     arith.negf
// CHECK: } {mapping = [#gpu.block<linear_dim_0>]}
// CHECK-NEXT: return
#id1 = affine_map<(i) -> (i)>
func.func @three_in_a_row(%x: tensor<1000xf32>) -> tensor<1000xf32> {
  %e = tensor.empty() : tensor<1000xf32>
  %a = linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]} ins(%x : tensor<1000xf32>) outs(%e : tensor<1000xf32>) {
  ^bb0(%v: f32, %o: f32):
    %s = math.exp %v : f32
    linalg.yield %s : f32
  } -> tensor<1000xf32>
  %b = linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]} ins(%a : tensor<1000xf32>) outs(%e : tensor<1000xf32>) {
  ^bb0(%v: f32, %o: f32):
    %s = math.sqrt %v : f32
    linalg.yield %s : f32
  } -> tensor<1000xf32>
  %c = linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]} ins(%b : tensor<1000xf32>) outs(%e : tensor<1000xf32>) {
  ^bb0(%v: f32, %o: f32):
    %s = arith.negf %v : f32
    linalg.yield %s : f32
  } -> tensor<1000xf32>
  return %c : tensor<1000xf32>
}

// -----

// A reduction to a scalar (and the fill of its 0-d accumulator) has no
// parallel loop: both are left to the host.
// CHECK-LABEL: func.func @sum_all
// CHECK-NOT: scf.forall (
// CHECK: linalg.fill
// CHECK: linalg.generic
// CHECK-NOT: scf.forall (
func.func @sum_all(%x: tensor<1000xf32>) -> tensor<f32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<f32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %s = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> ()>], iterator_types = ["reduction"]} ins(%x : tensor<1000xf32>) outs(%f : tensor<f32>) {
  ^bb0(%v: f32, %acc: f32):
    %r = arith.addf %v, %acc : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// CSE shares one zero fill between two matmuls' accumulators: each matmul
// gets its own, fused into its thread tiles, and no fill is left outside.
// CHECK-LABEL: func.func @shared_fill
// CHECK-NOT: linalg.fill
// CHECK: scf.forall
// CHECK:   scf.forall
// CHECK:     linalg.fill
// CHECK:     linalg.matmul
// CHECK: scf.forall
// CHECK:   scf.forall
// CHECK:     linalg.fill
// CHECK:     linalg.matmul
func.func @shared_fill(%a: tensor<64x32xf32>, %b: tensor<32x64xf32>, %c: tensor<32x64xf32>) -> (tensor<64x64xf32>, tensor<64x64xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x64xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<64x64xf32>) -> tensor<64x64xf32>
  %x = linalg.matmul ins(%a, %b : tensor<64x32xf32>, tensor<32x64xf32>) outs(%f : tensor<64x64xf32>) -> tensor<64x64xf32>
  %y = linalg.matmul ins(%a, %c : tensor<64x32xf32>, tensor<32x64xf32>) outs(%f : tensor<64x64xf32>) -> tensor<64x64xf32>
  return %x, %y : tensor<64x64xf32>, tensor<64x64xf32>
}

// -----

// Data movement becomes linalg ops that run in kernels: the pad a fill of
// its result and a linalg.copy of its source onto the interior, which
// bufferization writes in place; the concatenation's parts copies onto
// their slices.
// CHECK-LABEL: func.func @pad_and_concat
// CHECK-NOT: tensor.pad
// CHECK: scf.forall
// CHECK:   linalg.fill
// CHECK: tensor.extract_slice %{{.*}}[0, 1] [4, 6] [1, 1]
// CHECK: scf.forall
// CHECK:   linalg.copy
// CHECK: tensor.insert_slice %{{.*}} into %{{.*}}[0, 1] [4, 6] [1, 1]
// CHECK: scf.forall
// CHECK:   linalg.copy
// CHECK: tensor.insert_slice %{{.*}} into %{{.*}}[0, 0] [4, 8] [1, 1]
// CHECK: scf.forall
// CHECK:   linalg.copy
// CHECK: tensor.insert_slice %{{.*}} into %{{.*}}[0, 8] [4, 8] [1, 1]
func.func @pad_and_concat(%x: tensor<4x6xf32>, %y: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %p = tensor.pad %x low[0, 1] high[0, 1] {
  ^bb0(%i: index, %j: index):
    tensor.yield %zero : f32
  } : tensor<4x6xf32> to tensor<4x8xf32>
  %e = tensor.empty() : tensor<4x16xf32>
  %a = tensor.insert_slice %y into %e[0, 0] [4, 8] [1, 1] : tensor<4x8xf32> into tensor<4x16xf32>
  %b = tensor.insert_slice %y into %a[0, 8] [4, 8] [1, 1] : tensor<4x8xf32> into tensor<4x16xf32>
  return %p, %b : tensor<4x8xf32>, tensor<4x16xf32>
}

// -----

// A matmul computed on a slice of a tensor and inserted back at the same
// slice (a convolution's chunk of a batch) stays a tensor.insert_slice:
// bufferized, it is a copy of a view onto itself, which folds away. No
// linalg.copy kernel.
// CHECK-LABEL: func.func @chunk_in_place
// CHECK: %[[SLICE:.*]] = tensor.extract_slice %[[D:.*]][2, 0] [2, 8] [1, 1]
// CHECK: %[[MM:.*]] = scf.forall {{.*}} shared_outs(%{{.*}} = %[[SLICE]])
// CHECK-NOT: linalg.copy
// CHECK: tensor.insert_slice %[[MM]] into %[[D]][2, 0] [2, 8] [1, 1]
func.func @chunk_in_place(%a: tensor<2x16xf32>, %b: tensor<16x8xf32>, %d: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %s = tensor.extract_slice %d[2, 0] [2, 8] [1, 1] : tensor<4x8xf32> to tensor<2x8xf32>
  %m = linalg.matmul ins(%a, %b : tensor<2x16xf32>, tensor<16x8xf32>) outs(%s : tensor<2x8xf32>) -> tensor<2x8xf32>
  %r = tensor.insert_slice %m into %d[2, 0] [2, 8] [1, 1] : tensor<2x8xf32> into tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----

// A projection split into heads, its bias split alike, plus a residual
// (of the heads' shape):
// the elementwise op is first collapsed onto the matmul's 2-d result (the
// bias and the residual collapsed with it; the expand_shape moves after it),
// then applied by the matmul's threads.
// REPORT: remark: fusion: linalg.generic applied by the kernel's threads to the results they hold (epilogue)
// CHECK-LABEL: func.func @heads_bias_residual
// CHECK-NOT: tensor.expand_shape
// CHECK: %[[RES:.*]] = tensor.collapse_shape %{{.*}} {{\[}}[0, 1], [2, 3]] : tensor<1x64x6x16xf32> into tensor<64x96xf32>
// CHECK: %[[MM:.*]] = scf.forall
// CHECK:   scf.forall
// CHECK:     linalg.matmul
// CHECK:     tensor.extract_slice %{{.*}} [4] [1] : tensor<96xf32> to tensor<4xf32>
// CHECK:     tensor.extract_slice %[[RES]]{{.*}} [4, 4] [1, 1] : tensor<64x96xf32> to tensor<4x4xf32>
// CHECK:     linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<4xf32>, tensor<4x4xf32>) outs(%{{.*}} : tensor<4x4xf32>)
// CHECK-NOT: scf.forall (
// CHECK: tensor.expand_shape %[[MM]] {{\[}}[0, 1], [2, 3]] output_shape [1, 64, 6, 16]
func.func @heads_bias_residual(%a: tensor<64x128xf32>, %b: tensor<128x96xf32>, %bias: tensor<96xf32>, %res: tensor<1x64x6x16xf32>) -> tensor<1x64x6x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x96xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<64x96xf32>) -> tensor<64x96xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<64x128xf32>, tensor<128x96xf32>) outs(%f : tensor<64x96xf32>) -> tensor<64x96xf32>
  %heads = tensor.expand_shape %mm [[0, 1], [2, 3]] output_shape [1, 64, 6, 16] : tensor<64x96xf32> into tensor<1x64x6x16xf32>
  %bias_heads = tensor.expand_shape %bias [[0, 1]] output_shape [6, 16] : tensor<96xf32> into tensor<6x16xf32>
  %e4 = tensor.empty() : tensor<1x64x6x16xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(n, s, h, d) -> (n, s, h, d)>, affine_map<(n, s, h, d) -> (h, d)>, affine_map<(n, s, h, d) -> (n, s, h, d)>, affine_map<(n, s, h, d) -> (n, s, h, d)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%heads, %bias_heads, %res : tensor<1x64x6x16xf32>, tensor<6x16xf32>, tensor<1x64x6x16xf32>) outs(%e4 : tensor<1x64x6x16xf32>) {
  ^bb0(%x: f32, %y: f32, %z: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    %t = arith.addf %s, %z : f32
    linalg.yield %t : f32
  } -> tensor<1x64x6x16xf32>
  return %r : tensor<1x64x6x16xf32>
}

// -----

// An op that reads two reductions through expand_shapes collapses along
// the one it can: not the matmul's [8, 64] split into [2, 4] rows (the
// per-channel scale reads dimension 1 alone), but the batch matmul's
// [2, 4, 64] split into 8x8 pixels; it is then the batch matmul's
// epilogue, reading the matmul's result re-expanded.
// REPORT: remark: fusion: linalg.generic applied by the kernel's threads to the results they hold (epilogue)
// CHECK-LABEL: func.func @two_expands
// CHECK: %[[ROWS:.*]] = tensor.expand_shape %{{.*}} {{\[}}[0, 1], [2]] output_shape [2, 4, 64] : tensor<8x64xf32> into tensor<2x4x64xf32>
// CHECK: %[[R:.*]] = scf.forall (%{{.*}}, %{{.*}}, %{{.*}}) = (0, 0, 0) to (2, 4, 64)
// CHECK:     linalg.batch_matmul
// CHECK:     tensor.extract_slice %[[ROWS]]
// CHECK:     linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<1x4x4xf32>, tensor<4xf32>)
// CHECK: tensor.expand_shape %[[R]] {{\[}}[0], [1], [2, 3]] output_shape [2, 4, 8, 8]
func.func @two_expands(%a: tensor<2x4x32xf32>, %b: tensor<2x32x64xf32>, %c: tensor<8x32xf32>, %d: tensor<32x64xf32>, %s: tensor<4xf32>) -> tensor<2x4x8x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e2 = tensor.empty() : tensor<8x64xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<8x64xf32>) -> tensor<8x64xf32>
  %rows = linalg.matmul ins(%c, %d : tensor<8x32xf32>, tensor<32x64xf32>) outs(%f2 : tensor<8x64xf32>) -> tensor<8x64xf32>
  %e1 = tensor.empty() : tensor<2x4x64xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<2x4x64xf32>) -> tensor<2x4x64xf32>
  %batch = linalg.batch_matmul ins(%a, %b : tensor<2x4x32xf32>, tensor<2x32x64xf32>) outs(%f1 : tensor<2x4x64xf32>) -> tensor<2x4x64xf32>
  %x = tensor.expand_shape %rows [[0, 1], [2, 3]] output_shape [2, 4, 8, 8] : tensor<8x64xf32> into tensor<2x4x8x8xf32>
  %y = tensor.expand_shape %batch [[0], [1], [2, 3]] output_shape [2, 4, 8, 8] : tensor<2x4x64xf32> into tensor<2x4x8x8xf32>
  %e = tensor.empty() : tensor<2x4x8x8xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(n, c, h, w) -> (n, c, h, w)>, affine_map<(n, c, h, w) -> (n, c, h, w)>, affine_map<(n, c, h, w) -> (c)>, affine_map<(n, c, h, w) -> (n, c, h, w)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x, %y, %s : tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>, tensor<4xf32>) outs(%e : tensor<2x4x8x8xf32>) {
  ^bb0(%p: f32, %q: f32, %t: f32, %o: f32):
    %0 = arith.addf %p, %q : f32
    %1 = arith.mulf %0, %t : f32
    linalg.yield %1 : f32
  } -> tensor<2x4x8x8xf32>
  return %r : tensor<2x4x8x8xf32>
}

// -----

// A residual computed after the matmul, from nothing the matmul computes:
// its op moves before the matmul, whose threads then add it.
// CHECK-LABEL: func.func @residual_computed_later
// CHECK: %[[LATER:.*]] = scf.forall
// CHECK:   arith.mulf
// CHECK: scf.forall
// CHECK:   scf.forall
// CHECK:     linalg.matmul
// CHECK:     tensor.extract_slice %[[LATER]]
// CHECK:     linalg.generic
// CHECK:       arith.addf
// CHECK-NOT: scf.forall (
// REPORT: remark: fusion: linalg.generic applied by the kernel's threads to the results they hold (epilogue)
func.func @residual_computed_later(%a: tensor<64x128xf32>, %b: tensor<128x96xf32>, %x: tensor<64x96xf32>) -> tensor<64x96xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x96xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<64x96xf32>) -> tensor<64x96xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<64x128xf32>, tensor<128x96xf32>) outs(%f : tensor<64x96xf32>) -> tensor<64x96xf32>
  %later = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<64x96xf32>) outs(%e : tensor<64x96xf32>) {
  ^bb0(%in: f32, %o: f32):
    %sq = arith.mulf %in, %in : f32
    linalg.yield %sq : f32
  } -> tensor<64x96xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%mm, %later : tensor<64x96xf32>, tensor<64x96xf32>) outs(%e : tensor<64x96xf32>) {
  ^bb0(%x1: f32, %y: f32, %o: f32):
    %s = arith.addf %x1, %y : f32
    linalg.yield %s : f32
  } -> tensor<64x96xf32>
  return %r : tensor<64x96xf32>
}

// -----

// Row sums divided by a count that a call after them returns, and a
// matmul plus a residual that a call after it returns (calls do not move):
// neither consumer can be applied where the reduction's threads hold its
// results; each is a kernel of its own.
// CHECK-LABEL: func.func @epilogues_that_wait
// CHECK-COUNT-4: } {mapping = [#gpu.block
// REPORT: remark: fusion: linalg.generic runs as a kernel of its own: it takes a value computed after the tiles
// REPORT: remark: fusion: linalg.generic runs as a kernel of its own: it reads a tensor of another shape, or one computed after the tiles
func.func private @count() -> f32
func.func private @residual() -> tensor<64x96xf32>
func.func @epilogues_that_wait(%x: tensor<?x256xf32>, %a: tensor<64x128xf32>, %b: tensor<128x96xf32>) -> (tensor<?xf32>, tensor<64x96xf32>) {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %rows = tensor.dim %x, %c0 : tensor<?x256xf32>
  %e = tensor.empty(%rows) : tensor<?xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<?xf32>) -> tensor<?xf32>
  %sums = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<?x256xf32>) outs(%f : tensor<?xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %in, %acc : f32
    linalg.yield %s : f32
  } -> tensor<?xf32>
  %count = func.call @count() : () -> f32
  %means = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]} ins(%sums : tensor<?xf32>) outs(%e : tensor<?xf32>) {
  ^bb0(%in: f32, %o: f32):
    %m = arith.divf %in, %count : f32
    linalg.yield %m : f32
  } -> tensor<?xf32>
  %e2 = tensor.empty() : tensor<64x96xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<64x96xf32>) -> tensor<64x96xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<64x128xf32>, tensor<128x96xf32>) outs(%f2 : tensor<64x96xf32>) -> tensor<64x96xf32>
  %later = func.call @residual() : () -> tensor<64x96xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%mm, %later : tensor<64x96xf32>, tensor<64x96xf32>) outs(%e2 : tensor<64x96xf32>) {
  ^bb0(%x1: f32, %y: f32, %o: f32):
    %s = arith.addf %x1, %y : f32
    linalg.yield %s : f32
  } -> tensor<64x96xf32>
  return %means, %r : tensor<?xf32>, tensor<64x96xf32>
}

// -----

// A matmul's result rounded to f16 (a 16-bit model's MatMul, summed in
// f32): the rounding cannot update the f32 tiles in place, so it is the
// root, tiled as the matmul would be (64x32 per workgroup, 4x4 per
// thread), the matmul and its fill fused into its tiles: each thread sums
// its 4x4 in a tensor of its own and writes them rounded.
// CHECK-LABEL: func.func @matmul_rounded
// CHECK: %[[R:.*]] = scf.forall (%{{.*}}, %{{.*}}) = (0, 0) to (64, 96) step (64, 32) shared_outs(%{{.*}} = %{{.*}}) -> (tensor<64x96xf16>)
// CHECK:   scf.forall (%{{.*}}, %{{.*}}) = (0, 0) to (64, 32) step (4, 4)
// CHECK:     %[[E:.*]] = tensor.empty() : tensor<4x4xf32>
// CHECK:     %[[F:.*]] = linalg.fill {{.*}} outs(%[[E]] : tensor<4x4xf32>)
// CHECK:     %[[M:.*]] = linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<4x128xf32>, tensor<128x4xf32>) outs(%[[F]] : tensor<4x4xf32>)
// CHECK:     linalg.generic {{.*}} ins(%[[M]] : tensor<4x4xf32>) outs(%{{.*}} : tensor<4x4xf16>)
// CHECK:       arith.truncf
// CHECK:   } {mapping = [#gpu.thread<y>, #gpu.thread<x>]}
// CHECK: } {mapping = [#gpu.block<linear_dim_1>, #gpu.block<linear_dim_0>]}
// CHECK-NOT: scf.forall (
// CHECK: return %[[R]]
// REPORT: remark: fusion: linalg.generic applied by the kernel's threads to the results they hold (epilogue)
func.func @matmul_rounded(%a: tensor<64x128xf32>, %b: tensor<128x96xf32>) -> tensor<64x96xf16> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x96xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<64x96xf32>) -> tensor<64x96xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<64x128xf32>, tensor<128x96xf32>) outs(%f : tensor<64x96xf32>) -> tensor<64x96xf32>
  %h = tensor.empty() : tensor<64x96xf16>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%mm : tensor<64x96xf32>) outs(%h : tensor<64x96xf16>) {
  ^bb0(%x: f32, %o: f16):
    %t = arith.truncf %x : f32 to f16
    linalg.yield %t : f16
  } -> tensor<64x96xf16>
  return %r : tensor<64x96xf16>
}

// -----

// The same with 100 rows: the last workgroup's tile is partial (36 of
// 64 rows), and so are its threads' (4 rows, or what is left). Each
// thread's sums are a slice of a buffer of their bound, 4x4 (a static
// private buffer after bufferization: a kernel cannot allocate one of
// dynamic size), and the rounding is still the matmul's epilogue.
// CHECK-LABEL: func.func @matmul_rounded_edge
// CHECK: scf.forall (%{{.*}}, %{{.*}}) = (0, 0) to (100, 96) step (64, 32) shared_outs(%{{.*}}) -> (tensor<100x96xf16>)
// CHECK:   %[[ROWS:.*]] = affine.min
// CHECK:   scf.forall (%{{.*}}, %{{.*}}) = (0, 0) to (%[[ROWS]], 32) step (4, 4)
// CHECK:     %[[MINE:.*]] = affine.min
// CHECK:     %[[BUF:.*]] = bufferization.alloc_tensor() : tensor<4x4xf32>
// CHECK:     %[[SUMS:.*]] = tensor.extract_slice %[[BUF]][0, 0] [%[[MINE]], 4] [1, 1] : tensor<4x4xf32> to tensor<?x4xf32>
// CHECK:     %[[ZERO:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[SUMS]] : tensor<?x4xf32>)
// CHECK:     %[[MM:.*]] = linalg.matmul {{.*}} outs(%[[ZERO]] : tensor<?x4xf32>)
// CHECK:     linalg.generic {{.*}} ins(%[[MM]] : tensor<?x4xf32>) outs(%{{.*}} : tensor<?x4xf16>)
// CHECK:       arith.truncf
// CHECK-NOT: scf.forall (
// REPORT: remark: fusion: linalg.generic applied by the kernel's threads to the results they hold (epilogue)
func.func @matmul_rounded_edge(%a: tensor<100x128xf32>, %b: tensor<128x96xf32>) -> tensor<100x96xf16> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<100x96xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<100x96xf32>) -> tensor<100x96xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<100x128xf32>, tensor<128x96xf32>) outs(%f : tensor<100x96xf32>) -> tensor<100x96xf32>
  %h = tensor.empty() : tensor<100x96xf16>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%mm : tensor<100x96xf32>) outs(%h : tensor<100x96xf16>) {
  ^bb0(%x: f32, %o: f16):
    %t = arith.truncf %x : f32 to f16
    linalg.yield %t : f16
  } -> tensor<100x96xf16>
  return %r : tensor<100x96xf16>
}

// -----

// A quantized convolution as kiln-gpu-conv-as-matmul leaves it (i32 sums
// of [1, filters, pixels]) requantized to bytes: the requantization reads
// the sums as an image, through an expand_shape, and its per-channel
// scales [8, 1, 1] at (c, 0, 0). The scales drop their dimensions of 1, so
// the op collapses onto the sums' shape; it changes the element type, so it
// is the root, tiled as the convolution would be (8 of its 64 filters per
// workgroup, clamped to the 8 there are), the convolution fused into its
// tiles: each thread writes its 4x4 bytes.
// REPORT: remark: fusion: linalg.generic applied by the kernel's threads to the results they hold (epilogue)
// CHECK-LABEL: func.func @requantized_conv
// CHECK: %[[SCALES:.*]] = tensor.collapse_shape %{{.*}} {{\[}}[0, 1, 2]] : tensor<8x1x1xf32> into tensor<8xf32>
// CHECK: %[[R:.*]] = scf.forall (%{{.*}}, %{{.*}}, %{{.*}}) = (0, 0, 0) to (1, 8, 64) step (1, 8, 32) shared_outs(%{{.*}}) -> (tensor<1x8x64xi8>)
// CHECK:   scf.forall (%[[F:.*]], %{{.*}}) = (0, 0) to (8, 32) step (4, 4)
// CHECK:     tensor.extract_slice %[[SCALES]][%[[F]]] [4] [1] : tensor<8xf32> to tensor<4xf32>
// CHECK:     %[[SUMS:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<1x4x4xi32>)
// CHECK:     linalg.generic {{.*}} ins(%{{.*}}, %[[SUMS]] : tensor<4xf32>, tensor<1x4x4xi32>) outs(%{{.*}} : tensor<1x4x4xi8>)
// CHECK-NOT: scf.forall (
// CHECK: tensor.expand_shape %[[R]] {{\[}}[0], [1], [2, 3]] output_shape [1, 8, 8, 8]
func.func @requantized_conv(%fields: tensor<1x16x64xi8>, %filter: tensor<8x16xi8>, %scale: tensor<8x1x1xf32>) -> tensor<1x8x8x8xi8> {
  %zero = arith.constant 0 : i32
  %e = tensor.empty() : tensor<1x8x64xi32>
  %f = linalg.fill ins(%zero : i32) outs(%e : tensor<1x8x64xi32>) -> tensor<1x8x64xi32>
  %mm = linalg.generic {indexing_maps = [affine_map<(n, f, p, k) -> (n, k, p)>, affine_map<(n, f, p, k) -> (f, k)>, affine_map<(n, f, p, k) -> (n, f, p)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%fields, %filter : tensor<1x16x64xi8>, tensor<8x16xi8>) outs(%f : tensor<1x8x64xi32>) {
  ^bb0(%x: i8, %w: i8, %acc: i32):
    %xe = arith.extui %x : i8 to i32
    %we = arith.extsi %w : i8 to i32
    %p = arith.muli %xe, %we : i32
    %s = arith.addi %acc, %p : i32
    linalg.yield %s : i32
  } -> tensor<1x8x64xi32>
  %image = tensor.expand_shape %mm [[0], [1], [2, 3]] output_shape [1, 8, 8, 8] : tensor<1x8x64xi32> into tensor<1x8x8x8xi32>
  %q = tensor.empty() : tensor<1x8x8x8xi8>
  %r = linalg.generic {indexing_maps = [affine_map<(n, c, y, x) -> (c, 0, 0)>, affine_map<(n, c, y, x) -> (n, c, y, x)>, affine_map<(n, c, y, x) -> (n, c, y, x)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%scale, %image : tensor<8x1x1xf32>, tensor<1x8x8x8xi32>) outs(%q : tensor<1x8x8x8xi8>) {
  ^bb0(%s: f32, %v: i32, %o: i8):
    %vf = arith.sitofp %v : i32 to f32
    %m = arith.mulf %vf, %s : f32
    %i = arith.fptosi %m : f32 to i8
    linalg.yield %i : i8
  } -> tensor<1x8x8x8xi8>
  return %r : tensor<1x8x8x8xi8>
}

// -----

// A matmul of one row rounded to f16: its 64-row tiles are clamped to the
// row there is, so the tiles are whole and the rounding is its epilogue.
// REPORT: remark: fusion: linalg.generic applied by the kernel's threads to the results they hold (epilogue)
// CHECK-LABEL: func.func @matmul_row_rounded
// CHECK: scf.forall (%{{.*}}, %{{.*}}) = (0, 0) to (1, 96) step (1, 32) shared_outs(%{{.*}}) -> (tensor<1x96xf16>)
// CHECK:   scf.forall (%{{.*}}, %{{.*}}) = (0, 0) to (1, 32) step (1, 4)
// CHECK:     linalg.matmul
// CHECK:     arith.truncf
// CHECK-NOT: scf.forall (
func.func @matmul_row_rounded(%a: tensor<1x128xf32>, %b: tensor<128x96xf32>) -> tensor<1x96xf16> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x96xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x96xf32>) -> tensor<1x96xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<1x128xf32>, tensor<128x96xf32>) outs(%f : tensor<1x96xf32>) -> tensor<1x96xf32>
  %h = tensor.empty() : tensor<1x96xf16>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%mm : tensor<1x96xf32>) outs(%h : tensor<1x96xf16>) {
  ^bb0(%x: f32, %o: f16):
    %t = arith.truncf %x : f32 to f16
    linalg.yield %t : f16
  } -> tensor<1x96xf16>
  return %r : tensor<1x96xf16>
}

// -----

// No rows at all: the rounding stays a kernel of its own (no tile divides
// an empty extent).
// REPORT: remark: fusion: linalg.generic runs as a kernel of its own: its result has another element type, and the reduction's extents are not static and nonzero, or its threads do not share a workgroup's tile evenly
// CHECK-LABEL: func.func @empty_rows
func.func @empty_rows(%x: tensor<0x8x16xf32>) -> tensor<0x8xf16> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<0x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<0x8xf32>) -> tensor<0x8xf32>
  %sum = linalg.generic {indexing_maps = [affine_map<(i, j, k) -> (i, j, k)>, affine_map<(i, j, k) -> (i, j)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x : tensor<0x8x16xf32>) outs(%f : tensor<0x8xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %s = arith.addf %v, %acc : f32
    linalg.yield %s : f32
  } -> tensor<0x8xf32>
  %h = tensor.empty() : tensor<0x8xf16>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%sum : tensor<0x8xf32>) outs(%h : tensor<0x8xf16>) {
  ^bb0(%v: f32, %o: f16):
    %t = arith.truncf %v : f32 to f16
    linalg.yield %t : f16
  } -> tensor<0x8xf16>
  return %r : tensor<0x8xf16>
}

// -----

// A mean's sum that keeps its reduced dimensions as 1 (a map with
// constants) cannot be fused into a consumer's tiles: its rounding stays a
// kernel of its own.
// REPORT: remark: fusion: linalg.generic runs as a kernel of its own: the reduction keeps dimensions of 1 (constants in its result's map), which its tiles cannot be fused by
// CHECK-LABEL: func.func @mean_kept_rounded
// CHECK-COUNT-2: } {mapping = [#gpu.block
func.func @mean_kept_rounded(%x: tensor<1x64x4x48xf32>) -> tensor<1x64x1x1xf16> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x64x1x1xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x64x1x1xf32>) -> tensor<1x64x1x1xf32>
  %sum = linalg.generic {indexing_maps = [affine_map<(n, c, y, x) -> (n, c, y, x)>, affine_map<(n, c, y, x) -> (n, c, 0, 0)>], iterator_types = ["parallel", "parallel", "reduction", "reduction"]} ins(%x : tensor<1x64x4x48xf32>) outs(%f : tensor<1x64x1x1xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %s = arith.addf %v, %acc : f32
    linalg.yield %s : f32
  } -> tensor<1x64x1x1xf32>
  %h = tensor.empty() : tensor<1x64x1x1xf16>
  %r = linalg.generic {indexing_maps = [affine_map<(n, c, y, x) -> (n, c, y, x)>, affine_map<(n, c, y, x) -> (n, c, y, x)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%sum : tensor<1x64x1x1xf32>) outs(%h : tensor<1x64x1x1xf16>) {
  ^bb0(%v: f32, %o: f16):
    %t = arith.truncf %v : f32 to f16
    linalg.yield %t : f16
  } -> tensor<1x64x1x1xf16>
  return %r : tensor<1x64x1x1xf16>
}

// -----

// A matmul too small for enough workgroups at 4x4 results per thread (a
// 7x7 convolution's 49 rows by 512 filters: 16 workgroups) gets 1x1 (16
// rows by 8 columns a workgroup: 256 of them); with 16-bit operands it
// keeps 4x4, the tensor cores' warp blocks.
// SMALL-LABEL: func.func @small_matmuls
// SMALL: scf.forall (%{{.*}}, %{{.*}}) = (0, 0) to (49, 512) step (16, 8)
// SMALL:   scf.forall (%{{.*}}, %{{.*}}) in (%{{.*}}, 8)
// SMALL: scf.forall (%{{.*}}, %{{.*}}) = (0, 0) to (49, 512) step (64, 32)
// SMALL:   scf.forall (%{{.*}}, %{{.*}}) = (0, 0) to (49, 32) step (4, 4)
func.func @small_matmuls(%a: tensor<49x4608xf32>, %b: tensor<4608x512xf32>,
                         %ah: tensor<49x4608xf16>, %bh: tensor<4608x512xf16>)
    -> (tensor<49x512xf32>, tensor<49x512xf32>) {
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<49x512xf32>
  %init = linalg.fill ins(%zero : f32) outs(%empty : tensor<49x512xf32>) -> tensor<49x512xf32>
  %c = linalg.matmul ins(%a, %b : tensor<49x4608xf32>, tensor<4608x512xf32>) outs(%init : tensor<49x512xf32>) -> tensor<49x512xf32>
  %empty2 = tensor.empty() : tensor<49x512xf32>
  %init2 = linalg.fill ins(%zero : f32) outs(%empty2 : tensor<49x512xf32>) -> tensor<49x512xf32>
  %ch = linalg.matmul ins(%ah, %bh : tensor<49x4608xf16>, tensor<4608x512xf16>) outs(%init2 : tensor<49x512xf32>) -> tensor<49x512xf32>
  return %c, %ch : tensor<49x512xf32>, tensor<49x512xf32>
}

// -----

// A large f32 matmul (2048 x 1024: 256 workgroups even of 8x8 results per
// thread) gets 8x8, 128x64 results a workgroup; so does one of 16-bit
// operands (the tensor cores' warps then take 32x64 each).
// SMALL-LABEL: func.func @large_matmuls
// SMALL: scf.forall (%{{.*}}, %{{.*}}) = (0, 0) to (2048, 1024) step (128, 64)
// SMALL:   scf.forall (%{{.*}}, %{{.*}}) = (0, 0) to (128, 64) step (8, 8)
// SMALL: scf.forall (%{{.*}}, %{{.*}}) = (0, 0) to (2048, 1024) step (128, 64)
// SMALL:   scf.forall (%{{.*}}, %{{.*}}) = (0, 0) to (128, 64) step (8, 8)
func.func @large_matmuls(%a: tensor<2048x64xf32>, %b: tensor<64x1024xf32>,
                         %ah: tensor<2048x64xf16>, %bh: tensor<64x1024xf16>)
    -> (tensor<2048x1024xf32>, tensor<2048x1024xf32>) {
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<2048x1024xf32>
  %init = linalg.fill ins(%zero : f32) outs(%empty : tensor<2048x1024xf32>) -> tensor<2048x1024xf32>
  %c = linalg.matmul ins(%a, %b : tensor<2048x64xf32>, tensor<64x1024xf32>) outs(%init : tensor<2048x1024xf32>) -> tensor<2048x1024xf32>
  %empty2 = tensor.empty() : tensor<2048x1024xf32>
  %init2 = linalg.fill ins(%zero : f32) outs(%empty2 : tensor<2048x1024xf32>) -> tensor<2048x1024xf32>
  %ch = linalg.matmul ins(%ah, %bh : tensor<2048x64xf16>, tensor<64x1024xf16>) outs(%init2 : tensor<2048x1024xf32>) -> tensor<2048x1024xf32>
  return %c, %ch : tensor<2048x1024xf32>, tensor<2048x1024xf32>
}

// -----

// A Tile (a `mod` map) fused into a transpose's tiles: sliced right only
// in tiles that start at a multiple of 3, so the transpose keeps T threads
// on its innermost loop and one row per workgroup, not 4 rows of 30.
// SMALL-LABEL: func.func @tile_then_transpose
// SMALL: scf.forall (%{{.*}}, %{{.*}}) = (0, 0) to (14, 30) step (1, 128)
// SMALL:   scf.forall (%{{.*}}) in (30)
// SMALL:     linalg.generic
// SMALL:     linalg.transpose
// SMALL:   } {mapping = [#gpu.thread<x>]}
#tile_in = affine_map<(d0, d1) -> (d0 mod 3, d1)>
#tile_out = affine_map<(d0, d1) -> (d0, d1)>
func.func @tile_then_transpose(%x: tensor<3x14xf32>) -> tensor<14x30xf32> {
  %e = tensor.empty() : tensor<30x14xf32>
  %tiled = linalg.generic {indexing_maps = [#tile_in, #tile_out], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<3x14xf32>) outs(%e : tensor<30x14xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<30x14xf32>
  %t = tensor.empty() : tensor<14x30xf32>
  %r = linalg.transpose ins(%tiled : tensor<30x14xf32>) outs(%t : tensor<14x30xf32>) permutation = [1, 0]
  return %r : tensor<14x30xf32>
}

// -----

// A 16-bit matmul with enough workgroups (2048x2048: 512 of 128x64) gets
// 8x8 results per thread on CUDA; with wide-tensor-tiles, 8x16 (128x128
// tiles). Other targets (Vulkan: 16-bit matmuls widened before) never
// widen the tile.
// CUDA-LABEL: func.func @matmul_f16_wide
// CUDA: scf.forall (%{{.*}}, %{{.*}}) = (0, 0) to (2048, 2048) step (128, 64)
// CUDA:   scf.forall (%{{.*}}, %{{.*}}) = (0, 0) to (128, 64) step (8, 8)
// CUDA:     linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<8x64xf16>, tensor<64x8xf16>) outs(%{{.*}} : tensor<8x8xf32>)
// WIDE-LABEL: func.func @matmul_f16_wide
// WIDE: scf.forall (%{{.*}}, %{{.*}}) = (0, 0) to (2048, 2048) step (128, 128)
// WIDE:   scf.forall (%{{.*}}, %{{.*}}) = (0, 0) to (128, 128) step (8, 16)
// WIDE:     linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<8x64xf16>, tensor<64x16xf16>) outs(%{{.*}} : tensor<8x16xf32>)
func.func @matmul_f16_wide(%a: tensor<2048x64xf16>, %b: tensor<64x2048xf16>) -> tensor<2048x2048xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2048x2048xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<2048x2048xf32>) -> tensor<2048x2048xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<2048x64xf16>, tensor<64x2048xf16>) outs(%f : tensor<2048x2048xf32>) -> tensor<2048x2048xf32>
  return %mm : tensor<2048x2048xf32>
}

// 2048x1024 would have 256 workgroups of 128x64 but 128 of 128x128: 8x8
// either way.
// CUDA-LABEL: func.func @matmul_f16_not_wide
// CUDA:   scf.forall (%{{.*}}, %{{.*}}) = (0, 0) to (128, 64) step (8, 8)
// WIDE-LABEL: func.func @matmul_f16_not_wide
// WIDE:   scf.forall (%{{.*}}, %{{.*}}) = (0, 0) to (128, 64) step (8, 8)
func.func @matmul_f16_not_wide(%a: tensor<2048x64xf16>, %b: tensor<64x1024xf16>) -> tensor<2048x1024xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2048x1024xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<2048x1024xf32>) -> tensor<2048x1024xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<2048x64xf16>, tensor<64x1024xf16>) outs(%f : tensor<2048x1024xf32>) -> tensor<2048x1024xf32>
  return %mm : tensor<2048x1024xf32>
}

// -----

// A kernel built before the distribution (attention on the tensor cores:
// an scf.forall whose workgroup buffer and barrier are side effects) is no
// producer to fuse into its consumer's tiles: no clone of it is left in
// the consumer's loop (one that the canonicalizer could not erase).
// CHECK-LABEL: func.func @built_kernel_producer
// CHECK: scf.forall
// CHECK: gpu.barrier
// CHECK: mapping = [#gpu.block<linear_dim_0>]
// CHECK-NOT: gpu.barrier
// CHECK: arith.truncf
// CHECK-NOT: gpu.barrier
// CHECK: return
func.func @built_kernel_producer(%x: tensor<64x8xf32>) -> tensor<64x8xf16> {
  %init = tensor.empty() : tensor<64x8xf32>
  %kernel = scf.forall (%i) = (0) to (64) step (32) shared_outs(%out = %init) -> (tensor<64x8xf32>) {
    %buffer = memref.alloc() : memref<32xf32, #gpu.address_space<workgroup>>
    %rows = tensor.extract_slice %x[%i, 0] [32, 8] [1, 1] : tensor<64x8xf32> to tensor<32x8xf32>
    %t = scf.forall (%j) in (32) shared_outs(%block = %rows) -> (tensor<32x8xf32>) {
      %c0 = arith.constant 0 : index
      %v = tensor.extract %rows[%j, %c0] : tensor<32x8xf32>
      memref.store %v, %buffer[%j] : memref<32xf32, #gpu.address_space<workgroup>>
      gpu.barrier
      %row = tensor.extract_slice %block[%j, 0] [1, 8] [1, 1] : tensor<32x8xf32> to tensor<1x8xf32>
      scf.forall.in_parallel {
        tensor.parallel_insert_slice %row into %block[%j, 0] [1, 8] [1, 1] : tensor<1x8xf32> into tensor<32x8xf32>
      }
    } {mapping = [#gpu.thread<x>]}
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %t into %out[%i, 0] [32, 8] [1, 1] : tensor<32x8xf32> into tensor<64x8xf32>
    }
  } {mapping = [#gpu.block<linear_dim_0>]}
  %empty = tensor.empty() : tensor<64x8xf16>
  %rounded = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%kernel : tensor<64x8xf32>) outs(%empty : tensor<64x8xf16>) {
  ^bb0(%in: f32, %o: f16):
    %r = arith.truncf %in : f32 to f16
    linalg.yield %r : f16
  } -> tensor<64x8xf16>
  return %rounded : tensor<64x8xf16>
}
