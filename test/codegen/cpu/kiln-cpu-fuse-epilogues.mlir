// RUN: kiln-opt %s --pass-pipeline='builtin.module(func.func(kiln-cpu-fuse-epilogues))' | FileCheck %s
// RUN: kiln-opt %s --pass-pipeline='builtin.module(func.func(kiln-cpu-fuse-epilogues{report=true}))' -o /dev/null 2>&1 | FileCheck %s --check-prefix=REPORT

#id = affine_map<(d0, d1) -> (d0, d1)>

// Register tiles (2 x 16, written once from index 0) feeding a ReLU through
// a reshape: the ReLU runs on the tile's vectors before the write, with its
// constant broadcast, and the generic is gone.
// CHECK-LABEL: func.func @relu_epilogue
// CHECK: scf.forall
// CHECK: %[[ACC:.*]] = arith.addf
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[SPLAT:.*]] = vector.broadcast %[[ZERO]] : f32 to vector<2x16xf32>
// CHECK: %[[RELU:.*]] = arith.maximumf %[[ACC]], %[[SPLAT]] : vector<2x16xf32>
// CHECK: vector.transfer_write %[[RELU]]
// CHECK: %[[FLAT:.*]] = tensor.collapse_shape
// CHECK-NOT: linalg.generic
// CHECK: return %[[FLAT]]
// REPORT: remark: loc("conv"("Conv")): fusion: act (Relu) applied in the register tiles (epilogue)
func.func @relu_epilogue(%a: tensor<4x2x16xf32>, %init: tensor<4x2x16xf32>) -> tensor<8x16xf32> {
  %c0 = arith.constant 0 : index
  %pad = arith.constant 0.0 : f32
  %tiles = scf.forall (%i) in (4) shared_outs(%out = %init) -> (tensor<4x2x16xf32>) {
    %in = tensor.extract_slice %a[%i, 0, 0] [1, 2, 16] [1, 1, 1] : tensor<4x2x16xf32> to tensor<2x16xf32>
    %tile = tensor.extract_slice %out[%i, 0, 0] [1, 2, 16] [1, 1, 1] : tensor<4x2x16xf32> to tensor<2x16xf32>
    %v = vector.transfer_read %in[%c0, %c0], %pad {in_bounds = [true, true]} : tensor<2x16xf32>, vector<2x16xf32>
    %acc = arith.addf %v, %v : vector<2x16xf32>
    %w = vector.transfer_write %acc, %tile[%c0, %c0] {in_bounds = [true, true]} : vector<2x16xf32>, tensor<2x16xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %w into %out[%i, 0, 0] [1, 2, 16] [1, 1, 1] : tensor<2x16xf32> into tensor<4x2x16xf32>
    }
  } loc("conv"("Conv"))
  %flat = tensor.collapse_shape %tiles [[0, 1], [2]] : tensor<4x2x16xf32> into tensor<8x16xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x16xf32>
  %relu = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%flat : tensor<8x16xf32>) outs(%e : tensor<8x16xf32>) {
  ^bb0(%x: f32, %o: f32):
    %m = arith.maximumf %x, %zero : f32
    linalg.yield %m : f32
  } -> tensor<8x16xf32> loc("act"("Relu"))
  return %relu : tensor<8x16xf32>
}

// A residual Add reads another tensor of the result's shape, which exists
// before the tiles: its tile is read like the result's (reshaped back to the
// tiled layout) and added to the vectors.
// CHECK-LABEL: func.func @residual_epilogue
// CHECK: %[[RES:.*]] = tensor.expand_shape %arg2 {{\[\[}}0, 1], [2]] output_shape [4, 1, 16]
// CHECK: scf.forall
// CHECK: %[[V:.*]] = vector.transfer_read %{{.*}} : tensor<1x16xf32>, vector<1x16xf32>
// CHECK: %[[RTILE:.*]] = tensor.extract_slice %[[RES]][%{{.*}}, 0, 0] [1, 1, 16] [1, 1, 1] : tensor<4x1x16xf32> to tensor<1x16xf32>
// CHECK: %[[R:.*]] = vector.transfer_read %[[RTILE]]
// CHECK: %[[SUM:.*]] = arith.addf %[[V]], %[[R]] : vector<1x16xf32>
// CHECK: vector.transfer_write %[[SUM]]
// CHECK-NOT: linalg.generic
// REPORT: remark: loc("conv2"("Conv")): fusion: add (Add) applied in the register tiles (epilogue)
func.func @residual_epilogue(%a: tensor<4x16xf32>, %init: tensor<4x1x16xf32>, %r: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %c0 = arith.constant 0 : index
  %pad = arith.constant 0.0 : f32
  %tiles = scf.forall (%i) in (4) shared_outs(%out = %init) -> (tensor<4x1x16xf32>) {
    %in = tensor.extract_slice %a[%i, 0] [1, 16] [1, 1] : tensor<4x16xf32> to tensor<1x16xf32>
    %tile = tensor.extract_slice %out[%i, 0, 0] [1, 1, 16] [1, 1, 1] : tensor<4x1x16xf32> to tensor<1x16xf32>
    %v = vector.transfer_read %in[%c0, %c0], %pad {in_bounds = [true, true]} : tensor<1x16xf32>, vector<1x16xf32>
    %w = vector.transfer_write %v, %tile[%c0, %c0] {in_bounds = [true, true]} : vector<1x16xf32>, tensor<1x16xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %w into %out[%i, 0, 0] [1, 1, 16] [1, 1, 1] : tensor<1x16xf32> into tensor<4x1x16xf32>
    }
  } loc("conv2"("Conv"))
  %flat = tensor.collapse_shape %tiles [[0, 1], [2]] : tensor<4x1x16xf32> into tensor<4x16xf32>
  %e = tensor.empty() : tensor<4x16xf32>
  %sum = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%flat, %r : tensor<4x16xf32>, tensor<4x16xf32>) outs(%e : tensor<4x16xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<4x16xf32> loc("add"("Add"))
  return %sum : tensor<4x16xf32>
}

// A bias broadcast along the rows is not the result's shape: the Add stays.
// CHECK-LABEL: func.func @broadcast_stays
// CHECK: scf.forall
// CHECK: linalg.generic
// REPORT: remark: loc("conv3"("Conv")): fusion: bias (Add) runs as a separate pass over the result: it reads a tensor of another shape, or one computed after the tiles
func.func @broadcast_stays(%a: tensor<4x16xf32>, %init: tensor<4x16xf32>, %bias: tensor<16xf32>) -> tensor<4x16xf32> {
  %c0 = arith.constant 0 : index
  %pad = arith.constant 0.0 : f32
  %tiles = scf.forall (%i) in (4) shared_outs(%out = %init) -> (tensor<4x16xf32>) {
    %in = tensor.extract_slice %a[%i, 0] [1, 16] [1, 1] : tensor<4x16xf32> to tensor<1x16xf32>
    %tile = tensor.extract_slice %out[%i, 0] [1, 16] [1, 1] : tensor<4x16xf32> to tensor<1x16xf32>
    %v = vector.transfer_read %in[%c0, %c0], %pad {in_bounds = [true, true]} : tensor<1x16xf32>, vector<1x16xf32>
    %w = vector.transfer_write %v, %tile[%c0, %c0] {in_bounds = [true, true]} : vector<1x16xf32>, tensor<1x16xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %w into %out[%i, 0] [1, 16] [1, 1] : tensor<1x16xf32> into tensor<4x16xf32>
    }
  } loc("conv3"("Conv"))
  %e = tensor.empty() : tensor<4x16xf32>
  %sum = linalg.generic {indexing_maps = [#id, affine_map<(d0, d1) -> (d1)>, #id], iterator_types = ["parallel", "parallel"]}
      ins(%tiles, %bias : tensor<4x16xf32>, tensor<16xf32>) outs(%e : tensor<4x16xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<4x16xf32> loc("bias"("Add"))
  return %sum : tensor<4x16xf32>
}

// A Clip whose bounds are constants inside its body (and a comparison with
// an i1 result): each op runs on vectors, each constant broadcast once.
// CHECK-LABEL: func.func @clip_epilogue
// CHECK: %[[V:.*]] = vector.transfer_read
// CHECK: %[[LO:.*]] = vector.broadcast %{{.*}} : f32 to vector<1x16xf32>
// CHECK: %[[UP:.*]] = arith.maximumf %[[V]], %[[LO]] : vector<1x16xf32>
// CHECK: %[[HI:.*]] = vector.broadcast %{{.*}} : f32 to vector<1x16xf32>
// CHECK: %[[BIG:.*]] = arith.cmpf ogt, %[[UP]], %[[HI]] : vector<1x16xf32>
// CHECK: %[[CLIP:.*]] = arith.select %[[BIG]], %[[HI]], %[[UP]] : vector<1x16xi1>, vector<1x16xf32>
// CHECK: vector.transfer_write %[[CLIP]]
// CHECK-NOT: linalg.generic
func.func @clip_epilogue(%a: tensor<4x16xf32>, %init: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %c0 = arith.constant 0 : index
  %pad = arith.constant 0.0 : f32
  %tiles = scf.forall (%i) in (4) shared_outs(%out = %init) -> (tensor<4x16xf32>) {
    %in = tensor.extract_slice %a[%i, 0] [1, 16] [1, 1] : tensor<4x16xf32> to tensor<1x16xf32>
    %tile = tensor.extract_slice %out[%i, 0] [1, 16] [1, 1] : tensor<4x16xf32> to tensor<1x16xf32>
    %v = vector.transfer_read %in[%c0, %c0], %pad {in_bounds = [true, true]} : tensor<1x16xf32>, vector<1x16xf32>
    %w = vector.transfer_write %v, %tile[%c0, %c0] {in_bounds = [true, true]} : vector<1x16xf32>, tensor<1x16xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %w into %out[%i, 0] [1, 16] [1, 1] : tensor<1x16xf32> into tensor<4x16xf32>
    }
  }
  %e = tensor.empty() : tensor<4x16xf32>
  %clip = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%tiles : tensor<4x16xf32>) outs(%e : tensor<4x16xf32>) {
  ^bb0(%x: f32, %o: f32):
    %lo = arith.constant 0.0 : f32
    %hi = arith.constant 6.0 : f32
    %up = arith.maximumf %x, %lo : f32
    %big = arith.cmpf ogt, %up, %hi : f32
    %c = arith.select %big, %hi, %up : f32
    linalg.yield %c : f32
  } -> tensor<4x16xf32>
  return %clip : tensor<4x16xf32>
}

// Tiles of a 40-channel result in 16-lane panels: the last is 8 channels
// wide (min(16, 40 - f0)), written by a masked transfer_write of the whole
// vector. The residual's tile is read the same way (in_bounds false).
// CHECK-LABEL: func.func @ragged_residual
// CHECK: scf.forall
// CHECK: %[[WIDTH:.*]] = arith.minsi
// CHECK: %[[RTILE:.*]] = tensor.extract_slice %arg2[0, %{{.*}}] [2, %[[WIDTH]]] [1, 1] : tensor<2x40xf32> to tensor<2x?xf32>
// CHECK: %[[R:.*]] = vector.transfer_read %[[RTILE]][%c0, %c0], %{{.*}} {in_bounds = [true, false]} : tensor<2x?xf32>, vector<2x16xf32>
// CHECK: %[[SUM:.*]] = arith.addf %{{.*}}, %[[R]] : vector<2x16xf32>
// CHECK: vector.transfer_write %[[SUM]], %{{.*}} {in_bounds = [true, false]}
// CHECK-NOT: linalg.generic
func.func @ragged_residual(%v: vector<2x16xf32>, %init: tensor<2x40xf32>, %r: tensor<2x40xf32>) -> tensor<2x40xf32> {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %c40 = arith.constant 40 : index
  %tiles = scf.forall (%p) in (3) shared_outs(%out = %init) -> (tensor<2x40xf32>) {
    %f0 = arith.muli %p, %c16 : index
    %left = arith.subi %c40, %f0 : index
    %width = arith.minsi %left, %c16 : index
    %tile = tensor.extract_slice %out[0, %f0] [2, %width] [1, 1] : tensor<2x40xf32> to tensor<2x?xf32>
    %w = vector.transfer_write %v, %tile[%c0, %c0] {in_bounds = [true, false]} : vector<2x16xf32>, tensor<2x?xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %w into %out[0, %f0] [2, %width] [1, 1] : tensor<2x?xf32> into tensor<2x40xf32>
    }
  }
  %e = tensor.empty() : tensor<2x40xf32>
  %sum = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%tiles, %r : tensor<2x40xf32>, tensor<2x40xf32>) outs(%e : tensor<2x40xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<2x40xf32>
  return %sum : tensor<2x40xf32>
}

// A tile of a size nothing bounds may be wider than the vector, which would
// then not be the whole tile: the ReLU stays a pass of its own.
// CHECK-LABEL: func.func @unbounded_tile
// CHECK: scf.forall
// CHECK: linalg.generic
func.func @unbounded_tile(%v: vector<2x16xf32>, %init: tensor<2x40xf32>, %width: index) -> tensor<2x40xf32> {
  %c0 = arith.constant 0 : index
  %tiles = scf.forall (%p) in (3) shared_outs(%out = %init) -> (tensor<2x40xf32>) {
    %tile = tensor.extract_slice %out[0, %p] [2, %width] [1, 1] : tensor<2x40xf32> to tensor<2x?xf32>
    %w = vector.transfer_write %v, %tile[%c0, %c0] {in_bounds = [true, false]} : vector<2x16xf32>, tensor<2x?xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %w into %out[0, %p] [2, %width] [1, 1] : tensor<2x?xf32> into tensor<2x40xf32>
    }
  }
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x40xf32>
  %relu = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%tiles : tensor<2x40xf32>) outs(%e : tensor<2x40xf32>) {
  ^bb0(%x: f32, %o: f32):
    %m = arith.maximumf %x, %zero : f32
    linalg.yield %m : f32
  } -> tensor<2x40xf32>
  return %relu : tensor<2x40xf32>
}
