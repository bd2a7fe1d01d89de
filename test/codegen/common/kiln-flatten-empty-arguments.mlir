// RUN: kiln-opt %s --pass-pipeline='builtin.module(func.func(kiln-flatten-empty-arguments))' | FileCheck %s

// Zero-element arguments of rank > 1 become memref<0xT>; their uses read a
// zero-byte alloca of the original type. Others keep their types.
// CHECK-LABEL: func.func @empty(%arg0: memref<0xf32>, %arg1: memref<0xf32>, %arg2: memref<2x3xf32>)
// CHECK-NEXT: %[[LOCAL:.*]] = memref.alloca() : memref<3x0x5xf32>
// CHECK-NEXT: memref.copy %[[LOCAL]], %[[LOCAL]] : memref<3x0x5xf32> to memref<3x0x5xf32>
func.func @empty(%x: memref<3x0x5xf32>, %y: memref<0xf32>, %z: memref<2x3xf32>) {
  memref.copy %x, %x : memref<3x0x5xf32> to memref<3x0x5xf32>
  return
}
