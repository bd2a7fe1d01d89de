// RUN: kiln-opt %s --split-input-file --kiln-gpu-split-reductions | FileCheck %s
// RUN: kiln-opt %s --split-input-file "--kiln-gpu-split-reductions=split-contractions=true" | FileCheck %s --check-prefix=SPLITK
// RUN: kiln-opt %s --split-input-file "--kiln-gpu-split-reductions=split-contractions=true target=cuda report=true" -o /dev/null 2>&1 | FileCheck %s --check-prefix=REPORT

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

// -----

// Split-K (split-contractions): a convolution's matmul of 512 filters by
// 49 pixels, 4608 products each, would have 16 workgroups of 64x32: its
// reduction goes in 16 slices of 288 (the fewest powers of two that make
// 256 workgroups), the slices a batch of the matmul (filters as
// [512, 16, 288], fields as [16, 288, 49]) into zeroed partials
// [16, 512, 49], then a reduction over the slices, innermost, into the
// init (here a bias). Without the option, contractions stay whole.
// CHECK-LABEL: func.func @few_workgroups
// CHECK-NOT: tensor.expand_shape
// SPLITK-LABEL: func.func @whole
// SPLITK-DAG: #[[A:.*]] = affine_map<(d0, d1, d2, d3) -> (d1, d0, d3)>
// SPLITK-DAG: #[[B:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>
// SPLITK-DAG: #[[P:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
// SPLITK-DAG: #[[SLICES:.*]] = affine_map<(d0, d1, d2) -> (d2, d0, d1)>
// SPLITK-DAG: #[[SUM:.*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// SPLITK-LABEL: func.func @few_workgroups
// SPLITK-SAME: (%[[W:.*]]: tensor<512x4608xf32>, %[[X:.*]]: tensor<4608x49xf32>, %[[BIAS:.*]]: tensor<512x49xf32>)
// SPLITK:   %[[WS:.*]] = tensor.expand_shape %[[W]] {{\[}}[0], [1, 2]] output_shape [512, 16, 288]
// SPLITK:   %[[XS:.*]] = tensor.expand_shape %[[X]] {{\[}}[0, 1], [2]] output_shape [16, 288, 49]
// SPLITK:   %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// SPLITK:   %[[EMPTY:.*]] = tensor.empty() : tensor<16x512x49xf32>
// SPLITK:   %[[ZEROS:.*]] = linalg.fill ins(%[[ZERO]] : f32) outs(%[[EMPTY]] : tensor<16x512x49xf32>)
// SPLITK:   %[[PARTIALS:.*]] = linalg.generic {indexing_maps = [#[[A]], #[[B]], #[[P]]], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%[[WS]], %[[XS]] : tensor<512x16x288xf32>, tensor<16x288x49xf32>) outs(%[[ZEROS]] : tensor<16x512x49xf32>)
// SPLITK:     arith.mulf
// SPLITK:     arith.addf
// SPLITK:   %[[SUMS:.*]] = linalg.generic {indexing_maps = [#[[SLICES]], #[[SUM]]], iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[PARTIALS]] : tensor<16x512x49xf32>) outs(%[[BIAS]] : tensor<512x49xf32>)
// SPLITK-NEXT: ^bb0(%[[IN:.*]]: f32, %[[OUT:.*]]: f32):
// SPLITK-NEXT:   %[[S:.*]] = arith.addf %[[IN]], %[[OUT]] : f32
// SPLITK-NEXT:   linalg.yield %[[S]] : f32
// SPLITK:   return %[[SUMS]]
// REPORT: remark: placement: reduction split into 16 slices of 288, their partial sums added up after
#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (k, n)>
#c = affine_map<(m, n, k) -> (m, n)>
func.func @few_workgroups(%w: tensor<512x4608xf32>, %x: tensor<4608x49xf32>, %bias: tensor<512x49xf32>) -> tensor<512x49xf32> {
  %r = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%w, %x : tensor<512x4608xf32>, tensor<4608x49xf32>) outs(%bias : tensor<512x49xf32>) {
  ^bb0(%p: f32, %q: f32, %s: f32):
    %m = arith.mulf %p, %q : f32
    %t = arith.addf %s, %m : f32
    linalg.yield %t : f32
  } -> tensor<512x49xf32>
  return %r : tensor<512x49xf32>
}

// -----

// bf16 operands summed in f32 (a widening body) split alike, fewer slices
// where the reduction runs out: 2048 products by 64x64 results (one
// workgroup) in 8 slices of 256. Left whole: a matmul with 256
// workgroups already (1024x1024 of 64x32 tiles: 512), one whose slices
// would be shorter than 256 (K = 384), one whose slices would not be
// whole chunks of 32 (K = 4616: halves of 2308), and one summing in bf16.
// SPLITK-LABEL: func.func @which
// SPLITK:   tensor.expand_shape %{{.*}} output_shape [64, 8, 256] : tensor<64x2048xbf16> into tensor<64x8x256xbf16>
// SPLITK:   tensor.expand_shape %{{.*}} output_shape [8, 256, 64] : tensor<2048x64xbf16> into tensor<8x256x64xbf16>
// SPLITK:   linalg.generic {{.*}} outs(%{{.*}} : tensor<8x64x64xf32>)
// SPLITK:     arith.extf
// SPLITK-NOT: tensor.expand_shape
// SPLITK:   return
#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (k, n)>
#c = affine_map<(m, n, k) -> (m, n)>
func.func @which(%a: tensor<64x2048xbf16>, %b: tensor<2048x64xbf16>, %c: tensor<64x64xf32>,
                 %big_a: tensor<1024x64xf32>, %big_b: tensor<64x1024xf32>, %big_c: tensor<1024x1024xf32>,
                 %short_a: tensor<64x384xf32>, %short_b: tensor<384x64xf32>,
                 %odd_a: tensor<64x4616xf32>, %odd_b: tensor<4616x64xf32>,
                 %h: tensor<64x64xbf16>) {
  %0 = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a, %b : tensor<64x2048xbf16>, tensor<2048x64xbf16>) outs(%c : tensor<64x64xf32>) {
  ^bb0(%p: bf16, %q: bf16, %s: f32):
    %pf = arith.extf %p : bf16 to f32
    %qf = arith.extf %q : bf16 to f32
    %m = arith.mulf %pf, %qf : f32
    %t = arith.addf %s, %m : f32
    linalg.yield %t : f32
  } -> tensor<64x64xf32>
  %1 = linalg.matmul ins(%big_a, %big_b : tensor<1024x64xf32>, tensor<64x1024xf32>) outs(%big_c : tensor<1024x1024xf32>) -> tensor<1024x1024xf32>
  %2 = linalg.matmul ins(%short_a, %short_b : tensor<64x384xf32>, tensor<384x64xf32>) outs(%c : tensor<64x64xf32>) -> tensor<64x64xf32>
  %3 = linalg.matmul ins(%odd_a, %odd_b : tensor<64x4616xf32>, tensor<4616x64xf32>) outs(%c : tensor<64x64xf32>) -> tensor<64x64xf32>
  %4 = linalg.matmul ins(%a, %b : tensor<64x2048xbf16>, tensor<2048x64xbf16>) outs(%h : tensor<64x64xbf16>) -> tensor<64x64xbf16>
  return
}

// -----

// A reduction whose loop is not the innermost (d1 of three), over its
// input's last dimension: its partials' loop still goes last, after the
// loops it had (d0, the values of a partial, d2).
// CHECK-DAG: #[[X:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d2, d1, d3)>
// CHECK-DAG: #[[PARTIAL:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>
// CHECK-LABEL: func.func @middle_loop
// CHECK:   %[[ROWS:.*]] = tensor.expand_shape %{{.*}} {{\[}}[0], [1], [2, 3]] output_shape [64, 4, 12, 64]
// CHECK:   %[[SUMS:.*]] = linalg.generic {indexing_maps = [#[[X]], #[[PARTIAL]]], iterator_types = ["parallel", "reduction", "parallel", "parallel"]} ins(%[[ROWS]] : tensor<64x4x12x64xf32>) outs(%{{.*}} : tensor<64x4x64xf32>)
// CHECK:   linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[SUMS]] : tensor<64x4x64xf32>) outs(%{{.*}} : tensor<64x4xf32>)
#x = affine_map<(d0, d1, d2) -> (d0, d2, d1)>
#r = affine_map<(d0, d1, d2) -> (d0, d2)>
func.func @middle_loop(%x: tensor<64x4x768xf32>, %init: tensor<64x4xf32>) -> tensor<64x4xf32> {
  %r = linalg.generic {indexing_maps = [#x, #r], iterator_types = ["parallel", "reduction", "parallel"]} ins(%x : tensor<64x4x768xf32>) outs(%init : tensor<64x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  } -> tensor<64x4xf32>
  return %r : tensor<64x4xf32>
}

// -----

// A matmul whose reduction is its outermost loop (k, m, n): the slices go
// first, then the values of a slice, m and n.
// SPLITK-LABEL: func.func @middle_loop
// SPLITK-DAG: #[[A:.*]] = affine_map<(d0, d1, d2, d3) -> (d2, d0, d1)>
// SPLITK-DAG: #[[B:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
// SPLITK-DAG: #[[P:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>
// SPLITK-LABEL: func.func @k_outermost
// SPLITK:   %[[AS:.*]] = tensor.expand_shape %{{.*}} {{\[}}[0], [1, 2]] output_shape [512, 16, 288]
// SPLITK:   %[[BS:.*]] = tensor.expand_shape %{{.*}} {{\[}}[0, 1], [2]] output_shape [16, 288, 49]
// SPLITK:   linalg.generic {indexing_maps = [#[[A]], #[[B]], #[[P]]], iterator_types = ["parallel", "reduction", "parallel", "parallel"]} ins(%[[AS]], %[[BS]] : tensor<512x16x288xf32>, tensor<16x288x49xf32>) outs(%{{.*}} : tensor<16x512x49xf32>)
#a = affine_map<(k, m, n) -> (m, k)>
#b = affine_map<(k, m, n) -> (k, n)>
#c = affine_map<(k, m, n) -> (m, n)>
func.func @k_outermost(%a: tensor<512x4608xf32>, %b: tensor<4608x49xf32>, %c: tensor<512x49xf32>) -> tensor<512x49xf32> {
  %r = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["reduction", "parallel", "parallel"]} ins(%a, %b : tensor<512x4608xf32>, tensor<4608x49xf32>) outs(%c : tensor<512x49xf32>) {
  ^bb0(%p: f32, %q: f32, %s: f32):
    %m = arith.mulf %p, %q : f32
    %t = arith.addf %s, %m : f32
    linalg.yield %t : f32
  } -> tensor<512x49xf32>
  return %r : tensor<512x49xf32>
}
