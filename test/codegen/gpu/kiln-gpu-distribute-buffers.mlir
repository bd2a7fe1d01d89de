// RUN: kiln-opt %s --split-input-file --kiln-gpu-distribute-buffers=target=vulkan --canonicalize --cse | FileCheck %s

// A copy that bufferization left between two buffers becomes a linalg.copy
// tiled to workgroups (one row each, 300 columns as 3 even tiles of at most
// Vulkan's 128 threads) and threads (one element each); a 0-d op stays as
// it is, on the host.
// CHECK-LABEL: func.func @host_copy
// CHECK-NOT: memref.copy
// CHECK: scf.forall (%[[I:.*]], %[[J:.*]]) = (0, 0) to (6, 300) step (1, 100) {
// CHECK:   scf.forall (%{{.*}}) in (100) {
// CHECK:     linalg.copy ins(%{{.*}} : memref<1x1xf32, strided<[?, 1], offset: ?>>) outs(%{{.*}} : memref<1x1xf32, strided<[300, 1], offset: ?>>)
// CHECK:   } {mapping = [#gpu.thread<x>]}
// CHECK: } {mapping = [#gpu.block<linear_dim_1>, #gpu.block<linear_dim_0>]}
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : memref<f32>)
func.func @host_copy(%src: memref<6x300xf32, strided<[?, 1], offset: ?>>, %dst: memref<6x300xf32>, %s: memref<f32>) {
  %zero = arith.constant 0.0 : f32
  memref.copy %src, %dst : memref<6x300xf32, strided<[?, 1], offset: ?>> to memref<6x300xf32>
  linalg.fill ins(%zero : f32) outs(%s : memref<f32>)
  return
}

// -----

// Rows shorter than the workgroup share it: 14 columns on thread x, and of
// the 9 rows the 128 threads leave room for, 7 (half of 14) on thread y.
// CHECK-LABEL: func.func @small_rows
// CHECK: scf.forall (%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) = (0, 0, 0, 0) to (2, 3, 14, 14) step (1, 1, 7, 14) {
// CHECK:   scf.forall (%{{.*}}, %{{.*}}) in (7, 14) {
// CHECK:   } {mapping = [#gpu.thread<y>, #gpu.thread<x>]}
// CHECK: } {mapping = [#gpu.block<linear_dim_3>, #gpu.block<linear_dim_2>, #gpu.block<linear_dim_1>, #gpu.block<linear_dim_0>]}
func.func @small_rows(%src: memref<2x3x14x14xf32, strided<[?, 196, 14, 1], offset: ?>>, %dst: memref<2x3x14x14xf32>) {
  memref.copy %src, %dst : memref<2x3x14x14xf32, strided<[?, 196, 14, 1], offset: ?>> to memref<2x3x14x14xf32>
  return
}

// -----

// Copies and linalg ops already in a forall (a kernel's) are not touched.
// CHECK-LABEL: func.func @in_kernel
// CHECK: scf.forall
// CHECK-NEXT: memref.copy
// CHECK-NOT: scf.forall
func.func @in_kernel(%src: memref<4xf32>, %dst: memref<4xf32>) {
  scf.forall (%i) in (1) {
    memref.copy %src, %dst : memref<4xf32> to memref<4xf32>
  } {mapping = [#gpu.block<linear_dim_0>]}
  return
}
