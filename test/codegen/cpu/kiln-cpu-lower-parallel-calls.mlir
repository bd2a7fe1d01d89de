// RUN: kiln-opt %s --kiln-cpu-lower-parallel-calls | FileCheck %s

// The call of a parallel task becomes a dispatch: captures go to a stack
// struct, and the runtime calls the thunk on sub-ranges of [0, n).
// CHECK-LABEL: llvm.func internal @main_task0(
// CHECK-LABEL: llvm.func internal @main_task0_thunk(
// CHECK-SAME: %[[CTX:.*]]: !llvm.ptr, %[[BEGIN:.*]]: i64, %[[END:.*]]: i64)
// CHECK: %[[P0:.*]] = llvm.getelementptr %[[CTX]][0, 0] : (!llvm.ptr) -> !llvm.ptr, !llvm.struct<(ptr, f32)>
// CHECK: %[[BUF:.*]] = llvm.load %[[P0]] : !llvm.ptr -> !llvm.ptr
// CHECK: %[[P1:.*]] = llvm.getelementptr %[[CTX]][0, 1] : (!llvm.ptr) -> !llvm.ptr, !llvm.struct<(ptr, f32)>
// CHECK: %[[SCALE:.*]] = llvm.load %[[P1]] : !llvm.ptr -> f32
// CHECK: llvm.call @main_task0(%[[BEGIN]], %[[END]], %[[BUF]], %[[SCALE]])
// CHECK-LABEL: llvm.func @main(
// CHECK: %[[FRAME:.*]] = llvm.alloca %{{.*}} x !llvm.struct<(ptr, f32)>
// CHECK: llvm.store %arg0, %{{.*}} : !llvm.ptr, !llvm.ptr
// CHECK: llvm.store %arg1, %{{.*}} : f32, !llvm.ptr
// CHECK: %[[FN:.*]] = llvm.mlir.addressof @main_task0_thunk
// CHECK: llvm.call @kiln_parallel_for(%[[FN]], %[[FRAME]], %{{.*}}) : (!llvm.ptr, !llvm.ptr, i64) -> ()
// CHECK-NOT: llvm.call @main_task0(
// CHECK: llvm.func @kiln_parallel_for(!llvm.ptr, !llvm.ptr, i64)
llvm.func @main_task0(%begin: i64, %end: i64, %buf: !llvm.ptr, %scale: f32) attributes {kiln.parallel_task} {
  llvm.return
}
llvm.func @main(%arg0: !llvm.ptr, %arg1: f32) {
  %c0 = llvm.mlir.constant(0 : i64) : i64
  %n = llvm.mlir.constant(4096 : i64) : i64
  llvm.call @main_task0(%c0, %n, %arg0, %arg1) : (i64, i64, !llvm.ptr, f32) -> ()
  llvm.return
}
