// RUN: kiln-opt %s --pass-pipeline='builtin.module(func.func(kiln-cpu-loop-alloca-scopes))' --split-input-file | FileCheck %s
// Lowered to LLVM, each iteration frees its allocas: the stack pointer is
// back where it started after every iteration.
// RUN: kiln-opt %s --pass-pipeline='builtin.module(func.func(kiln-cpu-loop-alloca-scopes),convert-scf-to-cf,finalize-memref-to-llvm,convert-arith-to-llvm,convert-cf-to-llvm,convert-func-to-llvm,reconcile-unrealized-casts)' --split-input-file | FileCheck %s --check-prefix=LLVM

// CHECK-LABEL: func.func @for_body
// CHECK: scf.for
// CHECK-NEXT: %[[SP:.*]] = llvm.intr.stacksave : !llvm.ptr
// CHECK-NEXT: memref.alloca() : memref<16xf32>
// CHECK: llvm.intr.stackrestore %[[SP]] : !llvm.ptr
// CHECK-NEXT: }
// LLVM-LABEL: llvm.func @for_body
// LLVM: llvm.intr.stacksave
// LLVM: llvm.alloca
// LLVM: llvm.intr.stackrestore
func.func @for_body(%m: memref<8x16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  scf.for %i = %c0 to %c8 step %c1 {
    %b = memref.alloca() : memref<16xf32>
    %row = memref.subview %m[%i, 0] [1, 16] [1, 1] : memref<8x16xf32> to memref<16xf32, strided<[1], offset: ?>>
    memref.copy %row, %b : memref<16xf32, strided<[1], offset: ?>> to memref<16xf32>
    memref.copy %b, %row : memref<16xf32> to memref<16xf32, strided<[1], offset: ?>>
  }
  return
}

// -----

// The body of a parallel loop, whose iterations may become a sequential
// loop in a task, too; a body without allocas is left alone.
// CHECK-LABEL: func.func @parallel_body
// CHECK: scf.parallel
// CHECK-NEXT: llvm.intr.stacksave
// CHECK-NEXT: memref.alloca() : memref<4xf32>
// CHECK: llvm.intr.stackrestore
// CHECK-NEXT: scf.reduce
// CHECK: scf.for
// CHECK-NOT: llvm.intr.stacksave
// CHECK: return
func.func @parallel_body(%m: memref<8x4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
    %b = memref.alloca() : memref<4xf32>
    %row = memref.subview %m[%i, 0] [1, 4] [1, 1] : memref<8x4xf32> to memref<4xf32, strided<[1], offset: ?>>
    memref.copy %row, %b : memref<4xf32, strided<[1], offset: ?>> to memref<4xf32>
    memref.copy %b, %row : memref<4xf32> to memref<4xf32, strided<[1], offset: ?>>
  }
  scf.for %i = %c0 to %c8 step %c1 {
    %x = memref.load %m[%i, %c0] : memref<8x4xf32>
    memref.store %x, %m[%i, %c1] : memref<8x4xf32>
  }
  return
}
