// RUN: kiln-opt %s --kiln-convert-to-linalg --split-input-file | FileCheck %s
// Ops whose result sizes depend on the data (DataDependent.cpp) and TopK
// with a run-time k: scalar scf loops over tensors that count as they
// write; the results have run-time sizes.

// One vectorizable pass counts; the second writes each nonzero element's
// coordinates as a column.
// CHECK-LABEL: func.func @nonzero
// CHECK: %[[COUNTED:.*]] = linalg.generic {{.*}} iterator_types = ["reduction", "reduction"]
// CHECK: arith.cmpf une
// CHECK: %[[COUNT:.*]] = tensor.extract %[[COUNTED]][]
// CHECK: %[[N:.*]] = arith.index_cast %[[COUNT]] : i64 to index
// CHECK: %[[OUT:.*]] = tensor.empty(%[[N]]) : tensor<2x?xi64>
// CHECK: scf.for {{.*}} iter_args(%[[ACC:.*]] = %[[OUT]], %[[J:.*]] = %{{.*}}) -> (tensor<2x?xi64>, index)
// CHECK: scf.if
// CHECK: tensor.insert {{.*}} into %[[ACC]][%{{.*}}, %[[J]]]
func.func @nonzero(%x: tensor<2x3xf32>) -> tensor<2x?xi64> {
  %0 = kiln.nonzero %x : tensor<2x3xf32> -> tensor<2x?xi64>
  return %0 : tensor<2x?xi64>
}

// -----

// Rows looked up among the distinct ones so far, ranked (sorted), then
// written in order: the results are sized by the count of distinct rows.
// CHECK-LABEL: func.func @unique
// CHECK: %[[FOUND:.*]]:4 = scf.for {{.*}} -> (tensor<5xi64>, tensor<5xi64>, tensor<5xi64>, index)
// CHECK: arith.cmpi eq, %{{.*}}, %{{.*}} : i32
// CHECK: %[[RANKED:.*]]:2 = scf.for {{.*}} to %[[FOUND]]#3
// CHECK: arith.cmpi slt, %{{.*}}, %{{.*}} : i32
// CHECK: tensor.empty(%[[FOUND]]#3) : tensor<?x2xi32>
func.func @unique(%x: tensor<5x2xi32>) -> (tensor<?x2xi32>, tensor<?xi64>, tensor<5xi64>, tensor<?xi64>) {
  %0:4 = kiln.unique %x {sorted = true} : tensor<5x2xi32> -> tensor<?x2xi32>, tensor<?xi64>, tensor<5xi64>, tensor<?xi64>
  return %0#0, %0#1, %0#2, %0#3 : tensor<?x2xi32>, tensor<?xi64>, tensor<5xi64>, tensor<?xi64>
}

// -----

// Unsigned rows compare unsigned; without sorted there is no ranking pass.
// CHECK-LABEL: func.func @unique_unsorted
// CHECK-NOT: arith.cmpi ult
// CHECK-NOT: arith.cmpi slt
// CHECK: return
func.func @unique_unsorted(%x: tensor<4x1xui8>) -> (tensor<?x1xui8>, tensor<?xi64>, tensor<4xi64>, tensor<?xi64>) {
  %0:4 = kiln.unique %x {sorted = false} : tensor<4x1xui8> -> tensor<?x1xui8>, tensor<?xi64>, tensor<4xi64>, tensor<?xi64>
  return %0#0, %0#1, %0#2, %0#3 : tensor<?x1xui8>, tensor<?xi64>, tensor<4xi64>, tensor<?xi64>
}

// -----

// Per (batch, class): rounds that pick the best free candidate and keep it
// unless a kept box overlaps it; the result is the counted prefix of a
// buffer sized batches x classes x min(max_per_class, boxes).
// CHECK-LABEL: func.func @nms
// CHECK: %[[MAX:.*]] = tensor.extract %arg2[] : tensor<i64>
// CHECK: %[[LIMIT:.*]] = arith.minsi %c6
// CHECK: %[[CAP:.*]] = arith.muli %{{.*}}, %[[LIMIT]]
// CHECK: %[[BUF:.*]] = tensor.empty(%[[CAP]]) : tensor<?x3xi64>
// CHECK: %[[ALL:.*]]:3 = scf.for
// CHECK: linalg.fill ins(%false
// CHECK: arith.cmpf ogt, {{.*}} : f32
// CHECK: arith.divf
// CHECK: tensor.extract_slice %[[ALL]]#0[0, 0] [%[[ALL]]#2, 3] [1, 1] : tensor<?x3xi64> to tensor<?x3xi64>
func.func @nms(%b: tensor<1x6x4xf32>, %s: tensor<1x2x6xf32>, %m: tensor<i64>, %t: tensor<f32>) -> tensor<?x3xi64> {
  %0 = kiln.non_max_suppression %b, %s, %m, %t {center_point_box = false} : tensor<1x6x4xf32>, tensor<1x2x6xf32>, tensor<i64>, tensor<f32> -> tensor<?x3xi64>
  return %0 : tensor<?x3xi64>
}

// -----

// Boxes counted at run time: the scores' count is checked against theirs.
// CHECK-LABEL: func.func @nms_dynamic
// CHECK: call @kiln_check_failed
// CHECK: tensor.extract_slice
func.func @nms_dynamic(%b: tensor<1x?x4xf32>, %s: tensor<1x1x?xf32>, %m: tensor<i64>, %t: tensor<f32>, %st: tensor<f32>) -> tensor<?x3xi64> {
  %0 = kiln.non_max_suppression %b, %s, %m, %t score_threshold %st {center_point_box = true} : tensor<1x?x4xf32>, tensor<1x1x?xf32>, tensor<i64>, tensor<f32>, tensor<f32> -> tensor<?x3xi64>
  return %0 : tensor<?x3xi64>
}

// -----

// TopK with a run-time k: checked against the axis, and the results sized
// by it.
// CHECK-LABEL: func.func @top_k_runtime
// CHECK: %[[K:.*]] = tensor.extract %arg1[] : tensor<i64>
// CHECK: arith.cmpi sge, %[[K]]
// CHECK: arith.cmpi sle, %[[K]]
// CHECK: call @kiln_check_failed
// CHECK: %[[KI:.*]] = arith.index_cast %[[K]] : i64 to index
// CHECK: tensor.empty(%[[KI]]) : tensor<3x?xf32>
// CHECK: linalg.generic {{.*}} outs({{.*}} : tensor<3x?xf32>, tensor<3x?xi64>)
func.func @top_k_runtime(%x: tensor<3x9xf32>, %k: tensor<i64>) -> (tensor<3x?xf32>, tensor<3x?xi64>) {
  %0:2 = kiln.top_k %x k %k {axis = 1 : i64, largest = true} : tensor<3x9xf32>, tensor<i64> -> tensor<3x?xf32>, tensor<3x?xi64>
  return %0#0, %0#1 : tensor<3x?xf32>, tensor<3x?xi64>
}

// -----

// CHECK-LABEL: func.func @iota
// CHECK: %[[N:.*]] = tensor.extract %arg0[] : tensor<i64>
// CHECK: arith.cmpi sge, %[[N]]
// CHECK: arith.cmpi sle, %[[N]]
// CHECK: call @kiln_check_failed
// CHECK: %[[I:.*]] = arith.index_cast %[[N]] : i64 to index
// CHECK: %[[E:.*]] = tensor.empty(%[[I]]) : tensor<?xi64>
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel"]} outs(%[[E]] : tensor<?xi64>)
// CHECK: linalg.index 0
func.func @iota(%n: tensor<i64>) -> tensor<?xi64> {
  %0 = kiln.iota %n : tensor<i64> -> tensor<?xi64>
  return %0 : tensor<?xi64>
}
