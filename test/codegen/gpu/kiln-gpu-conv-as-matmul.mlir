// RUN: kiln-opt %s --split-input-file --kiln-gpu-conv-as-matmul | FileCheck %s

// A 3x3 convolution, stride 2, dilation 1 along H and 2 along W: its
// fields [2, 3, 3, 3, 4, 5] are a copy whose input map carries the strides
// and dilations, marked to be computed where the matmul reads it
// (kiln-gpu-compute-on-read); the filter [8, 27] times the fields
// [2, 27, 20] is a
// contraction (k innermost, the convolution's body) into the output
// collapsed to [2, 8, 20], expanded back.
// CHECK-DAG: #[[READ:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d4 * 2 + d2, d5 * 2 + d3 * 2)>
// CHECK-DAG: #[[ID6:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3, d4, d5)>
// CHECK-DAG: #[[FIELDS:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>
// CHECK-DAG: #[[FILTER:.*]] = affine_map<(d0, d1, d2, d3) -> (d1, d3)>
// CHECK-DAG: #[[OUT:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
// CHECK-LABEL: func.func @conv
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x9x13xf32>, %[[W:.*]]: tensor<8x3x3x3xf32>, %[[INIT:.*]]: tensor<2x8x4x5xf32>)
// CHECK:   %[[FLAT_OUT:.*]] = tensor.collapse_shape %[[INIT]] {{\[}}[0], [1], [2, 3]] : tensor<2x8x4x5xf32> into tensor<2x8x20xf32>
// CHECK:   %[[EMPTY:.*]] = tensor.empty() : tensor<2x3x3x3x4x5xf32>
// CHECK:   %[[COPY:.*]] = linalg.generic {indexing_maps = [#[[READ]], #[[ID6]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%[[X]] : tensor<2x3x9x13xf32>) outs(%[[EMPTY]] : tensor<2x3x3x3x4x5xf32>) attrs =  {kiln.gpu.computed_on_read}
// CHECK:   %[[COLS:.*]] = tensor.collapse_shape %[[COPY]] {{\[}}[0], [1, 2, 3], [4, 5]] : tensor<2x3x3x3x4x5xf32> into tensor<2x27x20xf32>
// CHECK:   %[[FLAT_W:.*]] = tensor.collapse_shape %[[W]] {{\[}}[0], [1, 2, 3]] : tensor<8x3x3x3xf32> into tensor<8x27xf32>
// CHECK:   %[[MM:.*]] = linalg.generic {indexing_maps = [#[[FIELDS]], #[[FILTER]], #[[OUT]]], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%[[COLS]], %[[FLAT_W]] : tensor<2x27x20xf32>, tensor<8x27xf32>) outs(%[[FLAT_OUT]] : tensor<2x8x20xf32>)
// CHECK:     arith.mulf
// CHECK:     arith.addf
// CHECK:   tensor.expand_shape %[[MM]] {{\[}}[0], [1], [2, 3]] output_shape [2, 8, 4, 5]
// CHECK-NOT: linalg.conv
func.func @conv(%x: tensor<2x3x9x13xf32>, %w: tensor<8x3x3x3xf32>, %init: tensor<2x8x4x5xf32>) -> tensor<2x8x4x5xf32> {
  %y = linalg.conv_2d_nchw_fchw {dilations = dense<[1, 2]> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>} ins(%x, %w : tensor<2x3x9x13xf32>, tensor<8x3x3x3xf32>) outs(%init : tensor<2x8x4x5xf32>) -> tensor<2x8x4x5xf32>
  return %y : tensor<2x8x4x5xf32>
}

// -----

// A batch of large fields (8 images of 64 channels x 9 taps x 64 x 64:
// 18.9M elements) is one matmul: the fields are never written out.
// CHECK-LABEL: func.func @large_batch
// CHECK-SAME: (%[[X:.*]]: tensor<8x64x66x66xf32>,
// CHECK:   linalg.generic {{.*}} ins(%[[X]] : tensor<8x64x66x66xf32>) outs(%{{.*}} : tensor<8x64x3x3x64x64xf32>) attrs =  {kiln.gpu.computed_on_read}
// CHECK:   linalg.generic {{.*}} outs(%{{.*}} : tensor<8x8x4096xf32>)
// CHECK-NOT: linalg.generic
// CHECK-NOT: tensor.insert_slice
func.func @large_batch(%x: tensor<8x64x66x66xf32>, %w: tensor<8x64x3x3xf32>, %init: tensor<8x8x64x64xf32>) -> tensor<8x8x64x64xf32> {
  %y = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x, %w : tensor<8x64x66x66xf32>, tensor<8x64x3x3xf32>) outs(%init : tensor<8x8x64x64xf32>) -> tensor<8x8x64x64xf32>
  return %y : tensor<8x8x64x64xf32>
}

// -----

// A bias broadcast into the output (kiln-to-linalg's init of a convolution
// with a bias) is rebuilt on the collapsed [N, F, OH*OW]: the matmul's
// init is the broadcast itself, which kiln-gpu-distribute fuses into its
// tiles. The bias map keeps its constants.
// CHECK-DAG: #[[BIAS:.*]] = affine_map<(d0, d1, d2) -> (d1, 0, 0)>
// CHECK-DAG: #[[ID3:.*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-LABEL: func.func @bias
// CHECK-SAME: (%[[X:.*]]: tensor<1x3x6x6xf32>, %[[W:.*]]: tensor<4x3x3x3xf32>, %[[B:.*]]: tensor<4x1x1xf32>)
// CHECK:   %[[EMPTY:.*]] = tensor.empty() : tensor<1x4x16xf32>
// CHECK:   %[[INIT:.*]] = linalg.generic {indexing_maps = [#[[BIAS]], #[[ID3]]], iterator_types = ["parallel", "parallel", "parallel"]} ins(%[[B]] : tensor<4x1x1xf32>) outs(%[[EMPTY]] : tensor<1x4x16xf32>)
// CHECK:   %[[MM:.*]] = linalg.generic {{.*}} outs(%[[INIT]] : tensor<1x4x16xf32>)
// CHECK:   tensor.expand_shape %[[MM]]
// CHECK-NOT: tensor.collapse_shape %{{.*}} : tensor<1x4x4x4xf32>
#bias = affine_map<(n, f, y, x) -> (f, 0, 0)>
#id4 = affine_map<(n, f, y, x) -> (n, f, y, x)>
func.func @bias(%x: tensor<1x3x6x6xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<4x1x1xf32>) -> tensor<1x4x4x4xf32> {
  %e = tensor.empty() : tensor<1x4x4x4xf32>
  %init = linalg.generic {indexing_maps = [#bias, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%b : tensor<4x1x1xf32>) outs(%e : tensor<1x4x4x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<1x4x4x4xf32>
  %y = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x, %w : tensor<1x3x6x6xf32>, tensor<4x3x3x3xf32>) outs(%init : tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  return %y : tensor<1x4x4x4xf32>
}

// -----

// A pointwise convolution (1x1, stride 1, no padding: the output as large
// as the input) reads each pixel once, at its own output pixel: its fields
// are the input itself, collapsed to [N, C, H*W], no copy. Strided, it
// still gets the copy.
// CHECK-LABEL: func.func @pointwise
// CHECK-SAME: (%[[X:.*]]: tensor<2x16x6x8xf32>, %[[W:.*]]: tensor<32x16x1x1xf32>
// CHECK:   %[[COLS:.*]] = tensor.collapse_shape %[[X]] {{\[}}[0], [1], [2, 3]] : tensor<2x16x6x8xf32> into tensor<2x16x48xf32>
// CHECK:   %[[FLAT_W:.*]] = tensor.collapse_shape %[[W]] {{\[}}[0], [1, 2, 3]] : tensor<32x16x1x1xf32> into tensor<32x16xf32>
// CHECK:   linalg.generic {{.*}} ins(%[[COLS]], %[[FLAT_W]] : tensor<2x16x48xf32>, tensor<32x16xf32>)
// CHECK:   linalg.generic {{.*}} ins(%[[X]] : tensor<2x16x6x8xf32>) outs(%{{.*}} : tensor<2x16x1x1x3x4xf32>)
// CHECK:   tensor.collapse_shape %{{.*}} {{\[}}[0], [1, 2, 3], [4, 5]] : tensor<2x16x1x1x3x4xf32> into tensor<2x16x12xf32>
func.func @pointwise(%x: tensor<2x16x6x8xf32>, %w: tensor<32x16x1x1xf32>, %o: tensor<2x32x6x8xf32>, %so: tensor<2x32x3x4xf32>) -> (tensor<2x32x6x8xf32>, tensor<2x32x3x4xf32>) {
  %0 = linalg.conv_2d_nchw_fchw ins(%x, %w : tensor<2x16x6x8xf32>, tensor<32x16x1x1xf32>) outs(%o : tensor<2x32x6x8xf32>) -> tensor<2x32x6x8xf32>
  %1 = linalg.conv_2d_nchw_fchw {strides = dense<2> : tensor<2xi64>} ins(%x, %w : tensor<2x16x6x8xf32>, tensor<32x16x1x1xf32>) outs(%so : tensor<2x32x3x4xf32>) -> tensor<2x32x3x4xf32>
  return %0, %1 : tensor<2x32x6x8xf32>, tensor<2x32x3x4xf32>
}

// -----

// Left direct: a dynamic batch and a 1x1 filter over one channel (a
// scale).
// CHECK-LABEL: func.func @direct
// CHECK-COUNT-2: linalg.conv_2d_nchw_fchw
func.func @direct(%x: tensor<?x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %o: tensor<?x4x6x6xf32>,
                  %s: tensor<1x1x8x8xf32>, %sw: tensor<4x1x1x1xf32>, %so: tensor<1x4x8x8xf32>)
    -> (tensor<?x4x6x6xf32>, tensor<1x4x8x8xf32>) {
  %0 = linalg.conv_2d_nchw_fchw ins(%x, %w : tensor<?x3x8x8xf32>, tensor<4x3x3x3xf32>) outs(%o : tensor<?x4x6x6xf32>) -> tensor<?x4x6x6xf32>
  %1 = linalg.conv_2d_nchw_fchw ins(%s, %sw : tensor<1x1x8x8xf32>, tensor<4x1x1x1xf32>) outs(%so : tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  return %0, %1 : tensor<?x4x6x6xf32>, tensor<1x4x8x8xf32>
}

// -----

// A widening convolution (--precision=bf16: bf16 operands, f32 sums) is a
// linalg.generic of the named op's loops and maps: the same rewrite, its
// strides (2, 1) and dilations (1, 2) read off the input map; the fields
// stay bf16 and the contraction keeps the body that widens them.
// CHECK-DAG: #[[WREAD:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d4 * 2 + d2, d5 + d3 * 2)>
// CHECK-LABEL: func.func @widening
// CHECK:   %[[COPY:.*]] = linalg.generic {indexing_maps = [#[[WREAD]], #{{.*}}]{{.*}} ins(%{{.*}} : tensor<1x4x9x9xbf16>) outs(%{{.*}} : tensor<1x4x3x3x4x5xbf16>)
// CHECK:   linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<1x36x20xbf16>, tensor<8x36xbf16>) outs(%{{.*}} : tensor<1x8x20xf32>)
// CHECK:     arith.extf
// CHECK:     arith.extf
// CHECK:     arith.mulf
// CHECK:     arith.addf
// CHECK-NOT: affine_map<(d0, d1, d2, d3, d4, d5, d6)
#in = affine_map<(n, f, oy, ox, c, ky, kx) -> (n, c, oy * 2 + ky, ox + kx * 2)>
#filter = affine_map<(n, f, oy, ox, c, ky, kx) -> (f, c, ky, kx)>
#out = affine_map<(n, f, oy, ox, c, ky, kx) -> (n, f, oy, ox)>
func.func @widening(%x: tensor<1x4x9x9xbf16>, %w: tensor<8x4x3x3xbf16>, %init: tensor<1x8x4x5xf32>) -> tensor<1x8x4x5xf32> {
  %y = linalg.generic {indexing_maps = [#in, #filter, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%x, %w : tensor<1x4x9x9xbf16>, tensor<8x4x3x3xbf16>) outs(%init : tensor<1x8x4x5xf32>) {
  ^bb0(%a: bf16, %b: bf16, %s: f32):
    %af = arith.extf %a : bf16 to f32
    %bf = arith.extf %b : bf16 to f32
    %p = arith.mulf %af, %bf : f32
    %t = arith.addf %s, %p : f32
    linalg.yield %t : f32
  } -> tensor<1x8x4x5xf32>
  return %y : tensor<1x8x4x5xf32>
}
