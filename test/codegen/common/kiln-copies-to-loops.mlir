// RUN: kiln-opt %s --pass-pipeline="builtin.module(func.func(kiln-copies-to-loops,canonicalize))" | FileCheck %s

// Padding writes into the interior of a larger buffer: a strided copy that
// becomes a parallel loop over the rows instead of the runtime's
// memrefCopy, each row of 8 f32 copied as one vector.
// CHECK-LABEL: func.func @pad_interior
// CHECK: %[[VIEW:.*]] = memref.subview
// CHECK: scf.parallel (%[[I:.*]]) = (%{{.*}}) to (%{{.*}}) step (%{{.*}})
// CHECK:   %[[V:.*]] = vector.transfer_read %arg0[%[[I]], %{{.*}}], %{{.*}} {in_bounds = [true]} : memref<4x8xf32>, vector<8xf32>
// CHECK:   vector.transfer_write %[[V]], %[[VIEW]][%[[I]], %{{.*}}] {in_bounds = [true]} : vector<8xf32>, memref<4x8xf32, strided<[10, 1], offset: 11>>
// CHECK-NOT: memref.copy
func.func @pad_interior(%x: memref<4x8xf32>, %padded: memref<6x10xf32>) {
  %view = memref.subview %padded[1, 1] [4, 8] [1, 1] : memref<6x10xf32> to memref<4x8xf32, strided<[10, 1], offset: 11>>
  memref.copy %x, %view : memref<4x8xf32> to memref<4x8xf32, strided<[10, 1], offset: 11>>
  return
}

// Long rows: 16 f32 per vector (64 bytes), in a loop over the whole chunks
// (100 / 16 = 6 of them), then the remaining 4.
// CHECK-LABEL: func.func @long_rows
// CHECK: scf.parallel
// CHECK:   scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}}
// CHECK:     vector.transfer_read {{.*}} vector<16xf32>
// CHECK:   vector.transfer_read {{.*}} vector<4xf32>
func.func @long_rows(%x: memref<2x100xf32>, %padded: memref<4x102xf32>) {
  %view = memref.subview %padded[1, 1] [2, 100] [1, 1] : memref<4x102xf32> to memref<2x100xf32, strided<[102, 1], offset: 103>>
  memref.copy %x, %view : memref<2x100xf32> to memref<2x100xf32, strided<[102, 1], offset: 103>>
  return
}

// Dynamic shapes become a linalg.copy.
// CHECK-LABEL: func.func @dynamic
// CHECK: linalg.copy ins(%arg0 : memref<?x8xf32>) outs(%{{.*}} : memref<?x8xf32, strided<[10, 1], offset: 11>>)
func.func @dynamic(%x: memref<?x8xf32>, %padded: memref<?x10xf32>, %n: index) {
  %view = memref.subview %padded[1, 1] [%n, 8] [1, 1] : memref<?x10xf32> to memref<?x8xf32, strided<[10, 1], offset: 11>>
  memref.copy %x, %view : memref<?x8xf32> to memref<?x8xf32, strided<[10, 1], offset: 11>>
  return
}

// Contiguous to contiguous stays a memref.copy, which lowers to memcpy.
// CHECK-LABEL: func.func @contiguous
// CHECK: memref.copy %arg0, %arg1
// CHECK-NOT: linalg.copy
func.func @contiguous(%x: memref<4x8xf32>, %y: memref<4x8xf32>) {
  memref.copy %x, %y : memref<4x8xf32> to memref<4x8xf32>
  return
}

// A fill of a buffer with static unit-stride rows is stored row by row: a
// parallel loop over the outer dimensions, each row of 20 f32 as a vector
// of 16 and one of 4 (as a loop nest LLVM would unroll the rows and store
// across them with scatters). Strided buffers too; dynamic shapes stay.
// CHECK-LABEL: func.func @fill_rows
// CHECK-DAG: %[[TAIL:.*]] = arith.constant dense<0xFF800000> : vector<4xf32>
// CHECK-DAG: %[[HEAD:.*]] = arith.constant dense<0xFF800000> : vector<16xf32>
// CHECK: scf.parallel (%[[I:.*]], %[[J:.*]]) = (%c0, %c0) to (%c3, %c4) step (%c1, %c1)
// CHECK: vector.transfer_write %[[HEAD]], %arg0[%[[I]], %[[J]], %c0] {in_bounds = [true]} : vector<16xf32>, memref<3x4x20xf32>
// CHECK: vector.transfer_write %[[TAIL]], %arg0[%[[I]], %[[J]], %c16] {in_bounds = [true]} : vector<4xf32>, memref<3x4x20xf32>
// CHECK-NOT: linalg.fill
func.func @fill_rows(%buf: memref<3x4x20xf32>) {
  %lowest = arith.constant 0xFF800000 : f32
  linalg.fill ins(%lowest : f32) outs(%buf : memref<3x4x20xf32>)
  return
}

// CHECK-LABEL: func.func @fill_strided
// CHECK: scf.parallel (%[[I:.*]]) = (%c0) to (%c4) step (%c1)
// CHECK: %[[V:.*]] = vector.broadcast %arg1 : f32 to vector<6xf32>
// CHECK: vector.transfer_write %[[V]], %arg0[%[[I]], %c0] {in_bounds = [true]} : vector<6xf32>, memref<4x6xf32, strided<[8, 1], offset: 9>>
func.func @fill_strided(%buf: memref<4x6xf32, strided<[8, 1], offset: 9>>, %v: f32) {
  linalg.fill ins(%v : f32) outs(%buf : memref<4x6xf32, strided<[8, 1], offset: 9>>)
  return
}

// CHECK-LABEL: func.func @fill_dynamic_stays
// CHECK: linalg.fill
func.func @fill_dynamic_stays(%buf: memref<?x4xf32>, %v: f32) {
  linalg.fill ins(%v : f32) outs(%buf : memref<?x4xf32>)
  return
}

// -----

// Booleans are a byte each in memory but a bit each in a stored vector of
// i1: their fills and copies stay element by element.
// CHECK-LABEL: func.func @bool_rows
// CHECK-NOT: vector<4xi1>
// CHECK: linalg.fill
// CHECK: linalg.copy
func.func @bool_rows(%x: memref<2x4xi1>, %padded: memref<4x6xi1>) {
  %true = arith.constant true
  linalg.fill ins(%true : i1) outs(%padded : memref<4x6xi1>)
  %view = memref.subview %padded[1, 1] [2, 4] [1, 1] : memref<4x6xi1> to memref<2x4xi1, strided<[6, 1], offset: 7>>
  memref.copy %x, %view : memref<2x4xi1> to memref<2x4xi1, strided<[6, 1], offset: 7>>
  return
}
