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

// -----

// Bounds at the edges: exactly 64 iterations unroll; a dynamic bound from
// 1 by 2 (at most 7) runs to 7 in three guarded steps (1, 3, 5); a row's
// columns bounded by its row (min(2, n - i)) unroll under the unrolled rows.
// CHECK-LABEL: gpu.func @edges
// CHECK-NOT:   scf.for
// CHECK-COUNT-64: memref.store %{{.*}} : memref<64xf32, #gpu.address_space<private>>
// CHECK-NOT:   scf.for
// CHECK-COUNT-3: arith.cmpi sgt, %{{.*}}, %c{{[135]}} : index
// CHECK-NOT:   scf.for
// CHECK-COUNT-4: memref.store %{{.*}} : memref<2x2xf32, #gpu.address_space<private>>
// CHECK-NOT:   scf.for
// CHECK:       gpu.return
gpu.module @kernels {
  gpu.func @edges(%b: memref<8x32xf32, #gpu.address_space<workgroup>>, %tid: index) kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c64 = arith.constant 64 : index
    %v = memref.load %b[%c0, %c0] : memref<8x32xf32, #gpu.address_space<workgroup>>
    %full = memref.alloca() : memref<64xf32, #gpu.address_space<private>>
    scf.for %j = %c0 to %c64 step %c1 {
      memref.store %v, %full[%j] : memref<64xf32, #gpu.address_space<private>>
    }
    %odd = memref.alloca() : memref<8xf32, #gpu.address_space<private>>
    %n = affine.min affine_map<()[s0] -> (7, s0)>()[%tid]
    scf.for %j = %c1 to %n step %c2 {
      memref.store %v, %odd[%j] : memref<8xf32, #gpu.address_space<private>>
    }
    %tri = memref.alloca() : memref<2x2xf32, #gpu.address_space<private>>
    scf.for %i = %c0 to %c2 step %c1 {
      %m = affine.min affine_map<(d0)[s0] -> (2, s0 - d0)>(%i)[%tid]
      scf.for %j = %c0 to %m step %c1 {
        memref.store %v, %tri[%i, %j] : memref<2x2xf32, #gpu.address_space<private>>
      }
    }
    %r = memref.load %full[%c1] : memref<64xf32, #gpu.address_space<private>>
    %s = memref.load %odd[%c1] : memref<8xf32, #gpu.address_space<private>>
    %t = memref.load %tri[%c1, %c1] : memref<2x2xf32, #gpu.address_space<private>>
    memref.store %r, %b[%c0, %c1] : memref<8x32xf32, #gpu.address_space<workgroup>>
    memref.store %s, %b[%c0, %c2] : memref<8x32xf32, #gpu.address_space<workgroup>>
    memref.store %t, %b[%c1, %c1] : memref<8x32xf32, #gpu.address_space<workgroup>>
    gpu.return
  }
}

// -----

// Left as they are: a loop carrying a value (its results would need
// threading through the guards), one compared unsigned, and one whose
// dynamic bound never passes its start (min(0, n): no iteration).
// CHECK-LABEL: gpu.func @not_unrolled
// CHECK:       scf.for {{.*}} iter_args
// CHECK:       scf.for unsigned
// CHECK:       scf.for %{{.*}} = %c0 to %{{.*}} step %c1 {
// CHECK:       gpu.return
gpu.module @kernels {
  gpu.func @not_unrolled(%b: memref<8x32xf32, #gpu.address_space<workgroup>>, %tid: index) kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %v = memref.load %b[%c0, %c0] : memref<8x32xf32, #gpu.address_space<workgroup>>
    %acc = memref.alloca() : memref<4xf32, #gpu.address_space<private>>
    %sum = scf.for %j = %c0 to %c4 step %c1 iter_args(%s = %v) -> (f32) {
      %a = memref.load %acc[%j] : memref<4xf32, #gpu.address_space<private>>
      %t = arith.addf %s, %a : f32
      scf.yield %t : f32
    }
    scf.for unsigned %j = %c0 to %c4 step %c1 {
      memref.store %sum, %acc[%j] : memref<4xf32, #gpu.address_space<private>>
    }
    %none = affine.min affine_map<()[s0] -> (0, s0)>()[%tid]
    scf.for %j = %c0 to %none step %c1 {
      memref.store %v, %acc[%j] : memref<4xf32, #gpu.address_space<private>>
    }
    %r = memref.load %acc[%c1] : memref<4xf32, #gpu.address_space<private>>
    memref.store %r, %b[%c0, %c1] : memref<8x32xf32, #gpu.address_space<workgroup>>
    gpu.return
  }
}
