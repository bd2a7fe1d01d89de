// RUN: kiln-opt %s --kiln-profile-kernels | FileCheck %s

// Kernels are runs of top-level ops that touch memory, grouped by ONNX node;
// a node split by another shares its id; an op without a node joins the
// kernel before it; views and constants stay outside. flops come from
// kiln.node_flops (each node once), bytes from the buffers each kernel uses.
// CHECK: module attributes {kiln.profile = [{bytes = 3072 : i64, flops = 100 : i64, name = "pad (Pad)"}, {bytes = 2304 : i64, flops = 7 : i64, name = "conv (Conv) + relu (Relu)"}]}
// CHECK-DAG: func.func private @kiln_profile_begin(i32)
// CHECK-DAG: func.func private @kiln_profile_end(i32)
// CHECK-LABEL: func.func @main
// CHECK: %[[A:.*]] = memref.alloc
// CHECK-NEXT: %[[ID0:.*]] = arith.constant 0 : i32
// CHECK-NEXT: call @kiln_profile_begin(%[[ID0]])
// CHECK-NEXT: linalg.fill {{.*}} outs(%[[A]]
// CHECK-NEXT: memref.copy
// CHECK-NEXT: call @kiln_profile_end(%[[ID0]])
// CHECK-NEXT: memref.subview
// CHECK-NEXT: %[[ID1:.*]] = arith.constant 1 : i32
// CHECK-NEXT: call @kiln_profile_begin(%[[ID1]])
// CHECK-NEXT: scf.forall
// CHECK: linalg.fill {{.*}} outs(%subview
// CHECK-NEXT: call @kiln_profile_end(%[[ID1]])
// CHECK-NEXT: %[[ID0B:.*]] = arith.constant 0 : i32
// CHECK-NEXT: call @kiln_profile_begin(%[[ID0B]])
// CHECK-NEXT: linalg.fill
// CHECK-NEXT: call @kiln_profile_end(%[[ID0B]])
// CHECK-NEXT: return

module attributes {kiln.node_flops = {pad = 100 : i64, conv = 5 : i64, relu = 2 : i64}} {
func.func @main(%in: memref<16x16xf32>, %out: memref<16x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %a = memref.alloc() : memref<16x16xf32>
  linalg.fill ins(%zero : f32) outs(%a : memref<16x16xf32>) loc("pad"("Pad"))
  memref.copy %in, %a : memref<16x16xf32> to memref<16x16xf32> loc("pad"("Pad"))
  %s = memref.subview %a[0, 0] [4, 16] [1, 1] : memref<16x16xf32> to memref<4x16xf32, strided<[16, 1]>>
  scf.forall (%i) in (4) {
    %v = memref.load %in[%i, %i] : memref<16x16xf32>
    memref.store %v, %out[%i, %i] : memref<16x16xf32>
  } loc(fused["conv"("Conv"), "relu"("Relu")])
  linalg.fill ins(%zero : f32) outs(%s : memref<4x16xf32, strided<[16, 1]>>)
  linalg.fill ins(%zero : f32) outs(%out : memref<16x16xf32>) loc("pad"("Pad"))
  return
}
}
