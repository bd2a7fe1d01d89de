// RUN: kiln-opt %s --pass-pipeline="builtin.module(func.func(kiln-cpu-prefetch-weights{min-bytes=1024 distance=4}))" | FileCheck %s

// A 2 x 16 x 32 f32 constant (4 KiB) read one panel row per K step: the
// row 4 steps ahead (clamped to row 15) is prefetched, one request per
// 64-byte line of the 32 lanes read.
memref.global "private" constant @panels : memref<2x16x32xf32> = dense<1.0>
memref.global "private" constant @small : memref<16x16xf32> = dense<1.0>
memref.global "private" @mutable : memref<2x16x32xf32> = dense<1.0>

// CHECK-LABEL: func.func @direct
// CHECK: %[[G:.*]] = memref.get_global @panels
// CHECK: scf.for %[[K:.*]] = %c0 to %c16 step %c1
// CHECK: %[[AHEAD:.*]] = arith.addi %[[K]], %c4
// CHECK: %[[ROW:.*]] = arith.minui %[[AHEAD]], %c15
// CHECK: memref.prefetch %[[G]][%[[P:.*]], %[[ROW]], %{{c0[_0-9]*}}], read, locality<3>, data
// CHECK: %[[LINE:.*]] = arith.addi %{{c0[_0-9]*}}, %c16
// CHECK: memref.prefetch %[[G]][%[[P]], %[[ROW]], %[[LINE]]], read, locality<3>, data
// CHECK: vector.transfer_read %[[G]][%{{.*}}, %[[K]], %c0]
func.func @direct(%p: index, %init: vector<32xf32>) -> vector<32xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %pad = arith.constant 0.0 : f32
  %g = memref.get_global @panels : memref<2x16x32xf32>
  %r = scf.for %k = %c0 to %c16 step %c1 iter_args(%acc = %init) -> vector<32xf32> {
    %v = vector.transfer_read %g[%p, %k, %c0], %pad {in_bounds = [true]} : memref<2x16x32xf32>, vector<32xf32>
    %s = arith.addf %v, %acc : vector<32xf32>
    scf.yield %s : vector<32xf32>
  }
  return %r : vector<32xf32>
}

// Through the subviews tiling leaves (panel, then one row per K step, the
// index j + k0 with k0 from outside the loop): the offsets add up to the
// place in the global.
// CHECK-LABEL: func.func @through_subviews
// CHECK: %[[G:.*]] = memref.get_global @panels
// CHECK: scf.for %[[J:.*]] = %c0 to %c8 step %c1
// CHECK: %[[AT:.*]] = arith.addi %[[J]], %[[K0:.*]] : index
// CHECK: %[[AHEAD:.*]] = arith.addi %[[AT]], %c4
// CHECK: %[[ROW:.*]] = arith.minui %[[AHEAD]], %c15
// CHECK: memref.prefetch %[[G]][%[[P:.*]], %[[ROW]], %{{c0[_0-9]*}}], read
// CHECK: memref.prefetch %[[G]][%[[P]], %[[ROW]], %{{.*}}], read
func.func @through_subviews(%p: index, %k0: index, %init: vector<32xf32>) -> vector<32xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %pad = arith.constant 0.0 : f32
  %g = memref.get_global @panels : memref<2x16x32xf32>
  %panel = memref.subview %g[%p, 0, 0] [1, 16, 32] [1, 1, 1] : memref<2x16x32xf32> to memref<16x32xf32, strided<[32, 1], offset: ?>>
  %r = scf.for %j = %c0 to %c8 step %c1 iter_args(%acc = %init) -> vector<32xf32> {
    %k = arith.addi %j, %k0 : index
    %row = memref.subview %panel[%k, 0] [1, 32] [1, 1] : memref<16x32xf32, strided<[32, 1], offset: ?>> to memref<32xf32, strided<[1], offset: ?>>
    %v = vector.transfer_read %row[%c0], %pad {in_bounds = [true]} : memref<32xf32, strided<[1], offset: ?>>, vector<32xf32>
    %s = arith.addf %v, %acc : vector<32xf32>
    scf.yield %s : vector<32xf32>
  }
  return %r : vector<32xf32>
}

// Not prefetched: a constant that stays in cache (1 KiB, at min-bytes), a
// global that is not constant, and a read whose index does not follow the
// loop.
// CHECK-LABEL: func.func @left_alone
// CHECK-NOT: memref.prefetch
// CHECK: return
func.func @left_alone(%p: index, %init: vector<16xf32>, %wide: vector<32xf32>) -> (vector<16xf32>, vector<32xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %pad = arith.constant 0.0 : f32
  %small = memref.get_global @small : memref<16x16xf32>
  %mutable = memref.get_global @mutable : memref<2x16x32xf32>
  %g = memref.get_global @panels : memref<2x16x32xf32>
  %r:2 = scf.for %k = %c0 to %c16 step %c1 iter_args(%acc = %init, %acc2 = %wide) -> (vector<16xf32>, vector<32xf32>) {
    %v = vector.transfer_read %small[%k, %c0], %pad {in_bounds = [true]} : memref<16x16xf32>, vector<16xf32>
    %w = vector.transfer_read %mutable[%p, %k, %c0], %pad {in_bounds = [true]} : memref<2x16x32xf32>, vector<32xf32>
    %fixed = vector.transfer_read %g[%p, %c0, %c0], %pad {in_bounds = [true]} : memref<2x16x32xf32>, vector<32xf32>
    %s = arith.addf %v, %acc : vector<16xf32>
    %t = arith.addf %w, %fixed : vector<32xf32>
    %u = arith.addf %t, %acc2 : vector<32xf32>
    scf.yield %s, %u : vector<16xf32>, vector<32xf32>
  }
  return %r#0, %r#1 : vector<16xf32>, vector<32xf32>
}
