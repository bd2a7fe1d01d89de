// RUN: kiln-opt %s --split-input-file --kiln-gpu-promote-operands=target=cuda-sm90a --kiln-cuda-wgmma --canonicalize --cse | FileCheck %s
// RUN: kiln-opt %s --split-input-file --kiln-gpu-promote-operands=target=cuda-sm90a --kiln-cuda-wgmma=report=true --kiln-cuda-mma-sync=report=true -o /dev/null 2>&1 | FileCheck %s --check-prefix=REPORT
// RUN: kiln-opt %s --split-input-file --kiln-gpu-promote-operands=target=cuda-sm90a --kiln-cuda-wgmma=overlap=false --canonicalize --cse | FileCheck %s --check-prefix=SERIAL
// RUN: not kiln-opt %s --split-input-file --kiln-gpu-promote-operands=target=cuda --kiln-cuda-wgmma=target=cuda -o /dev/null 2>&1 | FileCheck %s --check-prefix=SM80
// The inputs are kiln-cuda-mma-sync.mlir's (a thread's matmul as
// kiln-gpu-private-accumulators leaves it), staged by
// kiln-gpu-promote-operands as the pipeline does.
// REPORT: remark: placement: tensor cores (wgmma.m64n32k16, bf16), each warpgroup 64x32 of the 64x32 tile, a chunk's wgmma in flight while the next is staged
// REPORT: remark: placement: tensor cores (wgmma.m64n32k16, f16), each warpgroup 64x32 of the 64x32 tile, a chunk's wgmma in flight while the next is staged
// REPORT: remark: placement: tensor cores (wgmma.m64n64k16, bf16), each warpgroup 128x64 of the 128x64 tile, a chunk's wgmma in flight while the next is staged
// REPORT: remark: placement: tensor cores (wgmma.m64n48k16, bf16), each warpgroup 64x48 of the 64x48 tile, a chunk's wgmma in flight while the next is staged
// REPORT: remark: placement: tensor cores (wgmma.m64n32k16, bf16), each warpgroup 64x32 of the 64x32 tile, a chunk's wgmma in flight while the next is staged
// REPORT: remark: placement: tensor cores (wgmma.m64n256k16, bf16), each warpgroup 64x256 of the 64x256 tile, each chunk's wgmma waited for{{$}}
// REPORT: remark: placement: tensor cores (wgmma.m64n128k16, bf16), each warpgroup 64x128 of the 128x128 tile, each chunk's wgmma waited for{{$}}
// What wgmma leaves, mma.sync takes: 48 rows are no band of 64.
// REPORT: remark: placement: tensor cores (mma.sync.m16n8k16, f16), each warp 48x8 of the 48x32 tile
// REPORT-NOT: remark
// SM80: error: kiln-cuda-wgmma: target 'cuda' has no wgmma (it needs cuda-sm90a)
// With overlap=false, each chunk's wgmma are done before the loop goes
// on, the copies of a later chunk where the staging put them (after the
// barrier that starts the chunk, before the wgmma).
// SERIAL-LABEL: func.func @bf16_matmul
// SERIAL:   scf.for %{{.*}} = %c0 to %c256 step %c32 {
// SERIAL-NEXT: nvvm.cp.async.wait.group 2
// SERIAL-NEXT: gpu.barrier
// SERIAL:     nvgpu.device_async_copy
// SERIAL:     nvvm.cp.async.commit.group
// SERIAL-NEXT: nvvm.fence.proxy
// SERIAL-NEXT: gpu.barrier
// SERIAL:     nvvm.wgmma.commit.group.sync.aligned
// SERIAL-NEXT: nvvm.wgmma.wait.group.sync.aligned 0
// SERIAL-NEXT: }
// SERIAL-LABEL: func.func @two_buffers
// SERIAL:     nvvm.wgmma.commit.group.sync.aligned
// SERIAL-NEXT: nvvm.wgmma.wait.group.sync.aligned 0
// SERIAL-NEXT: scf.if
// SERIAL-NOT: nvvm.wgmma.wait.group.sync.aligned 1

// A 64x32 tile of a 256^3 bf16 matmul, 128 threads (one warpgroup), four
// chunks of 32 steps in flight (cp.async). A's chunk held its rows along
// lines (K-major): element (k, row) of copy c at bytes c * 4224 +
// (k / 8) * 1056 + row * 16 + (k % 8) * 2, so the halfword index
// k + 8 row + 520 (k / 8): k groups of 8 core matrices (1024 bytes) and a
// 32-byte gap (the 4 runs of a row and the next row's 4 in 8 bank
// quarters). B's held its columns along lines (MN-major): element
// (k, col) at bytes (k / 8) * 640 + (col / 8) * 160 + (k % 8) * 16 +
// (col % 8) * 2, a 32-byte gap after each core matrix. The else branch
// (a tile not on 16 bytes) stores single values to the same places.
// Descriptors: A's leading byte offset (along k) 1056, stride (along the
// rows) 128: 66 << 16 | 8 << 32 = 34364063744; B's 640 and 160:
// 40 << 16 | 10 << 32 = 42952294400; start addresses >> 4, the second 16
// steps 2 k groups on (A +132, B +80). B is read transposed (<row>).
// (The first chunks' copies, in a loop over their copy c: s0 = c.)
// CHECK-DAG: #[[A_AT:.*]] = affine_map<()[s0, s1, s2] -> (s0 * 2112 + s1 + s2 * 8 + (s1 floordiv 8) * 520)>
// CHECK-DAG: #[[B_AT:.*]] = affine_map<()[s0, s1, s2] -> (s0 * 1280 + s1 * 8 + s2 + (s1 floordiv 8) * 256 + (s2 floordiv 8) * 72)>
// CHECK-DAG: #[[A_COPY:.*]] = affine_map<()[s0, s1] -> (s0 floordiv 16 + (s1 floordiv 32) * 264 - ((s1 floordiv 32) floordiv 4) * 1056)>
// CHECK-DAG: #[[ROW0:.*]] = affine_map<()[s0, s1] -> (s1 * 2 + ((s0 + s1 * 8) floordiv 128) * 64 + ((s0 + s1 * 8) floordiv 32) * 8 - (((s0 + s1 * 8) floordiv 32) floordiv 4) * 64 + s0 floordiv 4)>
// CHECK-DAG: #[[COL0:.*]] = affine_map<()[s0] -> (s0 * 2 - (s0 floordiv 4) * 8)>
// CHECK-LABEL: func.func @bf16_matmul
// CHECK: gpu.launch {{.*}} threads(%[[TX:.*]], %[[TY:.*]], %{{.*}}) in
// CHECK:   %[[SUMS:.*]] = memref.alloc() {alignment = 16 : i64} : memref<64x32xf32, #gpu.address_space<workgroup>>
// CHECK:   %[[A:.*]] = memref.alloc() {alignment = 16 : i64} : memref<8448xbf16, #gpu.address_space<workgroup>>
// CHECK:   %[[B:.*]] = memref.alloc() {alignment = 16 : i64} : memref<5120xbf16, #gpu.address_space<workgroup>>
// CHECK-NOT: memref.alloc()
// CHECK:   scf.for %[[C:.*]] = %c0 to %c3 step %c1 {
// CHECK:     %[[AK:.*]] = arith.addi %{{.*}}, %[[K:.*]] : index
// CHECK-NEXT: %[[AT:.*]] = affine.apply #[[A_AT]]()[%[[C]], %[[K]], %[[ROW:.*]]]
// CHECK-NEXT: nvgpu.device_async_copy %{{.*}}[%[[ROW]], %[[AK]]], %[[A]][%[[AT]]], 8 {bypassL1}
// CHECK:     %[[BK:.*]] = arith.addi %{{.*}}, %[[STEP:.*]] : index
// CHECK-NEXT: %[[BT:.*]] = affine.apply #[[B_AT]]()[%[[C]], %[[STEP]], %[[COL:.*]]]
// CHECK-NEXT: nvgpu.device_async_copy %{{.*}}[%[[BK]], %[[COL]]], %[[B]][%[[BT]]], 8 {bypassL1}
// CHECK:   } else {
// CHECK:     %[[AT1:.*]] = affine.apply #[[A_AT]]()
// CHECK-NEXT: memref.store %{{.*}}, %[[A]][%[[AT1]]] : memref<8448xbf16, #gpu.address_space<workgroup>>
// CHECK:     %[[BT1:.*]] = affine.apply #[[B_AT]]()
// CHECK-NEXT: memref.store %{{.*}}, %[[B]][%[[BT1]]] : memref<5120xbf16, #gpu.address_space<workgroup>>
// CHECK:   %[[MINE:.*]] = memref.alloca() : memref<1x16xf32, #gpu.address_space<private>>
// CHECK:   linalg.fill ins(%{{.*}} : f32) outs(%[[MINE]]
// Per chunk: the thread's copies of it landed and fenced for the async
// proxy, a barrier, its wgmma; then the previous chunk's wgmma done (in
// flight until this chunk's are issued), a barrier, and only then the
// copies of the chunk 3 on, into the buffer the previous one held.
// CHECK:   scf.for %[[KK:.*]] = %c0 to %c256 step %c32 {
// CHECK-NEXT: nvvm.cp.async.wait.group 2
// CHECK-NEXT: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK-NEXT: gpu.barrier
// CHECK-NOT: nvgpu.device_async_copy
// CHECK:     %[[APTR:.*]] = memref.extract_aligned_pointer_as_index %[[A]]
// CHECK-NEXT: %[[ACOPY:.*]] = affine.apply #[[A_COPY]]()[%[[APTR]], %[[KK]]]
// CHECK:     nvvm.wgmma.fence.aligned
// CHECK:     arith.ori %{{.*}}, %c42952294400_i64 : i64
// CHECK:     arith.ori %{{.*}}, %c34364063744_i64 : i64
// CHECK:     %[[ACC:.*]] = memref.load %[[MINE]][%c0, %c0]
// CHECK-NEXT: llvm.insertvalue %[[ACC]]
// CHECK:     %[[D:.*]] = nvvm.wgmma.mma_async %{{.*}}, %{{.*}}, %{{.*}}, <m = 64, n = 32, k = 16>, D[<f32>, <one>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <row>] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>
// CHECK-NEXT: %[[D0:.*]] = llvm.extractvalue %[[D]][0]
// CHECK-NEXT: memref.store %[[D0]], %[[MINE]][%c0, %c0]
// CHECK:     arith.addi %{{.*}}, %c80_i64 : i64
// CHECK:     arith.addi %{{.*}}, %c132_i64 : i64
// CHECK:     nvvm.wgmma.mma_async
// CHECK-NOT: nvvm.wgmma.mma_async
// CHECK:     nvvm.wgmma.commit.group.sync.aligned
// CHECK-NEXT: nvvm.wgmma.wait.group.sync.aligned 1
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: scf.if
// CHECK:       nvgpu.device_async_copy %{{.*}}, %[[A]][%{{.*}}], 8 {bypassL1}
// CHECK:       nvgpu.device_async_copy %{{.*}}, %[[B]][%{{.*}}], 8 {bypassL1}
// CHECK:     nvvm.cp.async.commit.group
// CHECK-NEXT: }
// After the loop, the last chunk's wgmma done; register d to row
// 16 w + g + 8 ((d % 4) / 2), column 8 (d / 4) + 2 q + d % 2; a barrier;
// each thread's 4x4 into its accumulator.
// CHECK-NEXT: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK-NEXT: %[[R0:.*]] = affine.apply #[[ROW0]]()[%[[TX]], %[[TY]]]
// CHECK-NEXT: %[[C0:.*]] = affine.apply #[[COL0]]()[%[[TX]]]
// CHECK-NEXT: %[[S0:.*]] = memref.load %[[MINE]][%c0, %c0]
// CHECK-NEXT: memref.store %[[S0]], %[[SUMS]][%[[R0]], %[[C0]]]
// CHECK-COUNT-15: memref.store %{{.*}}, %[[SUMS]]
// CHECK-NEXT: gpu.barrier
// CHECK:     memref.subview %[[SUMS]]
// CHECK:     linalg.generic
// CHECK-NOT: bf16
// CHECK:     gpu.terminator
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

// B of (j, k), as a Linear's transposed weight: its chunk holds its
// columns along lines, K-major like A, read untransposed (<col>): element
// (k, col) at halfword k + 8 col + 264 (k / 8) (4 groups of core
// matrices, 544 bytes with the gap); descriptor 34 << 16 | 8 << 32.
// CHECK-DAG: #[[BK_AT:.*]] = affine_map<()[s0, s1, s2] -> (s0 * 1088 + s1 + s2 * 8 + (s1 floordiv 8) * 264)>
// CHECK-LABEL: func.func @b_k_major
// CHECK:   %[[B:.*]] = memref.alloc() {alignment = 16 : i64} : memref<4352xf16, #gpu.address_space<workgroup>>
// CHECK:   %[[BT:.*]] = affine.apply #[[BK_AT]]()[%{{.*}}, %[[K:.*]], %[[COL:.*]]]
// CHECK-NEXT: nvgpu.device_async_copy %{{.*}}[%[[COL]], %{{.*}}], %[[B]][%[[BT]]], 8 {bypassL1}
// CHECK:   arith.ori %{{.*}}, %c34361966592_i64 : i64
// CHECK:   nvvm.wgmma.mma_async {{.*}} A[<f16>, <one>, <row>], B[<f16>, <one>, <col>]
// CHECK:   arith.addi %{{.*}}, %c68_i64 : i64
#a = affine_map<(k, i, j) -> (i, k)>
#bt = affine_map<(k, i, j) -> (j, k)>
#c = affine_map<(k, i, j) -> (i, j)>
func.func @b_k_major(%a: memref<256x256xf16>, %b: memref<256x256xf16>, %c: memref<256x256xf32>) {
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
    %a_wg = memref.subview %a[%row, 0] [64, 256] [1, 1] : memref<256x256xf16> to memref<64x256xf16, strided<[256, 1], offset: ?>>
    %b_wg = memref.subview %b[%col, 0] [32, 256] [1, 1] : memref<256x256xf16> to memref<32x256xf16, strided<[256, 1], offset: ?>>
    %c_wg = memref.subview %c[%row, %col] [64, 32] [1, 1] : memref<256x256xf32> to memref<64x32xf32, strided<[256, 1], offset: ?>>
    %r = arith.muli %ty, %c4 : index
    %q = arith.muli %tx, %c4 : index
    %a_t = memref.subview %a_wg[%r, 0] [4, 256] [1, 1] : memref<64x256xf16, strided<[256, 1], offset: ?>> to memref<4x256xf16, strided<[256, 1], offset: ?>>
    %b_t = memref.subview %b_wg[%q, 0] [4, 256] [1, 1] : memref<32x256xf16, strided<[256, 1], offset: ?>> to memref<4x256xf16, strided<[256, 1], offset: ?>>
    %c_t = memref.subview %c_wg[%r, %q] [4, 4] [1, 1] : memref<64x32xf32, strided<[256, 1], offset: ?>> to memref<4x4xf32, strided<[256, 1], offset: ?>>
    %acc = memref.alloca() : memref<4x4xf32, #gpu.address_space<private>>
    linalg.fill ins(%zero : f32) outs(%acc : memref<4x4xf32, #gpu.address_space<private>>)
    linalg.generic {indexing_maps = [#a, #bt, #c], iterator_types = ["reduction", "parallel", "parallel"]} ins(%a_t, %b_t : memref<4x256xf16, strided<[256, 1], offset: ?>>, memref<4x256xf16, strided<[256, 1], offset: ?>>) outs(%acc : memref<4x4xf32, #gpu.address_space<private>>) {
    ^bb0(%x: f16, %y: f16, %s: f32):
      %xf = arith.extf %x : f16 to f32
      %yf = arith.extf %y : f16 to f32
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

// A 128x64 tile (one warpgroup, two bands of 64 rows: an m64n64k16 each
// per 16 steps, the second band's A 8 core-matrix rows on, +64 >> 4 ...
// 8 * 128 bytes: +64). Its sums (32 KiB) do not fit beside the chunks:
// they take their place, every buffer a view of one.
// CHECK-LABEL: func.func @sums_replace_chunks
// CHECK:   %[[ALL:.*]] = memref.alloc() {alignment = 16 : i64} : memref<{{[0-9]+}}xi8, #gpu.address_space<workgroup>>
// CHECK:   %[[SUMS:.*]] = memref.view %[[ALL]][%c0][] : memref<{{[0-9]+}}xi8, #gpu.address_space<workgroup>> to memref<128x64xf32, #gpu.address_space<workgroup>>
// CHECK:   memref.view %[[ALL]][%c0][] : {{.*}} to memref<{{[0-9]+}}xbf16, #gpu.address_space<workgroup>>
// CHECK:   memref.view %[[ALL]][%{{.*}}][] : {{.*}} to memref<{{[0-9]+}}xbf16, #gpu.address_space<workgroup>>
// CHECK:   memref.alloca() : memref<2x32xf32, #gpu.address_space<private>>
// CHECK:   scf.for
// CHECK:     nvvm.wgmma.mma_async {{.*}} <m = 64, n = 64, k = 16>
// CHECK:     arith.addi %{{.*}}, %c64_i64 : i64
// CHECK:     nvvm.wgmma.mma_async {{.*}} <m = 64, n = 64, k = 16>
// CHECK-COUNT-2: nvvm.wgmma.mma_async
// CHECK-NOT: nvvm.wgmma.mma_async
// CHECK:     nvvm.wgmma.wait.group.sync.aligned 1
// CHECK:     nvvm.cp.async.commit.group
// CHECK-NEXT: }
// Every warp done with the last chunk before the sums overwrite it.
// CHECK-NEXT: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK-NEXT: gpu.barrier
// CHECK-COUNT-64: memref.store %{{.*}}, %[[SUMS]]
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

// -----

// 48 columns: 6 core matrices per step of B's chunk, a run of each for 6
// consecutive threads; the gap after each core matrix a whole 16-byte line
// (32 bytes, as 128 / 6 rounds up), so the descriptor's offsets are whole
// lines: 960 along k, 160 along the columns (60 << 16 | 10 << 32).
// CHECK-DAG: #[[B48_AT:.*]] = affine_map<()[s0, s1, s2] -> (s0 * 1920 + s1 * 8 + s2 + (s1 floordiv 8) * 416 + (s2 floordiv 8) * 72)>
// CHECK-LABEL: func.func @cols48
// CHECK:   memref.alloc() {alignment = 16 : i64} : memref<7680xbf16, #gpu.address_space<workgroup>>
// CHECK:   affine.apply #[[B48_AT]]()
// CHECK:   arith.ori %{{.*}}, %c42953605120_i64 : i64
// CHECK:   nvvm.wgmma.mma_async {{.*}} <m = 64, n = 48, k = 16>
#a = affine_map<(k, i, j) -> (i, k)>
#b = affine_map<(k, i, j) -> (k, j)>
#c = affine_map<(k, i, j) -> (i, j)>
func.func @cols48(%a: memref<256x256xbf16>, %b: memref<256x256xbf16>, %c: memref<256x256xf32>) {
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %c48 = arith.constant 48 : index
  %c6 = arith.constant 6 : index
  %zero = arith.constant 0.0 : f32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c4, %gy = %c4, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c8, %sy = %c16, %sz = %c1) {
    %row = arith.muli %by, %c64 : index
    %col = arith.muli %bx, %c48 : index
    %a_wg = memref.subview %a[%row, 0] [64, 256] [1, 1] : memref<256x256xbf16> to memref<64x256xbf16, strided<[256, 1], offset: ?>>
    %b_wg = memref.subview %b[0, %col] [256, 48] [1, 1] : memref<256x256xbf16> to memref<256x48xbf16, strided<[256, 1], offset: ?>>
    %c_wg = memref.subview %c[%row, %col] [64, 48] [1, 1] : memref<256x256xf32> to memref<64x48xf32, strided<[256, 1], offset: ?>>
    %r = arith.muli %ty, %c4 : index
    %q = arith.muli %tx, %c6 : index
    %a_t = memref.subview %a_wg[%r, 0] [4, 256] [1, 1] : memref<64x256xbf16, strided<[256, 1], offset: ?>> to memref<4x256xbf16, strided<[256, 1], offset: ?>>
    %b_t = memref.subview %b_wg[0, %q] [256, 6] [1, 1] : memref<256x48xbf16, strided<[256, 1], offset: ?>> to memref<256x6xbf16, strided<[256, 1], offset: ?>>
    %c_t = memref.subview %c_wg[%r, %q] [4, 6] [1, 1] : memref<64x48xf32, strided<[256, 1], offset: ?>> to memref<4x6xf32, strided<[256, 1], offset: ?>>
    %acc = memref.alloca() : memref<4x6xf32, #gpu.address_space<private>>
    linalg.fill ins(%zero : f32) outs(%acc : memref<4x6xf32, #gpu.address_space<private>>)
    linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["reduction", "parallel", "parallel"]} ins(%a_t, %b_t : memref<4x256xbf16, strided<[256, 1], offset: ?>>, memref<256x6xbf16, strided<[256, 1], offset: ?>>) outs(%acc : memref<4x6xf32, #gpu.address_space<private>>) {
    ^bb0(%x: bf16, %y: bf16, %s: f32):
      %xf = arith.extf %x : bf16 to f32
      %yf = arith.extf %y : bf16 to f32
      %p = arith.mulf %xf, %yf : f32
      %t = arith.addf %s, %p : f32
      linalg.yield %t : f32
    }
    linalg.copy ins(%acc : memref<4x6xf32, #gpu.address_space<private>>) outs(%c_t : memref<4x6xf32, strided<[256, 1], offset: ?>>)
    gpu.terminator
  }
  return
}

// -----

// A's rows 260 values apart (not whole 16-byte runs): no cp.async, the
// next chunk loaded into registers before this chunk's wgmma and stored
// into the other of two buffers after them, once the previous chunk's
// wgmma (which read that buffer) are done in every warpgroup: wait_group
// 1, a barrier, the stores. The staging's barrier after the stores goes:
// the next chunk's fence and barrier order them before its wgmma.
// CHECK-LABEL: func.func @two_buffers
// CHECK-NOT: nvgpu.device_async_copy
// CHECK:   scf.for
// CHECK:     scf.if
// CHECK:       memref.load
// CHECK:     nvvm.fence.proxy
// CHECK-NEXT: gpu.barrier
// CHECK:     nvvm.wgmma.mma_async
// CHECK:     nvvm.wgmma.commit.group.sync.aligned
// CHECK-NEXT: nvvm.wgmma.wait.group.sync.aligned 1
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: scf.if
// CHECK:       memref.store
// CHECK-NOT: gpu.barrier
// CHECK:     nvvm.wgmma.wait.group.sync.aligned 0
// CHECK:   gpu.terminator
#a = affine_map<(k, i, j) -> (i, k)>
#b = affine_map<(k, i, j) -> (k, j)>
#c = affine_map<(k, i, j) -> (i, j)>
func.func @two_buffers(%a: memref<256x256xbf16, strided<[260, 1]>>, %b: memref<256x256xbf16>, %c: memref<256x256xf32>) {
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
    %a_wg = memref.subview %a[%row, 0] [64, 256] [1, 1] : memref<256x256xbf16, strided<[260, 1]>> to memref<64x256xbf16, strided<[260, 1], offset: ?>>
    %b_wg = memref.subview %b[0, %col] [256, 32] [1, 1] : memref<256x256xbf16> to memref<256x32xbf16, strided<[256, 1], offset: ?>>
    %c_wg = memref.subview %c[%row, %col] [64, 32] [1, 1] : memref<256x256xf32> to memref<64x32xf32, strided<[256, 1], offset: ?>>
    %r = arith.muli %ty, %c4 : index
    %q = arith.muli %tx, %c4 : index
    %a_t = memref.subview %a_wg[%r, 0] [4, 256] [1, 1] : memref<64x256xbf16, strided<[260, 1], offset: ?>> to memref<4x256xbf16, strided<[260, 1], offset: ?>>
    %b_t = memref.subview %b_wg[0, %q] [256, 4] [1, 1] : memref<256x32xbf16, strided<[256, 1], offset: ?>> to memref<256x4xbf16, strided<[256, 1], offset: ?>>
    %c_t = memref.subview %c_wg[%r, %q] [4, 4] [1, 1] : memref<64x32xf32, strided<[256, 1], offset: ?>> to memref<4x4xf32, strided<[256, 1], offset: ?>>
    %acc = memref.alloca() : memref<4x4xf32, #gpu.address_space<private>>
    linalg.fill ins(%zero : f32) outs(%acc : memref<4x4xf32, #gpu.address_space<private>>)
    linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["reduction", "parallel", "parallel"]} ins(%a_t, %b_t : memref<4x256xbf16, strided<[260, 1], offset: ?>>, memref<256x4xbf16, strided<[256, 1], offset: ?>>) outs(%acc : memref<4x4xf32, #gpu.address_space<private>>) {
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

// One buffer, as a 64x256 tile's chunks take (m64n256k16, 128 sums a
// thread; no room in registers for the next chunk): each chunk's wgmma
// are done before the barrier after which the next chunk is stored.
// CHECK-LABEL: func.func @one_buffer
// CHECK:   scf.for
// CHECK:     nvvm.wgmma.mma_async {{.*}} <m = 64, n = 256, k = 16>
// CHECK:     nvvm.wgmma.commit.group.sync.aligned
// CHECK-NEXT: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: }
// CHECK-NOT: nvvm.wgmma.wait
// CHECK:   gpu.terminator
#a = affine_map<(k, i, j) -> (i, k)>
#b = affine_map<(k, i, j) -> (k, j)>
#c = affine_map<(k, i, j) -> (i, j)>
func.func @one_buffer(%a: memref<256x256xbf16, strided<[260, 1]>>, %b: memref<256x256xbf16>, %c: memref<256x256xf32>) {
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  %zero = arith.constant 0.0 : f32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c4, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c8, %sy = %c16, %sz = %c1) {
    %row = arith.muli %by, %c64 : index
    %a_wg = memref.subview %a[%row, 0] [64, 256] [1, 1] : memref<256x256xbf16, strided<[260, 1]>> to memref<64x256xbf16, strided<[260, 1], offset: ?>>
    %c_wg = memref.subview %c[%row, 0] [64, 256] [1, 1] : memref<256x256xf32> to memref<64x256xf32, strided<[256, 1], offset: ?>>
    %r = arith.muli %ty, %c4 : index
    %q = arith.muli %tx, %c32 : index
    %a_t = memref.subview %a_wg[%r, 0] [4, 256] [1, 1] : memref<64x256xbf16, strided<[260, 1], offset: ?>> to memref<4x256xbf16, strided<[260, 1], offset: ?>>
    %b_t = memref.subview %b[0, %q] [256, 32] [1, 1] : memref<256x256xbf16> to memref<256x32xbf16, strided<[256, 1], offset: ?>>
    %c_t = memref.subview %c_wg[%r, %q] [4, 32] [1, 1] : memref<64x256xf32, strided<[256, 1], offset: ?>> to memref<4x32xf32, strided<[256, 1], offset: ?>>
    %acc = memref.alloca() : memref<4x32xf32, #gpu.address_space<private>>
    linalg.fill ins(%zero : f32) outs(%acc : memref<4x32xf32, #gpu.address_space<private>>)
    linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["reduction", "parallel", "parallel"]} ins(%a_t, %b_t : memref<4x256xbf16, strided<[260, 1], offset: ?>>, memref<256x32xbf16, strided<[256, 1], offset: ?>>) outs(%acc : memref<4x32xf32, #gpu.address_space<private>>) {
    ^bb0(%x: bf16, %y: bf16, %s: f32):
      %xf = arith.extf %x : bf16 to f32
      %yf = arith.extf %y : bf16 to f32
      %p = arith.mulf %xf, %yf : f32
      %t = arith.addf %s, %p : f32
      linalg.yield %t : f32
    }
    linalg.copy ins(%acc : memref<4x32xf32, #gpu.address_space<private>>) outs(%c_t : memref<4x32xf32, strided<[256, 1], offset: ?>>)
    gpu.terminator
  }
  return
}

// -----

// One buffer with the next chunk in registers (a 128x128 tile of two
// warpgroups, a band of 64 rows each; rows not whole 16-byte runs, and
// two buffers would pass the half of 48 KiB they may take): each chunk's
// wgmma are done, then the barrier after which every thread stores the
// next chunk over the one they read.
// CHECK-LABEL: func.func @one_buffer_prefetch
// CHECK:   scf.for
// CHECK:     scf.if
// CHECK:       memref.load
// CHECK:     nvvm.wgmma.mma_async {{.*}} <m = 64, n = 128, k = 16>
// CHECK:     nvvm.wgmma.commit.group.sync.aligned
// CHECK-NEXT: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: scf.if
// CHECK:       memref.store
// CHECK:     gpu.barrier
// CHECK-NEXT: }
// CHECK-NOT: nvvm.wgmma.wait
// CHECK:   gpu.terminator
#a = affine_map<(k, i, j) -> (i, k)>
#b = affine_map<(k, i, j) -> (k, j)>
#c = affine_map<(k, i, j) -> (i, j)>
func.func @one_buffer_prefetch(%a: memref<256x256xbf16, strided<[260, 1]>>, %b: memref<256x256xbf16>, %c: memref<256x256xf32>) {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %c128 = arith.constant 128 : index
  %zero = arith.constant 0.0 : f32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c2, %gy = %c2, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c16, %sy = %c16, %sz = %c1) {
    %row = arith.muli %by, %c128 : index
    %col = arith.muli %bx, %c128 : index
    %a_wg = memref.subview %a[%row, 0] [128, 256] [1, 1] : memref<256x256xbf16, strided<[260, 1]>> to memref<128x256xbf16, strided<[260, 1], offset: ?>>
    %b_wg = memref.subview %b[0, %col] [256, 128] [1, 1] : memref<256x256xbf16> to memref<256x128xbf16, strided<[256, 1], offset: ?>>
    %c_wg = memref.subview %c[%row, %col] [128, 128] [1, 1] : memref<256x256xf32> to memref<128x128xf32, strided<[256, 1], offset: ?>>
    %r = arith.muli %ty, %c8 : index
    %q = arith.muli %tx, %c8 : index
    %a_t = memref.subview %a_wg[%r, 0] [8, 256] [1, 1] : memref<128x256xbf16, strided<[260, 1], offset: ?>> to memref<8x256xbf16, strided<[260, 1], offset: ?>>
    %b_t = memref.subview %b_wg[0, %q] [256, 8] [1, 1] : memref<256x128xbf16, strided<[256, 1], offset: ?>> to memref<256x8xbf16, strided<[256, 1], offset: ?>>
    %c_t = memref.subview %c_wg[%r, %q] [8, 8] [1, 1] : memref<128x128xf32, strided<[256, 1], offset: ?>> to memref<8x8xf32, strided<[256, 1], offset: ?>>
    %acc = memref.alloca() : memref<8x8xf32, #gpu.address_space<private>>
    linalg.fill ins(%zero : f32) outs(%acc : memref<8x8xf32, #gpu.address_space<private>>)
    linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["reduction", "parallel", "parallel"]} ins(%a_t, %b_t : memref<8x256xbf16, strided<[260, 1], offset: ?>>, memref<256x8xbf16, strided<[256, 1], offset: ?>>) outs(%acc : memref<8x8xf32, #gpu.address_space<private>>) {
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

// -----

// Left alone: 48 rows (no band of 64), which kiln-cuda-mma-sync takes;
// f32 operands; launches of 64 threads (no warpgroup).
// CHECK-LABEL: func.func @f16_guarded
// CHECK-NOT: nvvm.wgmma
// CHECK-LABEL: func.func @left_alone
// CHECK-NOT: nvvm.wgmma
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
