// RUN: kiln-opt %s --kiln-cpu-schedule=vector-width=16 | FileCheck %s

// 16x64x32: register tiles of 8 rows x 32 columns (two 16-lane vectors) form
// an scf.forall (the thread pool's unit of work); each tile loops over K one
// step at a time, lowered to outer-product FMAs.
// CHECK-LABEL: func.func @matmul
// CHECK: scf.forall (%{{.*}}, %{{.*}}) in (2, 2) shared_outs
// CHECK: scf.for %{{.*}} = %c0 to %c32 step %c1
// CHECK: vector.transfer_read {{.*}} vector<8x32xf32>
// CHECK-COUNT-8: vector.fma {{.*}} : vector<32xf32>
// CHECK: vector.transfer_write {{.*}} vector<8x32xf32>
// CHECK-NOT: linalg.matmul
func.func @matmul(%a: tensor<16x32xf32>, %b: tensor<32x64xf32>, %c: tensor<16x64xf32>) -> tensor<16x64xf32> {
  %0 = linalg.matmul ins(%a, %b : tensor<16x32xf32>, tensor<32x64xf32>) outs(%c : tensor<16x64xf32>) -> tensor<16x64xf32>
  return %0 : tensor<16x64xf32>
}

// Extents that do not divide 8x32 get exact divisor tiles instead of masks:
// 6 rows -> 6; 20 columns are no whole number of 16-lane registers, so the
// tile is the largest divisor that fits one register: 10.
// CHECK-LABEL: func.func @odd_sizes
// CHECK: scf.forall (%{{.*}}, %{{.*}}) in (1, 2)
// CHECK: scf.for %{{.*}} = %c0 to %c5 step %c1
// CHECK-COUNT-6: vector.fma {{.*}} : vector<10xf32>
func.func @odd_sizes(%a: tensor<6x5xf32>, %b: tensor<5x20xf32>, %c: tensor<6x20xf32>) -> tensor<6x20xf32> {
  %0 = linalg.matmul ins(%a, %b : tensor<6x5xf32>, tensor<5x20xf32>) outs(%c : tensor<6x20xf32>) -> tensor<6x20xf32>
  return %0 : tensor<6x20xf32>
}

// CHECK-LABEL: func.func @batch_matmul
// CHECK: scf.forall (%{{.*}}, %{{.*}}, %{{.*}}) in (3, 1, 1)
// CHECK: scf.for %{{.*}} = %c0 to %c4 step %c1
// CHECK: vector.fma {{.*}} : vector<16xf32>
func.func @batch_matmul(%a: tensor<3x8x4xf32>, %b: tensor<3x4x16xf32>, %c: tensor<3x8x16xf32>) -> tensor<3x8x16xf32> {
  %0 = linalg.batch_matmul ins(%a, %b : tensor<3x8x4xf32>, tensor<3x4x16xf32>) outs(%c : tensor<3x8x16xf32>) -> tensor<3x8x16xf32>
  return %0 : tensor<3x8x16xf32>
}

// 48 columns: 32 does not divide them but one 16-lane register does.
// CHECK-LABEL: func.func @whole_registers
// CHECK: scf.forall (%{{.*}}, %{{.*}}) in (1, 3)
// CHECK-COUNT-8: vector.fma {{.*}} : vector<16xf32>
func.func @whole_registers(%a: tensor<8x4xf32>, %b: tensor<4x48xf32>, %c: tensor<8x48xf32>) -> tensor<8x48xf32> {
  %0 = linalg.matmul ins(%a, %b : tensor<8x4xf32>, tensor<4x48xf32>) outs(%c : tensor<8x48xf32>) -> tensor<8x48xf32>
  return %0 : tensor<8x48xf32>
}

// A contraction packed by kiln-cpu-pack-matmul (B panels [N/nr][K][nr]): one
// register tile per (column panel, row panel), column panels outermost, and
// the same outer-product FMAs over one contiguous panel row per K step.
// CHECK-LABEL: func.func @packed
// CHECK: scf.forall (%[[J:.*]], %[[I:.*]]) in (2, 2) shared_outs
// CHECK: tensor.extract_slice %{{.*}}[%[[J]], 0, 0] [1, 32, 32] [1, 1, 1] : tensor<2x32x32xf32> to tensor<1x32x32xf32>
// CHECK: scf.for %{{.*}} = %c0 to %c32 step %c1
// CHECK: vector.transfer_read {{.*}} : tensor<1x1x32xf32>, vector<32xf32>
// CHECK-COUNT-8: vector.fma {{.*}} : vector<32xf32>
// CHECK-NOT: linalg.contract
#pa = affine_map<(d0, d1, d2, d3, d4) -> (d1, d3, d2)>
#pb = affine_map<(d0, d1, d2, d3, d4) -> (d0, d2, d4)>
#pc = affine_map<(d0, d1, d2, d3, d4) -> (d1, d3, d0, d4)>
func.func @packed(%a: tensor<2x8x32xf32>, %b: tensor<2x32x32xf32>, %c: tensor<2x8x2x32xf32>) -> tensor<2x8x2x32xf32> {
  %0 = linalg.contract indexing_maps = [#pa, #pb, #pc] {kiln.packed, kiln.tile = array<i64: 8, 32>}
      ins(%a, %b : tensor<2x8x32xf32>, tensor<2x32x32xf32>) outs(%c : tensor<2x8x2x32xf32>) -> tensor<2x8x2x32xf32>
  return %0 : tensor<2x8x2x32xf32>
}

// The copy that packs B into panels (kiln.pack) runs in parallel over panels
// and moves one panel row per step as a whole vector.
#read = affine_map<(d0, d1, d2) -> (d1, d0, d2)>
#id = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-LABEL: func.func @pack
// CHECK: scf.forall (%[[P:.*]]) in (2)
// CHECK: scf.for
// CHECK: %[[ROW:.*]] = vector.transfer_read {{.*}} : tensor<1x1x16xf32>, vector<16xf32>
// CHECK: vector.transfer_write %[[ROW]], {{.*}} : vector<16xf32>, tensor<1x1x16xf32>
func.func @pack(%b: tensor<3x32xf32>) -> tensor<2x3x16xf32> {
  %panels = tensor.expand_shape %b [[0], [1, 2]] output_shape [3, 2, 16] : tensor<3x32xf32> into tensor<3x2x16xf32>
  %init = tensor.empty() : tensor<2x3x16xf32>
  %0 = linalg.generic {indexing_maps = [#read, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%panels : tensor<3x2x16xf32>) outs(%init : tensor<2x3x16xf32>) attrs = {kiln.pack} {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<2x3x16xf32>
  return %0 : tensor<2x3x16xf32>
}

// Row reductions (a Softmax's sum of exponentials: rows of 32, the row max
// kept as a unit dimension) run one row per forall iteration, 16 lanes of
// partial sums carried by a loop of vector ops, then reduced to the row's
// sum. The unit dimensions are collapsed for the vectorizer and expanded
// back.
#rows = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#kept = affine_map<(d0, d1, d2) -> (d0, d1, 0)>
// CHECK-LABEL: func.func @softmax_sum
// CHECK: tensor.collapse_shape %arg1 {{\[\[}}0], [1, 2]] : tensor<2x4x1xf32> into tensor<2x4xf32>
// CHECK: scf.forall (%{{.*}}, %{{.*}}) in (2, 4)
// CHECK: scf.for
// CHECK: vector.transfer_read {{.*}} : tensor<1x1x16xf32>, vector<16xf32>
// CHECK: math.exp {{.*}} : vector<16xf32>
// CHECK: arith.addf {{.*}} : vector<16xf32>
// CHECK: vector.reduction <add>, %{{.*}}, %{{.*}} : vector<16xf32> into f32
// CHECK-NOT: linalg.generic
// CHECK: tensor.expand_shape {{.*}} into tensor<2x4x1xf32>
func.func @softmax_sum(%x: tensor<2x4x32xf32>, %max: tensor<2x4x1xf32>) -> tensor<2x4x1xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x4x1xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<2x4x1xf32>) -> tensor<2x4x1xf32>
  %sum = linalg.generic {indexing_maps = [#rows, #kept, #kept],
                         iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %max : tensor<2x4x32xf32>, tensor<2x4x1xf32>) outs(%init : tensor<2x4x1xf32>) {
  ^bb0(%v: f32, %m: f32, %acc: f32):
    %d = arith.subf %v, %m : f32
    %p = math.exp %d : f32
    %s = arith.addf %p, %acc : f32
    linalg.yield %s : f32
  } -> tensor<2x4x1xf32>
  return %sum : tensor<2x4x1xf32>
}

// Not row reductions: 24 elements per row (no whole vectors), and a
// reduction over the outer dimension (strided).
#cols = affine_map<(d0, d1) -> (d1, d0)>
#out = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func.func @not_row_reductions
// CHECK: linalg.generic
// CHECK: linalg.generic
// CHECK-NOT: vector.
func.func @not_row_reductions(%x: tensor<4x24xf32>, %y: tensor<32x4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %short = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, #out],
                           iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x24xf32>) outs(%init : tensor<4xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %s = arith.addf %v, %acc : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %strided = linalg.generic {indexing_maps = [#cols, #out], iterator_types = ["parallel", "reduction"]}
      ins(%y : tensor<32x4xf32>) outs(%init : tensor<4xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %s = arith.addf %v, %acc : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  return %short, %strided : tensor<4xf32>, tensor<4xf32>
}
