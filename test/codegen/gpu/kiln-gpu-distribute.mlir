// RUN: kiln-opt %s --split-input-file --verify-diagnostics --kiln-gpu-distribute=target=vulkan --canonicalize --cse | FileCheck %s
// RUN: kiln-opt %s --split-input-file --verify-diagnostics --kiln-gpu-distribute=target=vulkan-lavapipe --canonicalize --cse | FileCheck %s --check-prefix=LAVAPIPE
// RUN: not kiln-opt %s --split-input-file --kiln-gpu-distribute=target=vulkan-mystery 2>&1 | FileCheck %s --check-prefix=TARGET
// TARGET: error: unknown GPU target 'vulkan-mystery' (expected one of vulkan, vulkan-lavapipe, vulkan-nvidia, cuda, cuda-sm80, cuda-sm90a, metal)

// A matmul is a root: workgroups of 64x32 results (vulkan: 128 threads as
// 16 rows by 8 columns of 4x4 results) over the whole K, its zero fill fused
// into each thread's tile. The elementwise consumer is a root of its own (a
// reduction is never fused into a consumer's tiles): one row per workgroup,
// one result per thread.
// CHECK-LABEL: func.func @matmul_bias_relu
// CHECK: %[[MM:.*]] = scf.forall (%{{.*}}, %{{.*}}) = (0, 0) to (64, 96) step (64, 32)
// CHECK:   scf.forall (%{{.*}}, %{{.*}}) = (0, 0) to (64, 32) step (4, 4)
// CHECK:     linalg.fill {{.*}} -> tensor<4x4xf32>
// CHECK:     linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<4x128xf32>, tensor<128x4xf32>) outs(%{{.*}} : tensor<4x4xf32>)
// CHECK:   } {mapping = [#gpu.thread<y>, #gpu.thread<x>]}
// CHECK: } {mapping = [#gpu.block<linear_dim_1>, #gpu.block<linear_dim_0>]}
// CHECK: scf.forall (%{{.*}}, %{{.*}}) = (0, 0) to (64, 96) step (1, 128)
// CHECK:   tensor.extract_slice %[[MM]]
// CHECK:   scf.forall (%{{.*}}) in (96)
// CHECK:     linalg.generic {{.*}} outs(%{{.*}} : tensor<1x1xf32>)
// CHECK:   } {mapping = [#gpu.thread<x>]}
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
// CHECK-NOT: scf.forall
// CHECK: linalg.fill
// CHECK: linalg.generic
// CHECK-NOT: scf.forall
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
