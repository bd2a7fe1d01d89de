// RUN: kiln-opt %s --split-input-file --kiln-gpu-promote-operands | FileCheck %s
// RUN: kiln-opt %s --split-input-file --kiln-gpu-promote-operands=target=cuda | FileCheck %s --check-prefix=CUDA
// RUN: kiln-opt %s --split-input-file --kiln-gpu-promote-operands=report=true -o /dev/null 2>&1 | FileCheck %s --check-prefix=REPORT
// RUN: kiln-opt %s --split-input-file "--kiln-gpu-promote-operands=target=cuda report=true" -o /dev/null 2>&1 | FileCheck %s --check-prefix=REPORT-CUDA
// RUN: kiln-opt %s --split-input-file "--kiln-gpu-promote-operands=synchronous=true report=true" 2>&1 | FileCheck %s --check-prefix=SYNC
// REPORT: remark: placement: operands staged in shared memory, 6656 bytes, 16 steps of the reduction at a time, the next chunk loaded during the current one{{$}}
// REPORT: remark: placement: operands staged in shared memory, 4352 bytes, 8 steps of the reduction at a time, the next chunk loaded during the current one{{$}}
// REPORT: remark: placement: operands staged in shared memory, 5120 bytes, 32 steps of the reduction at a time{{$}}
// REPORT: remark: placement: operands staged in shared memory, 6656 bytes, 16 steps of the reduction at a time, the next chunk loaded during the current one, an operand (receptive fields, a transpose) computed from its source as it is loaded{{$}}
// REPORT: remark: placement: operands staged in shared memory, 6656 bytes, 16 steps of the reduction at a time, the next chunk loaded during the current one, an operand (receptive fields, a transpose) computed from its source as it is loaded{{$}}
// REPORT-NOT: remark

// A workgroup's 64x32 tile of a 256x256x256 matmul, 4x4 results per
// thread (8x16 threads): both tiles are staged in shared memory 16 steps
// of k at a time (the generic Vulkan target's 16 KiB: 16x68 + 16x36
// floats, one buffer each: two would not fit half of it), k outermost in
// both buffers (A's tile transposed), rows padded to an odd number of
// 16-byte lines. Every thread copies elements tid, tid + 128, ... of each
// chunk (in the tile's order: coalesced reads). The first chunk is copied
// before the loop, a barrier. Then per chunk each thread loads its
// elements of the next one into registers (8 of A, 4 of B: whole rows of
// the chunk at a time, so only the row depends on the slot), the thread's
// tile is summed from shared memory into its accumulator (the op reading
// A's buffer k first), a barrier, the registers go to the buffers, a
// barrier.
// CHECK: #[[ROW_A:.*]] = affine_map<()[s0, s1, s2, s3] -> (s0 * 8 + s3 * 8 + (s1 + s2 * 8) floordiv 16)>
// CHECK: #[[ROW_B:.*]] = affine_map<()[s0, s1, s2, s3] -> (s0 * 4 + s3 * 4 + (s1 + s2 * 8) floordiv 32)>
// CHECK: #[[KI:.*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK: #[[KJ:.*]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK: #[[IJ:.*]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK-LABEL: func.func @matmul
// CHECK: gpu.launch
// CHECK:   %[[A_BUF:.*]] = memref.alloc() {alignment = 16 : i64} : memref<16x68xf32, #gpu.address_space<workgroup>>
// CHECK:   %[[B_BUF:.*]] = memref.alloc() {alignment = 16 : i64} : memref<16x36xf32, #gpu.address_space<workgroup>>
// CHECK:   %[[A_WG:.*]] = memref.subview %{{.*}}[%{{.*}}, 0] [64, 256] [1, 1]
// CHECK:   %[[B_WG:.*]] = memref.subview %{{.*}}[0, %{{.*}}] [256, 32] [1, 1]
// CHECK:   %[[ACC:.*]] = memref.alloca() : memref<4x4xf32, #gpu.address_space<private>>
// CHECK:   linalg.fill ins(%{{.*}} : f32) outs(%[[ACC]]
// CHECK:   %[[TID:.*]] = affine.apply #{{.*}}()[%{{.*}}, %{{.*}}, %{{.*}}]
// CHECK:   %[[A_REGS:.*]] = memref.alloca() : memref<8xf32, #gpu.address_space<private>>
// CHECK:   %[[B_REGS:.*]] = memref.alloca() : memref<4xf32, #gpu.address_space<private>>
// CHECK:   %[[A:.*]] = memref.subview %[[A_BUF]][0, 0] [16, 64] [1, 1]
// CHECK:   %[[B:.*]] = memref.subview %[[B_BUF]][0, 0] [16, 32] [1, 1]
// CHECK:   scf.for %[[I:.*]] = %[[TID]] to %c1024{{.*}} step %c128{{(_[0-9]+)?}} {
// CHECK:     %[[COL:.*]] = arith.remui %[[I]], %c16{{(_[0-9]+)?}}
// CHECK:     %[[ROW:.*]] = arith.divui %[[I]], %c16{{(_[0-9]+)?}}
// CHECK:     %[[KK:.*]] = arith.addi %c0{{.*}}, %[[COL]]
// CHECK:     %[[X:.*]] = memref.load %[[A_WG]][%[[ROW]], %[[KK]]]
// CHECK:     memref.store %[[X]], %[[A]][%[[COL]], %[[ROW]]]
// CHECK:   scf.for %{{.*}} = %[[TID]] to %c512{{.*}} step %c128{{(_[0-9]+)?}} {
// CHECK:     memref.store %{{.*}}, %[[B]]
// CHECK:   gpu.barrier
// CHECK:   scf.for %[[K:.*]] = %c0{{.*}} to %c256{{.*}} step %c16{{(_[0-9]+)?}} {
// CHECK:     %[[NEXT:.*]] = arith.addi %[[K]], %c16
// CHECK:     %[[HAS_NEXT:.*]] = arith.cmpi ult, %[[NEXT]], %c256
// CHECK:     scf.if %[[HAS_NEXT]] {
// CHECK:       scf.for %[[SLOT:.*]] = %c0{{.*}} to %c8{{.*}} step %c1{{.*}} {
// CHECK:         %[[SLOT_ROW:.*]] = affine.apply #[[ROW_A]]()[%[[SLOT]], %{{.*}}, %{{.*}}, %{{.*}}]
// CHECK:         %[[SLOT_COL:.*]] = arith.remui %[[TID]], %c16
// CHECK:         %[[SLOT_K:.*]] = arith.addi %[[NEXT]], %[[SLOT_COL]]
// CHECK:         %[[Y:.*]] = memref.load %[[A_WG]][%[[SLOT_ROW]], %[[SLOT_K]]]
// CHECK:         memref.store %[[Y]], %[[A_REGS]][%[[SLOT]]]
// CHECK:       scf.for %[[SLOT:.*]] = %c0{{.*}} to %c4{{.*}} step %c1{{.*}} {
// CHECK:         affine.apply #[[ROW_B]]()[%[[SLOT]], %{{.*}}, %{{.*}}, %{{.*}}]
// CHECK:         memref.load %[[B_WG]]
// CHECK:         memref.store %{{.*}}, %[[B_REGS]][%[[SLOT]]]
// CHECK:     %[[A_T:.*]] = memref.subview %[[A]][0, %{{.*}}] [16, 4] [1, 1]
// CHECK:     %[[B_T:.*]] = memref.subview %[[B]][0, %{{.*}}] [16, 4] [1, 1]
// CHECK:     linalg.generic {indexing_maps = [#[[KI]], #[[KJ]], #[[IJ]]], {{.*}} ins(%[[A_T]], %[[B_T]] : {{.*}}) outs(%[[ACC]]
// CHECK:     gpu.barrier
// CHECK:     scf.if %[[HAS_NEXT]] {
// CHECK:       scf.for %[[SLOT:.*]] = %c0{{.*}} to %c8{{.*}} step %c1{{.*}} {
// CHECK:         %[[SLOT_ROW:.*]] = affine.apply #[[ROW_A]]()[%[[SLOT]], %{{.*}}, %{{.*}}, %{{.*}}]
// CHECK:         %[[SLOT_COL:.*]] = arith.remui %[[TID]], %c16
// CHECK:         %[[Z:.*]] = memref.load %[[A_REGS]][%[[SLOT]]]
// CHECK:         memref.store %[[Z]], %[[A]][%[[SLOT_COL]], %[[SLOT_ROW]]]
// CHECK:       scf.for %[[SLOT:.*]] = %c0{{.*}} to %c4{{.*}} step %c1{{.*}} {
// CHECK:         memref.load %[[B_REGS]][%[[SLOT]]]
// CHECK:         memref.store %{{.*}}, %[[B]]
// CHECK:     gpu.barrier
// CHECK:   }
// CHECK:   linalg.copy ins(%[[ACC]]
// CUDA-LABEL: func.func @matmul
// CUDA: memref.alloc() {alignment = 16 : i64} : memref<32x68xf32, #gpu.address_space<workgroup>>
// CUDA: memref.alloc() {alignment = 16 : i64} : memref<32x36xf32, #gpu.address_space<workgroup>>
#a = affine_map<(k, i, j) -> (i, k)>
#b = affine_map<(k, i, j) -> (k, j)>
#c = affine_map<(k, i, j) -> (i, j)>
func.func @matmul(%a: memref<256x256xf32>, %b: memref<256x256xf32>, %c: memref<256x256xf32>) {
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  %zero = arith.constant 0.0 : f32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c8, %gy = %c4, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c8, %sy = %c16, %sz = %c1) {
    %row = arith.muli %by, %c64 : index
    %col = arith.muli %bx, %c32 : index
    %a_wg = memref.subview %a[%row, 0] [64, 256] [1, 1] : memref<256x256xf32> to memref<64x256xf32, strided<[256, 1], offset: ?>>
    %b_wg = memref.subview %b[0, %col] [256, 32] [1, 1] : memref<256x256xf32> to memref<256x32xf32, strided<[256, 1], offset: ?>>
    %c_wg = memref.subview %c[%row, %col] [64, 32] [1, 1] : memref<256x256xf32> to memref<64x32xf32, strided<[256, 1], offset: ?>>
    %r = arith.muli %ty, %c4 : index
    %q = arith.muli %tx, %c4 : index
    %a_t = memref.subview %a_wg[%r, 0] [4, 256] [1, 1] : memref<64x256xf32, strided<[256, 1], offset: ?>> to memref<4x256xf32, strided<[256, 1], offset: ?>>
    %b_t = memref.subview %b_wg[0, %q] [256, 4] [1, 1] : memref<256x32xf32, strided<[256, 1], offset: ?>> to memref<256x4xf32, strided<[256, 1], offset: ?>>
    %c_t = memref.subview %c_wg[%r, %q] [4, 4] [1, 1] : memref<64x32xf32, strided<[256, 1], offset: ?>> to memref<4x4xf32, strided<[256, 1], offset: ?>>
    %acc = memref.alloca() : memref<4x4xf32, #gpu.address_space<private>>
    linalg.fill ins(%zero : f32) outs(%acc : memref<4x4xf32, #gpu.address_space<private>>)
    linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["reduction", "parallel", "parallel"]} ins(%a_t, %b_t : memref<4x256xf32, strided<[256, 1], offset: ?>>, memref<256x4xf32, strided<[256, 1], offset: ?>>) outs(%acc : memref<4x4xf32, #gpu.address_space<private>>) {
    ^bb0(%x: f32, %y: f32, %s: f32):
      %p = arith.mulf %x, %y : f32
      %t = arith.addf %s, %p : f32
      linalg.yield %t : f32
    }
    linalg.copy ins(%acc : memref<4x4xf32, #gpu.address_space<private>>) outs(%c_t : memref<4x4xf32, strided<[256, 1], offset: ?>>)
    gpu.terminator
  }
  return
}

// -----

// A 64x64 tile of 64 threads, 8x8 results each: on CUDA (48 KiB) 32 steps
// would fit in one buffer, but a thread's elements of such a chunk (64)
// would not fit in registers; 16 steps (32 elements) do, and two buffers
// of them fit where one of 32 steps did: the next chunk's loads in flight
// during the current one, stored into the other buffer, one barrier.
// REPORT-CUDA: remark: placement: operands staged in shared memory, 17408 bytes, 16 steps of the reduction at a time, the next chunk loaded during the current one into a second buffer
// CUDA-DAG: #[[COPY:.*]] = affine_map<()[s0] -> ((s0 floordiv 16) mod 2)>
// CUDA-DAG: #[[OTHER:.*]] = affine_map<()[s0] -> (s0 floordiv 16 - ((s0 floordiv 16 + 1) floordiv 2) * 2 + 1)>
// CUDA-LABEL: func.func @halved
// CUDA:   memref.alloc() {alignment = 16 : i64} : memref<2x16x68xf32, #gpu.address_space<workgroup>>
// CUDA:   memref.alloc() {alignment = 16 : i64} : memref<2x16x68xf32, #gpu.address_space<workgroup>>
// CUDA:   memref.alloca() : memref<16xf32, #gpu.address_space<private>>
// CUDA:   memref.alloca() : memref<16xf32, #gpu.address_space<private>>
// CUDA:   gpu.barrier
// CUDA:   scf.for %[[K:.*]] = %c0{{.*}} to %c256{{.*}} step %c16
// CUDA:     affine.apply #[[COPY]]()[%[[K]]]
// CUDA:     affine.apply #[[OTHER]]()[%[[K]]]
// CUDA:     scf.if
// CUDA-COUNT-2: memref.load %{{.*}} : memref<{{64x256|256x64}}xf32
// CUDA:     linalg.generic
// CUDA:     scf.if
// CUDA-COUNT-2: memref.store %{{.*}} : memref<16x64xf32, strided<[68, 1], offset: ?>, #gpu.address_space<workgroup>>
// CUDA:     gpu.barrier
// CUDA-NOT: gpu.barrier
// CUDA:   linalg.copy
#a = affine_map<(k, i, j) -> (i, k)>
#b = affine_map<(k, i, j) -> (k, j)>
#c = affine_map<(k, i, j) -> (i, j)>
func.func @halved(%a: memref<256x256xf32>, %b: memref<256x256xf32>, %c: memref<256x256xf32>) {
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c64 = arith.constant 64 : index
  %zero = arith.constant 0.0 : f32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c4, %gy = %c4, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c8, %sy = %c8, %sz = %c1) {
    %row = arith.muli %by, %c64 : index
    %col = arith.muli %bx, %c64 : index
    %a_wg = memref.subview %a[%row, 0] [64, 256] [1, 1] : memref<256x256xf32> to memref<64x256xf32, strided<[256, 1], offset: ?>>
    %b_wg = memref.subview %b[0, %col] [256, 64] [1, 1] : memref<256x256xf32> to memref<256x64xf32, strided<[256, 1], offset: ?>>
    %c_wg = memref.subview %c[%row, %col] [64, 64] [1, 1] : memref<256x256xf32> to memref<64x64xf32, strided<[256, 1], offset: ?>>
    %r = arith.muli %ty, %c8 : index
    %q = arith.muli %tx, %c8 : index
    %a_t = memref.subview %a_wg[%r, 0] [8, 256] [1, 1] : memref<64x256xf32, strided<[256, 1], offset: ?>> to memref<8x256xf32, strided<[256, 1], offset: ?>>
    %b_t = memref.subview %b_wg[0, %q] [256, 8] [1, 1] : memref<256x64xf32, strided<[256, 1], offset: ?>> to memref<256x8xf32, strided<[256, 1], offset: ?>>
    %c_t = memref.subview %c_wg[%r, %q] [8, 8] [1, 1] : memref<64x64xf32, strided<[256, 1], offset: ?>> to memref<8x8xf32, strided<[256, 1], offset: ?>>
    %acc = memref.alloca() : memref<8x8xf32, #gpu.address_space<private>>
    linalg.fill ins(%zero : f32) outs(%acc : memref<8x8xf32, #gpu.address_space<private>>)
    linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["reduction", "parallel", "parallel"]} ins(%a_t, %b_t : memref<8x256xf32, strided<[256, 1], offset: ?>>, memref<256x8xf32, strided<[256, 1], offset: ?>>) outs(%acc : memref<8x8xf32, #gpu.address_space<private>>) {
    ^bb0(%x: f32, %y: f32, %s: f32):
      %p = arith.mulf %x, %y : f32
      %t = arith.addf %s, %p : f32
      linalg.yield %t : f32
    }
    linalg.copy ins(%acc : memref<8x8xf32, #gpu.address_space<private>>) outs(%c_t : memref<8x8xf32, strided<[256, 1], offset: ?>>)
    gpu.terminator
  }
  return
}

// -----

// f16 operands on CUDA, k = 40 (no whole number of chunks: no asynchronous
// copies), a 128x64 tile of 64 threads: a thread's elements of a chunk
// (96 of 32 steps, 48 of 16) never fit in registers at a chunk the tensor
// cores take (16 steps of m16n8k16): no prefetch, the chunk stays 32 steps
// (halved to 8 it would fit, and leave the tensor cores' steps).
// REPORT-CUDA: remark: placement: operands staged in shared memory, 14848 bytes, 32 steps of the reduction at a time{{$}}
#a = affine_map<(k, i, j) -> (i, k)>
#b = affine_map<(k, i, j) -> (k, j)>
#c = affine_map<(k, i, j) -> (i, j)>
func.func @tensor_core_steps(%a: memref<128x40xf16>, %b: memref<40x64xf16>, %c: memref<128x64xf32>) {
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %zero = arith.constant 0.0 : f32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c8, %sy = %c8, %sz = %c1) {
    %r = arith.muli %ty, %c16 : index
    %q = arith.muli %tx, %c8 : index
    %a_t = memref.subview %a[%r, 0] [16, 40] [1, 1] : memref<128x40xf16> to memref<16x40xf16, strided<[40, 1], offset: ?>>
    %b_t = memref.subview %b[0, %q] [40, 8] [1, 1] : memref<40x64xf16> to memref<40x8xf16, strided<[64, 1], offset: ?>>
    %c_t = memref.subview %c[%r, %q] [16, 8] [1, 1] : memref<128x64xf32> to memref<16x8xf32, strided<[64, 1], offset: ?>>
    %acc = memref.alloca() : memref<16x8xf32, #gpu.address_space<private>>
    linalg.fill ins(%zero : f32) outs(%acc : memref<16x8xf32, #gpu.address_space<private>>)
    linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["reduction", "parallel", "parallel"]} ins(%a_t, %b_t : memref<16x40xf16, strided<[40, 1], offset: ?>>, memref<40x8xf16, strided<[64, 1], offset: ?>>) outs(%acc : memref<16x8xf32, #gpu.address_space<private>>) {
    ^bb0(%x: f16, %y: f16, %s: f32):
      %xf = arith.extf %x : f16 to f32
      %yf = arith.extf %y : f16 to f32
      %p = arith.mulf %xf, %yf : f32
      %t = arith.addf %s, %p : f32
      linalg.yield %t : f32
    }
    linalg.copy ins(%acc : memref<16x8xf32, #gpu.address_space<private>>) outs(%c_t : memref<16x8xf32, strided<[64, 1], offset: ?>>)
    gpu.terminator
  }
  return
}

// -----

// An edge tile in a guard (threads past the tile's columns idle), k = 40
// (a chunk of 32, then one of 8), and A read whole by every thread: the
// fill leaves the guard for one of its own, the views before it, the
// chunk loop runs in every thread (barriers need them all), the generic
// in the guard; the copies skip the tile's columns past its edge (B) and
// the last chunk's steps past k. A thread's elements of a chunk (144 of
// 32 steps, 36 of 8) do not fit in registers: each chunk is copied in the
// loop, element after element, then a barrier.
// CHECK-LABEL: func.func @edge_tile
// CHECK: gpu.launch
// CHECK:   %[[A:.*]] = memref.subview %{{.*}}[0, 0] [32, 4] [1, 1] : memref<32x4xf32, #gpu.address_space<workgroup>>
// CHECK:   %[[B:.*]] = memref.subview %{{.*}}[0, 0] [32, 32] [1, 1] : memref<32x36xf32, #gpu.address_space<workgroup>>
// CHECK:   %[[IN:.*]] = arith.cmpi ult, %{{.*}}, %{{.*}}
// CHECK-NOT: scf.if
// CHECK:   %[[ACC:.*]] = memref.subview %{{.*}}[0, 0] [4, %{{.*}}] [1, 1]
// CHECK:   scf.if %[[IN]] {
// CHECK-NEXT: linalg.fill ins(%{{.*}} : f32) outs(%[[ACC]]
// CHECK:   scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:     %[[KT:.*]] = affine.min #{{.*}}()[%[[K]]]
// CHECK:     scf.for
// CHECK:       %[[KEEP:.*]] = arith.cmpi ult, %{{.*}}, %[[KT]]
// CHECK:       scf.if %[[KEEP]] {
// CHECK:         memref.store %{{.*}}, %[[A]]
// CHECK:     scf.for
// CHECK:       %[[ROWS:.*]] = arith.cmpi ult, %{{.*}}, %[[KT]]
// CHECK:       %[[COLS:.*]] = arith.cmpi ult, %{{.*}}, %{{.*}}
// CHECK:       %[[BOTH:.*]] = arith.andi %[[ROWS]], %[[COLS]]
// CHECK:       scf.if %[[BOTH]] {
// CHECK:         memref.store %{{.*}}, %[[B]]
// CHECK:     gpu.barrier
// CHECK:     scf.if %[[IN]] {
// CHECK:       memref.subview %[[A]][0, 0] [%[[KT]], 4] [1, 1]
// CHECK:       memref.subview %[[B]][0, %{{.*}}] [%[[KT]], %{{.*}}] [1, 1]
// CHECK:       linalg.generic
// CHECK:     gpu.barrier
// CHECK:   scf.if %[[IN]] {
// CHECK-NEXT: linalg.copy ins(%[[ACC]]
#a = affine_map<(k, i, j) -> (i, k)>
#b = affine_map<(k, i, j) -> (k, j)>
#c = affine_map<(k, i, j) -> (i, j)>
#cols = affine_map<()[s0] -> (s0 * -32 + 48, 32)>
#threads = affine_map<()[s0] -> (s0 ceildiv 4)>
#mine = affine_map<()[s0, s1] -> (4, s0 - s1 * 4)>
func.func @edge_tile(%a: memref<4x40xf32>, %b: memref<40x48xf32>, %c: memref<4x48xf32>) {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c32 = arith.constant 32 : index
  %zero = arith.constant 0.0 : f32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c2, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c8, %sy = %c1, %sz = %c1) {
    %col = arith.muli %bx, %c32 : index
    %n = affine.min #cols()[%bx]
    %b_wg = memref.subview %b[0, %col] [40, %n] [1, 1] : memref<40x48xf32> to memref<40x?xf32, strided<[48, 1], offset: ?>>
    %c_wg = memref.subview %c[0, %col] [4, %n] [1, 1] : memref<4x48xf32> to memref<4x?xf32, strided<[48, 1], offset: ?>>
    %used = affine.apply #threads()[%n]
    %in = arith.cmpi ult, %tx, %used : index
    scf.if %in {
      %q = arith.muli %tx, %c4 : index
      %m = affine.min #mine()[%n, %tx]
      %b_t = memref.subview %b_wg[0, %q] [40, %m] [1, 1] : memref<40x?xf32, strided<[48, 1], offset: ?>> to memref<40x?xf32, strided<[48, 1], offset: ?>>
      %c_t = memref.subview %c_wg[0, %q] [4, %m] [1, 1] : memref<4x?xf32, strided<[48, 1], offset: ?>> to memref<4x?xf32, strided<[48, 1], offset: ?>>
      %buf = memref.alloca() : memref<4x4xf32, #gpu.address_space<private>>
      %acc = memref.subview %buf[0, 0] [4, %m] [1, 1] : memref<4x4xf32, #gpu.address_space<private>> to memref<4x?xf32, strided<[4, 1]>, #gpu.address_space<private>>
      linalg.fill ins(%zero : f32) outs(%acc : memref<4x?xf32, strided<[4, 1]>, #gpu.address_space<private>>)
      linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["reduction", "parallel", "parallel"]} ins(%a, %b_t : memref<4x40xf32>, memref<40x?xf32, strided<[48, 1], offset: ?>>) outs(%acc : memref<4x?xf32, strided<[4, 1]>, #gpu.address_space<private>>) {
      ^bb0(%x: f32, %y: f32, %s: f32):
        %p = arith.mulf %x, %y : f32
        %t = arith.addf %s, %p : f32
        linalg.yield %t : f32
      }
      linalg.copy ins(%acc : memref<4x?xf32, strided<[4, 1]>, #gpu.address_space<private>>) outs(%c_t : memref<4x?xf32, strided<[48, 1], offset: ?>>)
    }
    gpu.terminator
  }
  return
}

// -----

// Left alone: f16 operands (shared memory holds 32-bit elements here), a
// tile whose buffers would not fit in half of 16 KiB even 8 steps at a
// time (4096 rows), and a row sum (one input, not a contraction).
// On CUDA, whose tensor cores read 16-bit floats, the f16 operands are
// staged in their own order (A's rows of 32 steps padded to 40 elements,
// an odd number of 16-byte lines; B's 32 steps of 4 columns padded to 8).
// CHECK-LABEL: func.func @left_alone
// CUDA-LABEL: func.func @left_alone
// CUDA: memref.alloc() {alignment = 16 : i64} : memref<4x40xf16, #gpu.address_space<workgroup>>
// CUDA: memref.alloc() {alignment = 16 : i64} : memref<32x8xf16, #gpu.address_space<workgroup>>
// CUDA-NOT: memref.alloc()
// CHECK-NOT: workgroup
// CHECK-NOT: gpu.barrier
#a = affine_map<(k, i, j) -> (i, k)>
#b = affine_map<(k, i, j) -> (k, j)>
#c = affine_map<(k, i, j) -> (i, j)>
func.func @left_alone(%ha: memref<4x64xf16>, %hb: memref<64x4xf16>, %big: memref<4096x64xf32>, %w: memref<64x4xf32>, %m: memref<16x64xf32>) {
  %c1 = arith.constant 1 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    %hacc = memref.alloca() : memref<4x4xf16, #gpu.address_space<private>>
    linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["reduction", "parallel", "parallel"]} ins(%ha, %hb : memref<4x64xf16>, memref<64x4xf16>) outs(%hacc : memref<4x4xf16, #gpu.address_space<private>>) {
    ^bb0(%x: f16, %y: f16, %s: f16):
      %p = arith.mulf %x, %y : f16
      %t = arith.addf %s, %p : f16
      linalg.yield %t : f16
    }
    %acc = memref.alloca() : memref<4096x4xf32, #gpu.address_space<private>>
    linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["reduction", "parallel", "parallel"]} ins(%big, %w : memref<4096x64xf32>, memref<64x4xf32>) outs(%acc : memref<4096x4xf32, #gpu.address_space<private>>) {
    ^bb0(%x: f32, %y: f32, %s: f32):
      %p = arith.mulf %x, %y : f32
      %t = arith.addf %s, %p : f32
      linalg.yield %t : f32
    }
    %sum = memref.alloca() : memref<16xf32, #gpu.address_space<private>>
    linalg.generic {indexing_maps = [affine_map<(k, i) -> (i, k)>, affine_map<(k, i) -> (i)>], iterator_types = ["reduction", "parallel"]} ins(%m : memref<16x64xf32>) outs(%sum : memref<16xf32, #gpu.address_space<private>>) {
    ^bb0(%x: f32, %s: f32):
      %t = arith.addf %s, %x : f32
      linalg.yield %t : f32
    }
    gpu.terminator
  }
  return
}

// -----

// On CUDA, a 64x32 tile of a 256^3 bf16 matmul (4x4 results per thread,
// 8x16 threads) whose chunks are whole and move in 16-byte runs: its rows
// of 32 steps (64 bytes, 4 runs) and B's steps of 32 columns (4 runs), the
// tiles' rows 512 bytes apart. Four chunks in flight (7680 bytes each, of
// 48 KiB): chunks 0 to 2 are copied in a loop before the main one
// (cp.async of 8 elements, bypassing L1; A's 256 runs two per thread,
// B's 128 one per thread), each a group of its own; at chunk i the threads wait for all
// but two of their groups, meet at a barrier, start chunk i + 3's copies
// into copy (i + 3) mod 4 (a group, empty for the last three chunks) and
// compute copy i mod 4. Whether both tiles start on
// 16 bytes is checked once: where not, the same places copy element by
// element. Elsewhere bf16 operands are not staged.
// CHECK-LABEL: func.func @async_copies
// CHECK-NOT: workgroup
// CUDA-DAG: #[[MISALIGNED:.*]] = affine_map<()[s0, s1] -> ((s0 + s1 * 2) mod 16)>
// CUDA-DAG: #[[NEXT:.*]] = affine_map<()[s0] -> (s0 + 96)>
// CUDA-DAG: #[[NEXT_COPY:.*]] = affine_map<()[s0] -> (s0 floordiv 32 - ((s0 floordiv 32 + 3) floordiv 4) * 4 + 3)>
// CUDA-DAG: #[[COPY:.*]] = affine_map<()[s0] -> ((s0 floordiv 32) mod 4)>
// CUDA-LABEL: func.func @async_copies
// CUDA: %[[A_BUF:.*]] = memref.alloc() {alignment = 16 : i64} : memref<4x64x40xbf16, #gpu.address_space<workgroup>>
// CUDA: %[[B_BUF:.*]] = memref.alloc() {alignment = 16 : i64} : memref<4x32x40xbf16, #gpu.address_space<workgroup>>
// CUDA: %[[A_WG:.*]] = memref.subview %{{.*}}[%{{.*}}, 0] [64, 256] [1, 1]
// CUDA: %[[B_WG:.*]] = memref.subview %{{.*}}[0, %{{.*}}] [256, 32] [1, 1]
// CUDA: %[[TID:.*]] = affine.apply
// CUDA: %[[PA:.*]] = memref.extract_aligned_pointer_as_index %[[A_WG]]
// CUDA: %{{.*}}, %[[OA:.*]], %{{.*}}:2, %{{.*}}:2 = memref.extract_strided_metadata %[[A_WG]]
// CUDA: %[[MA:.*]] = affine.apply #[[MISALIGNED]]()[%[[PA]], %[[OA]]]
// CUDA: %[[ALIGNED_A:.*]] = arith.cmpi eq, %[[MA]], %c0
// CUDA: memref.extract_aligned_pointer_as_index %[[B_WG]]
// CUDA: %[[ALIGNED:.*]] = arith.andi %[[ALIGNED_A]], %{{.*}} : i1
// CUDA: scf.for %[[C:.*]] = %c0{{.*}} to %c3 step %c1{{.*}} {
// CUDA:   %[[FIRST:.*]] = arith.muli %[[C]], %c32
// CUDA:   %[[IN:.*]] = arith.cmpi ult, %[[FIRST]], %c256
// CUDA:   scf.if %[[IN]] {
// CUDA:     memref.subview %[[A_BUF]][%[[C]], 0, 0] [1, 64, 32] [1, 1, 1]
// CUDA:     scf.if %[[ALIGNED]] {
// CUDA:       scf.for %[[R:.*]] = %[[TID]] to %c256{{.*}} step %c128{{.*}} {
// CUDA:         %[[COL:.*]] = arith.remui %[[R]], %c4
// CUDA:         %[[ROW:.*]] = arith.divui %[[R]], %c4
// CUDA:         %[[AT:.*]] = arith.muli %[[COL]], %c8
// CUDA:         %[[K_AT:.*]] = arith.addi %[[FIRST]], %[[AT]]
// CUDA:         nvgpu.device_async_copy %[[A_WG]][%[[ROW]], %[[K_AT]]], %{{.*}}[%[[ROW]], %[[AT]]], 8 {bypassL1}
// CUDA:       scf.for %{{.*}} = %[[TID]] to %c128{{.*}} step %c128{{.*}} {
// CUDA:         nvgpu.device_async_copy %[[B_WG]]
// CUDA:     } else {
// CUDA:       scf.for %{{.*}} = %[[TID]] to %c2048 step %c128{{.*}} {
// CUDA:         memref.load %[[A_WG]]
// CUDA:         memref.store
// CUDA:   nvvm.cp.async.commit.group
// CUDA: scf.for %[[K:.*]] = %c0{{.*}} to %c256{{.*}} step %c32{{.*}} {
// CUDA-NEXT:   nvvm.cp.async.wait.group 2
// CUDA-NEXT:   gpu.barrier
// CUDA-NEXT:   %[[AT_NEXT:.*]] = affine.apply #[[NEXT]]()[%[[K]]]
// CUDA-NEXT:   %[[INTO:.*]] = affine.apply #[[NEXT_COPY]]()[%[[K]]]
// CUDA:        %[[MORE:.*]] = arith.cmpi ult, %[[AT_NEXT]], %c256
// CUDA-NEXT:   scf.if %[[MORE]] {
// CUDA-NEXT:     memref.subview %[[A_BUF]][%[[INTO]], 0, 0] [1, 64, 32] [1, 1, 1]
// CUDA:          scf.if %[[ALIGNED]] {
// CUDA:            nvgpu.device_async_copy
// CUDA:   nvvm.cp.async.commit.group
// CUDA:        %[[NOW:.*]] = affine.apply #[[COPY]]()[%[[K]]]
// CUDA-NEXT:   %[[A:.*]] = memref.subview %[[A_BUF]][%[[NOW]], 0, 0] [1, 64, 32] [1, 1, 1]
// CUDA-NEXT:   %[[B:.*]] = memref.subview %[[B_BUF]][%[[NOW]], 0, 0] [1, 32, 32] [1, 1, 1]
// CUDA:        linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : memref<4x32xbf16, strided<[40, 1], offset: ?>, #gpu.address_space<workgroup>>, memref<32x4xbf16, strided<[40, 1], offset: ?>, #gpu.address_space<workgroup>>)
// CUDA-NOT: gpu.barrier
// CUDA: }
// CUDA: linalg.copy
#a = affine_map<(k, i, j) -> (i, k)>
#b = affine_map<(k, i, j) -> (k, j)>
#c = affine_map<(k, i, j) -> (i, j)>
func.func @async_copies(%a: memref<256x256xbf16>, %b: memref<256x256xbf16>, %c: memref<256x256xf32>) {
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %c32 = arith.constant 32 : index
  %zero = arith.constant 0.0 : f32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c8, %gy = %c4, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c8, %sy = %c16, %sz = %c1) {
    %row = arith.muli %by, %c64 : index
    %col = arith.muli %bx, %c32 : index
    %a_wg = memref.subview %a[%row, 0] [64, 256] [1, 1] : memref<256x256xbf16> to memref<64x256xbf16, strided<[256, 1], offset: ?>>
    %b_wg = memref.subview %b[0, %col] [256, 32] [1, 1] : memref<256x256xbf16> to memref<256x32xbf16, strided<[256, 1], offset: ?>>
    %c_wg = memref.subview %c[%row, %col] [64, 32] [1, 1] : memref<256x256xf32> to memref<64x32xf32, strided<[256, 1], offset: ?>>
    %r = arith.muli %ty, %c4 : index
    %q = arith.muli %tx, %c4 : index
    %a_t = memref.subview %a_wg[%r, 0] [4, 256] [1, 1] : memref<64x256xbf16, strided<[256, 1], offset: ?>> to memref<4x256xbf16, strided<[256, 1], offset: ?>>
    %b_t = memref.subview %b_wg[0, %q] [256, 4] [1, 1] : memref<256x32xbf16, strided<[256, 1], offset: ?>> to memref<256x4xbf16, strided<[256, 1], offset: ?>>
    %c_t = memref.subview %c_wg[%r, %q] [4, 4] [1, 1] : memref<64x32xf32, strided<[256, 1], offset: ?>> to memref<4x4xf32, strided<[256, 1], offset: ?>>
    %acc = memref.alloca() : memref<4x4xf32, #gpu.address_space<private>>
    linalg.fill ins(%zero : f32) outs(%acc : memref<4x4xf32, #gpu.address_space<private>>)
    linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["reduction", "parallel", "parallel"]} ins(%a_t, %b_t : memref<4x256xbf16, strided<[256, 1], offset: ?>>, memref<256x4xbf16, strided<[256, 1], offset: ?>>) outs(%acc : memref<4x4xf32, #gpu.address_space<private>>) {
    ^bb0(%x: bf16, %y: bf16, %s: f32):
      %xf = arith.extf %x : bf16 to f32
      %yf = arith.extf %y : bf16 to f32
      %p = arith.mulf %xf, %yf : f32
      %t = arith.addf %s, %p : f32
      linalg.yield %t : f32
    }
    linalg.copy ins(%acc : memref<4x4xf32, #gpu.address_space<private>>) outs(%c_t : memref<4x4xf32, strided<[256, 1], offset: ?>>)
    gpu.terminator
  }
  return
}

// -----

// A 128x128 tile of 16-bit operands (8x16 results per thread, as
// --cuda-wide-tiles makes them): the tensor cores' 64 KiB of f32 sums
// pass the 48 KiB budget and take dynamic shared memory in the chunks'
// place after the loop (kiln-cuda-mma-sync), so the chunks may take as
// much: three in flight (18944 bytes each), not two. Elsewhere, the
// staging budget stays the target's.
// REPORT-CUDA: remark: placement: operands staged in shared memory, 56832 bytes, 32 steps of the reduction at a time, 3 chunks in flight (asynchronous copies, 16 bytes a thread)
// CUDA-LABEL: func.func @wide_tile
// CUDA: memref.alloc() {alignment = 16 : i64} : memref<3x128x40xbf16, #gpu.address_space<workgroup>>
// CUDA: memref.alloc() {alignment = 16 : i64} : memref<3x32x136xbf16, #gpu.address_space<workgroup>>
// CUDA: scf.for %{{.*}} = %c0{{.*}} to %c256{{.*}} step %c32{{.*}} {
// CUDA-NEXT:   nvvm.cp.async.wait.group 1
#a = affine_map<(k, i, j) -> (i, k)>
#b = affine_map<(k, i, j) -> (k, j)>
#c = affine_map<(k, i, j) -> (i, j)>
func.func @wide_tile(%a: memref<256x256xbf16>, %b: memref<256x256xbf16>, %c: memref<256x256xf32>) {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %c128 = arith.constant 128 : index
  %zero = arith.constant 0.0 : f32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c2, %gy = %c2, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c8, %sy = %c16, %sz = %c1) {
    %row = arith.muli %by, %c128 : index
    %col = arith.muli %bx, %c128 : index
    %a_wg = memref.subview %a[%row, 0] [128, 256] [1, 1] : memref<256x256xbf16> to memref<128x256xbf16, strided<[256, 1], offset: ?>>
    %b_wg = memref.subview %b[0, %col] [256, 128] [1, 1] : memref<256x256xbf16> to memref<256x128xbf16, strided<[256, 1], offset: ?>>
    %c_wg = memref.subview %c[%row, %col] [128, 128] [1, 1] : memref<256x256xf32> to memref<128x128xf32, strided<[256, 1], offset: ?>>
    %r = arith.muli %ty, %c8 : index
    %q = arith.muli %tx, %c16 : index
    %a_t = memref.subview %a_wg[%r, 0] [8, 256] [1, 1] : memref<128x256xbf16, strided<[256, 1], offset: ?>> to memref<8x256xbf16, strided<[256, 1], offset: ?>>
    %b_t = memref.subview %b_wg[0, %q] [256, 16] [1, 1] : memref<256x128xbf16, strided<[256, 1], offset: ?>> to memref<256x16xbf16, strided<[256, 1], offset: ?>>
    %c_t = memref.subview %c_wg[%r, %q] [8, 16] [1, 1] : memref<128x128xf32, strided<[256, 1], offset: ?>> to memref<8x16xf32, strided<[256, 1], offset: ?>>
    %acc = memref.alloca() : memref<8x16xf32, #gpu.address_space<private>>
    linalg.fill ins(%zero : f32) outs(%acc : memref<8x16xf32, #gpu.address_space<private>>)
    linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["reduction", "parallel", "parallel"]} ins(%a_t, %b_t : memref<8x256xbf16, strided<[256, 1], offset: ?>>, memref<256x16xbf16, strided<[256, 1], offset: ?>>) outs(%acc : memref<8x16xf32, #gpu.address_space<private>>) {
    ^bb0(%x: bf16, %y: bf16, %s: f32):
      %xf = arith.extf %x : bf16 to f32
      %yf = arith.extf %y : bf16 to f32
      %p = arith.mulf %xf, %yf : f32
      %t = arith.addf %s, %p : f32
      linalg.yield %t : f32
    }
    linalg.copy ins(%acc : memref<8x16xf32, #gpu.address_space<private>>) outs(%c_t : memref<8x16xf32, strided<[256, 1], offset: ?>>)
    gpu.terminator
  }
  return
}

// -----

// B read in place through a transpose (kiln-gpu-transpose-on-read: the
// keys [S, D] as [D, S]): a step along B's k is a step along a row of the
// keys, a step along its columns a whole row. The copy walks B's chunks
// k innermost, so consecutive threads load consecutive keys' values
// (element i: k = i mod 16, column i / 16), stored down the buffer's
// column; A's copy is as in @matmul.
// CHECK-LABEL: func.func @transposed_keys
// CHECK: gpu.launch
// CHECK:   %[[B_WG:.*]] = memref.subview %[[KT:.*]][0, %{{.*}}] [64, 32] [1, 1]
// CHECK:   %[[TID:.*]] = affine.apply #{{.*}}()[%{{.*}}, %{{.*}}, %{{.*}}]
// CHECK:   %[[B:.*]] = memref.subview %{{.*}}[0, 0] [16, 32] [1, 1]
// CHECK:   scf.for %{{.*}} = %[[TID]] to %c1024{{.*}} step %c128
// CHECK:   scf.for %[[I:.*]] = %[[TID]] to %c512{{.*}} step %c128{{(_[0-9]+)?}} {
// CHECK:     %[[KK:.*]] = arith.remui %[[I]], %c16{{(_[0-9]+)?}}
// CHECK:     %[[COL:.*]] = arith.divui %[[I]], %c16{{(_[0-9]+)?}}
// CHECK:     %[[K:.*]] = arith.addi %c0{{.*}}, %[[KK]]
// CHECK:     %[[X:.*]] = memref.load %[[B_WG]][%[[K]], %[[COL]]]
// CHECK:     memref.store %[[X]], %[[B]][%[[KK]], %[[COL]]]
// CHECK:   scf.for
// CHECK:     scf.for %[[SLOT:.*]] = %c0{{.*}} to %c4{{.*}} step %c1{{.*}} {
// CHECK:       %[[SLOT_COL:.*]] = affine.apply #{{.*}}()[%[[SLOT]], %{{.*}}, %{{.*}}, %{{.*}}]
// CHECK:       %[[SLOT_K:.*]] = arith.remui %[[TID]], %c16
// CHECK:       %[[NEXT_K:.*]] = arith.addi %{{.*}}, %[[SLOT_K]]
// CHECK:       memref.load %[[B_WG]][%[[NEXT_K]], %[[SLOT_COL]]]
#a = affine_map<(k, i, j) -> (i, k)>
#b = affine_map<(k, i, j) -> (k, j)>
#c = affine_map<(k, i, j) -> (i, j)>
#swap = affine_map<(d0, d1) -> (d1, d0)>
#same = affine_map<(d0, d1) -> (d0, d1)>
func.func @transposed_keys(%q: memref<64x64xf32>, %k: memref<64x64xf32>, %c: memref<64x64xf32>) {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %zero = arith.constant 0.0 : f32
  %kt = memref.alloc() : memref<64x64xf32>
  linalg.generic {indexing_maps = [#swap, #same], iterator_types = ["parallel", "parallel"]} ins(%k : memref<64x64xf32>) outs(%kt : memref<64x64xf32>) attrs = {kiln.gpu.computed_on_read} {
  ^bb0(%x: f32, %y: f32):
    linalg.yield %x : f32
  }
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c2, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c8, %sy = %c16, %sz = %c1) {
    %col = arith.muli %bx, %c32 : index
    %b_wg = memref.subview %kt[0, %col] [64, 32] [1, 1] : memref<64x64xf32> to memref<64x32xf32, strided<[64, 1], offset: ?>>
    %c_wg = memref.subview %c[0, %col] [64, 32] [1, 1] : memref<64x64xf32> to memref<64x32xf32, strided<[64, 1], offset: ?>>
    %r = arith.muli %ty, %c4 : index
    %p = arith.muli %tx, %c4 : index
    %a_t = memref.subview %q[%r, 0] [4, 64] [1, 1] : memref<64x64xf32> to memref<4x64xf32, strided<[64, 1], offset: ?>>
    %b_t = memref.subview %b_wg[0, %p] [64, 4] [1, 1] : memref<64x32xf32, strided<[64, 1], offset: ?>> to memref<64x4xf32, strided<[64, 1], offset: ?>>
    %c_t = memref.subview %c_wg[%r, %p] [4, 4] [1, 1] : memref<64x32xf32, strided<[64, 1], offset: ?>> to memref<4x4xf32, strided<[64, 1], offset: ?>>
    %acc = memref.alloca() : memref<4x4xf32, #gpu.address_space<private>>
    linalg.fill ins(%zero : f32) outs(%acc : memref<4x4xf32, #gpu.address_space<private>>)
    linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["reduction", "parallel", "parallel"]} ins(%a_t, %b_t : memref<4x64xf32, strided<[64, 1], offset: ?>>, memref<64x4xf32, strided<[64, 1], offset: ?>>) outs(%acc : memref<4x4xf32, #gpu.address_space<private>>) {
    ^bb0(%x: f32, %y: f32, %s: f32):
      %m = arith.mulf %x, %y : f32
      %t = arith.addf %s, %m : f32
      linalg.yield %t : f32
    }
    linalg.copy ins(%acc : memref<4x4xf32, #gpu.address_space<private>>) outs(%c_t : memref<4x4xf32, strided<[64, 1], offset: ?>>)
    gpu.terminator
  }
  return
}

// -----

// B read in place through a transpose of 16-bit keys (as @transposed_keys)
// for CUDA, where A moves by cp.async as in @async_copies (only its tile's
// alignment is checked: B has no address), B through 8 registers a thread.
// In the loop before the main one, B's first three chunks are copied
// element by element behind A's asynchronous copies; at chunk i each thread loads its 8
// elements of chunk i + 3 where A's copies start, runs the op on chunk i,
// then stores them into the copy A's chunk i + 3 goes to.
// REPORT-CUDA: remark: placement: operands staged in shared memory, 30720 bytes, 32 steps of the reduction at a time, 4 chunks in flight (asynchronous copies, 16 bytes a thread; an operand (receptive fields, a transpose) computed from its source as it is loaded, through registers)
// CUDA-LABEL: func.func @transposed_keys_bf16
// CUDA:     %[[A_BUF:.*]] = memref.alloc() {alignment = 16 : i64} : memref<4x64x40xbf16, #gpu.address_space<workgroup>>
// CUDA:     %[[B_BUF:.*]] = memref.alloc() {alignment = 16 : i64} : memref<4x32x40xbf16, #gpu.address_space<workgroup>>
// CUDA:     %[[A_WG:.*]] = memref.subview %arg0
// CUDA:     %[[B_WG:.*]] = memref.subview %[[KT:.*]][0, %{{.*}}] [256, 32] [1, 1]
// CUDA:     memref.extract_aligned_pointer_as_index %[[A_WG]]
// CUDA-NOT: memref.extract_aligned_pointer_as_index
// CUDA:     %[[REGS:.*]] = memref.alloca() : memref<8xbf16, #gpu.address_space<private>>
// CUDA:     scf.for %{{.*}} = %c0{{.*}} to %c3 step %c1{{.*}} {
// CUDA:       nvgpu.device_async_copy %[[A_WG]]
// CUDA:       scf.for %[[I:.*]] = %{{.*}} to %c1024 step %c128 {
// CUDA:         %[[X:.*]] = memref.load %[[B_WG]]
// CUDA:         memref.store %[[X]], %{{.*}} : memref<32x32xbf16, strided<[40, 1], offset: ?>, #gpu.address_space<workgroup>>
// CUDA:       nvvm.cp.async.commit.group
// CUDA:     scf.for %[[K:.*]] = %c0{{.*}} to %c256{{.*}} step %c32{{.*}} {
// CUDA-NEXT:  nvvm.cp.async.wait.group 2
// CUDA-NEXT:  gpu.barrier
// CUDA:       affine.apply #{{.*}}()[%[[K]]]
// CUDA-NEXT:  %[[INTO:.*]] = affine.apply #{{.*}}()[%[[K]]]
// CUDA:       %[[MORE:.*]] = arith.cmpi ult
// CUDA-NEXT:  scf.if %[[MORE]] {
// CUDA:         nvgpu.device_async_copy %[[A_WG]]
// CUDA:         scf.for %[[SLOT:.*]] = %c0{{.*}} to %c8{{.*}} step %c1{{.*}} {
// CUDA:           %[[Y:.*]] = memref.load %[[B_WG]]
// CUDA-NEXT:      memref.store %[[Y]], %[[REGS]][%[[SLOT]]]
// CUDA:       nvvm.cp.async.commit.group
// CUDA:       linalg.generic
// CUDA:       scf.if %[[MORE]] {
// CUDA:         %[[NEXT_B:.*]] = memref.subview %[[B_BUF]][%[[INTO]], 0, 0] [1, 32, 32] [1, 1, 1]
// CUDA:         scf.for %[[SLOT2:.*]] = %c0{{.*}} to %c8{{.*}} step %c1{{.*}} {
// CUDA:           %[[Z:.*]] = memref.load %[[REGS]][%[[SLOT2]]]
// CUDA-NEXT:      memref.store %[[Z]], %[[NEXT_B]]
// CUDA:     linalg.copy
#a = affine_map<(k, i, j) -> (i, k)>
#b = affine_map<(k, i, j) -> (k, j)>
#c = affine_map<(k, i, j) -> (i, j)>
#swap = affine_map<(d0, d1) -> (d1, d0)>
#same = affine_map<(d0, d1) -> (d0, d1)>
func.func @transposed_keys_bf16(%q: memref<256x256xbf16>, %k: memref<256x256xbf16>, %c: memref<256x256xf32>) {
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %c32 = arith.constant 32 : index
  %zero = arith.constant 0.0 : f32
  %kt = memref.alloc() : memref<256x256xbf16>
  linalg.generic {indexing_maps = [#swap, #same], iterator_types = ["parallel", "parallel"]} ins(%k : memref<256x256xbf16>) outs(%kt : memref<256x256xbf16>) attrs = {kiln.gpu.computed_on_read} {
  ^bb0(%x: bf16, %y: bf16):
    linalg.yield %x : bf16
  }
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c8, %gy = %c4, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c8, %sy = %c16, %sz = %c1) {
    %row = arith.muli %by, %c64 : index
    %col = arith.muli %bx, %c32 : index
    %a_wg = memref.subview %q[%row, 0] [64, 256] [1, 1] : memref<256x256xbf16> to memref<64x256xbf16, strided<[256, 1], offset: ?>>
    %b_wg = memref.subview %kt[0, %col] [256, 32] [1, 1] : memref<256x256xbf16> to memref<256x32xbf16, strided<[256, 1], offset: ?>>
    %c_wg = memref.subview %c[%row, %col] [64, 32] [1, 1] : memref<256x256xf32> to memref<64x32xf32, strided<[256, 1], offset: ?>>
    %r = arith.muli %ty, %c4 : index
    %p = arith.muli %tx, %c4 : index
    %a_t = memref.subview %a_wg[%r, 0] [4, 256] [1, 1] : memref<64x256xbf16, strided<[256, 1], offset: ?>> to memref<4x256xbf16, strided<[256, 1], offset: ?>>
    %b_t = memref.subview %b_wg[0, %p] [256, 4] [1, 1] : memref<256x32xbf16, strided<[256, 1], offset: ?>> to memref<256x4xbf16, strided<[256, 1], offset: ?>>
    %c_t = memref.subview %c_wg[%r, %p] [4, 4] [1, 1] : memref<64x32xf32, strided<[256, 1], offset: ?>> to memref<4x4xf32, strided<[256, 1], offset: ?>>
    %acc = memref.alloca() : memref<4x4xf32, #gpu.address_space<private>>
    linalg.fill ins(%zero : f32) outs(%acc : memref<4x4xf32, #gpu.address_space<private>>)
    linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["reduction", "parallel", "parallel"]} ins(%a_t, %b_t : memref<4x256xbf16, strided<[256, 1], offset: ?>>, memref<256x4xbf16, strided<[256, 1], offset: ?>>) outs(%acc : memref<4x4xf32, #gpu.address_space<private>>) {
    ^bb0(%x: bf16, %y: bf16, %s: f32):
      %xf = arith.extf %x : bf16 to f32
      %yf = arith.extf %y : bf16 to f32
      %m = arith.mulf %xf, %yf : f32
      %t = arith.addf %s, %m : f32
      linalg.yield %t : f32
    }
    linalg.copy ins(%acc : memref<4x4xf32, #gpu.address_space<private>>) outs(%c_t : memref<4x4xf32, strided<[256, 1], offset: ?>>)
    gpu.terminator
  }
  return
}

// -----

// With `synchronous`, any target stages on the schedule of asynchronous
// copies (here the generic Vulkan target's 16 KiB: two chunks of 16 steps
// in flight), each chunk copied at once by the threads, as where a tile
// does not start on 16 bytes: no cp.async, no groups to commit or wait
// for, no alignment check. A, read through a transpose, goes through
// registers as on CUDA (@transposed_keys_bf16); B, which CUDA would copy
// asynchronously, is copied element by element where its copies would
// start. Without it, f32 matmuls keep the register staging of @matmul.
// SYNC: remark: placement: operands staged in shared memory, 13312 bytes, 16 steps of the reduction at a time, 2 chunks in flight (each copied at once on the schedule of asynchronous copies; an operand (receptive fields, a transpose) computed from its source as it is loaded, through registers)
// SYNC-LABEL: func.func @synchronous_schedule
// SYNC-NOT:   nvgpu
// SYNC-NOT:   nvvm
// SYNC-NOT:   extract_aligned_pointer
// SYNC:       %[[A_BUF:.*]] = memref.alloc() {alignment = 16 : i64} : memref<2x16x68xf32, #gpu.address_space<workgroup>>
// SYNC:       %[[B_BUF:.*]] = memref.alloc() {alignment = 16 : i64} : memref<2x16x36xf32, #gpu.address_space<workgroup>>
// SYNC:       %[[B_WG:.*]] = memref.subview %arg1
// SYNC:       %[[REGS:.*]] = memref.alloca() : memref<8xf32, #gpu.address_space<private>>
// SYNC:       scf.for %[[C:.*]] = %c0{{.*}} to %c1{{.*}} step %c1{{.*}} {
// SYNC:         memref.load %[[B_WG]]
// SYNC:         memref.load %[[XT:.*]][
// SYNC:       scf.for %{{.*}} = %c0{{.*}} to %c128 step %c16{{.*}} {
// SYNC-NEXT:    gpu.barrier
// SYNC:         scf.if %[[MORE:.*]] {
// SYNC:           memref.load %[[B_WG]]
// SYNC:           memref.store %{{.*}}, %{{.*}} : memref<16x32xf32, strided<[36, 1], offset: ?>, #gpu.address_space<workgroup>>
// SYNC:           memref.load %[[XT]]
// SYNC-NEXT:      memref.store %{{.*}}, %[[REGS]]
// SYNC:         linalg.generic
// SYNC:         scf.if %[[MORE]] {
// SYNC:           memref.load %[[REGS]]
// SYNC-NEXT:      memref.store %{{.*}}, %{{.*}} : memref<16x64xf32, strided<[68, 1], offset: ?>, #gpu.address_space<workgroup>>
// SYNC-NOT:     gpu.barrier
// SYNC:       linalg.copy
#a = affine_map<(k, i, j) -> (i, k)>
#b = affine_map<(k, i, j) -> (k, j)>
#c = affine_map<(k, i, j) -> (i, j)>
#swap = affine_map<(d0, d1) -> (d1, d0)>
#same = affine_map<(d0, d1) -> (d0, d1)>
func.func @synchronous_schedule(%x: memref<128x64xf32>, %w: memref<128x64xf32>, %c: memref<64x64xf32>) {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %zero = arith.constant 0.0 : f32
  %xt = memref.alloc() : memref<64x128xf32>
  linalg.generic {indexing_maps = [#swap, #same], iterator_types = ["parallel", "parallel"]} ins(%x : memref<128x64xf32>) outs(%xt : memref<64x128xf32>) attrs = {kiln.gpu.computed_on_read} {
  ^bb0(%v: f32, %y: f32):
    linalg.yield %v : f32
  }
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c2, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c8, %sy = %c16, %sz = %c1) {
    %col = arith.muli %bx, %c32 : index
    %b_wg = memref.subview %w[0, %col] [128, 32] [1, 1] : memref<128x64xf32> to memref<128x32xf32, strided<[64, 1], offset: ?>>
    %c_wg = memref.subview %c[0, %col] [64, 32] [1, 1] : memref<64x64xf32> to memref<64x32xf32, strided<[64, 1], offset: ?>>
    %r = arith.muli %ty, %c4 : index
    %p = arith.muli %tx, %c4 : index
    %a_t = memref.subview %xt[%r, 0] [4, 128] [1, 1] : memref<64x128xf32> to memref<4x128xf32, strided<[128, 1], offset: ?>>
    %b_t = memref.subview %b_wg[0, %p] [128, 4] [1, 1] : memref<128x32xf32, strided<[64, 1], offset: ?>> to memref<128x4xf32, strided<[64, 1], offset: ?>>
    %c_t = memref.subview %c_wg[%r, %p] [4, 4] [1, 1] : memref<64x32xf32, strided<[64, 1], offset: ?>> to memref<4x4xf32, strided<[64, 1], offset: ?>>
    %acc = memref.alloca() : memref<4x4xf32, #gpu.address_space<private>>
    linalg.fill ins(%zero : f32) outs(%acc : memref<4x4xf32, #gpu.address_space<private>>)
    linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["reduction", "parallel", "parallel"]} ins(%a_t, %b_t : memref<4x128xf32, strided<[128, 1], offset: ?>>, memref<128x4xf32, strided<[64, 1], offset: ?>>) outs(%acc : memref<4x4xf32, #gpu.address_space<private>>) {
    ^bb0(%u: f32, %v: f32, %s: f32):
      %m = arith.mulf %u, %v : f32
      %t = arith.addf %s, %m : f32
      linalg.yield %t : f32
    }
    linalg.copy ins(%acc : memref<4x4xf32, #gpu.address_space<private>>) outs(%c_t : memref<4x4xf32, strided<[64, 1], offset: ?>>)
    gpu.terminator
  }
  return
}
