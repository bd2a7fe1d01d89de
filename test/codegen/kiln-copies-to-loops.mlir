// RUN: kiln-opt %s --pass-pipeline="builtin.module(func.func(kiln-copies-to-loops))" | FileCheck %s

// Padding writes into the interior of a larger buffer: a strided copy that
// becomes a linalg.copy (a loop nest) instead of the runtime's memrefCopy.
// CHECK-LABEL: func.func @pad_interior
// CHECK: %[[VIEW:.*]] = memref.subview
// CHECK: linalg.copy ins(%arg0 : memref<4x8xf32>) outs(%[[VIEW]] : memref<4x8xf32, strided<[10, 1], offset: 11>>)
// CHECK-NOT: memref.copy
func.func @pad_interior(%x: memref<4x8xf32>, %padded: memref<6x10xf32>) {
  %view = memref.subview %padded[1, 1] [4, 8] [1, 1] : memref<6x10xf32> to memref<4x8xf32, strided<[10, 1], offset: 11>>
  memref.copy %x, %view : memref<4x8xf32> to memref<4x8xf32, strided<[10, 1], offset: 11>>
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
