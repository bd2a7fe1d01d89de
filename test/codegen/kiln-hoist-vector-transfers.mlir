// RUN: kiln-opt %s --pass-pipeline="builtin.module(func.func(kiln-hoist-vector-transfers))" | FileCheck %s

// The accumulator read and write move out of the K loop; the loop carries
// the vector instead.
// CHECK-LABEL: func.func @accumulate
// CHECK: %[[INIT:.*]] = vector.transfer_read %arg0
// CHECK: %[[SUM:.*]] = scf.for {{.*}} iter_args(%[[ACC:.*]] = %[[INIT]]) -> (vector<8xf32>)
// CHECK:   vector.transfer_read %arg1
// CHECK:   arith.addf
// CHECK:   scf.yield
// CHECK: vector.transfer_write %[[SUM]], %arg0
func.func @accumulate(%acc: memref<8xf32>, %x: memref<64x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %pad = arith.constant 0.0 : f32
  scf.for %k = %c0 to %c64 step %c1 {
    %a = vector.transfer_read %acc[%c0], %pad {in_bounds = [true]} : memref<8xf32>, vector<8xf32>
    %v = vector.transfer_read %x[%k, %c0], %pad {in_bounds = [true]} : memref<64x8xf32>, vector<8xf32>
    %s = arith.addf %a, %v : vector<8xf32>
    vector.transfer_write %s, %acc[%c0] {in_bounds = [true]} : vector<8xf32>, memref<8xf32>
  }
  return
}
