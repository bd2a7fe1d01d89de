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
