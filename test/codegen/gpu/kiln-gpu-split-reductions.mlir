// RUN: kiln-opt %s --split-input-file --kiln-gpu-split-reductions | FileCheck %s

// A layer norm's means: 128 results of 768 values, the result kept as a
// dimension of 1. Split 64 ways (8192 partials; 12 values each): the
// input's rows as [12, 64], the partials [1, 128, 1, 64] from zeros, their
// loop parallel and last; then the partials summed into the init.
// CHECK-DAG: #[[ID4:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// CHECK-DAG: #[[PARTIALS:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, 0, d3)>
// CHECK-DAG: #[[RESULT:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
// CHECK-LABEL: func.func @mean
// CHECK-SAME: (%[[X:.*]]: tensor<1x128x768xf32>)
// CHECK:   %[[INIT:.*]] = linalg.fill
// CHECK:   %[[ROWS:.*]] = tensor.expand_shape %[[X]] {{\[}}[0], [1], [2, 3]] output_shape [1, 128, 12, 64] : tensor<1x128x768xf32> into tensor<1x128x12x64xf32>
// CHECK:   %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK:   %[[EMPTY:.*]] = tensor.empty() : tensor<1x128x1x64xf32>
// CHECK:   %[[ZEROS:.*]] = linalg.fill ins(%[[ZERO]] : f32) outs(%[[EMPTY]] : tensor<1x128x1x64xf32>)
// CHECK:   %[[SUMS:.*]] = linalg.generic {indexing_maps = [#[[ID4]], #[[PARTIALS]]], iterator_types = ["parallel", "parallel", "reduction", "parallel"]} ins(%[[ROWS]] : tensor<1x128x12x64xf32>) outs(%[[ZEROS]] : tensor<1x128x1x64xf32>)
// CHECK:     arith.addf
// CHECK:   %[[MEAN:.*]] = linalg.generic {indexing_maps = [#[[ID4]], #[[RESULT]]], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%[[SUMS]] : tensor<1x128x1x64xf32>) outs(%[[INIT]] : tensor<1x128x1xf32>)
// CHECK-NEXT: ^bb0(%[[IN:.*]]: f32, %[[OUT:.*]]: f32):
// CHECK-NEXT:   %[[S:.*]] = arith.addf %[[IN]], %[[OUT]] : f32
// CHECK-NEXT:   linalg.yield %[[S]] : f32
// CHECK:   return %[[MEAN]]
#rows = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#kept = affine_map<(d0, d1, d2) -> (d0, d1, 0)>
func.func @mean(%x: tensor<1x128x768xf32>) -> tensor<1x128x1xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x128x1xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<1x128x1xf32>) -> tensor<1x128x1xf32>
  %r = linalg.generic {indexing_maps = [#rows, #kept], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x : tensor<1x128x768xf32>) outs(%f : tensor<1x128x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  } -> tensor<1x128x1xf32>
  return %r : tensor<1x128x1xf32>
}

// -----

// Its variance: the mean, an input the reduced loop does not index, is
// read as it is; the body (square of the difference, then the sum) goes
// to the partials whole, and only its combiner to the second reduction.
// CHECK-DAG: #[[MEANS:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, 0)>
// CHECK-LABEL: func.func @variance
// CHECK:   %[[ROWS:.*]] = tensor.expand_shape %{{.*}} {{\[}}[0], [1], [2, 3]] output_shape [1, 128, 12, 64]
// CHECK:   linalg.generic {indexing_maps = [#{{.*}}, #[[MEANS]], #{{.*}}], {{.*}} ins(%[[ROWS]], %{{.*}} : tensor<1x128x12x64xf32>, tensor<1x128x1xf32>) outs(%{{.*}} : tensor<1x128x1x64xf32>)
// CHECK:     arith.subf
// CHECK:     arith.mulf
// CHECK:     arith.addf
// CHECK:   linalg.generic {{.*}} ins(%{{.*}} : tensor<1x128x1x64xf32>) outs(%{{.*}} : tensor<1x128x1xf32>)
// CHECK-NEXT: ^bb0
// CHECK-NEXT:   arith.addf
// CHECK-NEXT:   linalg.yield
#rows = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#kept = affine_map<(d0, d1, d2) -> (d0, d1, 0)>
func.func @variance(%x: tensor<1x128x768xf32>, %m: tensor<1x128x1xf32>, %init: tensor<1x128x1xf32>) -> tensor<1x128x1xf32> {
  %r = linalg.generic {indexing_maps = [#rows, #kept, #kept], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %m : tensor<1x128x768xf32>, tensor<1x128x1xf32>) outs(%init : tensor<1x128x1xf32>) {
  ^bb0(%in: f32, %mean: f32, %out: f32):
    %d = arith.subf %in, %mean : f32
    %sq = arith.mulf %d, %d : f32
    %s = arith.addf %sq, %out : f32
    linalg.yield %s : f32
  } -> tensor<1x128x1xf32>
  return %r : tensor<1x128x1xf32>
}

// -----

// A softmax's row maxima, 1536 rows of 128: 16 partials each (8 values
// apiece, the fewest), from -inf, combined by maximumf.
// CHECK-LABEL: func.func @maxima
// CHECK:   tensor.expand_shape %{{.*}} {{\[}}[0], [1], [2, 3]] output_shape [12, 128, 8, 16]
// CHECK:   %[[NINF:.*]] = arith.constant 0xFF800000 : f32
// CHECK:   linalg.fill ins(%[[NINF]] : f32) outs(%{{.*}} : tensor<12x128x16xf32>)
// CHECK:   linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction", "parallel"]
// CHECK:     arith.maximumf
// CHECK:   linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction"]} ins(%{{.*}} : tensor<12x128x16xf32>) outs(%{{.*}} : tensor<12x128xf32>)
// CHECK-NEXT: ^bb0
// CHECK-NEXT:   arith.maximumf
func.func @maxima(%x: tensor<12x128x128xf32>, %init: tensor<12x128xf32>) -> tensor<12x128xf32> {
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x : tensor<12x128x128xf32>) outs(%init : tensor<12x128xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.maximumf %in, %out : f32
    linalg.yield %s : f32
  } -> tensor<12x128xf32>
  return %r : tensor<12x128xf32>
}

// -----

// Left whole: 65536 results (enough threads already); a column sum (the
// reduced loop is not the input's last dimension); rows of 12 (too short
// to split); a dynamic shape; a contraction; a body that reads its loop
// indices; a combiner without a neutral element (a subtraction).
// CHECK-LABEL: func.func @whole
// CHECK-NOT: tensor.expand_shape
// CHECK-COUNT-4: linalg.generic
// CHECK: linalg.matmul
// CHECK-COUNT-2: linalg.generic
// CHECK-NOT: linalg.generic
#rows = affine_map<(d0, d1) -> (d0, d1)>
#result = affine_map<(d0, d1) -> (d0)>
#cols = affine_map<(d0, d1) -> (d1, d0)>
func.func @whole(%many: tensor<65536x256xf32>, %mi: tensor<65536xf32>,
                 %t: tensor<768x64xf32>, %ti: tensor<64xf32>,
                 %short: tensor<64x12xf32>, %si: tensor<64xf32>,
                 %dyn: tensor<?x768xf32>, %di: tensor<?xf32>,
                 %a: tensor<4x768xf32>, %b: tensor<768x4xf32>, %c: tensor<4x4xf32>,
                 %x: tensor<64x768xf32>, %xi: tensor<64xf32>) {
  %0 = linalg.generic {indexing_maps = [#rows, #result], iterator_types = ["parallel", "reduction"]} ins(%many : tensor<65536x256xf32>) outs(%mi : tensor<65536xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  } -> tensor<65536xf32>
  %1 = linalg.generic {indexing_maps = [#cols, #result], iterator_types = ["parallel", "reduction"]} ins(%t : tensor<768x64xf32>) outs(%ti : tensor<64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  } -> tensor<64xf32>
  %2 = linalg.generic {indexing_maps = [#rows, #result], iterator_types = ["parallel", "reduction"]} ins(%short : tensor<64x12xf32>) outs(%si : tensor<64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  } -> tensor<64xf32>
  %3 = linalg.generic {indexing_maps = [#rows, #result], iterator_types = ["parallel", "reduction"]} ins(%dyn : tensor<?x768xf32>) outs(%di : tensor<?xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  } -> tensor<?xf32>
  %4 = linalg.matmul ins(%a, %b : tensor<4x768xf32>, tensor<768x4xf32>) outs(%c : tensor<4x4xf32>) -> tensor<4x4xf32>
  %5 = linalg.generic {indexing_maps = [#rows, #result], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<64x768xf32>) outs(%xi : tensor<64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %i = linalg.index 1 : index
    %ii = arith.index_cast %i : index to i32
    %f = arith.sitofp %ii : i32 to f32
    %p = arith.mulf %in, %f : f32
    %s = arith.addf %p, %out : f32
    linalg.yield %s : f32
  } -> tensor<64xf32>
  %6 = linalg.generic {indexing_maps = [#rows, #result], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<64x768xf32>) outs(%xi : tensor<64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.subf %out, %in : f32
    linalg.yield %s : f32
  } -> tensor<64xf32>
  return
}
