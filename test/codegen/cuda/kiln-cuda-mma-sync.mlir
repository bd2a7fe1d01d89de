// RUN: kiln-opt %s --split-input-file --kiln-gpu-promote-operands=target=cuda --kiln-cuda-mma-sync --canonicalize --cse | FileCheck %s
// RUN: kiln-opt %s --split-input-file --kiln-gpu-promote-operands=target=cuda --kiln-cuda-mma-sync=report=true -o /dev/null 2>&1 | FileCheck %s --check-prefix=REPORT
// RUN: kiln-opt %s --split-input-file --kiln-gpu-promote-operands=target=cuda --kiln-cuda-mma-sync=tf32=true --canonicalize --cse | FileCheck %s --check-prefix=TF32
// RUN: kiln-opt %s --split-input-file --kiln-gpu-promote-operands=target=cuda "--kiln-cuda-mma-sync=tf32=true report=true" -o /dev/null 2>&1 | FileCheck %s --check-prefix=REPORT-TF32
// REPORT-TF32: remark: placement: tensor cores (mma.sync.m16n8k16, bf16)
// REPORT-TF32: remark: placement: tensor cores (mma.sync.m16n8k16, f16)
// REPORT-TF32: remark: placement: tensor cores (mma.sync.m16n8k8, tf32), each warp 16x32 of the 32x32 tile
// REPORT-TF32: remark: placement: tensor cores (mma.sync.m16n8k8, tf32), each warp 16x32 of the 64x32 tile
// REPORT-TF32: remark: placement: tensor cores (mma.sync.m16n8k32, u8 x s8)
// REPORT-TF32: remark: placement: tensor cores (mma.sync.m16n8k16, bf16), each warp 32x64 of the 128x64 tile
// REPORT-TF32-NOT: remark
// The inputs are written as kiln-gpu-private-accumulators leaves a
// thread's matmul; kiln-gpu-promote-operands stages them, as the pipeline
// does, and the pass under test reads the staged chunks.
// REPORT: remark: placement: tensor cores (mma.sync.m16n8k16, bf16), each warp 16x32 of the 64x32 tile
// REPORT: remark: placement: tensor cores (mma.sync.m16n8k16, f16), each warp 48x8 of the 48x32 tile
// REPORT: remark: placement: tensor cores (mma.sync.m16n8k32, u8 x s8), each warp 16x32 of the 64x32 tile
// REPORT: remark: placement: tensor cores (mma.sync.m16n8k16, bf16), each warp 32x64 of the 128x64 tile
// REPORT-NOT: remark
// TF32-LABEL: func.func @bf16_matmul
// TF32-COUNT-8: nvvm.mma.sync {{.*}}k = 16
// TF32-LABEL: func.func @f16_guarded

// A workgroup's 64x32 tile of a 256^3 bf16 matmul summed in f32, 8x16
// threads (4 warps), chunks of 32 steps in four buffers (the warps read
// copy k / 32 mod 4 of each while the next three chunks are on their way,
// cp.async). Each warp takes a row of four
// 16x8 tiles (16x32): per 16 steps, one A fragment (4 registers of two
// bf16, rows g and g + 8, steps 2t.. and 2t + 8..) serves four mma.sync
// with a B fragment each (2 registers, steps 2t.. and 2t + 8.., column
// g). The chunks are staged in the operands' own order: A's lines are
// its rows, 32 steps each, B's are steps, 32 columns each. The fragments
// come from ldmatrix.x4: A's 16x16 in one, lane l giving row
// 16 w + 8 ((l / 8) % 2) + l % 8 of warp w at step 8 (l / 16); B's in two
// `.trans`, one per pair of tiles, lane l giving line 8 ((l / 8) % 2) +
// l % 8 at column 8 ((l / 16) % 2) (+ 16). The lines are 80 bytes (an odd
// number of 16-byte lines: 8 consecutive ones in different banks). The
// sums stay in a private 4 x 4 f32 buffer (a tile's 4 values per row).
// After the chunk loop: the sums to a 64x32 f32 workgroup buffer (rows g,
// g + 8; columns 2t, 2t + 1), a barrier, and each thread's 4x4 region
// added to its accumulator, which the copy then writes out.
// CHECK-DAG: #[[KA:.*]] = affine_map<()[s0, s1] -> (((s1 + s0 floordiv 8) floordiv 2) * 8 - ((s0 + s1 * 8) floordiv 32) * 16)>
// CHECK-DAG: #[[ROWA:.*]] = affine_map<()[s0, s1] -> (s0 + s1 * 8 + ((s0 + s1 * 8) floordiv 32) * 16 - ((s1 + s0 floordiv 8) floordiv 2) * 16)>
// CHECK-DAG: #[[KB:.*]] = affine_map<()[s0, s1] -> (s0 + s1 * 8 - ((s1 + s0 floordiv 8) floordiv 2) * 16)>
// CHECK-DAG: #[[COLB:.*]] = affine_map<()[s0, s1] -> (((s1 + s0 floordiv 8) floordiv 2) * 8 - (((s1 + s0 floordiv 8) floordiv 2) floordiv 2) * 16)>
// CHECK-DAG: #[[COLB2:.*]] = affine_map<()[s0, s1] -> (((s1 + s0 floordiv 8) floordiv 2) * 8 - (((s1 + s0 floordiv 8) floordiv 2) floordiv 2) * 16 + 16)>
// CHECK-LABEL: func.func @bf16_matmul
// CHECK: gpu.launch {{.*}} threads(%[[TX:.*]], %[[TY:.*]], %{{.*}}) in
// CHECK:   %[[SUMS:.*]] = memref.alloc() {alignment = 16 : i64} : memref<64x32xf32, #gpu.address_space<workgroup>>
// CHECK:   %[[A_BUF:.*]] = memref.alloc() {alignment = 16 : i64} : memref<4x64x40xbf16, #gpu.address_space<workgroup>>
// CHECK:   %[[B_BUF:.*]] = memref.alloc() {alignment = 16 : i64} : memref<4x32x40xbf16, #gpu.address_space<workgroup>>
// CHECK:   %[[ACC:.*]] = memref.alloca() : memref<4x4xf32, #gpu.address_space<private>>
// CHECK:   scf.for %{{.*}} = %c0 to %c3 step %c1 {
// CHECK:     nvvm.cp.async.commit.group
// CHECK:   %[[MINE:.*]] = memref.alloca() : memref<4x4xf32, #gpu.address_space<private>>
// CHECK:   linalg.fill ins(%{{.*}} : f32) outs(%[[MINE]]
// CHECK:   scf.for
// CHECK-NEXT: nvvm.cp.async.wait.group 2
// CHECK-NEXT: gpu.barrier
// CHECK:     nvgpu.device_async_copy
// CHECK:     nvvm.cp.async.commit.group
// CHECK:     %[[A:.*]] = memref.subview %[[A_BUF]][%[[COPY:.*]], 0, 0] [1, 64, 32] [1, 1, 1]
// CHECK:     %[[B:.*]] = memref.subview %[[B_BUF]][%[[COPY]], 0, 0] [1, 32, 32] [1, 1, 1]
// CHECK:     %[[KA_:.*]] = affine.apply #[[KA]]()[%[[TX]], %[[TY]]]
// CHECK:     %[[R0:.*]] = affine.apply #[[ROWA]]()[%[[TX]], %[[TY]]]
// CHECK:     %[[AM:.*]] = nvgpu.ldmatrix %[[A]][%[[R0]], %[[KA_]]] {numTiles = 4 : i32, transpose = false} : memref<64x32xbf16, strided<[40, 1], offset: ?>, #gpu.address_space<workgroup>> -> vector<4x2xbf16>
// CHECK:     %[[A0V:.*]] = vector.extract %[[AM]][0] : vector<2xbf16> from vector<4x2xbf16>
// CHECK:     %[[A0:.*]] = llvm.bitcast %[[A0V]] : vector<2xbf16> to i32
// CHECK:     %[[KB_:.*]] = affine.apply #[[KB]]()[%[[TX]], %[[TY]]]
// CHECK:     %[[C01:.*]] = affine.apply #[[COLB]]()[%[[TX]], %[[TY]]]
// CHECK:     %[[BM:.*]] = nvgpu.ldmatrix %[[B]][%[[KB_]], %[[C01]]] {numTiles = 4 : i32, transpose = true} : memref<32x32xbf16, strided<[40, 1], offset: ?>, #gpu.address_space<workgroup>> -> vector<4x2xbf16>
// CHECK:     %[[C23:.*]] = affine.apply #[[COLB2]]()[%[[TX]], %[[TY]]]
// CHECK:     nvgpu.ldmatrix %[[B]][%[[KB_]], %[[C23]]] {numTiles = 4 : i32, transpose = true}
// CHECK-NOT: memref.load %[[A]]
// CHECK-NOT: memref.load %[[B]]
// CHECK:     %[[C0:.*]] = memref.load %[[MINE]][%c0, %c0]
// CHECK:     %[[D:.*]] = nvvm.mma.sync A[%[[A0]], %{{.*}}, %{{.*}}, %{{.*}}]  B[%{{.*}}, %{{.*}}]  C[%[[C0]], %{{.*}}, %{{.*}}, %{{.*}}]  {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>, shape = #nvvm.shape<m = 16, n = 8, k = 16>} : (i32, i32, f32) -> !llvm.struct<(f32, f32, f32, f32)>
// CHECK:     %[[D0:.*]] = llvm.extractvalue %[[D]][0]
// CHECK:     memref.store %[[D0]], %[[MINE]][%c0, %c0]
// CHECK-COUNT-3: nvvm.mma.sync A[%[[A0]]
// The chunk's second 16 steps: a new A fragment for four more.
// CHECK-COUNT-4: nvvm.mma.sync A[%[[A1:[0-9]+]]
// CHECK-NOT: nvvm.mma.sync
// CHECK:   }
// CHECK-COUNT-16: memref.store %{{.*}}, %[[SUMS]]
// CHECK:   gpu.barrier
// CHECK:   %[[REGION:.*]] = memref.subview %[[SUMS]][%{{.*}}, %{{.*}}] [4, 4] [1, 1]
// CHECK:   linalg.generic {{.*}} ins(%[[REGION]] : {{.*}}) outs(%[[ACC]] : {{.*}})
// CHECK:     arith.addf %out, %in : f32
// CHECK:   linalg.copy ins(%[[ACC]]
#a = affine_map<(k, i, j) -> (i, k)>
#b = affine_map<(k, i, j) -> (k, j)>
#c = affine_map<(k, i, j) -> (i, j)>
func.func @bf16_matmul(%a: memref<256x256xbf16>, %b: memref<256x256xbf16>, %c: memref<256x256xf32>) {
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

// f16, 48 rows of threads' tiles in a guard (thread rows 12-15 idle), 64
// steps: 12 tiles of 16x8, a column of three per warp (48x8). The three A
// fragments and the B fragment are registers of two f16 (<2 x half>, as
// ldmatrix gives them), the
// guard holds nothing but the epilogue's ops (its fill, the add, the
// copy): every thread reaches the mma.sync and the barriers.
// CHECK-LABEL: func.func @f16_guarded
// CHECK: %[[IN:.*]] = arith.cmpi ult
// CHECK: scf.if %[[IN]] {
// CHECK-NEXT: linalg.fill
// CHECK-NEXT: }
// CHECK: memref.alloca() : memref<3x4xf32, #gpu.address_space<private>>
// CHECK: scf.for
// CHECK-NOT: scf.if %[[IN]]
// CHECK: nvgpu.ldmatrix {{.*}} -> vector<4x2xf16>
// CHECK-COUNT-3: nvvm.mma.sync {{.*}} : (vector<2xf16>, vector<2xf16>, f32) -> !llvm.struct<(f32, f32, f32, f32)>
// CHECK-NOT: scf.if %[[IN]]
// CHECK: }
// CHECK: gpu.barrier
// CHECK: scf.if %[[IN]] {
// CHECK: linalg.generic
// CHECK: linalg.copy
#a = affine_map<(k, i, j) -> (i, k)>
#b = affine_map<(k, i, j) -> (k, j)>
#c = affine_map<(k, i, j) -> (i, j)>
func.func @f16_guarded(%a: memref<48x64xf16>, %b: memref<64x32xf16>, %c: memref<48x32xf32>) {
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c12 = arith.constant 12 : index
  %c16 = arith.constant 16 : index
  %zero = arith.constant 0.0 : f32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c8, %sy = %c16, %sz = %c1) {
    %in = arith.cmpi ult, %ty, %c12 : index
    scf.if %in {
      %r = arith.muli %ty, %c4 : index
      %q = arith.muli %tx, %c4 : index
      %a_t = memref.subview %a[%r, 0] [4, 64] [1, 1] : memref<48x64xf16> to memref<4x64xf16, strided<[64, 1], offset: ?>>
      %b_t = memref.subview %b[0, %q] [64, 4] [1, 1] : memref<64x32xf16> to memref<64x4xf16, strided<[32, 1], offset: ?>>
      %c_t = memref.subview %c[%r, %q] [4, 4] [1, 1] : memref<48x32xf32> to memref<4x4xf32, strided<[32, 1], offset: ?>>
      %acc = memref.alloca() : memref<4x4xf32, #gpu.address_space<private>>
      linalg.fill ins(%zero : f32) outs(%acc : memref<4x4xf32, #gpu.address_space<private>>)
      linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["reduction", "parallel", "parallel"]} ins(%a_t, %b_t : memref<4x64xf16, strided<[64, 1], offset: ?>>, memref<64x4xf16, strided<[32, 1], offset: ?>>) outs(%acc : memref<4x4xf32, #gpu.address_space<private>>) {
      ^bb0(%x: f16, %y: f16, %s: f32):
        %xf = arith.extf %x : f16 to f32
        %yf = arith.extf %y : f16 to f32
        %p = arith.mulf %xf, %yf : f32
        %t = arith.addf %s, %p : f32
        linalg.yield %t : f32
      }
      linalg.copy ins(%acc : memref<4x4xf32, #gpu.address_space<private>>) outs(%c_t : memref<4x4xf32, strided<[32, 1], offset: ?>>)
    }
    gpu.terminator
  }
  return
}

// -----

// Left alone: f32 operands (staged, summed with fma), a bf16 reduction of
// 40 steps (a last chunk of 8: not a whole mma step), and a tile of 4 rows
// (not a 16-row tile).
// CHECK-LABEL: func.func @left_alone
// CHECK-NOT: nvvm.mma.sync
// With tf32, the f32 matmul (64 steps, 32x32 tile, 2 warps: each 16x32)
// runs on the tensor cores, 8 steps per mma: each register one f32 of the
// chunk rounded by cvt.rna (A: steps t and t + 4, rows g and g + 8; B:
// steps t and t + 4), 4 steps per chunk of 32, 4 mma per step.
// TF32-LABEL: func.func @left_alone
// TF32: memref.alloca() : memref<4x4xf32, #gpu.address_space<private>>
// TF32: scf.for
// TF32: gpu.barrier
// TF32: %[[X:.*]] = memref.load {{.*}}#gpu.address_space<workgroup>>
// TF32-NEXT: nvvm.convert.float.to.tf32 %[[X]] {rnd = #nvvm.fp_rnd_mode<rna>}
// TF32-COUNT-16: nvvm.mma.sync {{.*}}multiplicandAPtxType = #nvvm.mma_type<tf32>, multiplicandBPtxType = #nvvm.mma_type<tf32>, shape = #nvvm.shape<m = 16, n = 8, k = 8>} : (i32, i32, f32)
// TF32-NOT: nvvm.mma.sync
#a = affine_map<(k, i, j) -> (i, k)>
#b = affine_map<(k, i, j) -> (k, j)>
#c = affine_map<(k, i, j) -> (i, j)>
func.func @left_alone(%f: memref<32x64xf32>, %g: memref<64x32xf32>, %h: memref<32x40xbf16>, %i: memref<40x32xbf16>, %r: memref<4x64xbf16>, %s: memref<64x32xbf16>) {
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0.0 : f32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c8, %sy = %c8, %sz = %c1) {
    %r0 = arith.muli %ty, %c4 : index
    %q0 = arith.muli %tx, %c4 : index
    %f_t = memref.subview %f[%r0, 0] [4, 64] [1, 1] : memref<32x64xf32> to memref<4x64xf32, strided<[64, 1], offset: ?>>
    %g_t = memref.subview %g[0, %q0] [64, 4] [1, 1] : memref<64x32xf32> to memref<64x4xf32, strided<[32, 1], offset: ?>>
    %acc = memref.alloca() : memref<4x4xf32, #gpu.address_space<private>>
    linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["reduction", "parallel", "parallel"]} ins(%f_t, %g_t : memref<4x64xf32, strided<[64, 1], offset: ?>>, memref<64x4xf32, strided<[32, 1], offset: ?>>) outs(%acc : memref<4x4xf32, #gpu.address_space<private>>) {
    ^bb0(%x: f32, %y: f32, %t: f32):
      %p = arith.mulf %x, %y : f32
      %u = arith.addf %t, %p : f32
      linalg.yield %u : f32
    }
    gpu.terminator
  }
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c8, %sy = %c8, %sz = %c1) {
    %r0 = arith.muli %ty, %c4 : index
    %q0 = arith.muli %tx, %c4 : index
    %h_t = memref.subview %h[%r0, 0] [4, 40] [1, 1] : memref<32x40xbf16> to memref<4x40xbf16, strided<[40, 1], offset: ?>>
    %i_t = memref.subview %i[0, %q0] [40, 4] [1, 1] : memref<40x32xbf16> to memref<40x4xbf16, strided<[32, 1], offset: ?>>
    %acc = memref.alloca() : memref<4x4xf32, #gpu.address_space<private>>
    linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["reduction", "parallel", "parallel"]} ins(%h_t, %i_t : memref<4x40xbf16, strided<[40, 1], offset: ?>>, memref<40x4xbf16, strided<[32, 1], offset: ?>>) outs(%acc : memref<4x4xf32, #gpu.address_space<private>>) {
    ^bb0(%x: bf16, %y: bf16, %t: f32):
      %xf = arith.extf %x : bf16 to f32
      %yf = arith.extf %y : bf16 to f32
      %p = arith.mulf %xf, %yf : f32
      %u = arith.addf %t, %p : f32
      linalg.yield %u : f32
    }
    gpu.terminator
  }
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c8, %sy = %c1, %sz = %c1) {
    %q0 = arith.muli %tx, %c4 : index
    %s_t = memref.subview %s[0, %q0] [64, 4] [1, 1] : memref<64x32xbf16> to memref<64x4xbf16, strided<[32, 1], offset: ?>>
    %acc = memref.alloca() : memref<4x4xf32, #gpu.address_space<private>>
    linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["reduction", "parallel", "parallel"]} ins(%r, %s_t : memref<4x64xbf16>, memref<64x4xbf16, strided<[32, 1], offset: ?>>) outs(%acc : memref<4x4xf32, #gpu.address_space<private>>) {
    ^bb0(%x: bf16, %y: bf16, %t: f32):
      %xf = arith.extf %x : bf16 to f32
      %yf = arith.extf %y : bf16 to f32
      %p = arith.mulf %xf, %yf : f32
      %u = arith.addf %t, %p : f32
      linalg.yield %u : f32
    }
    gpu.terminator
  }
  return
}

// -----

// A convolution's im2col contraction (kiln-gpu-conv-as-matmul): loops (k,
// n, f, p), its fields [N, K, P] the first input and its filter [F, K] the
// second, a 1x4x4 accumulator. With tf32 the filter is A (it holds the
// rows, f) and the fields B (the columns, p), read with the batch index 0
// from their [32, 1, 32] chunk; the sums go to the accumulator's last two
// dimensions. Without tf32 (f32 operands) it stays with fma.
// CHECK-LABEL: func.func @conv_as_matmul
// CHECK-NOT: nvvm.mma.sync
// TF32-DAG: #[[BATCH:.*]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// TF32-DAG: #[[ALL:.*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// TF32-LABEL: func.func @conv_as_matmul
// TF32: %[[ACC:.*]] = memref.alloca() : memref<1x4x4xf32, #gpu.address_space<private>>
// TF32: %[[FIELDS:.*]] = memref.subview %{{.*}}[0, 0, 0] [32, 1, 32] [1, 1, 1]
// TF32: %[[FILTER:.*]] = memref.subview %{{.*}}[0, 0] [32, 64] [1, 1]
// TF32: scf.for
// TF32: memref.load %[[FILTER]][%{{.*}}, %{{.*}}] : memref<32x64xf32
// TF32: memref.load %[[FIELDS]][%{{.*}}, %c0, %{{.*}}] : memref<32x1x32xf32
// TF32-COUNT-16: nvvm.mma.sync
// TF32-NOT: nvvm.mma.sync
// TF32: linalg.generic {indexing_maps = [#[[BATCH]], #[[ALL]]], {{.*}} outs(%[[ACC]] : memref<1x4x4xf32
#f = affine_map<(k, n, i, j) -> (n, k, j)>
#w = affine_map<(k, n, i, j) -> (i, k)>
#o = affine_map<(k, n, i, j) -> (n, i, j)>
func.func @conv_as_matmul(%fields: memref<1x288x256xf32>, %filter: memref<64x288xf32>, %out: memref<1x64x256xf32>) {
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %zero = arith.constant 0.0 : f32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c8, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c8, %sy = %c16, %sz = %c1) {
    %col = arith.muli %bx, %c32 : index
    %f_wg = memref.subview %fields[0, 0, %col] [1, 288, 32] [1, 1, 1] : memref<1x288x256xf32> to memref<1x288x32xf32, strided<[73728, 256, 1], offset: ?>>
    %o_wg = memref.subview %out[0, 0, %col] [1, 64, 32] [1, 1, 1] : memref<1x64x256xf32> to memref<1x64x32xf32, strided<[16384, 256, 1], offset: ?>>
    %r = arith.muli %ty, %c4 : index
    %q = arith.muli %tx, %c4 : index
    %w_t = memref.subview %filter[%r, 0] [4, 288] [1, 1] : memref<64x288xf32> to memref<4x288xf32, strided<[288, 1], offset: ?>>
    %f_t = memref.subview %f_wg[0, 0, %q] [1, 288, 4] [1, 1, 1] : memref<1x288x32xf32, strided<[73728, 256, 1], offset: ?>> to memref<1x288x4xf32, strided<[73728, 256, 1], offset: ?>>
    %o_t = memref.subview %o_wg[0, %r, %q] [1, 4, 4] [1, 1, 1] : memref<1x64x32xf32, strided<[16384, 256, 1], offset: ?>> to memref<1x4x4xf32, strided<[16384, 256, 1], offset: ?>>
    %acc = memref.alloca() : memref<1x4x4xf32, #gpu.address_space<private>>
    linalg.fill ins(%zero : f32) outs(%acc : memref<1x4x4xf32, #gpu.address_space<private>>)
    linalg.generic {indexing_maps = [#f, #w, #o], iterator_types = ["reduction", "parallel", "parallel", "parallel"]} ins(%f_t, %w_t : memref<1x288x4xf32, strided<[73728, 256, 1], offset: ?>>, memref<4x288xf32, strided<[288, 1], offset: ?>>) outs(%acc : memref<1x4x4xf32, #gpu.address_space<private>>) {
    ^bb0(%x: f32, %y: f32, %s: f32):
      %p = arith.mulf %x, %y : f32
      %t = arith.addf %s, %p : f32
      linalg.yield %t : f32
    }
    linalg.copy ins(%acc : memref<1x4x4xf32, #gpu.address_space<private>>) outs(%o_t : memref<1x4x4xf32, strided<[16384, 256, 1], offset: ?>>)
    gpu.terminator
  }
  return
}

// -----

// An int8 matmul as --quantize=int8 leaves it: u8 activations times s8
// weights summed in i32. The chunks hold bytes (rows padded to an odd
// number of 16-byte lines), read a register at a time (no ldmatrix: it
// moves 16-bit values): A's four steps of a row lie along its chunk's
// line, one 32-bit load; B's lie down a column, four byte loads packed;
// m16n8k32, four bytes per register (the first in the lowest bits), the
// types from the body's extensions (extui: u8, extsi: s8), sums that wrap
// as the i32 adds they replace; the epilogue adds with addi.
// CHECK-LABEL: func.func @int8
// CHECK:   memref.alloc() {alignment = 16 : i64} : memref<64x32xi32, #gpu.address_space<workgroup>>
// CHECK:   memref.alloc() {alignment = 16 : i64} : memref<4x64x48xi8, #gpu.address_space<workgroup>>
// CHECK:   memref.alloc() {alignment = 16 : i64} : memref<4x32x48xi8, #gpu.address_space<workgroup>>
// CHECK:   memref.alloca() : memref<4x4xi32, #gpu.address_space<private>>
// CHECK:   scf.for
// CHECK:     %[[A4:.*]] = vector.load %{{.*}} {alignment = 4 : i64} : memref<64x32xi8, strided<[48, 1], offset: ?>, #gpu.address_space<workgroup>>, vector<4xi8>
// CHECK:     llvm.bitcast %[[A4]] : vector<4xi8> to i32
// CHECK:     arith.extui %{{.*}} : i8 to i32
// CHECK:     arith.shli %{{.*}}, %c24_i32 : i32
// CHECK:     nvvm.mma.sync {{.*}}intOverflowBehavior = #nvvm.mma_int_overflow<wrapped>, layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, multiplicandAPtxType = #nvvm.mma_type<u8>, multiplicandBPtxType = #nvvm.mma_type<s8>, shape = #nvvm.shape<m = 16, n = 8, k = 32>} : (i32, i32, i32) -> !llvm.struct<(i32, i32, i32, i32)>
// CHECK-COUNT-3: nvvm.mma.sync
// CHECK-NOT: nvvm.mma.sync
// CHECK:   linalg.generic
// CHECK:     arith.addi %out, %in : i32
#a = affine_map<(k, i, j) -> (i, k)>
#b = affine_map<(k, i, j) -> (k, j)>
#c = affine_map<(k, i, j) -> (i, j)>
func.func @int8(%a: memref<64x256xi8>, %b: memref<256x32xi8>, %c: memref<64x32xi32>) {
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %zero = arith.constant 0 : i32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c8, %sy = %c16, %sz = %c1) {
    %r = arith.muli %ty, %c4 : index
    %q = arith.muli %tx, %c4 : index
    %a_t = memref.subview %a[%r, 0] [4, 256] [1, 1] : memref<64x256xi8> to memref<4x256xi8, strided<[256, 1], offset: ?>>
    %b_t = memref.subview %b[0, %q] [256, 4] [1, 1] : memref<256x32xi8> to memref<256x4xi8, strided<[32, 1], offset: ?>>
    %c_t = memref.subview %c[%r, %q] [4, 4] [1, 1] : memref<64x32xi32> to memref<4x4xi32, strided<[32, 1], offset: ?>>
    %acc = memref.alloca() : memref<4x4xi32, #gpu.address_space<private>>
    linalg.fill ins(%zero : i32) outs(%acc : memref<4x4xi32, #gpu.address_space<private>>)
    linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["reduction", "parallel", "parallel"]} ins(%a_t, %b_t : memref<4x256xi8, strided<[256, 1], offset: ?>>, memref<256x4xi8, strided<[32, 1], offset: ?>>) outs(%acc : memref<4x4xi32, #gpu.address_space<private>>) {
    ^bb0(%x: i8, %y: i8, %s: i32):
      %xi = arith.extui %x : i8 to i32
      %yi = arith.extsi %y : i8 to i32
      %p = arith.muli %xi, %yi : i32
      %t = arith.addi %s, %p : i32
      linalg.yield %t : i32
    }
    linalg.copy ins(%acc : memref<4x4xi32, #gpu.address_space<private>>) outs(%c_t : memref<4x4xi32, strided<[32, 1], offset: ?>>)
    gpu.terminator
  }
  return
}

// -----

// A 128x64 tile (8x8 results per thread, 8x16 threads) of a bf16 matmul
// of 256 steps: each warp 32x64 (2 A fragments and 8 B tiles, 16 mma per
// 16 steps). Three chunks in flight (14848 bytes each) and the 128x64 f32
// sums (32 KiB) do not fit 48 KiB together, so the sums take the chunks'
// place after the loop: one 44544-byte buffer, the chunks views of it
// back to back, the sums a view of its start, written after a barrier
// (every warp done with the last chunk).
// CHECK-LABEL: func.func @sums_replace_chunks
// CHECK: %[[SHARED:.*]] = memref.alloc() {alignment = 16 : i64} : memref<44544xi8, #gpu.address_space<workgroup>>
// CHECK: %[[SUMS:.*]] = memref.view %[[SHARED]][%c0][] : memref<44544xi8, #gpu.address_space<workgroup>> to memref<128x64xf32, #gpu.address_space<workgroup>>
// CHECK: memref.view %[[SHARED]][%c0][] : {{.*}} to memref<3x128x40xbf16, #gpu.address_space<workgroup>>
// CHECK: memref.view %[[SHARED]][%c30720][] : {{.*}} to memref<3x32x72xbf16, #gpu.address_space<workgroup>>
// CHECK-NOT: memref.alloc()
// CHECK: scf.for
// CHECK-COUNT-32: nvvm.mma.sync
// CHECK-NOT: nvvm.mma.sync
// CHECK-NOT: memref.store %{{.*}}, %[[SUMS]]
// CHECK: gpu.barrier
// CHECK: memref.store %{{.*}}, %[[SUMS]]
#a = affine_map<(k, i, j) -> (i, k)>
#b = affine_map<(k, i, j) -> (k, j)>
#c = affine_map<(k, i, j) -> (i, j)>
func.func @sums_replace_chunks(%a: memref<256x256xbf16>, %b: memref<256x256xbf16>, %c: memref<256x256xf32>) {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %zero = arith.constant 0.0 : f32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c4, %gy = %c2, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c8, %sy = %c16, %sz = %c1) {
    %row = arith.muli %by, %c128 : index
    %col = arith.muli %bx, %c64 : index
    %a_wg = memref.subview %a[%row, 0] [128, 256] [1, 1] : memref<256x256xbf16> to memref<128x256xbf16, strided<[256, 1], offset: ?>>
    %b_wg = memref.subview %b[0, %col] [256, 64] [1, 1] : memref<256x256xbf16> to memref<256x64xbf16, strided<[256, 1], offset: ?>>
    %c_wg = memref.subview %c[%row, %col] [128, 64] [1, 1] : memref<256x256xf32> to memref<128x64xf32, strided<[256, 1], offset: ?>>
    %r = arith.muli %ty, %c8 : index
    %q = arith.muli %tx, %c8 : index
    %a_t = memref.subview %a_wg[%r, 0] [8, 256] [1, 1] : memref<128x256xbf16, strided<[256, 1], offset: ?>> to memref<8x256xbf16, strided<[256, 1], offset: ?>>
    %b_t = memref.subview %b_wg[0, %q] [256, 8] [1, 1] : memref<256x64xbf16, strided<[256, 1], offset: ?>> to memref<256x8xbf16, strided<[256, 1], offset: ?>>
    %c_t = memref.subview %c_wg[%r, %q] [8, 8] [1, 1] : memref<128x64xf32, strided<[256, 1], offset: ?>> to memref<8x8xf32, strided<[256, 1], offset: ?>>
    %acc = memref.alloca() : memref<8x8xf32, #gpu.address_space<private>>
    linalg.fill ins(%zero : f32) outs(%acc : memref<8x8xf32, #gpu.address_space<private>>)
    linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["reduction", "parallel", "parallel"]} ins(%a_t, %b_t : memref<8x256xbf16, strided<[256, 1], offset: ?>>, memref<256x8xbf16, strided<[256, 1], offset: ?>>) outs(%acc : memref<8x8xf32, #gpu.address_space<private>>) {
    ^bb0(%x: bf16, %y: bf16, %s: f32):
      %xf = arith.extf %x : bf16 to f32
      %yf = arith.extf %y : bf16 to f32
      %p = arith.mulf %xf, %yf : f32
      %t = arith.addf %s, %p : f32
      linalg.yield %t : f32
    }
    linalg.copy ins(%acc : memref<8x8xf32, #gpu.address_space<private>>) outs(%c_t : memref<8x8xf32, strided<[256, 1], offset: ?>>)
    gpu.terminator
  }
  return
}
