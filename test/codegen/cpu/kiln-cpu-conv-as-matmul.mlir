// kiln-cpu-conv-as-matmul rewrites the convolutions the CPU runs as
// matmuls; kiln-convert-to-linalg then lowers the rest of the function.
// RUN: kiln-opt %s --kiln-cpu-conv-as-matmul --kiln-convert-to-linalg --split-input-file | FileCheck %s
// RUN: kiln-opt %s --kiln-cpu-conv-as-matmul --split-input-file | FileCheck %s --check-prefix=LEAVE

// Batch-1 convolution: im2col and one matmul whose accumulator starts as the
// broadcast bias. The im2col is a copy over (c, ky, kx, oy, ox) whose input
// map carries the stride and dilation: no index arithmetic per element.
// CHECK-DAG: #[[UNFOLD:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (0, d0, d1 + d3, d2 + d4)>
// CHECK-DAG: #[[ID5:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>
// CHECK-LABEL: func.func @conv_im2col
// CHECK: %[[PADDED:.*]] = tensor.insert_slice %arg0 into %{{.*}}[0, 0, 1, 1] [1, 3, 8, 8] [1, 1, 1, 1]
// CHECK: %[[COL:.*]] = linalg.generic {indexing_maps = [#[[UNFOLD]], #[[ID5]]]
// CHECK-SAME: ins(%[[PADDED]] : tensor<1x3x10x10xf32>) outs(%{{.*}} : tensor<3x3x3x8x8xf32>)
// CHECK-NEXT: ^bb0(%[[IN:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: linalg.yield %[[IN]]
// CHECK: tensor.collapse_shape %[[COL]]
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<8x27xf32>, tensor<27x64xf32>)
func.func @conv_im2col(%x: tensor<1x3x8x8xf32>, %w: tensor<8x3x3x3xf32>, %b: tensor<8xf32>) -> tensor<1x8x8x8xf32> {
  %0 = kiln.conv %x, %w, %b {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, group = 1 : i64} : (tensor<1x3x8x8xf32>, tensor<8x3x3x3xf32>, tensor<8xf32>) -> tensor<1x8x8x8xf32>
  return %0 : tensor<1x8x8x8xf32>
}

// -----

// A dense convolution of dynamic sizes runs per image: im2col of the image
// (sizes from tensor.dim) times the filter as a matrix, in an scf.forall
// over the batch; the window is checked to fit at run time.
// CHECK-LABEL: func.func @conv_dynamic(
// CHECK: scf.if
// CHECK: call @kiln_check_failed
// CHECK: scf.forall (%[[N:.*]]) in (%{{.*}}) shared_outs(%[[OUT:.*]] = %{{.*}}) -> (tensor<?x8x?x?xf32>)
// CHECK: %[[IMAGE:.*]] = tensor.extract_slice %arg0[%[[N]], 0, 0, 0] [1, 3, %{{.*}}, %{{.*}}] [1, 1, 1, 1] : tensor<?x3x?x?xf32> to tensor<1x3x?x?xf32>
// CHECK: linalg.generic {{.*}} ins(%[[IMAGE]] : tensor<1x3x?x?xf32>) outs(%{{.*}} : tensor<3x3x3x?x?xf32>)
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<8x27xf32>, tensor<27x?xf32>) outs(%{{.*}} : tensor<8x?xf32>)
// CHECK: tensor.parallel_insert_slice %{{.*}} into %[[OUT]][%[[N]], 0, 0, 0]
func.func @conv_dynamic(%x: tensor<?x3x?x?xf32>, %w: tensor<8x3x3x3xf32>) -> tensor<?x8x?x?xf32> {
  %r = kiln.conv %x, %w {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<?x3x?x?xf32>, tensor<8x3x3x3xf32>) -> tensor<?x8x?x?xf32>
  return %r : tensor<?x8x?x?xf32>
}

// -----

// A widening convolution: the receptive fields become rows (im2col^T, a
// copy over (n, oy, ox, c, ky, kx)), the constant filter is transposed at
// compile time into the right operand of a widening matmul, and the
// [pixels, filters] product is permuted back to NCHW.
// CHECK-LABEL: func.func @widening_conv
// CHECK: %[[FIELDS:.*]] = linalg.generic {{.*}} ins(%arg0 : tensor<1x2x5x5xi8>) outs(%{{.*}} : tensor<1x3x3x2x3x3xi8>)
// CHECK: tensor.expand_shape {{.*}} into tensor<9x18xi8>
// The first row of filter^T holds element 0 of each filter.
// CHECK: %[[FT:.*]] = arith.constant dense<{{\[}}[-3, 3, 2, 1], {{.*}}> : tensor<18x4xi8>
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %[[FT]] : tensor<9x18xi8>, tensor<18x4xi8>) outs(%{{.*}} : tensor<9x4xi32>) attrs =  {kiln.widening_matmul}
// CHECK: arith.extui
// CHECK: arith.extsi
// CHECK: linalg.generic {{.*}} ins(%{{.*}} : tensor<1x3x3x4xi32>) outs(%{{.*}} : tensor<1x4x3x3xi32>) attrs =  {kiln.layout_copy}
func.func @widening_conv(%x: tensor<1x2x5x5xui8>) -> tensor<1x4x3x3xi32> {
  %w = kiln.constant dense<[[[[-3, 2, 0], [-2, 3, 1], [-1, -3, 2]], [[0, -2, 3], [1, -1, -3], [2, 0, -2]]], [[[3, 1, -1], [-3, 2, 0], [-2, 3, 1]], [[-1, -3, 2], [0, -2, 3], [1, -1, -3]]], [[[2, 0, -2], [3, 1, -1], [-3, 2, 0]], [[-2, 3, 1], [-1, -3, 2], [0, -2, 3]]], [[[1, -1, -3], [2, 0, -2], [3, 1, -1]], [[-3, 2, 0], [-2, 3, 1], [-1, -3, 2]]]]> : tensor<4x2x3x3xi8> -> tensor<4x2x3x3xi8>
  %0 = kiln.conv %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, group = 1 : i64} : (tensor<1x2x5x5xui8>, tensor<4x2x3x3xi8>) -> tensor<1x4x3x3xi32>
  return %0 : tensor<1x4x3x3xi32>
}

// -----

// Channels-last (NHWC input and result): the border is padded in dimensions
// 1 and 2; each output pixel's row of fields is its nine taps' runs of C = 2
// channels, copied as vectors, so that k runs over (ky, kx, c) (the second
// row of filter^T is channel 1 of tap (0, 0)); the [pixels, filters]
// product is the result with no copy.
// CHECK-LABEL: func.func @widening_conv_channels_last
// CHECK: %[[PAD:.*]] = tensor.insert_slice %arg0 into %{{.*}}[0, 1, 1, 0] [1, 5, 5, 2] [1, 1, 1, 1]
// CHECK: scf.forall (%{{.*}}) in (25) shared_outs(%{{.*}} = %{{.*}}) -> (tensor<25x18xi8>)
// CHECK-COUNT-9: vector.transfer_read %[[PAD]]{{.*}} {in_bounds = [true]} : tensor<1x7x7x2xi8>, vector<2xi8>
// CHECK: tensor.parallel_insert_slice
// CHECK: %[[FT:.*]] = arith.constant dense<{{\[}}[-3, 3, 2, 1], [0, -1, -2, -3], {{.*}}> : tensor<18x4xi8>
// CHECK: %[[P:.*]] = linalg.generic {{.*}} ins(%{{.*}}, %[[FT]] : tensor<25x18xi8>, tensor<18x4xi8>) outs(%{{.*}} : tensor<25x4xi32>) attrs =  {kiln.widening_matmul}
// CHECK-NOT: kiln.layout_copy
// CHECK: %[[R:.*]] = tensor.expand_shape {{.*}} into tensor<1x5x5x4xi32>
// CHECK: return %[[R]]
func.func @widening_conv_channels_last(%x: tensor<1x5x5x2xui8>) -> tensor<1x5x5x4xi32> {
  %w = kiln.constant dense<[[[[-3, 2, 0], [-2, 3, 1], [-1, -3, 2]], [[0, -2, 3], [1, -1, -3], [2, 0, -2]]], [[[3, 1, -1], [-3, 2, 0], [-2, 3, 1]], [[-1, -3, 2], [0, -2, 3], [1, -1, -3]]], [[[2, 0, -2], [3, 1, -1], [-3, 2, 0]], [[-2, 3, 1], [-1, -3, 2], [0, -2, 3]]], [[[1, -1, -3], [2, 0, -2], [3, 1, -1]], [[-3, 2, 0], [-2, 3, 1], [-1, -3, 2]]]]> : tensor<4x2x3x3xi8> -> tensor<4x2x3x3xi8>
  %0 = kiln.conv %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, group = 1 : i64, channels_last} : (tensor<1x5x5x2xui8>, tensor<4x2x3x3xi8>) -> tensor<1x5x5x4xi32>
  return %0 : tensor<1x5x5x4xi32>
}

// -----

// An f32 channels-last convolution is the same fields times filter^T as a
// linalg.matmul (whose constant right operand the matmul kernels pack at
// compile time), accumulating into the bias broadcast over the pixels. A
// 1x1 stride-1 convolution's fields are its input: no copy.
// CHECK-LABEL: func.func @float_conv_channels_last
// CHECK: %[[BIAS:.*]] = linalg.generic {{.*}} ins(%{{.*}} : tensor<1x4xf32>) outs(%{{.*}} : tensor<25x4xf32>)
// CHECK: %[[P:.*]] = linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<25x18xf32>, tensor<18x4xf32>) outs(%[[BIAS]] : tensor<25x4xf32>)
// CHECK: tensor.collapse_shape %[[P]]
// CHECK: tensor.expand_shape {{.*}} into tensor<1x5x5x4xf32>
// CHECK-LABEL: func.func @pointwise_conv_channels_last
// CHECK-NOT: scf.forall
// CHECK: tensor.collapse_shape %arg0
// CHECK: %[[ROWS:.*]] = tensor.expand_shape {{.*}} into tensor<25x2xf32>
// CHECK: linalg.matmul ins(%[[ROWS]], %{{.*}} : tensor<25x2xf32>, tensor<2x4xf32>)
func.func @float_conv_channels_last(%x: tensor<1x5x5x2xf32>) -> tensor<1x5x5x4xf32> {
  %w = kiln.constant dense<0.5> : tensor<4x2x3x3xf32> -> tensor<4x2x3x3xf32>
  %b = kiln.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32> -> tensor<4xf32>
  %0 = kiln.conv %x, %w, %b {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, group = 1 : i64, channels_last} : (tensor<1x5x5x2xf32>, tensor<4x2x3x3xf32>, tensor<4xf32>) -> tensor<1x5x5x4xf32>
  return %0 : tensor<1x5x5x4xf32>
}
func.func @pointwise_conv_channels_last(%x: tensor<1x5x5x2xf32>) -> tensor<1x5x5x4xf32> {
  %w = kiln.constant dense<0.5> : tensor<4x2x1x1xf32> -> tensor<4x2x1x1xf32>
  %0 = kiln.conv %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, group = 1 : i64, channels_last} : (tensor<1x5x5x2xf32>, tensor<4x2x1x1xf32>) -> tensor<1x5x5x4xf32>
  return %0 : tensor<1x5x5x4xf32>
}

// -----

// A channels-last depthwise convolution: per output pixel, each vector of
// channels (16, then the remaining 4 of C = 20) starts from the bias and
// adds one FMA per tap (nine) of the input's channels by the filter's,
// whose taps are relaid out to [KH*KW, C] at compile time.
// CHECK-LABEL: func.func @depthwise_channels_last
// CHECK: %[[TAPS:.*]] = arith.constant dense<2.500000e-01> : tensor<9x20xf32>
// CHECK: scf.forall (%{{.*}}) in (16) shared_outs(%{{.*}} = %{{.*}}) -> (tensor<16x20xf32>)
// CHECK:   vector.transfer_read %{{.*}} : tensor<20xf32>, vector<16xf32>
// CHECK-COUNT-9: vector.fma %{{.*}} : vector<16xf32>
// CHECK:   vector.transfer_write %{{.*}} : vector<16xf32>, tensor<1x20xf32>
// CHECK:   vector.transfer_read %{{.*}} : tensor<20xf32>, vector<4xf32>
// CHECK-COUNT-9: vector.fma %{{.*}} : vector<4xf32>
// CHECK: tensor.parallel_insert_slice
// CHECK: tensor.expand_shape {{.*}} into tensor<1x4x4x20xf32>
func.func @depthwise_channels_last(%x: tensor<1x4x4x20xf32>) -> tensor<1x4x4x20xf32> {
  %w = kiln.constant dense<0.25> : tensor<20x1x3x3xf32> -> tensor<20x1x3x3xf32>
  %b = kiln.constant dense<1.0> : tensor<20xf32> -> tensor<20xf32>
  %0 = kiln.conv %x, %w, %b {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, group = 20 : i64, channels_last} : (tensor<1x4x4x20xf32>, tensor<20x1x3x3xf32>, tensor<20xf32>) -> tensor<1x4x4x20xf32>
  return %0 : tensor<1x4x4x20xf32>
}

// -----

// NCHW batches of static shape and grouped convolutions stay for
// kiln-convert-to-linalg's named convolutions.
// LEAVE-LABEL: func.func @left_for_linalg
// LEAVE: kiln.conv {{.*}} -> tensor<2x4x6x6xf32>
// LEAVE: kiln.conv {{.*}} -> tensor<1x4x8x8xf32>
// CHECK-LABEL: func.func @left_for_linalg
// CHECK: linalg.conv_2d_nchw_fchw
// CHECK: linalg.conv_2d_ngchw_gfchw
func.func @left_for_linalg(%x: tensor<2x4x8x8xf32>, %x1: tensor<1x4x8x8xf32>, %w: tensor<4x4x3x3xf32>, %gw: tensor<4x2x1x1xf32>) -> (tensor<2x4x6x6xf32>, tensor<1x4x8x8xf32>) {
  %0 = kiln.conv %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, group = 1 : i64} : (tensor<2x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<2x4x6x6xf32>
  %1 = kiln.conv %x1, %gw {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, group = 2 : i64} : (tensor<1x4x8x8xf32>, tensor<4x2x1x1xf32>) -> tensor<1x4x8x8xf32>
  return %0, %1 : tensor<2x4x6x6xf32>, tensor<1x4x8x8xf32>
}
