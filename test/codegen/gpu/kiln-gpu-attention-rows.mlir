// RUN: kiln-opt %s --split-input-file --verify-diagnostics "--kiln-gpu-attention-rows=max-scores-bytes=0 report-placement=true" --canonicalize --cse | FileCheck %s
// RUN: kiln-opt %s --split-input-file --kiln-gpu-attention-rows | FileCheck %s --check-prefix=SMALL
// RUN: kiln-opt %s --split-input-file --kiln-gpu-attention-rows=report-placement=true -o /dev/null 2>&1 | FileCheck %s --check-prefix=WHY
// RUN: kiln-opt %s --split-input-file "--kiln-gpu-attention-rows=max-scores-bytes=9223372036854775807 report-placement=true" -o /dev/null 2>&1 | FileCheck %s --check-prefix=FORCED

// A workgroup per batch entry (the batch dimensions are loops of the
// grid) and block of 64 query rows (100 rows: the second block has 36
// threads), a thread per row. The thread reads its query row (2 values),
// then walks the 81 keys (one a step: 81 is odd) carrying the running
// maximum, the sum and 3 weighted values: s = 0.5 * q.k + mask, the mask's broadcast dimensions
// read at 0. The kernel writes the op's result in place: no reshape.
// CHECK-DAG: #[[COUNT:.*]] = affine_map<(d0) -> (-d0 + 100, 64)>
// CHECK-DAG: #[[ROW:.*]] = affine_map<(d0)[s0] -> (d0 + s0)>
// CHECK-LABEL: func.func @rows
// CHECK-SAME: (%[[Q:.*]]: tensor<1x2x100x2xf32>, %[[KT:.*]]: tensor<1x2x2x81xf32>, %[[V:.*]]: tensor<1x2x81x3xf32>, %[[MASK:.*]]: tensor<1x1x1x81xf32>)
// CHECK-DAG: %[[NINF:.*]] = arith.constant 0xFF800000 : f32
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-DAG: %[[HALF:.*]] = arith.constant 5.000000e-01 : f32
// CHECK: %[[INIT:.*]] = tensor.empty() : tensor<1x2x100x3xf32>
// CHECK: %[[OUT:.*]] = scf.forall (%{{.*}}, %[[H:.*]], %[[FIRST:.*]]) = (0, 0, 0) to (1, 2, 100) step (1, 1, 64) shared_outs(%[[ALL:.*]] = %[[INIT]]) -> (tensor<1x2x100x3xf32>) {
// CHECK:   %[[THREADS:.*]] = affine.min #[[COUNT]](%[[FIRST]])
// CHECK:   %[[BLOCK:.*]] = tensor.extract_slice %[[ALL]][0, %[[H]], %[[FIRST]], 0] [1, 1, %[[THREADS]], 3]
// CHECK:   %[[ROWS:.*]] = scf.forall (%[[T:.*]]) in (%[[THREADS]]) shared_outs(%[[MINE:.*]] = %[[BLOCK]]) -> (tensor<1x1x?x3xf32>) {
// CHECK:     %[[I:.*]] = affine.apply #[[ROW]](%[[T]])[%[[FIRST]]]
// CHECK:     %[[SLOT:.*]] = tensor.extract_slice %[[MINE]][0, 0, %[[T]], 0] [1, 1, 1, 3]
// CHECK:     %[[Q0:.*]] = tensor.extract %[[Q]][%c0, %[[H]], %[[I]], %c0]
// CHECK:     %[[Q1:.*]] = tensor.extract %[[Q]][%c0, %[[H]], %[[I]], %c1]
// CHECK:     %[[R:.*]]:5 = scf.for %[[J:.*]] = %c0 to %c81 step %c1 iter_args(%[[M:.*]] = %[[NINF]], %[[L:.*]] = %[[ZERO]], %[[A0:.*]] = %[[ZERO]], %{{.*}} = %[[ZERO]], %{{.*}} = %[[ZERO]]) -> (f32, f32, f32, f32, f32) {
// CHECK:       %[[K0:.*]] = tensor.extract %[[KT]][%c0, %[[H]], %c0, %[[J]]]
// CHECK:       %[[D0:.*]] = math.fma %[[Q0]], %[[K0]], %[[ZERO]]
// CHECK:       %[[K1:.*]] = tensor.extract %[[KT]][%c0, %[[H]], %c1, %[[J]]]
// CHECK:       %[[D1:.*]] = math.fma %[[Q1]], %[[K1]], %[[D0]]
// CHECK:       %[[SCALED:.*]] = arith.mulf %[[D1]], %[[HALF]]
// CHECK:       %[[MK:.*]] = tensor.extract %[[MASK]][%c0, %c0, %c0, %[[J]]]
// CHECK:       %[[S:.*]] = arith.addf %[[SCALED]], %[[MK]]
// CHECK:       %[[NEXT:.*]] = arith.maximumf %[[M]], %[[S]]
// CHECK:       %[[ISNINF:.*]] = arith.cmpf oeq, %[[NEXT]], %[[NINF]]
// CHECK:       %[[BASE:.*]] = arith.select %[[ISNINF]], %[[ZERO]], %[[NEXT]]
// CHECK:       %[[OLD:.*]] = arith.subf %[[M]], %[[BASE]]
// CHECK:       %[[ALPHA:.*]] = math.exp %[[OLD]]
// CHECK:       %[[KEPTL:.*]] = arith.mulf %[[L]], %[[ALPHA]]
// CHECK:       %[[NEW:.*]] = arith.subf %[[S]], %[[BASE]]
// CHECK:       %[[P:.*]] = math.exp %[[NEW]]
// CHECK:       %[[SUM:.*]] = arith.addf %[[KEPTL]], %[[P]]
// CHECK:       %[[KEPT:.*]] = arith.mulf %[[A0]], %[[ALPHA]]
// CHECK:       %[[V0:.*]] = tensor.extract %[[V]][%c0, %[[H]], %[[J]], %c0]
// CHECK:       %[[ACC0:.*]] = math.fma %[[P]], %[[V0]], %[[KEPT]]
// CHECK:       scf.yield %[[NEXT]], %[[SUM]], %[[ACC0]], %{{.*}}, %{{.*}}
// CHECK:     }
// CHECK:     %[[OUT0:.*]] = arith.divf %[[R]]#2, %[[R]]#1
// CHECK:     tensor.insert %[[OUT0]] into %[[SLOT]][%c0, %c0, %c0, %c0]
// CHECK-COUNT-2: arith.divf
// CHECK:     tensor.parallel_insert_slice %{{.*}} into %[[MINE]][0, 0, %[[T]], 0] [1, 1, 1, 3]
// CHECK:   } {mapping = [#gpu.thread<x>]}
// CHECK:   tensor.parallel_insert_slice %[[ROWS]] into %[[ALL]][0, %[[H]], %[[FIRST]], 0] [1, 1, %[[THREADS]], 3]
// CHECK: } {mapping = [#gpu.block<linear_dim_2>, #gpu.block<linear_dim_1>, #gpu.block<linear_dim_0>]}
// CHECK: return %[[OUT]]
// By default, scores of 63.3 KiB stay unfused (the lowering's), and the
// report says why; so it does when unfused is asked for.
// SMALL-LABEL: func.func @rows
// SMALL: kiln.attention
// WHY: remark: placement: attention unfused, its scores written out (63.3 KiB): one kernel takes attention whose scores exceed 64.0 MiB
// FORCED: remark: placement: attention unfused, its scores written out (63.3 KiB): --gpu-attention=unfused
func.func @rows(%q: tensor<1x2x100x2xf32>, %kt: tensor<1x2x2x81xf32>, %v: tensor<1x2x81x3xf32>, %mask: tensor<1x1x1x81xf32>) -> tensor<1x2x100x3xf32> {
  // expected-remark @+1 {{placement: attention as one kernel, a thread per query row over 81 keys, its scores never written out (they would take 63.3 KiB)}}
  %r = kiln.attention %q, %kt, %v, %mask {scale = 5.000000e-01 : f32} : (tensor<1x2x100x2xf32>, tensor<1x2x2x81xf32>, tensor<1x2x81x3xf32>, tensor<1x1x1x81xf32>) -> tensor<1x2x100x3xf32>
  return %r : tensor<1x2x100x3xf32>
}

// -----

// No batch dimension, no scale, a mask per query row: read at the row.
// 8 rows: one workgroup of 8 threads (row i is thread i). 4 keys a step:
// their dot products interleaved (independent chains), one rescaling.
// CHECK-LABEL: func.func @per_row_mask
// CHECK-SAME: (%[[Q:[a-z0-9]*]]: tensor<8x2xf32>, %[[KT:[a-z0-9]*]]: tensor<2x8xf32>, %[[V:[a-z0-9]*]]: tensor<8x2xf32>, %[[MASK:[a-z0-9]*]]: tensor<8x8xf32>)
// CHECK: scf.forall (%{{.*}}) = (0) to (8) step (8)
// CHECK:   scf.forall (%[[T:.*]]) in (8)
// CHECK:     scf.for %[[J:.*]] = %c0 to %c8 step %c4
// CHECK:       %[[J1:.*]] = arith.addi %[[J]], %c1
// CHECK:       %[[J2:.*]] = arith.addi %[[J]], %c2
// CHECK:       %[[J3:.*]] = arith.addi %[[J]], %c3
// CHECK:       tensor.extract %[[KT]][%c0, %[[J]]]
// CHECK:       tensor.extract %[[KT]][%c0, %[[J1]]]
// CHECK:       tensor.extract %[[KT]][%c0, %[[J2]]]
// CHECK:       tensor.extract %[[KT]][%c0, %[[J3]]]
// CHECK:       tensor.extract %[[KT]][%c1, %[[J]]]
// CHECK-NOT:   arith.mulf
// CHECK:       tensor.extract %[[MASK]][%[[T]], %[[J]]]
// CHECK:       arith.maximumf
// CHECK:       tensor.extract %[[MASK]][%[[T]], %[[J1]]]
// CHECK:       arith.maximumf
// CHECK:       tensor.extract %[[MASK]][%[[T]], %[[J3]]]
// CHECK:       %[[MAX:.*]] = arith.maximumf
// CHECK:       arith.cmpf oeq, %[[MAX]]
// CHECK-COUNT-5: math.exp
// CHECK:       tensor.extract %[[V]][%[[J]], %c0]
// CHECK:       tensor.extract %[[V]][%[[J1]], %c0]
// CHECK:       tensor.extract %[[V]][%[[J2]], %c0]
// CHECK:       tensor.extract %[[V]][%[[J3]], %c0]
// CHECK:       scf.yield
func.func @per_row_mask(%q: tensor<8x2xf32>, %kt: tensor<2x8xf32>, %v: tensor<8x2xf32>, %mask: tensor<8x8xf32>) -> tensor<8x2xf32> {
  // expected-remark @+1 {{placement: attention as one kernel, a thread per query row over 8 keys, its scores never written out (they would take 256 B)}}
  %r = kiln.attention %q, %kt, %v, %mask {scale = 1.000000e+00 : f32} : (tensor<8x2xf32>, tensor<2x8xf32>, tensor<8x2xf32>, tensor<8x8xf32>) -> tensor<8x2xf32>
  return %r : tensor<8x2xf32>
}

// -----

// Heads of 160 + 128 values are more than a thread holds: unfused.
// CHECK-LABEL: func.func @too_wide
// CHECK: kiln.attention
// CHECK-NOT: scf.forall
func.func @too_wide(%q: tensor<4x160xf32>, %kt: tensor<160x4xf32>, %v: tensor<4x128xf32>) -> tensor<4x128xf32> {
  // expected-remark @+1 {{placement: attention unfused, its scores written out (64 B): heads of 160 + 128 values, more than a thread holds (256)}}
  %r = kiln.attention %q, %kt, %v {scale = 1.000000e+00 : f32} : (tensor<4x160xf32>, tensor<160x4xf32>, tensor<4x128xf32>) -> tensor<4x128xf32>
  return %r : tensor<4x128xf32>
}

// -----

// A mask per batch entry, broadcast over the rows: read at the entry and
// row 0.
// CHECK-LABEL: func.func @batch_mask
// CHECK-SAME: %[[MASK:[a-z0-9]*]]: tensor<2x1x8xf32>)
// CHECK: scf.forall (%[[B:.*]], %{{.*}}) = (0, 0) to (2, 4) step (1, 4)
// CHECK:   scf.forall (%{{.*}}) in (4)
// CHECK:     scf.for %[[J:.*]] = %c0 to %c8 step %c4
// CHECK:       tensor.extract %[[MASK]][%[[B]], %c0, %[[J]]]
func.func @batch_mask(%q: tensor<2x4x2xf32>, %kt: tensor<2x2x8xf32>, %v: tensor<2x8x2xf32>, %mask: tensor<2x1x8xf32>) -> tensor<2x4x2xf32> {
  // expected-remark @+1 {{placement: attention as one kernel, a thread per query row over 8 keys}}
  %r = kiln.attention %q, %kt, %v, %mask {scale = 1.000000e+00 : f32} : (tensor<2x4x2xf32>, tensor<2x2x8xf32>, tensor<2x8x2xf32>, tensor<2x1x8xf32>) -> tensor<2x4x2xf32>
  return %r : tensor<2x4x2xf32>
}

// -----

// K^T as exporters write it, a Transpose of K: the kernel reads K itself,
// key j's values K[j][0..], and the transpose goes.
// CHECK-LABEL: func.func @keys_transposed
// CHECK-SAME: (%{{[a-z0-9]*}}: tensor<2x8x2xf32>, %[[K:[a-z0-9]*]]: tensor<2x8x2xf32>
// CHECK-NOT: kiln.transpose
// CHECK:     scf.for %[[J:.*]] = %c0 to %c8 step %c4
// CHECK:       tensor.extract %[[K]][%{{.*}}, %[[J]], %c0]
// CHECK-NOT: kiln.transpose
func.func @keys_transposed(%q: tensor<2x8x2xf32>, %k: tensor<2x8x2xf32>, %v: tensor<2x8x2xf32>) -> tensor<2x8x2xf32> {
  %kt = kiln.transpose %k {perm = array<i64: 0, 2, 1>} : tensor<2x8x2xf32> -> tensor<2x2x8xf32>
  // expected-remark @+1 {{placement: attention as one kernel, a thread per query row over 8 keys}}
  %r = kiln.attention %q, %kt, %v {scale = 1.000000e+00 : f32} : (tensor<2x8x2xf32>, tensor<2x2x8xf32>, tensor<2x8x2xf32>) -> tensor<2x8x2xf32>
  return %r : tensor<2x8x2xf32>
}

// -----

// A transpose that moves a batch dimension is read as K^T, written out.
// CHECK-LABEL: func.func @keys_permuted
// CHECK: kiln.transpose
// CHECK: scf.forall
func.func @keys_permuted(%q: tensor<2x8x2xf32>, %k: tensor<2x2x8xf32>, %v: tensor<2x8x2xf32>) -> tensor<2x8x2xf32> {
  %kt = kiln.transpose %k {perm = array<i64: 1, 0, 2>} : tensor<2x2x8xf32> -> tensor<2x2x8xf32>
  // expected-remark @+1 {{placement: attention as one kernel, a thread per query row over 8 keys}}
  %r = kiln.attention %q, %kt, %v {scale = 1.000000e+00 : f32} : (tensor<2x8x2xf32>, tensor<2x2x8xf32>, tensor<2x8x2xf32>) -> tensor<2x8x2xf32>
  return %r : tensor<2x8x2xf32>
}

// -----

// A half model's attention (kiln-fuse-attention: Q, K^T, V and the mask
// widened from f16): the kernel reads the f16 tensors and widens each
// value (K through its transpose); the widenings and the transpose go,
// and the rounding of the result: the kernel writes it rounded.
// CHECK-LABEL: func.func @half_operands
// CHECK-SAME: (%[[Q:[a-z0-9]*]]: tensor<2x8x2xf16>, %[[K:[a-z0-9]*]]: tensor<2x8x2xf16>, %[[V:[a-z0-9]*]]: tensor<2x8x2xf16>, %[[MASK:[a-z0-9]*]]: tensor<2x8x8xf16>)
// CHECK-NOT: kiln.transpose
// CHECK-NOT: kiln.cast
// CHECK: %[[QV:.*]] = tensor.extract %[[Q]]
// CHECK: arith.extf %[[QV]] : f16 to f32
// CHECK: scf.for
// CHECK: %[[KV:.*]] = tensor.extract %[[K]]
// CHECK: arith.extf %[[KV]] : f16 to f32
// CHECK: %[[MV:.*]] = tensor.extract %[[MASK]]
// CHECK: arith.extf %[[MV]] : f16 to f32
// CHECK: %[[VV:.*]] = tensor.extract %[[V]]
// CHECK: arith.extf %[[VV]] : f16 to f32
// CHECK: %[[O:.*]] = arith.divf
// CHECK: %[[O16:.*]] = arith.truncf %[[O]] : f32 to f16
// CHECK: tensor.insert %[[O16]]
// CHECK-NOT: kiln.cast
// CHECK: return %{{.*}} : tensor<2x8x2xf16>
func.func @half_operands(%q: tensor<2x8x2xf16>, %k: tensor<2x8x2xf16>, %v: tensor<2x8x2xf16>, %mask: tensor<2x8x8xf16>) -> tensor<2x8x2xf16> {
  %kt = kiln.transpose %k {perm = array<i64: 0, 2, 1>} : tensor<2x8x2xf16> -> tensor<2x2x8xf16>
  %q32 = kiln.cast %q : tensor<2x8x2xf16> -> tensor<2x8x2xf32>
  %kt32 = kiln.cast %kt : tensor<2x2x8xf16> -> tensor<2x2x8xf32>
  %v32 = kiln.cast %v : tensor<2x8x2xf16> -> tensor<2x8x2xf32>
  %mask32 = kiln.cast %mask : tensor<2x8x8xf16> -> tensor<2x8x8xf32>
  // expected-remark @+1 {{placement: attention as one kernel, a thread per query row over 8 keys}}
  %r = kiln.attention %q32, %kt32, %v32, %mask32 {scale = 1.000000e+00 : f32} : (tensor<2x8x2xf32>, tensor<2x2x8xf32>, tensor<2x8x2xf32>, tensor<2x8x8xf32>) -> tensor<2x8x2xf32>
  %r16 = kiln.cast %r : tensor<2x8x2xf32> -> tensor<2x8x2xf16>
  return %r16 : tensor<2x8x2xf16>
}
