// RUN: kiln-opt %s --kiln-read-only-inputs | FileCheck %s
// RUN: kiln-opt %s --kiln-read-only-inputs --one-shot-bufferize=bufferize-function-boundaries \
// RUN:   | FileCheck %s --check-prefix=BUFFERS

// The entry's tensor arguments (the model's inputs) are read-only; private
// functions and non-tensor arguments are left alone.
// CHECK-LABEL: func.func @main
// CHECK-SAME: %arg0: tensor<4xf32> {bufferization.writable = false, kiln.name = "data"}
// CHECK-SAME: %arg1: index)
// CHECK-LABEL: func.func private @helper
// CHECK-SAME: %arg0: tensor<4xf32>)
//
// An element stored into an input goes into a copy, not the caller's buffer.
// BUFFERS-LABEL: func.func @main
// BUFFERS: %[[COPY:.*]] = memref.alloc() {{.*}} : memref<4xf32>
// BUFFERS: memref.copy %arg0, %[[COPY]]
// BUFFERS: memref.store %{{.*}}, %[[COPY]][%arg1]
// BUFFERS-NOT: memref.store {{.*}} %arg0
func.func @main(%data: tensor<4xf32> {kiln.name = "data"}, %i: index) -> tensor<4xf32> {
  %one = arith.constant 1.0 : f32
  %0 = tensor.insert %one into %data[%i] : tensor<4xf32>
  %1 = call @helper(%0) : (tensor<4xf32>) -> tensor<4xf32>
  return %1 : tensor<4xf32>
}

func.func private @helper(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
