// RUN: kiln-opt %s --kiln-cpu-direct-conv=vector-width=2 --canonicalize --cse --split-input-file | FileCheck %s
// RUN: kiln-opt %s --kiln-cpu-direct-conv="vector-width=2 resident-filter-bytes=0" --canonicalize --cse --split-input-file | FileCheck %s --check-prefix=STREAMED

// Register tiles of 4 pixels x 4 channels (two 2-lane vectors). The filter
// [F=4][C=2][1][KW=2] is packed at compile time into one panel whose rows
// follow the window run (kx, c): row (kx, c) holds filter[f][c][0][kx] for
// f = 0..3. The input, padded on the right, is viewed as image rows
// [N*H, W*C]; each task starts its rows from the bias and, per value j of
// the run of KW*C = 4, adds that panel row times the value of each pixel
// (pixel i's run starts i*stride*C = 2i further along the row). Its one
// write is the tile of the [N*OH*OW, F] product.
// CHECK-LABEL: func.func @window_runs
// CHECK-SAME: (%[[X:.*]]: tensor<1x2x4x2xf32>, %[[BIAS:.*]]: tensor<4xf32>)
// CHECK-DAG: %[[PANELS:.*]] = arith.constant dense<{{\[\[\[}}0.000000e+00, 4.000000e+00, 8.000000e+00, 1.200000e+01], [2.000000e+00, 6.000000e+00, 1.000000e+01, 1.400000e+01], [1.000000e+00, 5.000000e+00, 9.000000e+00, 1.300000e+01], [3.000000e+00, 7.000000e+00, 1.100000e+01, 1.500000e+01]]]> : tensor<1x4x4xf32>
// CHECK: %[[PADDED:.*]] = tensor.insert_slice %[[X]] into %{{.*}}[0, 0, 0, 0] [1, 2, 4, 2] [1, 1, 1, 1] : tensor<1x2x4x2xf32> into tensor<1x2x5x2xf32>
// CHECK: %[[ROWS:.*]] = tensor.collapse_shape %[[PADDED]] {{\[\[}}0, 1], [2, 3]] : tensor<1x2x5x2xf32> into tensor<2x10xf32>
// CHECK: scf.forall (%[[ROW:.*]]) in (2) shared_outs(%[[OUT:.*]] = %{{.*}}) -> (tensor<8x4xf32>)
// CHECK: %[[B:.*]] = vector.transfer_read %[[BIAS]][%c0], %{{.*}} {in_bounds = [true]} : tensor<4xf32>, vector<4xf32>
// CHECK: scf.for %[[J:.*]] = %c0 to %c4 step %c1 iter_args(%[[S0:.*]] = %[[B]], %[[S1:.*]] = %[[B]], %[[S2:.*]] = %[[B]], %[[S3:.*]] = %[[B]])
// CHECK: %[[W:.*]] = vector.transfer_read %[[PANELS]][%c0, %[[J]], %c0]
// CHECK: %[[X0:.*]] = tensor.extract %[[ROWS]][%[[IROW:.*]], %[[J]]]
// CHECK: %[[V0:.*]] = vector.broadcast %[[X0]] : f32 to vector<4xf32>
// CHECK: vector.fma %[[V0]], %[[W]], %[[S0]] : vector<4xf32>
// CHECK: %[[AT1:.*]] = arith.addi %[[J]], %c2
// CHECK: tensor.extract %[[ROWS]][%[[IROW]], %[[AT1]]]
// CHECK: %[[AT3:.*]] = arith.addi %[[J]], %c6
// CHECK: tensor.extract %[[ROWS]][%[[IROW]], %[[AT3]]]
// CHECK: %[[TILE:.*]] = vector.from_elements {{.*}} : vector<4x4xf32>
// CHECK: %[[P0:.*]] = arith.muli %[[ROW]], %c4
// CHECK: %[[SLOT:.*]] = tensor.extract_slice %[[OUT]][%[[P0]], 0] [4, 4] [1, 1]
// CHECK: %[[WRITTEN:.*]] = vector.transfer_write %[[TILE]], %[[SLOT]][%c0, %c0] {in_bounds = [true, true]} : vector<4x4xf32>, tensor<4x4xf32>
// CHECK: tensor.parallel_insert_slice %[[WRITTEN]] into %[[OUT]][%[[P0]], 0] [4, 4] [1, 1]
// CHECK: tensor.expand_shape %{{.*}} {{\[\[}}0, 1, 2], [3]] output_shape [1, 2, 4, 4] : tensor<8x4xf32> into tensor<1x2x4x4xf32>
// CHECK-NOT: kiln.conv
func.func @window_runs(%x: tensor<1x2x4x2xf32>, %bias: tensor<4xf32>) -> tensor<1x2x4x4xf32> {
  %w = kiln.constant dense<[[[[0.0, 1.0]], [[2.0, 3.0]]], [[[4.0, 5.0]], [[6.0, 7.0]]],
                            [[[8.0, 9.0]], [[10.0, 11.0]]], [[[12.0, 13.0]], [[14.0, 15.0]]]]>
      : tensor<4x2x1x2xf32> -> tensor<4x2x1x2xf32>
  %y = kiln.conv %x, %w, %bias {channels_last, dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 1>, strides = array<i64: 1, 1>} : (tensor<1x2x4x2xf32>, tensor<4x2x1x2xf32>, tensor<4xf32>) -> tensor<1x2x4x4xf32>
  return %y : tensor<1x2x4x4xf32>
}

// -----

// Dilation 2 along x: the taps of a window row are not contiguous, so each
// is a run of its own (here of C = 1 value): pixel i reads columns i and
// i + 2. Without a bias the sums start at zero.
// CHECK-LABEL: func.func @dilated
// CHECK-DAG: %[[ZERO:.*]] = arith.constant dense<0.000000e+00> : vector<4xf32>
// CHECK-DAG: %[[PANELS:.*]] = arith.constant dense<{{\[\[\[}}1.000000e+00, 3.000000e+00, 5.000000e+00, 7.000000e+00], [2.000000e+00, 4.000000e+00, 6.000000e+00, 8.000000e+00]]]> : tensor<1x2x4xf32>
// CHECK: %[[ROWS:.*]] = tensor.collapse_shape %arg0 {{\[\[}}0, 1], [2, 3]] : tensor<1x1x6x1xf32> into tensor<1x6xf32>
// CHECK: %[[TAP0:.*]] = vector.transfer_read %[[PANELS]][%c0, %c0, %c0]
// CHECK: %[[X0:.*]] = tensor.extract %[[ROWS]][%c0, %c0]
// CHECK: %[[V0:.*]] = vector.broadcast %[[X0]]
// CHECK: %[[S0:.*]] = vector.fma %[[V0]], %[[TAP0]], %[[ZERO]]
// CHECK: %[[X2:.*]] = tensor.extract %[[ROWS]][%c0, %c2]
// CHECK: %[[V2:.*]] = vector.broadcast %[[X2]]
// CHECK: %[[TAP1:.*]] = vector.transfer_read %[[PANELS]][%c0, %c1, %c0]
// CHECK: vector.fma %[[V2]], %[[TAP1]], %[[S0]]
func.func @dilated(%x: tensor<1x1x6x1xf32>) -> tensor<1x1x4x4xf32> {
  %w = kiln.constant dense<[[[[1.0, 2.0]]], [[[3.0, 4.0]]], [[[5.0, 6.0]]], [[[7.0, 8.0]]]]>
      : tensor<4x1x1x2xf32> -> tensor<4x1x1x2xf32>
  %y = kiln.conv %x, %w {channels_last, dilations = array<i64: 1, 2>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x1x6x1xf32>, tensor<4x1x1x2xf32>) -> tensor<1x1x4x4xf32>
  return %y : tensor<1x1x4x4xf32>
}

// -----

// Two channel panels. A filter that stays in cache puts them innermost, so
// neighbouring tasks share their input; a streamed one (the STREAMED run,
// where no filter counts as resident) outermost, so that each panel is read
// once.
// CHECK-LABEL: func.func @panel_order
// CHECK: scf.forall (%[[ROW:.*]], %[[PANEL:.*]]) in (2, 2)
// CHECK: vector.transfer_read %{{.*}}[%[[PANEL]], %c0, %c0]
// STREAMED-LABEL: func.func @panel_order
// STREAMED: scf.forall (%[[PANEL:.*]], %[[ROW:.*]]) in (2, 2)
// STREAMED: vector.transfer_read %{{.*}}[%[[PANEL]], %c0, %c0]
func.func @panel_order(%x: tensor<1x2x4x1xf32>) -> tensor<1x2x4x8xf32> {
  %w = kiln.constant dense<1.0> : tensor<8x1x1x1xf32> -> tensor<8x1x1x1xf32>
  %y = kiln.conv %x, %w {channels_last, dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x2x4x1xf32>, tensor<8x1x1x1xf32>) -> tensor<1x2x4x8xf32>
  return %y : tensor<1x2x4x8xf32>
}

// -----

// Three filters, not whole 2-lane vectors: the packed filter is padded with
// a zero filter to two vectors, the bias read and the tile's write are
// masked (in_bounds false) past the third channel.
// CHECK-LABEL: func.func @padded_filters
// CHECK-DAG: arith.constant dense<{{\[\[\[}}1.000000e+00, 2.000000e+00, 3.000000e+00, 0.000000e+00]]]> : tensor<1x1x4xf32>
// CHECK: vector.transfer_read %arg1[%c0], %{{.*}} : tensor<3xf32>, vector<4xf32>
// CHECK: vector.transfer_write %{{.*}}, %{{.*}}[%c0, %c0] {in_bounds = [true, false]} : vector<4x4xf32>, tensor<4x3xf32>
func.func @padded_filters(%x: tensor<1x1x4x1xf32>, %bias: tensor<3xf32>) -> tensor<1x1x4x3xf32> {
  %w = kiln.constant dense<[[[[1.0]]], [[[2.0]]], [[[3.0]]]]> : tensor<3x1x1x1xf32> -> tensor<3x1x1x1xf32>
  %y = kiln.conv %x, %w, %bias {channels_last, dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x1x4x1xf32>, tensor<3x1x1x1xf32>, tensor<3xf32>) -> tensor<1x1x4x3xf32>
  return %y : tensor<1x1x4x3xf32>
}

// -----

// Five filters in 2-lane panels: three panels, the last one padded; each
// task writes min(2, 5 - f0) channels.
// CHECK-LABEL: func.func @ragged_panels
// CHECK-DAG: arith.constant dense<{{\[\[\[}}1.000000e+00, 2.000000e+00]], {{\[\[}}3.000000e+00, 4.000000e+00]], {{\[\[}}5.000000e+00, 0.000000e+00]]]> : tensor<3x1x2xf32>
// CHECK: scf.forall (%[[PANEL:.*]]) in (3)
// CHECK: %[[F0:.*]] = arith.muli %[[PANEL]], %c2
// CHECK: %[[LEFT:.*]] = arith.subi %c5, %[[F0]]
// CHECK: %[[WIDTH:.*]] = arith.minsi %[[LEFT]], %c2
// CHECK: %[[SLOT:.*]] = tensor.extract_slice %{{.*}}[0, %[[F0]]] [4, %[[WIDTH]]] [1, 1] : tensor<4x5xf32> to tensor<4x?xf32>
// CHECK: vector.transfer_write %{{.*}}, %[[SLOT]][%c0, %c0] {in_bounds = [true, false]} : vector<4x2xf32>, tensor<4x?xf32>
func.func @ragged_panels(%x: tensor<1x1x4x1xf32>) -> tensor<1x1x4x5xf32> {
  %w = kiln.constant dense<[[[[1.0]]], [[[2.0]]], [[[3.0]]], [[[4.0]]], [[[5.0]]]]> : tensor<5x1x1x1xf32> -> tensor<5x1x1x1xf32>
  %y = kiln.conv %x, %w {channels_last, dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x1x4x1xf32>, tensor<5x1x1x1xf32>) -> tensor<1x1x4x5xf32>
  return %y : tensor<1x1x4x5xf32>
}

// -----

// Left to kiln-convert-to-linalg: output rows of 3 pixels (fewer than half
// of the 8 register rows), a filter known only at run time, a depthwise
// convolution, an NCHW one, and one filter padded to a vector of 2 (half
// the lanes wasted).
// CHECK-LABEL: func.func @not_direct
// CHECK-COUNT-5: kiln.conv
// CHECK-NOT: scf.forall
func.func @not_direct(%x: tensor<1x1x3x4xf32>, %wv: tensor<4x4x1x1xf32>, %nchw: tensor<1x4x1x4xf32>, %row: tensor<1x1x8x1xf32>)
    -> (tensor<1x1x3x4xf32>, tensor<1x1x3x4xf32>, tensor<1x1x3x4xf32>, tensor<1x4x1x4xf32>, tensor<1x1x8x1xf32>) {
  %w = kiln.constant dense<1.0> : tensor<4x4x1x1xf32> -> tensor<4x4x1x1xf32>
  %one = kiln.constant dense<1.0> : tensor<1x1x1x1xf32> -> tensor<1x1x1x1xf32>
  %single = kiln.conv %row, %one {channels_last, dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x1x8x1xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x8x1xf32>
  %g = kiln.constant dense<1.0> : tensor<4x1x1x1xf32> -> tensor<4x1x1x1xf32>
  %short = kiln.conv %x, %w {channels_last, dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x1x3x4xf32>, tensor<4x4x1x1xf32>) -> tensor<1x1x3x4xf32>
  %runtime = kiln.conv %x, %wv {channels_last, dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x1x3x4xf32>, tensor<4x4x1x1xf32>) -> tensor<1x1x3x4xf32>
  %grouped = kiln.conv %x, %g {channels_last, dilations = array<i64: 1, 1>, group = 4 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x1x3x4xf32>, tensor<4x1x1x1xf32>) -> tensor<1x1x3x4xf32>
  %planar = kiln.conv %nchw, %w {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x4x1x4xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x1x4xf32>
  return %short, %runtime, %grouped, %planar, %single : tensor<1x1x3x4xf32>, tensor<1x1x3x4xf32>, tensor<1x1x3x4xf32>, tensor<1x4x1x4xf32>, tensor<1x1x8x1xf32>
}
