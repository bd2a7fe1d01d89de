// RUN: kiln-opt %s --kiln-externalize-weights --split-input-file | FileCheck %s

// Each tensor constant of @main becomes a view of the weights data at a
// 64-byte aligned offset (or the global's own larger alignment); a run-time
// check's message stays in the code.
// CHECK-LABEL: module attributes {kiln.external_weights = {bytes = 1040 : i64, fingerprint = {{-?[0-9]+}} : i64, tensors = [
// CHECK-SAME: {name = "fc1 (Gemm)", offset = 0 : i64, value = dense<{{.*}}> : tensor<2x3xf32>}
// CHECK-SAME: {name = "__constant_3xi8", offset = 64 : i64, value = dense<[1, 2, 3]> : tensor<3xi8>}
// CHECK-SAME: {name = "__constant_4xf32", offset = 1024 : i64, value = dense<1.000000e+00> : tensor<4xf32>}]}}
// CHECK-NEXT: func.func private @kiln_run_weights() -> memref<1040xi8>
// CHECK-NEXT: memref.global "private" constant @kiln_check_message_0
// CHECK-LABEL: func.func @main
// CHECK-NEXT: %[[DATA:.*]] = call @kiln_run_weights() : () -> memref<1040xi8>
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[W:.*]] = memref.view %[[DATA]][%[[C0]]][] : memref<1040xi8> to memref<2x3xf32>
// CHECK-DAG: %[[C64:.*]] = arith.constant 64 : index
// CHECK-DAG: memref.view %[[DATA]][%[[C64]]][] : memref<1040xi8> to memref<3xi8>
// CHECK-DAG: %[[C1024:.*]] = arith.constant 1024 : index
// CHECK-DAG: %[[S:.*]] = memref.view %[[DATA]][%[[C1024]]][] : memref<1040xi8> to memref<4xf32>
// CHECK-NOT: memref.get_global @__constant
// CHECK: memref.copy %[[W]], %arg0
// CHECK: memref.copy %[[S]], %arg2
// CHECK: memref.get_global @kiln_check_message_0
module {
  memref.global "private" constant @__constant_2x3xf32 : memref<2x3xf32> = dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> loc(#fc1)
  memref.global "private" constant @__constant_3xi8 : memref<3xi8> = dense<[1, 2, 3]>
  memref.global "private" constant @__constant_4xf32 : memref<4xf32> = dense<1.0> {alignment = 1024 : i64}
  memref.global "private" constant @kiln_check_message_0 : memref<4xi8> = dense<[110, 111, 33, 0]>
  func.func @main(%out: memref<2x3xf32>, %bytes: memref<3xi8>, %ones: memref<4xf32>) -> index {
    %w = memref.get_global @__constant_2x3xf32 : memref<2x3xf32>
    memref.copy %w, %out : memref<2x3xf32> to memref<2x3xf32>
    %b = memref.get_global @__constant_3xi8 : memref<3xi8>
    memref.copy %b, %bytes : memref<3xi8> to memref<3xi8>
    %s = memref.get_global @__constant_4xf32 : memref<4xf32>
    memref.copy %s, %ones : memref<4xf32> to memref<4xf32>
    %m = memref.get_global @kiln_check_message_0 : memref<4xi8>
    %p = memref.extract_aligned_pointer_as_index %m : memref<4xi8> -> index
    return %p : index
  }
}
#fc1 = loc("fc1"("Gemm"))

// -----

// A constant read outside @main stays in the code, and so does one whose
// type a view of bytes cannot give; without others, nothing changes.
// CHECK-LABEL: module {
// CHECK-NOT: kiln.external_weights
// CHECK: memref.global "private" constant @shared
// CHECK: memref.global "private" constant @bits
// CHECK-NOT: kiln_run_weights
module {
  memref.global "private" constant @shared : memref<2xf32> = dense<[1.0, 2.0]>
  memref.global "private" constant @bits : memref<2xi4> = dense<[1, 2]>
  func.func @helper(%out: memref<2xf32>) {
    %w = memref.get_global @shared : memref<2xf32>
    memref.copy %w, %out : memref<2xf32> to memref<2xf32>
    return
  }
  func.func @main(%out: memref<2xf32>, %o2: memref<2xi4>) {
    %w = memref.get_global @shared : memref<2xf32>
    memref.copy %w, %out : memref<2xf32> to memref<2xf32>
    %b = memref.get_global @bits : memref<2xi4>
    memref.copy %b, %o2 : memref<2xi4> to memref<2xi4>
    return
  }
}

// -----

// The fingerprint depends on the code, not on the values moved out: the
// next module differs from this one only in its constant's values and has
// its fingerprint; the one after differs in a scalar of the code.
// CHECK-LABEL: module attributes
// CHECK-SAME: fingerprint = [[FP:-?[0-9]+]] : i64
module {
  memref.global "private" constant @w : memref<4xf32> = dense<[1.0, 2.0, 3.0, 4.0]>
  func.func @main(%out: memref<4xf32>) {
    %w = memref.get_global @w : memref<4xf32>
    %c = arith.constant 2.0 : f32
    linalg.map { arith.mulf } ins(%w, %w : memref<4xf32>, memref<4xf32>) outs(%out : memref<4xf32>)
    return
  }
}

// -----

// CHECK-LABEL: module attributes
// CHECK-SAME: fingerprint = [[FP]] : i64
module {
  memref.global "private" constant @w : memref<4xf32> = dense<[5.0, 6.0, 7.0, 8.0]>
  func.func @main(%out: memref<4xf32>) {
    %w = memref.get_global @w : memref<4xf32>
    %c = arith.constant 2.0 : f32
    linalg.map { arith.mulf } ins(%w, %w : memref<4xf32>, memref<4xf32>) outs(%out : memref<4xf32>)
    return
  }
}

// -----

// CHECK-LABEL: module attributes
// CHECK-NOT: fingerprint = [[FP]] : i64
module {
  memref.global "private" constant @w : memref<4xf32> = dense<[5.0, 6.0, 7.0, 8.0]>
  func.func @main(%out: memref<4xf32>) {
    %w = memref.get_global @w : memref<4xf32>
    %c = arith.constant 3.0 : f32
    linalg.map { arith.mulf } ins(%w, %w : memref<4xf32>, memref<4xf32>) outs(%out : memref<4xf32>)
    return
  }
}
