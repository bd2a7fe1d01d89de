// RUN: kiln-opt %s --split-input-file --pass-pipeline='builtin.module(gpu.module(gpu.func(kiln-gpu-unroll-private-loops, canonicalize)))' | FileCheck %s

// A thread's tile of a partial workgroup tile: its columns are
// min(4, 17 - 4 tid) (dynamic, at most 4). The loop over them runs to 4,
// each iteration guarded by the dynamic extent, and is unrolled: every
// index into the private accumulator is a constant. The loop over the
// rows (static, 2) is unrolled around the four guarded columns.
// CHECK-LABEL: gpu.func @partial_tile
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[C1:.*]] = arith.constant 1 : index
// CHECK-DAG: %[[C3:.*]] = arith.constant 3 : index
// CHECK:     %[[N:.*]] = affine.min
// CHECK-NOT: scf.for
// CHECK:     %[[IN0:.*]] = arith.cmpi sgt, %[[N]], %[[C0]] : index
// CHECK:     scf.if %[[IN0]] {
// CHECK:       memref.load %{{.*}}[%[[C0]], %[[C0]]] : memref<2x4xf32, #gpu.address_space<private>>
// CHECK:       memref.store %{{.*}}, %{{.*}}[%[[C0]], %[[C0]]] : memref<2x4xf32, #gpu.address_space<private>>
// CHECK:     }
// CHECK-COUNT-6: scf.if
// CHECK:     %[[IN7:.*]] = arith.cmpi sgt, %[[N]], %[[C3]] : index
// CHECK:     scf.if %[[IN7]] {
// CHECK:       memref.store %{{.*}}, %{{.*}}[%[[C1]], %[[C3]]] : memref<2x4xf32, #gpu.address_space<private>>
// CHECK:     }
// CHECK-NOT: scf.if
// CHECK:     gpu.return
gpu.module @kernels {
  gpu.func @partial_tile(%b: memref<8x32xf32, #gpu.address_space<workgroup>>, %tid: index) kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %acc = memref.alloca() : memref<2x4xf32, #gpu.address_space<private>>
    %n = affine.min affine_map<()[s0] -> (4, s0 * -4 + 17)>()[%tid]
    scf.for %i = %c0 to %c2 step %c1 {
      scf.for %j = %c0 to %n step %c1 {
        %v = memref.load %b[%i, %j] : memref<8x32xf32, #gpu.address_space<workgroup>>
        %s = memref.load %acc[%i, %j] : memref<2x4xf32, #gpu.address_space<private>>
        %t = arith.addf %s, %v : f32
        memref.store %t, %acc[%i, %j] : memref<2x4xf32, #gpu.address_space<private>>
      }
    }
    gpu.return
  }
}

// -----

// Left as they are: a loop over shared memory alone, a loop whose index
// does not reach the private array (a reduction's k, the accumulator's
// loops within it unrolled), a loop of unbounded length, and one of more
// than 64 iterations.
// CHECK-LABEL: gpu.func @left_alone
// CHECK:       scf.for %{{.*}} = %c0 to %c8 step %c1 {
// CHECK-NEXT:    memref.load %{{.*}} : memref<8x32xf32, #gpu.address_space<workgroup>>
// CHECK-NEXT:    memref.store
// CHECK-NEXT:  }
// CHECK:       scf.for %[[K:.*]] = %c0 to %c8 step %c1 {
// CHECK-COUNT-2: memref.load %{{.*}}[%[[K]], %c{{[01]}}]
// CHECK:       }
// CHECK:       scf.for %{{.*}} = %c0 to %{{.*}} step %c1 {
// CHECK:       scf.for %{{.*}} = %c0 to %c65 step %c1 {
gpu.module @kernels {
  gpu.func @left_alone(%b: memref<8x32xf32, #gpu.address_space<workgroup>>, %n: index) kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c8 = arith.constant 8 : index
    %c65 = arith.constant 65 : index
    %acc = memref.alloca() : memref<2xf32, #gpu.address_space<private>>
    %big = memref.alloca() : memref<65xf32, #gpu.address_space<private>>
    scf.for %i = %c0 to %c8 step %c1 {
      %v = memref.load %b[%i, %c0] : memref<8x32xf32, #gpu.address_space<workgroup>>
      memref.store %v, %b[%i, %c1] : memref<8x32xf32, #gpu.address_space<workgroup>>
    }
    scf.for %k = %c0 to %c8 step %c1 {
      scf.for %j = %c0 to %c2 step %c1 {
        %v = memref.load %b[%k, %j] : memref<8x32xf32, #gpu.address_space<workgroup>>
        memref.store %v, %acc[%j] : memref<2xf32, #gpu.address_space<private>>
      }
    }
    scf.for %j = %c0 to %n step %c1 {
      %v = memref.load %b[%c0, %c0] : memref<8x32xf32, #gpu.address_space<workgroup>>
      memref.store %v, %acc[%j] : memref<2xf32, #gpu.address_space<private>>
    }
    scf.for %j = %c0 to %c65 step %c1 {
      %v = memref.load %b[%c0, %c0] : memref<8x32xf32, #gpu.address_space<workgroup>>
      memref.store %v, %big[%j] : memref<65xf32, #gpu.address_space<private>>
    }
    %r = memref.load %acc[%c1] : memref<2xf32, #gpu.address_space<private>>
    %q = memref.load %big[%c1] : memref<65xf32, #gpu.address_space<private>>
    memref.store %r, %b[%c0, %c2] : memref<8x32xf32, #gpu.address_space<workgroup>>
    memref.store %q, %b[%c0, %c8] : memref<8x32xf32, #gpu.address_space<workgroup>>
    gpu.return
  }
}

// -----

// A thread's large private temporary (32x32): its inner loop is unrolled
// (32 copies of its body), the outer one would make 32 copies of that,
// past 2048 operations: it stays a loop.
// CHECK-LABEL: gpu.func @large_temporary
// CHECK:       scf.for %[[I:.*]] = %c0 to %c32 step %c1 {
// CHECK-COUNT-32: memref.store %{{.*}}, %{{.*}}[%[[I]], %{{.*}}] : memref<32x32xf32, #gpu.address_space<private>>
// CHECK-NEXT:  }
// CHECK-NOT:   scf.for
gpu.module @kernels {
  gpu.func @large_temporary(%b: memref<8x32xf32, #gpu.address_space<workgroup>>) kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c32 = arith.constant 32 : index
    %t = memref.alloca() : memref<32x32xf32, #gpu.address_space<private>>
    scf.for %i = %c0 to %c32 step %c1 {
      scf.for %j = %c0 to %c32 step %c1 {
        %v = memref.load %b[%c0, %j] : memref<8x32xf32, #gpu.address_space<workgroup>>
        memref.store %v, %t[%i, %j] : memref<32x32xf32, #gpu.address_space<private>>
      }
    }
    %r = memref.load %t[%c1, %c1] : memref<32x32xf32, #gpu.address_space<private>>
    memref.store %r, %b[%c0, %c0] : memref<8x32xf32, #gpu.address_space<workgroup>>
    gpu.return
  }
}
