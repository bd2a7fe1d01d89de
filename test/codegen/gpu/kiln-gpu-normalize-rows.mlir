// RUN: kiln-opt %s --split-input-file --kiln-gpu-normalize-rows --canonicalize --cse | FileCheck %s
// RUN: kiln-opt %s --split-input-file --kiln-gpu-normalize-rows=report-placement=true -o /dev/null 2>&1 | FileCheck %s --check-prefix=WHY

// A layer norm over rows of 300 values, their number known at run time:
// a workgroup per row, of 64 threads. The mean: each thread sums columns
// t, t + 64, ... into its slot of a workgroup buffer. The variance: each
// thread first sums the 64 partials itself (the mean), then its columns'
// (x - mean)^2. The outputs: both statistics again, then the thread's
// ceil((300 - t) / 64) columns, a strided slice of the row. The scale is
// read at the column, the bias of one value at 0.
// CHECK-DAG: #[[COUNT:.*]] = affine_map<(d0) -> ((-d0 + 300) ceildiv 64)>
// CHECK-DAG: #[[COL:.*]] = affine_map<(d0, d1) -> (d0 + d1 * 64)>
// CHECK-LABEL: func.func @layer_norm
// CHECK-SAME: (%[[X:.*]]: tensor<?x300xf32>, %[[S:.*]]: tensor<300xf32>, %[[B:.*]]: tensor<1xf32>)
// CHECK-DAG: %[[EPS:.*]] = arith.constant 9.99999974E-6 : f32
// CHECK-DAG: %[[INV:.*]] = arith.constant 0.00333333341 : f32
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[ROWS:.*]] = tensor.dim %[[X]], %c0
// CHECK: %[[INIT:.*]] = tensor.empty(%[[ROWS]]) : tensor<?x300xf32>
// CHECK: %[[OUT:.*]] = scf.forall (%[[R:.*]]) in (%[[ROWS]]) shared_outs(%[[ALL:.*]] = %[[INIT]])
// CHECK:   %[[BUF1:.*]] = bufferization.alloc_tensor() {memory_space = #gpu.address_space<workgroup>} : tensor<64xf32>
// CHECK:   %[[SUMS:.*]] = scf.forall (%[[T:.*]]) in (64) shared_outs(%[[SLOTS:.*]] = %[[BUF1]])
// CHECK:     %[[PART:.*]] = scf.for %[[C:.*]] = %[[T]] to %c300 step %c64 iter_args(%[[ACC:.*]] = %[[ZERO]])
// CHECK:       %[[E:.*]] = tensor.extract %[[X]][%[[R]], %[[C]]]
// CHECK:       arith.addf %[[ACC]], %[[E]]
// CHECK:     %[[SLOT:.*]] = tensor.extract_slice %[[SLOTS]][%[[T]]] [1] [1]
// CHECK:     %[[PUT:.*]] = tensor.insert %[[PART]] into %[[SLOT]][%c0]
// CHECK:     tensor.parallel_insert_slice %[[PUT]] into %[[SLOTS]][%[[T]]] [1] [1]
// CHECK:   } {mapping = [#gpu.thread<x>]}
// CHECK:   %[[BUF2:.*]] = bufferization.alloc_tensor() {memory_space = #gpu.address_space<workgroup>} : tensor<64xf32>
// CHECK:   %[[SQUARES:.*]] = scf.forall (%[[T2:.*]]) in (64) shared_outs(%{{.*}} = %[[BUF2]])
// CHECK:     %[[TOTAL:.*]] = scf.for %[[J:.*]] = %c0 to %c64 step %c1 iter_args(%[[A:.*]] = %[[ZERO]])
// CHECK:       %[[P:.*]] = tensor.extract %[[SUMS]][%[[J]]]
// CHECK:       arith.addf %[[A]], %[[P]]
// CHECK:     %[[MEAN:.*]] = arith.mulf %[[TOTAL]], %[[INV]]
// CHECK:     scf.for %{{.*}} = %[[T2]] to %c300 step %c64
// CHECK:       %[[CENTERED:.*]] = arith.subf %{{.*}}, %[[MEAN]]
// CHECK:       arith.mulf %[[CENTERED]], %[[CENTERED]]
// CHECK:   } {mapping = [#gpu.thread<x>]}
// CHECK:   %[[ROW:.*]] = tensor.extract_slice %[[ALL]][%[[R]], 0] [1, 300] [1, 1]
// CHECK:   %[[WROTE:.*]] = scf.forall (%[[T3:.*]]) in (64) shared_outs(%[[MINE:.*]] = %[[ROW]])
// CHECK:     tensor.extract %[[SUMS]]
// CHECK:     tensor.extract %[[SQUARES]]
// CHECK:     %[[N:.*]] = affine.apply #[[COUNT]](%[[T3]])
// CHECK:     %[[COLS:.*]] = tensor.extract_slice %[[MINE]][0, %[[T3]]] [1, %[[N]]] [1, 64]
// CHECK:     %[[Y:.*]] = scf.for %[[I:.*]] = %c0 to %[[N]] step %c1 iter_args(%[[YS:.*]] = %[[COLS]])
// CHECK:       %[[CI:.*]] = affine.apply #[[COL]](%[[T3]], %[[I]])
// CHECK:       tensor.extract %[[X]][%[[R]], %[[CI]]]
// CHECK:       arith.addf %{{.*}}, %[[EPS]]
// CHECK:       math.rsqrt
// CHECK:       tensor.extract %[[S]][%[[CI]]]
// CHECK:       tensor.extract %[[B]][%c0]
// CHECK:       tensor.insert %{{.*}} into %[[YS]][%c0, %[[I]]]
// CHECK:     tensor.parallel_insert_slice %[[Y]] into %[[MINE]][0, %[[T3]]] [1, %[[N]]] [1, 64]
// CHECK:   } {mapping = [#gpu.thread<x>]}
// CHECK:   tensor.parallel_insert_slice %[[WROTE]] into %[[ALL]][%[[R]], 0] [1, 300] [1, 1]
// CHECK: } {mapping = [#gpu.block<linear_dim_0>]}
// CHECK: return %[[OUT]]
// WHY: remark: placement: layer_norm as one kernel, a workgroup of 64 threads per row of 300 values
func.func @layer_norm(%x: tensor<?x300xf32>, %s: tensor<300xf32>, %b: tensor<1xf32>) -> tensor<?x300xf32> {
  %r = kiln.layer_norm %x, %s, %b {axis = 1 : i64, epsilon = 1.0e-05 : f32} : (tensor<?x300xf32>, tensor<300xf32>, tensor<1xf32>) -> tensor<?x300xf32>
  return %r : tensor<?x300xf32>
}

// -----

// log_softmax: the row's maximum (partials from -inf), then the sum of
// exp(x - max); each thread writes (x - max) - log(sum) for its 4 of 256
// columns (a static count).
// CHECK-LABEL: func.func @log_softmax
// CHECK-DAG: %[[NINF:.*]] = arith.constant 0xFF800000 : f32
// CHECK: scf.forall (%[[R:.*]]) in (4)
// CHECK:   scf.forall (%{{.*}}) in (64)
// CHECK:     scf.for {{.*}} iter_args(%[[M:.*]] = %[[NINF]])
// CHECK:       arith.maximumf %[[M]]
// CHECK:   scf.forall (%{{.*}}) in (64)
// CHECK:     %[[MAX:.*]] = scf.for
// CHECK:     scf.for
// CHECK:       %[[SH:.*]] = arith.subf %{{.*}}, %[[MAX]]
// CHECK:       math.exp %[[SH]]
// CHECK:   scf.forall (%[[T:.*]]) in (64)
// CHECK:     %[[MAX2:.*]] = scf.for
// CHECK:     %[[SUM:.*]] = scf.for
// CHECK:     tensor.extract_slice %{{.*}}[0, %[[T]]] [1, 4] [1, 64]
// CHECK:     scf.for %{{.*}} = %c0 to %c4
// CHECK:       %[[SHIFTED:.*]] = arith.subf %{{.*}}, %[[MAX2]]
// CHECK:       %[[LOG:.*]] = math.log %[[SUM]]
// CHECK:       arith.subf %[[SHIFTED]], %[[LOG]]
// WHY: remark: placement: log_softmax as one kernel, a workgroup of 64 threads per row of 256 values
func.func @log_softmax(%x: tensor<4x256xf32>) -> tensor<4x256xf32> {
  %r = kiln.log_softmax %x {axis = 1 : i64} : tensor<4x256xf32>
  return %r : tensor<4x256xf32>
}

// -----

// An attention left unfused: its scores a kiln.matmul, their softmax one
// kernel that reads 0.5 * s + mask (the mask's row dimension of size 1 read
// at 0) and writes the probabilities, then a kiln.matmul with v.
// CHECK-LABEL: func.func @attention
// CHECK-SAME: (%[[Q:.*]]: tensor<2x3x5x8xf32>, %[[KT:.*]]: tensor<2x3x8x128xf32>, %[[V:.*]]: tensor<2x3x128x4xf32>, %[[MASK:.*]]: tensor<2x3x1x128xf32>)
// CHECK-DAG: %[[HALF:.*]] = arith.constant 5.000000e-01 : f32
// CHECK: %[[S:.*]] = kiln.matmul %[[Q]], %[[KT]] : (tensor<2x3x5x8xf32>, tensor<2x3x8x128xf32>) -> tensor<2x3x5x128xf32>
// CHECK: %[[P:.*]] = scf.forall (%[[B:.*]], %[[H:.*]], %[[I:.*]]) in (2, 3, 5)
// CHECK:   scf.forall (%{{.*}}) in (32)
// CHECK:     scf.for %[[J:[^ ]*]] =
// CHECK:       %[[SJ:.*]] = tensor.extract %[[S]][%[[B]], %[[H]], %[[I]], %[[J]]]
// CHECK:       %[[SCALED:.*]] = arith.mulf %[[SJ]], %[[HALF]]
// CHECK:       %[[MJ:.*]] = tensor.extract %[[MASK]][%[[B]], %[[H]], %c0, %[[J]]]
// CHECK:       arith.addf %[[SCALED]], %[[MJ]]
// CHECK:   scf.forall (%{{.*}}) in (32)
// CHECK:     math.exp
// CHECK:   scf.forall (%{{.*}}) in (32)
// CHECK:     scf.for
// CHECK:       math.exp
// CHECK:       arith.divf
// CHECK: } {mapping = [#gpu.block<linear_dim_2>, #gpu.block<linear_dim_1>, #gpu.block<linear_dim_0>]}
// CHECK: %[[OUT:.*]] = kiln.matmul %[[P]], %[[V]] : (tensor<2x3x5x128xf32>, tensor<2x3x128x4xf32>) -> tensor<2x3x5x4xf32>
// CHECK: return %[[OUT]]
// WHY: remark: placement: attention's softmax as one kernel, a workgroup of 32 threads per row of 128 scores
func.func @attention(%q: tensor<2x3x5x8xf32>, %kt: tensor<2x3x8x128xf32>, %v: tensor<2x3x128x4xf32>, %mask: tensor<2x3x1x128xf32>) -> tensor<2x3x5x4xf32> {
  %r = kiln.attention %q, %kt, %v, %mask {scale = 0.5 : f32} : (tensor<2x3x5x8xf32>, tensor<2x3x8x128xf32>, tensor<2x3x128x4xf32>, tensor<2x3x1x128xf32>) -> tensor<2x3x5x4xf32>
  return %r : tensor<2x3x5x4xf32>
}

// -----

// Left to the lowering's reductions, and the report says why: rows of 64,
// a softmax along a middle axis, rows of f16, one row, rows of 40000, a
// scale of run-time shape. An attention over 64 keys is left as it is.
// CHECK-LABEL: func.func @left_alone
// CHECK: kiln.softmax
// CHECK: kiln.softmax
// CHECK: kiln.layer_norm
// CHECK: kiln.softmax
// CHECK: kiln.softmax
// CHECK: kiln.layer_norm
// CHECK: kiln.attention
// WHY: remark: placement: softmax as reductions and elementwise kernels: rows shorter than 128
// WHY: remark: placement: softmax as reductions and elementwise kernels: along other dimensions than the last
// WHY: remark: placement: layer_norm as reductions and elementwise kernels: not f32
// WHY: remark: placement: softmax as reductions and elementwise kernels: one row
// WHY: remark: placement: softmax as reductions and elementwise kernels: rows longer than 32768
// WHY: remark: placement: layer_norm as reductions and elementwise kernels: a scale or bias of run-time shape
// WHY-NOT: attention
func.func @left_alone(%short: tensor<6x64xf32>, %x: tensor<4x256xf32>, %h: tensor<4x256xf16>, %s: tensor<256xf16>,
                      %one: tensor<256xf32>, %long: tensor<2x40000xf32>, %sd: tensor<?xf32>,
                      %q: tensor<1x5x8xf32>, %kt: tensor<1x8x64xf32>, %v: tensor<1x64x4xf32>)
    -> (tensor<6x64xf32>, tensor<4x256xf32>, tensor<4x256xf16>, tensor<256xf32>, tensor<2x40000xf32>, tensor<4x256xf32>, tensor<1x5x4xf32>) {
  %a = kiln.softmax %short {axis = 1 : i64} : tensor<6x64xf32>
  %b = kiln.softmax %x {axis = 0 : i64} : tensor<4x256xf32>
  %c = kiln.layer_norm %h, %s {axis = 1 : i64, epsilon = 1.0e-05 : f32} : (tensor<4x256xf16>, tensor<256xf16>) -> tensor<4x256xf16>
  %e = kiln.softmax %one {axis = 0 : i64} : tensor<256xf32>
  %f = kiln.softmax %long {axis = 1 : i64} : tensor<2x40000xf32>
  %g = kiln.layer_norm %x, %sd {axis = 1 : i64, epsilon = 1.0e-05 : f32} : (tensor<4x256xf32>, tensor<?xf32>) -> tensor<4x256xf32>
  %d = kiln.attention %q, %kt, %v {scale = 1.0 : f32} : (tensor<1x5x8xf32>, tensor<1x8x64xf32>, tensor<1x64x4xf32>) -> tensor<1x5x4xf32>
  return %a, %b, %c, %e, %f, %g, %d : tensor<6x64xf32>, tensor<4x256xf32>, tensor<4x256xf16>, tensor<256xf32>, tensor<2x40000xf32>, tensor<4x256xf32>, tensor<1x5x4xf32>
}
