// RUN: kiln-opt %s --pass-pipeline='builtin.module(func.func(kiln-hoist-loop-buffers))' --split-input-file | FileCheck %s
// RUN: kiln-opt %s --pass-pipeline='builtin.module(func.func(kiln-hoist-loop-buffers{max-stack-bytes=1024}))' --split-input-file | FileCheck %s --check-prefix=SMALL

// A buffer of one sequential iteration moves out of the loops, to the
// function's top level (kiln-plan-memory then puts it in the arena).
// CHECK-LABEL: func.func @sequential
// CHECK: %[[B:.*]] = memref.alloc() {alignment = 64 : i64} : memref<16xf32>
// CHECK-NEXT: scf.for
// CHECK-NEXT: scf.for
// CHECK-NOT: memref.alloc
// CHECK: memref.copy %{{.*}}, %[[B]]
func.func @sequential(%m: memref<8x8x16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  scf.for %i = %c0 to %c8 step %c1 {
    scf.for %j = %c0 to %c8 step %c1 {
      %b = memref.alloc() {alignment = 64 : i64} : memref<16xf32>
      %row = memref.subview %m[%i, %j, 0] [1, 1, 16] [1, 1, 1] : memref<8x8x16xf32> to memref<16xf32, strided<[1], offset: ?>>
      memref.copy %row, %b : memref<16xf32, strided<[1], offset: ?>> to memref<16xf32>
      linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%b : memref<16xf32>) outs(%row : memref<16xf32, strided<[1], offset: ?>>) {
      ^bb0(%x: f32, %y: f32):
        %s = arith.addf %x, %x : f32
        linalg.yield %s : f32
      }
    }
  }
  return
}

// -----

// Inside a parallel loop, each iteration gets its buffers on its stack:
// out of the sequential loop over blocks, to the start of the iteration.
// With a 1 KiB limit, the 4 KiB buffer keeps its allocation (in place).
// CHECK-LABEL: func.func @parallel
// CHECK: scf.forall (%[[I:.*]]) in (4) {
// CHECK-NEXT: %[[ROW:.*]] = memref.alloca() {alignment = 64 : i64} : memref<1024xf32>
// CHECK-NEXT: %[[TILE:.*]] = memref.alloca() {alignment = 64 : i64} : memref<16xf32>
// CHECK-NEXT: scf.for
// CHECK-NOT: memref.alloc
// CHECK: return
// SMALL-LABEL: func.func @parallel
// SMALL: scf.forall (%{{.*}}) in (4) {
// SMALL-NEXT: memref.alloca() {alignment = 64 : i64} : memref<16xf32>
// SMALL-NEXT: memref.alloc() {alignment = 64 : i64} : memref<1024xf32>
// SMALL-NEXT: scf.for
func.func @parallel(%m: memref<4x1024xf32>, %out: memref<4x16xf32>) {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %c1024 = arith.constant 1024 : index
  scf.forall (%i) in (4) {
    scf.for %k = %c0 to %c1024 step %c16 {
      %small = memref.alloc() {alignment = 64 : i64} : memref<16xf32>
      %big = memref.alloc() {alignment = 64 : i64} : memref<1024xf32>
      %src = memref.subview %m[%i, 0] [1, 1024] [1, 1] : memref<4x1024xf32> to memref<1024xf32, strided<[1], offset: ?>>
      memref.copy %src, %big : memref<1024xf32, strided<[1], offset: ?>> to memref<1024xf32>
      %part = memref.subview %big[%k] [16] [1] : memref<1024xf32> to memref<16xf32, strided<[1], offset: ?>>
      memref.copy %part, %small : memref<16xf32, strided<[1], offset: ?>> to memref<16xf32>
      %dst = memref.subview %out[%i, 0] [1, 16] [1, 1] : memref<4x16xf32> to memref<16xf32, strided<[1], offset: ?>>
      memref.copy %small, %dst : memref<16xf32> to memref<16xf32, strided<[1], offset: ?>>
    }
  }
  return
}

// -----

// A buffer yielded to the next iteration lives longer than one: it stays.
// CHECK-LABEL: func.func @yielded
// CHECK: scf.for
// CHECK-NEXT: memref.alloc() : memref<16xf32>
// CHECK: scf.yield
func.func @yielded(%init: memref<16xf32>) -> memref<16xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %r = scf.for %i = %c0 to %c8 step %c1 iter_args(%prev = %init) -> (memref<16xf32>) {
    %next = memref.alloc() : memref<16xf32>
    memref.copy %prev, %next : memref<16xf32> to memref<16xf32>
    scf.yield %next : memref<16xf32>
  }
  return %r : memref<16xf32>
}
