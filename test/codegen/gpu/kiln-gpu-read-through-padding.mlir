// RUN: kiln-opt %s --split-input-file --kiln-gpu-read-through-padding --canonicalize --cse | FileCheck %s

// A convolution's receptive fields read from its input padded by 1 along H
// and W (a fill and an insert): the copy reads the input itself, its
// indices less 1, clamped into [0, 3], zero where they fall outside. N and
// C are not padded: read as they are. The fill and the insert are gone.
// CHECK-DAG: #[[ID6:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3, d4, d5)>
// CHECK-LABEL: func.func @fields
// CHECK-SAME: (%[[X:.*]]: tensor<1x2x4x4xf32>)
// CHECK-DAG:   %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG:   %[[C1:.*]] = arith.constant 1 : index
// CHECK-DAG:   %[[C3:.*]] = arith.constant 3 : index
// CHECK-DAG:   %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NOT:   linalg.fill
// CHECK-NOT:   tensor.insert_slice
// CHECK:       linalg.generic {indexing_maps = [#[[ID6]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel"]} outs(
// CHECK-NEXT:  ^bb0(%{{.*}}: f32):
// CHECK-DAG:     %[[C:.*]] = linalg.index 1 : index
// CHECK-DAG:     %[[KH:.*]] = linalg.index 2 : index
// CHECK-DAG:     %[[KW:.*]] = linalg.index 3 : index
// CHECK-DAG:     %[[OH:.*]] = linalg.index 4 : index
// CHECK-DAG:     %[[OW:.*]] = linalg.index 5 : index
// CHECK:         %[[H:.*]] = arith.addi %[[KH]], %[[OH]] : index
// CHECK:         %[[HI:.*]] = arith.subi %[[H]], %[[C1]] : index
// CHECK:         %[[HGE:.*]] = arith.cmpi sge, %[[HI]], %[[C0]] : index
// CHECK:         %[[HLE:.*]] = arith.cmpi sle, %[[HI]], %[[C3]] : index
// CHECK:         %[[HIN:.*]] = arith.andi %[[HGE]], %[[HLE]] : i1
// CHECK:         %[[HMAX:.*]] = arith.maxsi %[[HI]], %[[C0]] : index
// CHECK:         %[[HC:.*]] = arith.minsi %[[HMAX]], %[[C3]] : index
// CHECK:         %[[W:.*]] = arith.addi %[[KW]], %[[OW]] : index
// CHECK:         %[[WI:.*]] = arith.subi %[[W]], %[[C1]] : index
// CHECK:         %[[WIN:.*]] = arith.andi
// CHECK:         %[[IN:.*]] = arith.andi %[[HIN]], %[[WIN]] : i1
// CHECK:         %[[WC:.*]] = arith.minsi
// CHECK:         %[[V:.*]] = tensor.extract %[[X]][%[[C0]], %[[C]], %[[HC]], %[[WC]]] : tensor<1x2x4x4xf32>
// CHECK:         %[[R:.*]] = arith.select %[[IN]], %[[V]], %[[ZERO]] : f32
// CHECK:         linalg.yield %[[R]] : f32
#read = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d4 + d2, d5 + d3)>
#id = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3, d4, d5)>
func.func @fields(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x3x3x4x4xf32> {
  %cst = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x2x6x6xf32>
  %f = linalg.fill ins(%cst : f32) outs(%e : tensor<1x2x6x6xf32>) -> tensor<1x2x6x6xf32>
  %p = tensor.insert_slice %x into %f[0, 0, 1, 1] [1, 2, 4, 4] [1, 1, 1, 1] : tensor<1x2x4x4xf32> into tensor<1x2x6x6xf32>
  %o = tensor.empty() : tensor<1x2x3x3x4x4xf32>
  %r = linalg.generic {indexing_maps = [#read, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%p : tensor<1x2x6x6xf32>) outs(%o : tensor<1x2x3x3x4x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<1x2x3x3x4x4xf32>
  return %r : tensor<1x2x3x3x4x4xf32>
}

// -----

// A max pool (stride 2) over an input padded with -inf: generalized, its
// window operand kept (it gives the window's loops their extents), its
// padded input read through, -inf outside.
// CHECK-DAG: #[[WINDOW:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d4, d5)>
// CHECK-LABEL: func.func @pool
// CHECK-SAME: (%[[X:.*]]: tensor<1x2x5x5xf32>)
// CHECK-DAG:   %[[NINF:.*]] = arith.constant 0xFF800000 : f32
// CHECK-DAG:   %[[C2:.*]] = arith.constant 2 : index
// CHECK-NOT:   tensor.insert_slice
// CHECK:       linalg.generic {indexing_maps = [#[[WINDOW]], #{{.*}}], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%{{.*}} : tensor<3x3xf32>) outs(
// CHECK:         %[[OH:.*]] = linalg.index 2 : index
// CHECK:         arith.muli %[[OH]], %[[C2]]
// CHECK:         %[[V:.*]] = tensor.extract %[[X]]
// CHECK:         %[[R:.*]] = arith.select %{{.*}}, %[[V]], %[[NINF]] : f32
// CHECK:         arith.maximumf %{{.*}}, %[[R]] : f32
// CHECK-NOT: linalg.pooling_nchw_max
func.func @pool(%x: tensor<1x2x5x5xf32>) -> tensor<1x2x3x3xf32> {
  %ninf = arith.constant 0xFF800000 : f32
  %e = tensor.empty() : tensor<1x2x7x7xf32>
  %f = linalg.fill ins(%ninf : f32) outs(%e : tensor<1x2x7x7xf32>) -> tensor<1x2x7x7xf32>
  %p = tensor.insert_slice %x into %f[0, 0, 1, 1] [1, 2, 5, 5] [1, 1, 1, 1] : tensor<1x2x5x5xf32> into tensor<1x2x7x7xf32>
  %w = tensor.empty() : tensor<3x3xf32>
  %o = tensor.empty() : tensor<1x2x3x3xf32>
  %i = linalg.fill ins(%ninf : f32) outs(%o : tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %r = linalg.pooling_nchw_max {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>} ins(%p, %w : tensor<1x2x7x7xf32>, tensor<3x3xf32>) outs(%i : tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  return %r : tensor<1x2x3x3xf32>
}

// -----

// A tensor.pad of a dynamic source by a dynamic amount: the bounds are the
// source's size at run time (tensor.dim), the offset the pad's.
// CHECK-LABEL: func.func @dynamic
// CHECK-SAME: (%[[X:.*]]: tensor<?x4xf32>, %[[LOW:.*]]: index)
// CHECK-DAG:   %[[C1:.*]] = arith.constant 1 : index
// CHECK-DAG:   %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-DAG:   %[[ROWS:.*]] = tensor.dim %[[X]], %{{.*}} : tensor<?x4xf32>
// CHECK-NOT:   tensor.pad
// CHECK:       linalg.generic
// CHECK:         %[[I:.*]] = linalg.index 0 : index
// CHECK:         %[[ROW:.*]] = arith.subi %[[I]], %[[LOW]] : index
// CHECK:         %[[LAST:.*]] = arith.subi %[[ROWS]], %[[C1]] : index
// CHECK:         arith.cmpi sle, %[[ROW]], %[[LAST]] : index
// CHECK:         %[[V:.*]] = tensor.extract %[[X]]
// CHECK:         %[[R:.*]] = arith.select %{{.*}}, %[[V]], %[[ONE]] : f32
// CHECK:         arith.mulf %[[R]], %[[R]] : f32
func.func @dynamic(%x: tensor<?x4xf32>, %low: index) -> tensor<?x6xf32> {
  %one = arith.constant 1.0 : f32
  %p = tensor.pad %x low[%low, 2] high[0, 0] {
  ^bb0(%i: index, %j: index):
    tensor.yield %one : f32
  } : tensor<?x4xf32> to tensor<?x6xf32>
  %c0 = arith.constant 0 : index
  %n = tensor.dim %p, %c0 : tensor<?x6xf32>
  %o = tensor.empty(%n) : tensor<?x6xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%p : tensor<?x6xf32>) outs(%o : tensor<?x6xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.mulf %in, %in : f32
    linalg.yield %s : f32
  } -> tensor<?x6xf32>
  return %r : tensor<?x6xf32>
}

// -----

// Left alone: a contraction (its operands go to shared memory whole), a
// strided insert (not a padding), and a pad whose value is computed.
// CHECK-LABEL: func.func @kept
// CHECK:   linalg.matmul ins(%{{.*}}, %[[PADDED:.*]] : tensor<4x6xf32>, tensor<6x5xf32>)
// CHECK:   linalg.generic {{.*}} ins(%{{.*}} : tensor<1x8xf32>)
// CHECK:   linalg.generic {{.*}} ins(%{{.*}} : tensor<6xf32>)
// CHECK-NOT: tensor.extract
func.func @kept(%a: tensor<4x6xf32>, %b: tensor<4x5xf32>, %s: tensor<1x4xf32>, %v: tensor<4xf32>)
    -> (tensor<4x5xf32>, tensor<1x8xf32>, tensor<6xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<6x5xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<6x5xf32>) -> tensor<6x5xf32>
  %p = tensor.insert_slice %b into %f[1, 0] [4, 5] [1, 1] : tensor<4x5xf32> into tensor<6x5xf32>
  %o = tensor.empty() : tensor<4x5xf32>
  %i = linalg.fill ins(%zero : f32) outs(%o : tensor<4x5xf32>) -> tensor<4x5xf32>
  %m = linalg.matmul ins(%a, %p : tensor<4x6xf32>, tensor<6x5xf32>) outs(%i : tensor<4x5xf32>) -> tensor<4x5xf32>
  %e2 = tensor.empty() : tensor<1x8xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<1x8xf32>) -> tensor<1x8xf32>
  %p2 = tensor.insert_slice %s into %f2[0, 0] [1, 4] [1, 2] : tensor<1x4xf32> into tensor<1x8xf32>
  %n2 = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%p2 : tensor<1x8xf32>) outs(%e2 : tensor<1x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %t = arith.negf %in : f32
    linalg.yield %t : f32
  } -> tensor<1x8xf32>
  %p3 = tensor.pad %v low[1] high[1] {
  ^bb0(%j: index):
    %jf = arith.index_cast %j : index to i32
    %w = arith.sitofp %jf : i32 to f32
    tensor.yield %w : f32
  } : tensor<4xf32> to tensor<6xf32>
  %e3 = tensor.empty() : tensor<6xf32>
  %n3 = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]} ins(%p3 : tensor<6xf32>) outs(%e3 : tensor<6xf32>) {
  ^bb0(%in: f32, %out: f32):
    %t = arith.negf %in : f32
    linalg.yield %t : f32
  } -> tensor<6xf32>
  return %m, %n2, %n3 : tensor<4x5xf32>, tensor<1x8xf32>, tensor<6xf32>
}

// -----

// A chunk of a padded batch (images 2 and 3 of 4, kiln-gpu-conv-as-matmul's
// slice): read through at the chunk's offset. The batch has no padding:
// its index is shifted, not checked.
// CHECK-LABEL: func.func @chunk
// CHECK-SAME: (%[[X:.*]]: tensor<4x2x4x4xf32>)
// CHECK-DAG:   %[[SHIFT:.*]] = arith.constant -2 : index
// CHECK-NOT:   tensor.extract_slice
// CHECK:       linalg.generic
// CHECK:         %[[N:.*]] = linalg.index 0 : index
// CHECK:         %[[IMAGE:.*]] = arith.subi %[[N]], %[[SHIFT]] : index
// CHECK-NOT:     arith.cmpi {{.*}}, %[[IMAGE]]
// CHECK:         tensor.extract %[[X]][%[[IMAGE]],
#read = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d4 + d2, d5 + d3)>
#id = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3, d4, d5)>
func.func @chunk(%x: tensor<4x2x4x4xf32>) -> tensor<2x2x3x3x4x4xf32> {
  %cst = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x2x6x6xf32>
  %f = linalg.fill ins(%cst : f32) outs(%e : tensor<4x2x6x6xf32>) -> tensor<4x2x6x6xf32>
  %p = tensor.insert_slice %x into %f[0, 0, 1, 1] [4, 2, 4, 4] [1, 1, 1, 1] : tensor<4x2x4x4xf32> into tensor<4x2x6x6xf32>
  %s = tensor.extract_slice %p[2, 0, 0, 0] [2, 2, 6, 6] [1, 1, 1, 1] : tensor<4x2x6x6xf32> to tensor<2x2x6x6xf32>
  %o = tensor.empty() : tensor<2x2x3x3x4x4xf32>
  %r = linalg.generic {indexing_maps = [#read, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%s : tensor<2x2x6x6xf32>) outs(%o : tensor<2x2x3x3x4x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<2x2x3x3x4x4xf32>
  return %r : tensor<2x2x3x3x4x4xf32>
}
