// RUN: kiln-opt %s --split-input-file "--kiln-cuda-attention-mma=max-scores-bytes=0 type=f16" --canonicalize --cse | FileCheck %s
// RUN: kiln-opt %s --split-input-file "--kiln-cuda-attention-mma=max-scores-bytes=0 type=bf16" --canonicalize --cse | FileCheck %s --check-prefix=BF16
// RUN: kiln-opt %s --split-input-file "--kiln-cuda-attention-mma=max-scores-bytes=0 type=f16 report-placement=true" -o /dev/null 2>&1 | FileCheck %s --check-prefix=REPORT
// RUN: kiln-opt %s --split-input-file --kiln-cuda-attention-mma=type=f16 | FileCheck %s --check-prefix=SMALL
// RUN: not kiln-opt %s --split-input-file --kiln-cuda-attention-mma=type=f32 2>&1 | FileCheck %s --check-prefix=TYPE
// RUN: kiln-opt %s --split-input-file --kiln-cuda-attention-mma=max-scores-bytes=0 --canonicalize --cse | FileCheck %s --check-prefix=HALF
// RUN: kiln-opt %s --split-input-file "--kiln-cuda-attention-mma=max-scores-bytes=0 report-placement=true" -o /dev/null 2>&1 | FileCheck %s --check-prefix=HALF-REPORT
// TYPE: error: kiln-cuda-attention-mma: type 'f32' is not f16 or bf16 (or empty: the 16-bit type of Q, K and V)

// 2 heads of 64 queries and 64 keys, heads of 16, values of 8, a mask of
// one head: a workgroup per head and 64 rows, 4 warps; 32 keys a step.
// Under the default limit (64 MiB of scores; these take 32 KiB), nothing
// changes.
// SMALL-LABEL: func.func @heads
// SMALL: kiln.attention
// REPORT: remark: placement: attention as one kernel on the tensor cores (mma.sync.m16n8k16, f16), a warp per 16 query rows over 64 keys, 32 a step, its scores never written out
// Without a type (no --precision), f32 operands are left as they are.
// HALF-REPORT: remark: placement: attention not on the tensor cores: its Q, K and V are not 16-bit values of one type (--precision=f16 or bf16 rounds them)
// HALF-LABEL: func.func @heads
// HALF: kiln.attention
// CHECK-LABEL: func.func @heads
// CHECK-NOT: kiln.attention
// CHECK: scf.forall (%[[HEAD:.*]], %{{.*}}) = (0, 0) to (2, 64) step (1, 64) shared_outs(%[[OUT:.*]] = %{{.*}})
// The block's 64 x 8 results as the lanes write them: [warp, row half,
// group; column tile, quad, pair].
// CHECK: %[[BLOCK:.*]] = tensor.expand_shape %{{.*}} {{\[}}[0, 1, 2], [3, 4, 5]] output_shape [4, 2, 8, 1, 4, 2] : tensor<64x8xf32> into tensor<4x2x8x1x4x2xf32>
// A step's keys and values staged in the workgroup's buffers, f16, each
// row 8 values longer: K [32 keys][16 + 8], V [32 keys][8 + 8].
// CHECK: %[[KS:.*]] = memref.alloc() {alignment = 16 : i64} : memref<32x24xf16, #gpu.address_space<workgroup>>
// CHECK: %[[VS:.*]] = memref.alloc() {alignment = 16 : i64} : memref<32x16xf16, #gpu.address_space<workgroup>>
// CHECK: scf.forall (%[[T:.*]]) in (128) shared_outs(%[[LANES:.*]] = %[[BLOCK]])
// The query's A fragment (4 registers of two f16), once.
// CHECK-COUNT-4: llvm.bitcast %{{.*}} : i32 to vector<2xf16>
// CHECK: %[[KEYS:.*]]:8 = scf.for %[[J0:.*]] = %c0 to %c64 step %c32 iter_args({{.*}}) -> (f32, f32, f32, f32, f32, f32, f32, f32)
// Each of the 128 threads copies 4 of the step's 512 values of K^T (as
// K^T holds them, adjacent threads adjacent keys) and 2 of V's 256 (a
// key's values adjacent), rounded; then a barrier.
// CHECK: %[[KEY:.*]] = affine.apply #{{.*}}()[%[[T]]]
// CHECK: %[[J:.*]] = affine.apply #{{.*}}()[%[[J0]], %[[T]]]
// CHECK: %[[VALUE:.*]] = tensor.extract %{{.*}}[%{{.*}}, %[[D:.*]], %[[J]]] : tensor<2x16x64xf32>
// CHECK: %[[ROUNDED:.*]] = arith.truncf %[[VALUE]] : f32 to f16
// CHECK: memref.store %[[ROUNDED]], %[[KS]][%[[KEY]], %[[D]]]
// CHECK-COUNT-3: memref.store %{{.*}}, %[[KS]]
// CHECK-COUNT-2: memref.store %{{.*}}, %[[VS]]
// CHECK-NOT: nvgpu.ldmatrix
// CHECK: gpu.barrier
// S = Q K^T: 4 tiles of 8 keys, from zero, their B fragments by two
// ldmatrix.x4 of the staged K.
// CHECK: nvgpu.ldmatrix %[[KS]][{{.*}}] {numTiles = 4 : i32, transpose = false}
// CHECK-COUNT-2: nvvm.mma.sync A[{{.*}}] B[{{.*}}] C[%cst{{.*}}, %cst{{.*}}, %cst{{.*}}, %cst{{.*}}] {{.*}}shape = #nvvm.shape<m = 16, n = 8, k = 16>
// CHECK: nvgpu.ldmatrix %[[KS]][{{.*}}] {numTiles = 4 : i32, transpose = false}
// CHECK-COUNT-2: nvvm.mma.sync A[{{.*}}] B[{{.*}}] C[%cst{{.*}}, %cst{{.*}}, %cst{{.*}}, %cst{{.*}}] {{.*}}shape = #nvvm.shape<m = 16, n = 8, k = 16>
// Scaled, masked (the mask's one head at 0), each row's maximum over the
// quad.
// CHECK: arith.mulf
// CHECK: tensor.extract %{{.*}}[%c0,
// CHECK: gpu.shuffle  xor %{{.*}}, %c1_i32, %c32_i32 : f32
// CHECK: gpu.shuffle  xor %{{.*}}, %c2_i32, %c32_i32 : f32
// CHECK: math.exp
// O = O alpha + P V: P's 4 registers from S, per 16 keys; V's B
// fragment (one tile of 8 columns) by an ldmatrix.x2.trans of the staged
// V. A barrier before the next step's keys replace these.
// CHECK: arith.truncf %{{.*}} : f32 to f16
// CHECK: nvgpu.ldmatrix %[[VS]][{{.*}}] {numTiles = 2 : i32, transpose = true}
// CHECK: nvvm.mma.sync A[{{.*}}] B[{{.*}}] C[%{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}]
// CHECK: nvgpu.ldmatrix %[[VS]][{{.*}}] {numTiles = 2 : i32, transpose = true}
// CHECK: nvvm.mma.sync A[{{.*}}] B[{{.*}}] C[%{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}]
// CHECK-NOT: nvvm.mma.sync
// CHECK: gpu.barrier
// CHECK-NEXT: scf.yield
// The lanes' sums of each row added over the quad; O / l.
// CHECK: gpu.shuffle  xor %[[KEYS]]#2, %c1_i32
// CHECK: gpu.shuffle  xor %[[KEYS]]#3, %c1_i32
// CHECK: arith.divf %[[KEYS]]#4
// CHECK: %[[MINE:.*]] = tensor.from_elements {{.*}} : tensor<1x2x1x1x1x2xf32>
// CHECK: tensor.parallel_insert_slice %[[MINE]] into %[[LANES]][%{{.*}}, 0, %{{.*}}, 0, %{{.*}}, 0] [1, 2, 1, 1, 1, 2] [1, 1, 1, 1, 1, 1]
// CHECK: %[[ROWS:.*]] = tensor.collapse_shape %{{.*}} {{\[}}[0, 1, 2], [3, 4, 5]] : tensor<4x2x8x1x4x2xf32> into tensor<64x8xf32>
// CHECK: tensor.parallel_insert_slice %[[ROWS]] into %[[OUT]][%[[HEAD]], 0, 0] [1, 64, 8] [1, 1, 1]
// bf16 registers are i32s.
// BF16-LABEL: func.func @heads
// BF16: arith.truncf %{{.*}} : f32 to bf16
// BF16: nvvm.mma.sync {{.*}} : (i32, i32, f32) -> !llvm.struct<(f32, f32, f32, f32)>
func.func @heads(%q: tensor<2x64x16xf32>, %kt: tensor<2x16x64xf32>, %v: tensor<2x64x8xf32>, %mask: tensor<1x64x64xf32>) -> tensor<2x64x8xf32> {
  %0 = kiln.attention %q, %kt, %v, %mask {scale = 2.500000e-01 : f32} : (tensor<2x64x16xf32>, tensor<2x16x64xf32>, tensor<2x64x8xf32>, tensor<1x64x64xf32>) -> tensor<2x64x8xf32>
  return %0 : tensor<2x64x8xf32>
}

// -----

// 96 queries: 2 warps a workgroup; 48 keys: 16 a step.
// REPORT: remark: placement: attention as one kernel on the tensor cores (mma.sync.m16n8k16, f16), a warp per 16 query rows over 48 keys, 16 a step, its scores never written out
// CHECK-LABEL: func.func @two_warps
// CHECK: scf.forall (%{{.*}}) = (0) to (96) step (32)
// CHECK: output_shape [2, 2, 8, 3, 4, 2]
// CHECK: scf.forall (%{{.*}}) in (64)
// CHECK: scf.for %{{.*}} = %c0 to %c48 step %c16
func.func @two_warps(%q: tensor<96x32xf32>, %kt: tensor<32x48xf32>, %v: tensor<48x24xf32>) -> tensor<96x24xf32> {
  %0 = kiln.attention %q, %kt, %v {scale = 1.000000e+00 : f32} : (tensor<96x32xf32>, tensor<32x48xf32>, tensor<48x24xf32>) -> tensor<96x24xf32>
  return %0 : tensor<96x24xf32>
}

// -----

// Sizes that are not whole blocks, steps and tiles are padded: 50 queries
// in a block of 64 (a padding row read at row 49, never written out: the
// result is a slice of the padded one), 40 keys in steps of 32 (a padding
// key's score -inf), heads of 24 in two k steps of 16 (the padding steps
// 0), values of 12 in two tiles of 8.
// REPORT: remark: placement: attention as one kernel on the tensor cores (mma.sync.m16n8k16, f16), a warp per 16 query rows over 40 keys, 32 a step, its scores never written out; padded to 64 queries, 64 keys, heads of 32 + 16
// CHECK-LABEL: func.func @padded
// CHECK: %[[ALL:.*]] = scf.forall (%{{.*}}) = (0) to (64) step (64) shared_outs(%{{.*}} = %{{.*}}) -> (tensor<64x16xf32>)
// CHECK: arith.minui %{{.*}}, %c49
// CHECK: arith.minui %{{.*}}, %c23
// CHECK: arith.cmpi ult, %{{.*}}, %c24
// CHECK: scf.for %{{.*}} = %c0 to %c64 step %c32
// Staged K^T: padding keys read at key 39, padding head steps 0.
// CHECK: arith.minui %{{.*}}, %c23
// CHECK: arith.minui %{{.*}}, %c39
// CHECK: arith.cmpi ult, %{{.*}}, %c24
// CHECK: arith.select %{{.*}}, %{{.*}}, %cst
// CHECK: memref.store %{{.*}} : memref<32x40xf16, #gpu.address_space<workgroup>>
// Staged V: padding keys read at 39, padding columns at 11.
// CHECK: arith.minui %{{.*}}, %c39
// CHECK: arith.minui %{{.*}}, %c11
// CHECK: memref.store %{{.*}} : memref<32x24xf16, #gpu.address_space<workgroup>>
// CHECK: gpu.barrier
// CHECK: arith.cmpi ult, %{{.*}}, %c40
// CHECK: arith.select %{{.*}}, %{{.*}}, %cst
// CHECK: tensor.extract_slice %[[ALL]][0, 0] [50, 12] [1, 1] : tensor<64x16xf32> to tensor<50x12xf32>
func.func @padded(%q: tensor<50x24xf32>, %kt: tensor<24x40xf32>, %v: tensor<40x12xf32>) -> tensor<50x12xf32> {
  %0 = kiln.attention %q, %kt, %v {scale = 1.000000e+00 : f32} : (tensor<50x24xf32>, tensor<24x40xf32>, tensor<40x12xf32>) -> tensor<50x12xf32>
  return %0 : tensor<50x12xf32>
}

// -----

// Heads of more than 128 values stay for kiln-gpu-attention-rows, and the
// report says why.
// REPORT: remark: placement: attention not on the tensor cores: heads of 144 + 16 values, more than 128 each (registers)
// CHECK-LABEL: func.func @left
// CHECK: kiln.attention
func.func @left(%q: tensor<64x144xf32>, %kt: tensor<144x64xf32>, %v: tensor<64x16xf32>) -> tensor<64x16xf32> {
  %0 = kiln.attention %q, %kt, %v {scale = 1.000000e+00 : f32} : (tensor<64x144xf32>, tensor<144x64xf32>, tensor<64x16xf32>) -> tensor<64x16xf32>
  return %0 : tensor<64x16xf32>
}

// -----

// K^T as a Transpose of K: the keys are staged from K, adjacent threads
// reading a key's adjacent values; the transpose goes.
// REPORT: remark: placement: attention as one kernel on the tensor cores (mma.sync.m16n8k16, f16), a warp per 16 query rows over 32 keys
// CHECK-LABEL: func.func @keys_transposed
// CHECK-SAME: (%{{[a-z0-9]*}}: tensor<16x16xf32>, %[[K:[a-z0-9]*]]: tensor<32x16xf32>
// CHECK-NOT: kiln.transpose
// (One step of 32 keys: no loop.)
// CHECK: %[[VALUE:.*]] = tensor.extract %[[K]][%[[KEY:.*]], %[[D:.*]]] : tensor<32x16xf32>
// CHECK: %[[ROUNDED:.*]] = arith.truncf %[[VALUE]] : f32 to f16
// CHECK: memref.store %[[ROUNDED]], %{{.*}}[%[[KEY]], %[[D]]]
// CHECK: nvvm.mma.sync
// CHECK-NOT: kiln.transpose
func.func @keys_transposed(%q: tensor<16x16xf32>, %k: tensor<32x16xf32>, %v: tensor<32x8xf32>) -> tensor<16x8xf32> {
  %kt = kiln.transpose %k {perm = array<i64: 1, 0>} : tensor<32x16xf32> -> tensor<16x32xf32>
  %0 = kiln.attention %q, %kt, %v {scale = 1.000000e+00 : f32} : (tensor<16x16xf32>, tensor<16x32xf32>, tensor<32x8xf32>) -> tensor<16x8xf32>
  return %0 : tensor<16x8xf32>
}

// -----

// A half model's attention (kiln-fuse-attention: Q, K^T and V widened from
// f16): without a type, in f16. The kernel reads the f16 tensors before
// their widening (K through its transpose), each value exactly the mma's
// operand (no rounding, no widening left); the widenings and the transpose
// go. The lanes write their results rounded to f16 in place of the
// model's rounding of the result.
// HALF-REPORT: remark: placement: attention as one kernel on the tensor cores (mma.sync.m16n8k16, f16), a warp per 16 query rows over 64 keys
// HALF-LABEL: func.func @half_model
// HALF-SAME: (%[[Q:.*]]: tensor<2x64x16xf16>, %[[K:.*]]: tensor<2x64x16xf16>, %[[V:.*]]: tensor<2x64x8xf16>)
// HALF-NOT: kiln.transpose
// HALF-NOT: kiln.cast %arg
// HALF-NOT: arith.extf
// HALF-NOT: arith.truncf %{{.*}} : f32 to f16
// HALF: tensor.extract %[[Q]][{{.*}}] : tensor<2x64x16xf16>
// HALF: %[[KEY:.*]] = tensor.extract %[[K]][{{.*}}] : tensor<2x64x16xf16>
// HALF-NEXT: memref.store %[[KEY]]
// HALF: %[[VALUE:.*]] = tensor.extract %[[V]][{{.*}}] : tensor<2x64x8xf16>
// HALF-NEXT: memref.store %[[VALUE]]
// HALF: nvvm.mma.sync
// HALF: arith.truncf %{{.*}} : f32 to f16
// HALF: tensor.from_elements {{.*}} : tensor<1x2x1x1x1x2xf16>
// HALF-NOT: kiln.cast
// HALF: return %{{.*}} : tensor<2x64x8xf16>
func.func @half_model(%q: tensor<2x64x16xf16>, %k: tensor<2x64x16xf16>, %v: tensor<2x64x8xf16>) -> tensor<2x64x8xf16> {
  %kt = kiln.transpose %k {perm = array<i64: 0, 2, 1>} : tensor<2x64x16xf16> -> tensor<2x16x64xf16>
  %q32 = kiln.cast %q : tensor<2x64x16xf16> -> tensor<2x64x16xf32>
  %kt32 = kiln.cast %kt : tensor<2x16x64xf16> -> tensor<2x16x64xf32>
  %v32 = kiln.cast %v : tensor<2x64x8xf16> -> tensor<2x64x8xf32>
  %0 = kiln.attention %q32, %kt32, %v32 {scale = 2.500000e-01 : f32} : (tensor<2x64x16xf32>, tensor<2x16x64xf32>, tensor<2x64x8xf32>) -> tensor<2x64x8xf32>
  %1 = kiln.cast %0 : tensor<2x64x8xf32> -> tensor<2x64x8xf16>
  return %1 : tensor<2x64x8xf16>
}

// -----

// A bf16 model's: in bf16. One of Q, K, V in f32 (or in another 16-bit
// type) and the attention is left.
// HALF-REPORT: remark: placement: attention as one kernel on the tensor cores (mma.sync.m16n8k16, bf16)
// HALF-LABEL: func.func @half_bf16
// HALF: nvvm.mma.sync {{.*}} : (i32, i32, f32) -> !llvm.struct<(f32, f32, f32, f32)>
func.func @half_bf16(%q: tensor<64x16xbf16>, %kt: tensor<16x64xbf16>, %v: tensor<64x8xbf16>) -> tensor<64x8xf32> {
  %q32 = kiln.cast %q : tensor<64x16xbf16> -> tensor<64x16xf32>
  %kt32 = kiln.cast %kt : tensor<16x64xbf16> -> tensor<16x64xf32>
  %v32 = kiln.cast %v : tensor<64x8xbf16> -> tensor<64x8xf32>
  %0 = kiln.attention %q32, %kt32, %v32 {scale = 1.000000e+00 : f32} : (tensor<64x16xf32>, tensor<16x64xf32>, tensor<64x8xf32>) -> tensor<64x8xf32>
  return %0 : tensor<64x8xf32>
}

// -----

// HALF-REPORT: remark: placement: attention not on the tensor cores: its Q, K and V are not 16-bit values of one type
// HALF-LABEL: func.func @half_mixed
// HALF: kiln.attention
func.func @half_mixed(%q: tensor<64x16xf16>, %kt: tensor<16x64xbf16>, %v: tensor<64x8xf32>) -> tensor<64x8xf32> {
  %q32 = kiln.cast %q : tensor<64x16xf16> -> tensor<64x16xf32>
  %kt32 = kiln.cast %kt : tensor<16x64xbf16> -> tensor<16x64xf32>
  %0 = kiln.attention %q32, %kt32, %v {scale = 1.000000e+00 : f32} : (tensor<64x16xf32>, tensor<16x64xf32>, tensor<64x8xf32>) -> tensor<64x8xf32>
  return %0 : tensor<64x8xf32>
}
