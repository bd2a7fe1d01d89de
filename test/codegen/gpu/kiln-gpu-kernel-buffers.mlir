// RUN: kiln-opt %s --split-input-file --verify-diagnostics --kiln-gpu-kernel-buffers | FileCheck %s

// A thread's temporary (a fused producer's tile) becomes a private alloca;
// its view follows it into the private space; the copy out becomes a
// linalg.copy. The buffer outside the launch is left alone.
// CHECK-LABEL: func.func @temporary
// CHECK: memref.alloc() : memref<8x16xf32>
// CHECK: gpu.launch
// CHECK-NOT: memref.alloc
// CHECK:   %[[T:.*]] = memref.alloca() {alignment = 64 : i64} : memref<1x4xf32, #gpu.address_space<private>>
// CHECK:   %[[V:.*]] = memref.subview %[[T]][0, 1] [1, 2] [1, 1] : memref<1x4xf32, #gpu.address_space<private>> to memref<1x2xf32, strided<[4, 1], offset: 1>, #gpu.address_space<private>>
// CHECK:   linalg.fill ins(%{{.*}} : f32) outs(%[[V]] : memref<1x2xf32, strided<[4, 1], offset: 1>, #gpu.address_space<private>>)
// CHECK:   linalg.copy ins(%[[T]] : memref<1x4xf32, #gpu.address_space<private>>) outs(%{{.*}} : memref<1x4xf32, strided<[16, 1], offset: ?>>)
// CHECK-NOT: memref.copy
func.func @temporary(%out: memref<8x16xf32>) {
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %cst = arith.constant 1.0 : f32
  %host = memref.alloc() : memref<8x16xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c8, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    %tile = memref.alloc() {alignment = 64 : i64} : memref<1x4xf32>
    %part = memref.subview %tile[0, 1] [1, 2] [1, 1] : memref<1x4xf32> to memref<1x2xf32, strided<[4, 1], offset: 1>>
    linalg.fill ins(%cst : f32) outs(%part : memref<1x2xf32, strided<[4, 1], offset: 1>>)
    %dst = memref.subview %out[%bx, 0] [1, 4] [1, 1] : memref<8x16xf32> to memref<1x4xf32, strided<[16, 1], offset: ?>>
    memref.copy %tile, %dst : memref<1x4xf32> to memref<1x4xf32, strided<[16, 1], offset: ?>>
    gpu.terminator
  }
  return
}

// -----

func.func @dynamic(%n: index) {
  %c1 = arith.constant 1 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    // expected-error @+1 {{kiln-gpu-kernel-buffers: a kernel cannot allocate a buffer of dynamic size 'memref<?xf32>'}}
    %tile = memref.alloc(%n) : memref<?xf32>
    gpu.terminator
  }
  return
}

// -----

// A workgroup buffer (the threads' to share, as kiln-gpu-normalize-rows
// makes them) stays one.
// CHECK-LABEL: func.func @workgroup_buffer
// CHECK: memref.alloc() : memref<32xf32, #gpu.address_space<workgroup>>
// CHECK-NOT: memref.alloca
func.func @workgroup_buffer(%out: memref<32xf32>) {
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %cst = arith.constant 1.0 : f32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    %shared = memref.alloc() : memref<32xf32, #gpu.address_space<workgroup>>
    memref.store %cst, %shared[%tx] : memref<32xf32, #gpu.address_space<workgroup>>
    gpu.terminator
  }
  return
}
