// RUN: kiln-opt %s --split-input-file --kiln-spirv-emulate-warp-matrices --verify-diagnostics | FileCheck %s

// A warp's ldmatrix.x4 and mma.sync of f16 operands, and a cp.async with
// its group: the copy at once, the registers exchanged through a
// workgroup buffer between barriers, no NVVM, NVGPU or LLVM op left.
// CHECK-LABEL: func.func @mma_f16
// CHECK: gpu.launch
// CHECK: %[[EXCHANGE:.*]] = memref.alloc() : memref<1x32x9xi32, #gpu.address_space<workgroup>>
// The copy: 8 values, one at a time.
// CHECK-COUNT-8: memref.store {{.*}} : memref<16x16xf16, #gpu.address_space<workgroup>>
// The ldmatrix: each lane's two indices, a barrier, each lane's 8 values
// from the rows the lanes gave, a barrier.
// CHECK: memref.store {{.*}}, %[[EXCHANGE]]
// CHECK: memref.store {{.*}}, %[[EXCHANGE]]
// CHECK-NEXT: gpu.barrier
// CHECK-COUNT-8: memref.load {{.*}} : memref<16x16xf16, #gpu.address_space<workgroup>>
// CHECK: gpu.barrier
// The mma.sync: 6 registers, a barrier, 4 sums of 16 products (unrolled:
// lavapipe caps a shader's loop iterations), a barrier.
// CHECK-COUNT-6: memref.store {{.*}}, %[[EXCHANGE]]
// CHECK-NEXT: gpu.barrier
// CHECK-COUNT-64: math.fma
// CHECK-NOT: math.fma
// CHECK: gpu.barrier
// CHECK-NOT: nvvm.
// CHECK-NOT: nvgpu.
// CHECK-NOT: llvm.
// CHECK: gpu.terminator
func.func @mma_f16(%global: memref<16x16xf16>, %out: memref<32x4xf32>) {
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    %c0 = arith.constant 0 : index
    %c8 = arith.constant 8 : index
    %zero = arith.constant 0.0 : f32
    %chunk = memref.alloc() : memref<16x16xf16, #gpu.address_space<workgroup>>
    %row = arith.remui %tx, %c8 : index
    %token = nvgpu.device_async_copy %global[%row, %c0], %chunk[%row, %c0], 8 {bypassL1}
        : memref<16x16xf16> to memref<16x16xf16, #gpu.address_space<workgroup>>
    nvvm.cp.async.commit.group
    nvvm.cp.async.wait.group 0
    gpu.barrier
    %m = nvgpu.ldmatrix %chunk[%row, %c0] {numTiles = 4 : i32, transpose = false}
        : memref<16x16xf16, #gpu.address_space<workgroup>> -> vector<4x2xf16>
    %r0 = vector.extract %m[0] : vector<2xf16> from vector<4x2xf16>
    %r1 = vector.extract %m[1] : vector<2xf16> from vector<4x2xf16>
    %r2 = vector.extract %m[2] : vector<2xf16> from vector<4x2xf16>
    %r3 = vector.extract %m[3] : vector<2xf16> from vector<4x2xf16>
    %d = nvvm.mma.sync A[%r0, %r1, %r2, %r3] B[%r0, %r1] C[%zero, %zero, %zero, %zero]
        {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>,
         shape = #nvvm.shape<m = 16, n = 8, k = 16>}
        : (vector<2xf16>, vector<2xf16>, f32) -> !llvm.struct<(f32, f32, f32, f32)>
    %e0 = llvm.extractvalue %d[0] : !llvm.struct<(f32, f32, f32, f32)>
    memref.store %e0, %out[%tx, %c0] : memref<32x4xf32>
    gpu.terminator
  }
  return
}

// -----

// A warp instruction needs whole warps.
func.func @partial_warp(%chunk: memref<16x16xf16, #gpu.address_space<workgroup>>) {
  %c1 = arith.constant 1 : index
  %c48 = arith.constant 48 : index
  // expected-error @+1 {{kiln-spirv-emulate-warp-matrices: warp instructions in a workgroup that is not a whole number of warps of 32 threads}}
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c48, %sy = %c1, %sz = %c1) {
    %c0 = arith.constant 0 : index
    %m = nvgpu.ldmatrix %chunk[%c0, %c0] {numTiles = 1 : i32, transpose = false}
        : memref<16x16xf16, #gpu.address_space<workgroup>> -> vector<1x2xf16>
    gpu.terminator
  }
  return
}

// -----

// A shuffle in a launch of warp instructions (attention's row maxima): the
// value's bits in the exchange buffer, a barrier, the partner's (lane xor
// 2) loaded, a barrier.
// CHECK-LABEL: func.func @shuffle_xor
// CHECK: %[[EXCHANGE:.*]] = memref.alloc() : memref<2x32x9xi32, #gpu.address_space<workgroup>>
// CHECK: %[[WORD:.*]] = arith.bitcast %{{.*}} : f32 to i32
// CHECK: memref.store %[[WORD]], %[[EXCHANGE]][%[[WARP:.*]], %[[LANE:.*]], %c0{{.*}}]
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: %[[MINE:.*]] = arith.index_cast %[[LANE]] : index to i32
// CHECK-NEXT: %[[PARTNER:.*]] = arith.xori %[[MINE]], %c2_i32
// CHECK-NEXT: %[[FROM:.*]] = arith.index_cast %[[PARTNER]] : i32 to index
// CHECK: %[[GOT:.*]] = memref.load %[[EXCHANGE]][%[[WARP]], %[[FROM]], %c0{{.*}}]
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: %[[VALUE:.*]] = arith.bitcast %[[GOT]] : i32 to f32
// CHECK-NEXT: arith.maximumf %{{.*}}, %[[VALUE]]
// CHECK-NOT: gpu.shuffle
// CHECK: gpu.terminator
func.func @shuffle_xor(%x: f32, %out: memref<64xf32>) {
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c64, %sy = %c1, %sz = %c1) {
    %c2_i32 = arith.constant 2 : i32
    %c32_i32 = arith.constant 32 : i32
    nvvm.cp.async.commit.group
    %other, %valid = gpu.shuffle xor %x, %c2_i32, %c32_i32 : f32
    %m = arith.maximumf %x, %other : f32
    memref.store %m, %out[%tx] : memref<64xf32>
    gpu.terminator
  }
  return
}

// -----

// A shuffle other than an xor over the warp.
func.func @shuffle_down(%x: f32, %out: memref<32xf32>) {
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    %c1_i32 = arith.constant 1 : i32
    %c32_i32 = arith.constant 32 : i32
    nvvm.cp.async.commit.group
    // expected-error @+1 {{kiln-spirv-emulate-warp-matrices: a gpu.shuffle other than an xor of 32 bits by a constant under 32 over a warp of 32, its validity unread}}
    %other, %valid = gpu.shuffle down %x, %c1_i32, %c32_i32 : f32
    memref.store %other, %out[%tx] : memref<32xf32>
    gpu.terminator
  }
  return
}

// -----

// An mma.sync it does not know: f64.
func.func @mma_f64(%x: f64) {
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    // expected-error @+1 {{kiln-spirv-emulate-warp-matrices: an mma.sync of operand types it does not know}}
    %d = nvvm.mma.sync A[%x] B[%x] C[%x, %x]
        {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>,
         shape = #nvvm.shape<m = 8, n = 8, k = 4>}
        : (f64, f64, f64) -> !llvm.struct<(f64, f64)>
    gpu.terminator
  }
  return
}

// -----

// mma.sp's sparsity selector must be known: it names the lanes that hold
// the metadata.
func.func @sparse_selector(%v: vector<2xf16>, %e: i32, %selector: i32) {
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    %zero = arith.constant 0.0 : f32
    // expected-error @+1 {{kiln-spirv-emulate-warp-matrices: an mma.sp other than m16n8k32 of f16 or bf16 with a constant sparsity selector}}
    %d = nvvm.mma.sp.sync A[%v, %v, %v, %v] B[%v, %v, %v, %v] C[%zero, %zero, %zero, %zero]
        sparseMetadata[%e] selector[%selector]
        {multiplicandAPtxType = #nvvm.mma_type<f16>, multiplicandBPtxType = #nvvm.mma_type<f16>,
         shape = #nvvm.shape<m = 16, n = 8, k = 32>}
        : (vector<2xf16>, vector<2xf16>, f32) -> !llvm.struct<(f32, f32, f32, f32)>
    gpu.terminator
  }
  return
}

// -----

// A wgmma reads its operands through descriptors of buffers' addresses;
// the emulation needs to know which buffer.
func.func @wgmma_descriptor(%descA: i64, %descB: i64, %x: f32) {
  %c1 = arith.constant 1 : index
  %c128 = arith.constant 128 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {
    %p = llvm.mlir.poison : !llvm.struct<(f32, f32, f32, f32)>
    %a0 = llvm.insertvalue %x, %p[0] : !llvm.struct<(f32, f32, f32, f32)>
    %a1 = llvm.insertvalue %x, %a0[1] : !llvm.struct<(f32, f32, f32, f32)>
    %a2 = llvm.insertvalue %x, %a1[2] : !llvm.struct<(f32, f32, f32, f32)>
    %acc = llvm.insertvalue %x, %a2[3] : !llvm.struct<(f32, f32, f32, f32)>
    // expected-error @+1 {{kiln-spirv-emulate-warp-matrices: a wgmma descriptor not made from one buffer's address}}
    %d = nvvm.wgmma.mma_async %descA, %descB, %acc,
        #nvvm.shape<m = 64, n = 8, k = 16>,
        D [<f32>, <one>, <wrapped>],
        A [<f16>, <one>, <row>],
        B [<f16>, <one>, <col>]
        : !llvm.struct<(f32, f32, f32, f32)> -> !llvm.struct<(f32, f32, f32, f32)>
    gpu.terminator
  }
  return
}
