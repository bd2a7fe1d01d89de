// RUN: kiln-opt %s --kiln-convert-to-linalg --split-input-file | FileCheck %s

// CHECK-LABEL: func.func @relu_add_broadcast
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #{{.*}}, #{{.*}}], iterator_types = ["parallel", "parallel"]}
// CHECK: arith.addf
// CHECK: arith.maximumf
// CHECK-NOT: kiln.
func.func @relu_add_broadcast(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<2x3xf32> {
  %0 = kiln.add %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %1 = kiln.relu %0 : tensor<2x3xf32>
  return %1 : tensor<2x3xf32>
}

// -----

// A rank-3 x rank-2 matmul folds the batch into the rows of one linalg.matmul.
// CHECK-LABEL: func.func @matmul_rhs_2d
// CHECK: tensor.collapse_shape %{{.*}} {{\[\[}}0, 1, 2]] : tensor<2x4x8xf32> into tensor<64xf32>
// CHECK: linalg.fill
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<8x8xf32>, tensor<8x5xf32>) outs(%{{.*}} : tensor<8x5xf32>)
func.func @matmul_rhs_2d(%a: tensor<2x4x8xf32>, %b: tensor<8x5xf32>) -> tensor<2x4x5xf32> {
  %0 = kiln.matmul %a, %b : (tensor<2x4x8xf32>, tensor<8x5xf32>) -> tensor<2x4x5xf32>
  return %0 : tensor<2x4x5xf32>
}

// -----

// CHECK-LABEL: func.func @matmul_batched
// CHECK: linalg.batch_matmul ins(%{{.*}}, %{{.*}} : tensor<6x4x8xf32>, tensor<6x8x5xf32>)
func.func @matmul_batched(%a: tensor<2x3x4x8xf32>, %b: tensor<2x3x8x5xf32>) -> tensor<2x3x4x5xf32> {
  %0 = kiln.matmul %a, %b : (tensor<2x3x4x8xf32>, tensor<2x3x8x5xf32>) -> tensor<2x3x4x5xf32>
  return %0 : tensor<2x3x4x5xf32>
}

// -----

// CHECK-LABEL: func.func @gemm_trans_b
// CHECK: linalg.transpose ins(%{{.*}} : tensor<5x8xf32>) outs(%{{.*}} : tensor<8x5xf32>) permutation = [1, 0]
// CHECK: linalg.matmul
// CHECK: linalg.generic
// CHECK: arith.mulf
// CHECK: arith.addf
func.func @gemm_trans_b(%a: tensor<4x8xf32>, %b: tensor<5x8xf32>, %c: tensor<5xf32>) -> tensor<4x5xf32> {
  %0 = kiln.gemm %a, %b, %c {alpha = 2.0 : f32, trans_b = true} : (tensor<4x8xf32>, tensor<5x8xf32>, tensor<5xf32>) -> tensor<4x5xf32>
  return %0 : tensor<4x5xf32>
}

// -----

// A constant transposed operand is transposed at compile time: no
// linalg.transpose runs per inference.
// CHECK-LABEL: func.func @gemm_constant_trans_b
// CHECK: %[[W:.*]] = arith.constant dense<{{\[}}[1.000000e+00, 3.000000e+00], [2.000000e+00, 4.000000e+00]]> : tensor<2x2xf32>
// CHECK-NOT: linalg.transpose
// CHECK: linalg.matmul ins(%{{.*}}, %[[W]] : tensor<1x2xf32>, tensor<2x2xf32>)
func.func @gemm_constant_trans_b(%a: tensor<1x2xf32>) -> tensor<1x2xf32> {
  %b = kiln.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32> -> tensor<2x2xf32>
  %0 = kiln.gemm %a, %b {trans_b = true} : (tensor<1x2xf32>, tensor<2x2xf32>) -> tensor<1x2xf32>
  return %0 : tensor<1x2xf32>
}

// -----

// CHECK-LABEL: func.func @conv_batched_depthwise_grouped
// CHECK: linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
// CHECK: linalg.depthwise_conv_2d_nchw_chw
// CHECK: linalg.conv_2d_ngchw_gfchw
func.func @conv_batched_depthwise_grouped(%x: tensor<2x4x8x8xf32>, %w: tensor<4x4x3x3xf32>, %dw: tensor<4x1x3x3xf32>, %gw: tensor<4x2x1x1xf32>) -> (tensor<2x4x3x3xf32>, tensor<2x4x6x6xf32>, tensor<2x4x8x8xf32>) {
  %0 = kiln.conv %x, %w {strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, group = 1 : i64} : (tensor<2x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<2x4x3x3xf32>
  %1 = kiln.conv %x, %dw {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, group = 4 : i64} : (tensor<2x4x8x8xf32>, tensor<4x1x3x3xf32>) -> tensor<2x4x6x6xf32>
  %2 = kiln.conv %x, %gw {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, group = 2 : i64} : (tensor<2x4x8x8xf32>, tensor<4x2x1x1xf32>) -> tensor<2x4x8x8xf32>
  return %0, %1, %2 : tensor<2x4x3x3xf32>, tensor<2x4x6x6xf32>, tensor<2x4x8x8xf32>
}

// -----

// CHECK-LABEL: func.func @pools
// CHECK: tensor.insert_slice %arg0 into %{{.*}}[0, 0, 1, 1] [1, 2, 8, 8]
// CHECK: linalg.pooling_nchw_max
// CHECK: linalg.pooling_nchw_sum
// CHECK: arith.constant dense<{{\[\[}}2.500000e-01, 0.166666672{{.*}}> : tensor<4x4xf32>
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction", "reduction"]
func.func @pools(%x: tensor<1x2x8x8xf32>) -> (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x1x1xf32>) {
  %0 = kiln.max_pool %x {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : tensor<1x2x8x8xf32> -> tensor<1x2x4x4xf32>
  %1 = kiln.average_pool %x {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, count_include_pad = false} : tensor<1x2x8x8xf32> -> tensor<1x2x4x4xf32>
  %2 = kiln.global_average_pool %x : tensor<1x2x8x8xf32> -> tensor<1x2x1x1xf32>
  return %0, %1, %2 : tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x1x1xf32>
}

// -----

// CHECK-LABEL: func.func @softmax_layer_norm
// CHECK: arith.maximumf
// CHECK: math.exp
// CHECK: arith.divf
// CHECK: math.rsqrt
func.func @softmax_layer_norm(%x: tensor<2x8xf32>, %s: tensor<8xf32>) -> (tensor<2x8xf32>, tensor<2x8xf32>) {
  %0 = kiln.softmax %x {axis = 1 : i64} : tensor<2x8xf32>
  %1 = kiln.layer_norm %x, %s {axis = 1 : i64, epsilon = 1.0e-5 : f32} : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  return %0, %1 : tensor<2x8xf32>, tensor<2x8xf32>
}

// -----

// CHECK-LABEL: func.func @data_movement
// CHECK: tensor.expand_shape
// CHECK: linalg.transpose ins(%{{.*}} : tensor<2x3xf32>) outs(%{{.*}} : tensor<3x2xf32>) permutation = [1, 0]
// CHECK: %[[W:.*]] = arith.constant dense_resource<w> : tensor<2x3xf32>
// CHECK: tensor.insert_slice %{{.*}} into %{{.*}}[0, 0] [2, 3] [1, 1]
// CHECK: tensor.insert_slice %[[W]] into %{{.*}}[2, 0] [2, 3] [1, 1]
func.func @data_movement(%x: tensor<6xf32>) -> (tensor<3x2xf32>, tensor<4x3xf32>) {
  %0 = kiln.reshape %x : tensor<6xf32> -> tensor<2x3xf32>
  %1 = kiln.transpose %0 {perm = array<i64: 1, 0>} : tensor<2x3xf32> -> tensor<3x2xf32>
  %w = kiln.constant dense_resource<w> : tensor<2x3xf32> -> tensor<2x3xf32>
  %2 = kiln.concat %0, %w {axis = 0 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
  return %1, %2 : tensor<3x2xf32>, tensor<4x3xf32>
}
{-#
  dialect_resources: {
    builtin: {
      w: "0x040000000000803F0000004000004040000080400000A0400000C040"
    }
  }
#-}

// -----

// Integer and unsigned elementwise ops pick signed or unsigned arith ops; the
// function boundary becomes signless.
// CHECK-LABEL: func.func @integers
// CHECK-SAME: (%{{.*}}: tensor<4xi32>, %{{.*}}: tensor<4xi8>) -> (tensor<4xi32>, tensor<4xi8>, tensor<4xi1>, tensor<4xi1>)
// CHECK: arith.divsi
// CHECK: arith.divui
// CHECK: arith.cmpi slt
// CHECK: arith.cmpi ult
func.func @integers(%a: tensor<4xi32>, %u: tensor<4xui8>) -> (tensor<4xi32>, tensor<4xui8>, tensor<4xi1>, tensor<4xi1>) {
  %0 = kiln.div %a, %a : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  %1 = kiln.div %u, %u : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
  %2 = kiln.less %a, %a : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi1>
  %3 = kiln.less %u, %u : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xi1>
  return %0, %1, %2, %3 : tensor<4xi32>, tensor<4xui8>, tensor<4xi1>, tensor<4xi1>
}

// -----

// CHECK-LABEL: func.func @casts_and_where
// CHECK: arith.fptosi
// CHECK: arith.uitofp
// CHECK: arith.cmpf une
// CHECK: arith.select
func.func @casts_and_where(%f: tensor<3xf32>, %u: tensor<3xui16>, %c: tensor<3xi1>) -> (tensor<3xi64>, tensor<3xf32>, tensor<3xi1>, tensor<3xf32>) {
  %0 = kiln.cast %f : tensor<3xf32> -> tensor<3xi64>
  %1 = kiln.cast %u : tensor<3xui16> -> tensor<3xf32>
  %2 = kiln.cast %f : tensor<3xf32> -> tensor<3xi1>
  %3 = kiln.where %c, %f, %f : (tensor<3xi1>, tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %0, %1, %2, %3 : tensor<3xi64>, tensor<3xf32>, tensor<3xi1>, tensor<3xf32>
}

// -----

// CHECK-LABEL: func.func @reductions
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
// CHECK: arith.maxui
// A single generic carries (value, index) for arg_max.
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
// CHECK: arith.cmpf ogt
// CHECK: linalg.yield %{{.*}}, %{{.*}} : f32, i64
func.func @reductions(%u: tensor<2x5xui32>, %f: tensor<2x5xf32>) -> (tensor<2xui32>, tensor<2x1xi64>) {
  %0 = kiln.reduce %u {kind = "max", axes = array<i64: 1>, keepdims = false} : tensor<2x5xui32> -> tensor<2xui32>
  %1 = kiln.arg_max %f {axis = 1 : i64, keepdims = true} : tensor<2x5xf32> -> tensor<2x1xi64>
  return %0, %1 : tensor<2xui32>, tensor<2x1xi64>
}

// -----

// Positive steps are views; negative steps read through an affine map.
// CHECK-LABEL: func.func @slices
// CHECK: tensor.extract_slice %{{.*}}[1, 0] [2, 2] [1, 2]
// CHECK: linalg.generic {indexing_maps = [#[[REV:.*]], #{{.*}}]
func.func @slices(%x: tensor<4x4xf32>) -> (tensor<2x2xf32>, tensor<4x4xf32>) {
  %0 = kiln.slice %x {starts = array<i64: 1, 0>, steps = array<i64: 1, 2>} : tensor<4x4xf32> -> tensor<2x2xf32>
  %1 = kiln.slice %x {starts = array<i64: 3, 0>, steps = array<i64: -1, 1>} : tensor<4x4xf32> -> tensor<4x4xf32>
  return %0, %1 : tensor<2x2xf32>, tensor<4x4xf32>
}

// -----

// ONNX bounds (`ends`) on a dynamic dimension are resolved from its size at
// run time: [-4:-1] counts from the end and is clamped into [0, n]; a
// negative step reads begin + i * step in a generic, n/2 rounded up.
// CHECK-LABEL: func.func @onnx_slices
// CHECK: %[[N:.*]] = tensor.dim %arg0, %c1
// CHECK: %[[FROM:.*]] = arith.addi %[[N]], %c-4
// CHECK: %[[TO:.*]] = arith.addi %[[N]], %c-1
// CHECK: %[[B0:.*]] = arith.maxsi %[[FROM]], %c0
// CHECK: %[[B:.*]] = arith.minsi %[[B0]], %[[N]]
// CHECK: %[[E0:.*]] = arith.maxsi %[[TO]], %c0
// CHECK: %[[E:.*]] = arith.minsi %[[E0]], %[[N]]
// CHECK: arith.subi %[[E]], %[[B]]
// CHECK: %[[COUNT:.*]] = arith.maxsi
// CHECK: tensor.extract_slice %arg0[1, %[[B]]] [2, %[[COUNT]]] [1, 1] : tensor<3x?xf32> to tensor<2x?xf32>
// CHECK: arith.floordivsi %{{.*}}, %c2
// CHECK: %[[REV:.*]] = tensor.empty(%{{.*}}) : tensor<3x?xf32>
// CHECK: linalg.generic {{.*}} outs(%[[REV]] : tensor<3x?xf32>)
// CHECK: %[[I:.*]] = linalg.index 1
// CHECK: arith.muli %[[I]], %c-2
// CHECK: tensor.extract %arg0
func.func @onnx_slices(%x: tensor<3x?xf32>) -> (tensor<2x?xf32>, tensor<3x?xf32>) {
  %0 = kiln.slice %x {starts = array<i64: 1, -4>, ends = array<i64: 3, -1>, steps = array<i64: 1, 1>} : tensor<3x?xf32> -> tensor<2x?xf32>
  %1 = kiln.slice %x {starts = array<i64: 0, -1>, ends = array<i64: 9223372036854775807, -9223372036854775807>, steps = array<i64: 1, -2>} : tensor<3x?xf32> -> tensor<3x?xf32>
  return %0, %1 : tensor<2x?xf32>, tensor<3x?xf32>
}

// -----

// Data-dependent addresses extract inside the generic, with clamped indices.
// CHECK-LABEL: func.func @gathers
// CHECK: linalg.generic
// CHECK: arith.index_cast
// CHECK: arith.minsi
// CHECK: tensor.extract
// CHECK: linalg.generic
// CHECK: tensor.extract
func.func @gathers(%d: tensor<5x3xf32>, %i: tensor<2xi64>, %j: tensor<5x3xi64>) -> (tensor<2x3xf32>, tensor<5x3xf32>) {
  %0 = kiln.gather %d, %i {axis = 0 : i64} : (tensor<5x3xf32>, tensor<2xi64>) -> tensor<2x3xf32>
  %1 = kiln.gather_elements %d, %j {axis = 0 : i64} : (tensor<5x3xf32>, tensor<5x3xi64>) -> tensor<5x3xf32>
  return %0, %1 : tensor<2x3xf32>, tensor<5x3xf32>
}

// -----

// A constant pad of static shape is a fill, then the input copied into
// its interior.
// CHECK-LABEL: func.func @pad_expand_tile
// CHECK: %[[FILLED:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<4x7xf32>)
// CHECK: tensor.insert_slice %arg0 into %[[FILLED]][1, 2] [2, 3] [1, 1]
// CHECK: linalg.generic
// CHECK: tensor.extract
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #{{.*}}]
// CHECK: linalg.generic {indexing_maps = [#[[MOD:.*]], #{{.*}}]
func.func @pad_expand_tile(%x: tensor<2x3xf32>) -> (tensor<4x7xf32>, tensor<4x7xf32>, tensor<4x2x3xf32>, tensor<4x6xf32>) {
  %0 = kiln.pad %x {pads = array<i64: 1, 2, 1, 2>, mode = "constant", value = 0.5 : f64} : tensor<2x3xf32> -> tensor<4x7xf32>
  %1 = kiln.pad %x {pads = array<i64: 1, 2, 1, 2>, mode = "edge", value = 0.0 : f64} : tensor<2x3xf32> -> tensor<4x7xf32>
  %2 = kiln.expand %x : tensor<2x3xf32> -> tensor<4x2x3xf32>
  %3 = kiln.tile %x : tensor<2x3xf32> -> tensor<4x6xf32>
  return %0, %1, %2, %3 : tensor<4x7xf32>, tensor<4x7xf32>, tensor<4x2x3xf32>, tensor<4x6xf32>
}

// -----

// CHECK-LABEL: func.func @cumsum_trilu_resize
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]
// CHECK: arith.cmpi ule
// CHECK: arith.addf
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]
// CHECK: arith.cmpi ugt
// CHECK: arith.mulf
// CHECK: linalg.generic
// CHECK: arith.cmpi sge
// CHECK: linalg.generic
// CHECK: math.floor
// CHECK: tensor.extract
func.func @cumsum_trilu_resize(%x: tensor<3x4xf32>, %k: tensor<i64>) -> (tensor<3x4xf32>, tensor<3x4xf32>, tensor<6x8xf32>, tensor<3x4xf32>) {
  %0 = kiln.cumulative %x {kind = "sum", axis = 1 : i64} : tensor<3x4xf32>
  %3 = kiln.cumulative %x {kind = "prod", axis = 0 : i64, exclusive, reverse} : tensor<3x4xf32>
  %1 = kiln.trilu %x, %k {upper = true} : (tensor<3x4xf32>, tensor<i64>) -> tensor<3x4xf32>
  %2 = kiln.resize %x {mode = "linear", coordinate_mode = "half_pixel", nearest_mode = "floor", scales = array<f64: 2.0, 2.0>} : tensor<3x4xf32> -> tensor<6x8xf32>
  return %0, %1, %2, %3 : tensor<3x4xf32>, tensor<3x4xf32>, tensor<6x8xf32>, tensor<3x4xf32>
}

// -----

// Einsum: one generic with a loop per letter; summed letters reduce.
// CHECK-LABEL: func.func @einsum
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "reduction"]
// CHECK: arith.mulf
// CHECK: arith.addf
func.func @einsum(%a: tensor<2x3x4xf32>, %b: tensor<2x4x5xf32>) -> tensor<2x3x5xf32> {
  %0 = kiln.einsum %a, %b {equation = "bij,bjk->bik"} : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>
  return %0 : tensor<2x3x5xf32>
}

// -----

// Scatter applies updates in order: a loop carrying the data tensor.
// CHECK-LABEL: func.func @scatter_gather_nd
// CHECK: scf.for {{.*}} iter_args
// CHECK: tensor.extract
// CHECK: arith.addf
// CHECK: tensor.insert
// CHECK: linalg.generic
// CHECK: tensor.extract
func.func @scatter_gather_nd(%d: tensor<3x3xf32>, %i: tensor<1x2xi64>, %u: tensor<1x2xf32>, %j: tensor<2x2xi64>) -> (tensor<3x3xf32>, tensor<2xf32>) {
  %0 = kiln.scatter_elements %d, %i, %u {axis = 1 : i64, reduction = "add"} : (tensor<3x3xf32>, tensor<1x2xi64>, tensor<1x2xf32>) -> tensor<3x3xf32>
  %1 = kiln.gather_nd %d, %j {batch_dims = 0 : i64} : (tensor<3x3xf32>, tensor<2x2xi64>) -> tensor<2xf32>
  return %0, %1 : tensor<3x3xf32>, tensor<2xf32>
}

// -----

// GridSample reads the grid and blends four input pixels per output pixel.
// CHECK-LABEL: func.func @grid_sample
// CHECK: linalg.generic
// CHECK-COUNT-2: tensor.extract %{{.*}} : tensor<1x4x5x2xf32>
// CHECK: math.floor
// CHECK-COUNT-4: tensor.extract %{{.*}} : tensor<1x2x3x3xf32>
func.func @grid_sample(%x: tensor<1x2x3x3xf32>, %g: tensor<1x4x5x2xf32>) -> tensor<1x2x4x5xf32> {
  %0 = kiln.grid_sample %x, %g {mode = "bilinear", padding_mode = "zeros", align_corners = false} : (tensor<1x2x3x3xf32>, tensor<1x4x5x2xf32>) -> tensor<1x2x4x5xf32>
  return %0 : tensor<1x2x4x5xf32>
}

// -----

// MaxPool indices: a window reduction carrying (max, flat index); the empty
// window operand gives the kernel loops their extent.
// CHECK-LABEL: func.func @max_pool_indices
// CHECK: tensor.empty() : tensor<2x2xf32>
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]
// CHECK: arith.cmpf ogt
// CHECK: linalg.yield %{{.*}}, %{{.*}} : f32, i64
func.func @max_pool_indices(%x: tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xi64> {
  %0 = kiln.max_pool_indices %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : tensor<1x1x4x4xf32> -> tensor<1x1x2x2xi64>
  return %0 : tensor<1x1x2x2xi64>
}

// -----

// kiln.assert: all elements and-reduced, then a guarded call that hands the
// runtime the message as a NUL-terminated constant global.
// CHECK: memref.global "private" constant @kiln_check_message_0 : memref<20xi8> = dense<[115, 104, 97, 112, 101, 32, 109, 117, 115, 116, 32, 98, 101, 32, 91, 52, 44, 54, 93, 0]>
// CHECK: func.func private @kiln_check_failed(i64)
// CHECK-LABEL: func.func @guard
// CHECK: linalg.generic {{.*}}iterator_types = ["reduction"]
// CHECK: arith.andi
// CHECK: %[[OK:.*]] = tensor.extract
// CHECK: %[[FAILED:.*]] = arith.xori %[[OK]], %true
// CHECK: scf.if %[[FAILED]] {
// CHECK-NEXT: %[[MSG:.*]] = memref.get_global @kiln_check_message_0 : memref<20xi8>
// CHECK-NEXT: %[[PTR:.*]] = memref.extract_aligned_pointer_as_index %[[MSG]]
// CHECK-NEXT: %[[ADDR:.*]] = arith.index_cast %[[PTR]] : index to i64
// CHECK-NEXT: func.call @kiln_check_failed(%[[ADDR]]) : (i64) -> ()
func.func @guard(%shape: tensor<2xi64>) {
  %c = kiln.constant dense<[4, 6]> : tensor<2xi64> -> tensor<2xi64>
  %eq = kiln.equal %shape, %c : (tensor<2xi64>, tensor<2xi64>) -> tensor<2xi1>
  kiln.assert %eq, "shape must be [4,6]" : tensor<2xi1>
  return
}

// -----

// kiln.window: origin and steps are read once, outside the loop nest; each
// element tests and clamps its source coordinates, then reads the input or
// the padding value.
// CHECK-LABEL: func.func @window
// CHECK: %[[PAD:.*]] = tensor.extract %arg3[] : tensor<f32>
// CHECK: %[[S0:.*]] = tensor.extract %arg1[%c0] : tensor<2xi64>
// CHECK: %[[START0:.*]] = arith.index_cast %[[S0]] : i64 to index
// CHECK: %[[T0:.*]] = tensor.extract %arg2[%c0{{.*}}] : tensor<2xi64>
// CHECK: %[[STEP0:.*]] = arith.index_cast %[[T0]] : i64 to index
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]} outs(
// CHECK: %[[I:.*]] = linalg.index 0 : index
// CHECK: %[[M:.*]] = arith.muli %[[I]], %[[STEP0]] : index
// CHECK: %[[P:.*]] = arith.addi %[[START0]], %[[M]] : index
// CHECK: arith.cmpi sge, %[[P]]
// CHECK: arith.cmpi slt, %[[P]], %c3
// CHECK: arith.maxsi %[[P]]
// CHECK: arith.minsi %{{.*}}, %c2
// CHECK: %[[V:.*]] = tensor.extract %arg0[
// CHECK: %[[R:.*]] = arith.select %{{.*}}, %[[V]], %[[PAD]] : f32
// CHECK: linalg.yield %[[R]] : f32
func.func @window(%x: tensor<3x4xf32>, %starts: tensor<2xi64>, %steps: tensor<2xi64>, %pad: tensor<f32>) -> tensor<2x5xf32> {
  %0 = kiln.window %x, %starts, %steps, %pad {mode = "constant"} : (tensor<3x4xf32>, tensor<2xi64>, tensor<2xi64>, tensor<f32>) -> tensor<2x5xf32>
  return %0 : tensor<2x5xf32>
}

// -----

// kiln.window in reflect mode mirrors the coordinate and reads it unmasked.
// CHECK-LABEL: func.func @window_reflect
// CHECK: linalg.generic
// CHECK: arith.subi %c0{{.*}}, %{{.*}} : index
// CHECK: arith.subi %c4{{.*}}, %{{.*}} : index
// CHECK: %[[V:.*]] = tensor.extract %arg0[
// CHECK-NEXT: linalg.yield %[[V]] : f32
func.func @window_reflect(%x: tensor<3x4xf32>, %starts: tensor<2xi64>, %steps: tensor<2xi64>, %pad: tensor<f32>) -> tensor<2x5xf32> {
  %0 = kiln.window %x, %starts, %steps, %pad {mode = "reflect"} : (tensor<3x4xf32>, tensor<2xi64>, tensor<2xi64>, tensor<f32>) -> tensor<2x5xf32>
  return %0 : tensor<2x5xf32>
}

// -----

// kiln.top_k: first each element's rank (how many elements beat it, equal
// ones at lower indices included), then slot p takes the element of rank p.
// CHECK-DAG: #[[OWN:.*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-DAG: #[[ALONG:.*]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-LABEL: func.func @top_k
// CHECK: %[[RANKS:.*]] = linalg.generic {indexing_maps = [#[[OWN]], #[[ALONG]], #[[OWN]]], iterator_types = ["parallel", "parallel", "reduction"]} ins(%arg0, %arg0 : tensor<2x5xf32>, tensor<2x5xf32>) outs(%{{.*}} : tensor<2x5xi64>)
// CHECK: arith.cmpf oeq
// CHECK: arith.cmpi ult
// CHECK: arith.cmpf ogt
// CHECK: arith.extui
// CHECK: %[[SEL:.*]]:2 = linalg.generic {indexing_maps = [#[[ALONG]], #[[ALONG]], #[[OWN]], #[[OWN]]], iterator_types = ["parallel", "parallel", "reduction"]} ins(%arg0, %[[RANKS]] : tensor<2x5xf32>, tensor<2x5xi64>) outs(%{{.*}}, %{{.*}} : tensor<2x3xf32>, tensor<2x3xi64>)
// CHECK: arith.cmpi eq
// CHECK: return %[[SEL]]#0, %[[SEL]]#1
func.func @top_k(%x: tensor<2x5xf32>) -> (tensor<2x3xf32>, tensor<2x3xi64>) {
  %v, %i = kiln.top_k %x {axis = 1 : i64, largest = true} : tensor<2x5xf32> -> tensor<2x3xf32>, tensor<2x3xi64>
  return %v, %i : tensor<2x3xf32>, tensor<2x3xi64>
}

// -----

// Cubic resize: four taps along each resized dimension with Keys' weights
// (a = -0.5: 5a = -2.5, 8a = -4, 4a = -2, a + 2 = 1.5, a + 3 = 2.5); with
// exclude_outside, taps outside the input are zeroed and the rest
// renormalized before the blend reads the four samples.
// CHECK-LABEL: func.func @resize_cubic
// CHECK: linalg.generic
// CHECK: math.floor
// CHECK-DAG: arith.constant -2.500000e+00 : f32
// CHECK-DAG: arith.constant -4.000000e+00 : f32
// CHECK-DAG: arith.constant 1.500000e+00 : f32
// CHECK-DAG: arith.constant 2.500000e+00 : f32
// CHECK-COUNT-4: arith.select %{{.*}}, %{{.*}}, %cst{{.*}} : f32
// CHECK-COUNT-4: arith.divf
// CHECK-COUNT-4: tensor.extract %arg0
// CHECK: linalg.yield
func.func @resize_cubic(%x: tensor<1x4xf32>) -> tensor<1x8xf32> {
  %0 = kiln.resize %x {mode = "cubic", coordinate_mode = "half_pixel", nearest_mode = "floor", scales = array<f64: 1.0, 2.0>, cubic_coeff_a = -5.000000e-01 : f64, exclude_outside} : tensor<1x4xf32> -> tensor<1x8xf32>
  return %0 : tensor<1x8xf32>
}

// -----

// Gather by indices of dynamic sizes: the result takes the indices' sizes.
// CHECK-LABEL: func.func @gather_dynamic(
// CHECK: %[[B:.*]] = tensor.dim %arg1, %c0
// CHECK: %[[S:.*]] = tensor.dim %arg1, %c1
// CHECK: %[[INIT:.*]] = tensor.empty(%[[B]], %[[S]]) : tensor<?x?x16xf32>
// CHECK: linalg.generic {{.*}} ins(%arg1 : tensor<?x?xi64>) outs(%[[INIT]] : tensor<?x?x16xf32>)
// CHECK: tensor.extract %arg0[
func.func @gather_dynamic(%t: tensor<50x16xf32>, %ids: tensor<?x?xi64>) -> tensor<?x?x16xf32> {
  %r = kiln.gather %t, %ids {axis = 0 : i64} : (tensor<50x16xf32>, tensor<?x?xi64>) -> tensor<?x?x16xf32>
  return %r : tensor<?x?x16xf32>
}

// -----

// A widening matmul extends each operand by its own signedness, in a generic
// tagged for kiln-cpu-vnni-matmul.
// CHECK-LABEL: func.func @widening_matmul
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<4x3xi8>, tensor<3x2xi8>) outs(%{{.*}} : tensor<4x2xi32>) attrs =  {kiln.widening_matmul}
// CHECK: arith.extui %{{.*}} : i8 to i32
// CHECK: arith.extsi %{{.*}} : i8 to i32
// CHECK: arith.muli
// CHECK: arith.addi
func.func @widening_matmul(%a: tensor<4x3xui8>, %b: tensor<3x2xi8>) -> tensor<4x2xi32> {
  %0 = kiln.matmul %a, %b : (tensor<4x3xui8>, tensor<3x2xi8>) -> tensor<4x2xi32>
  return %0 : tensor<4x2xi32>
}

// -----

// dynamic_quantize: one vectorized pass for the range (16 lanes of running
// min and max), scale and zero point as scalars, then a quantizing generic
// that elementwise fusion leaves alone.
// CHECK-LABEL: func.func @dynamic_quantize
// CHECK: scf.for {{.*}} -> (vector<16xf32>, vector<16xf32>)
// CHECK:   arith.minimumf {{.*}} : vector<16xf32>
// CHECK:   arith.maximumf {{.*}} : vector<16xf32>
// CHECK: vector.reduction <minimumf>
// CHECK: vector.reduction <maximumf>
// CHECK: %[[SCALE:.*]] = arith.divf %{{.*}}, %{{.*}} : f32
// CHECK: linalg.generic {{.*}} ins(%arg0 : tensor<2x20xf32>) outs(%{{.*}} : tensor<2x20xi8>)
// CHECK:   math.roundeven
// CHECK:   arith.fptoui %{{.*}} : f32 to i8
// CHECK: tensor.from_elements %[[SCALE]] : tensor<f32>
func.func @dynamic_quantize(%x: tensor<2x20xf32>) -> (tensor<2x20xui8>, tensor<f32>, tensor<ui8>) {
  %q, %s, %z = kiln.dynamic_quantize %x : tensor<2x20xf32> -> tensor<2x20xui8>, tensor<f32>, tensor<ui8>
  return %q, %s, %z : tensor<2x20xui8>, tensor<f32>, tensor<ui8>
}

// -----

// Channels-last max pooling: NHWC padding with -inf, then linalg's NHWC pool.
// CHECK-LABEL: func.func @max_pool_channels_last
// CHECK: tensor.insert_slice %arg0 into %{{.*}}[0, 1, 1, 0] [1, 6, 6, 3] [1, 1, 1, 1]
// CHECK: linalg.pooling_nhwc_max {{.*}} ins(%{{.*}}, %{{.*}} : tensor<1x8x8x3xf32>, tensor<3x3xf32>) outs(%{{.*}} : tensor<1x3x3x3xf32>)
func.func @max_pool_channels_last(%x: tensor<1x6x6x3xf32>) -> tensor<1x3x3x3xf32> {
  %0 = kiln.max_pool %x {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, channels_last} : tensor<1x6x6x3xf32> -> tensor<1x3x3x3xf32>
  return %0 : tensor<1x3x3x3xf32>
}

// -----

// kiln.quantize: one elementwise generic, tagged so that fusion leaves its
// input's producers alone; clamps are compares and selects; the scale and
// zero point come from the result's type, which lowers to its storage.
// CHECK-LABEL: func.func @quantize
// CHECK-SAME: -> tensor<8xi8>
// CHECK-DAG: %[[SCALE:.*]] = arith.constant 5.000000e-01 : f32
// CHECK-DAG: %[[ZP:.*]] = arith.constant 3.000000e+00 : f32
// CHECK: linalg.generic {{.*}} ins(%arg0 : tensor<8xf32>) outs(%{{.*}} : tensor<8xi8>)
// CHECK:   arith.divf %{{.*}}, %[[SCALE]] : f32
// CHECK:   math.roundeven
// CHECK:   arith.addf %{{.*}}, %[[ZP]] : f32
// CHECK:   arith.cmpf olt
// CHECK:   arith.select
// CHECK:   arith.fptoui %{{.*}} : f32 to i8
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @quantize(%x: tensor<8xf32>) -> tensor<8xui8> {
  %q = kiln.quantize %x : tensor<8xf32> -> tensor<8x!quant.uniform<u8:f32, 0.5:3>>
  %s = kiln.storage_cast %q : tensor<8x!quant.uniform<u8:f32, 0.5:3>> -> tensor<8xui8>
  return %s : tensor<8xui8>
}

// -----

// Per axis, the scales and zero points are constants that broadcast along
// the axis, read by the generic; int8 storage saturates to [-128, 127]
// and converts signed. kiln.dequantize subtracts the zero point and scales.
// CHECK-LABEL: func.func @quantize_per_axis
// CHECK-DAG: %[[SCALES:.*]] = arith.constant dense<[{{\[}}5.000000e-01], [2.500000e-01]]> : tensor<2x1xf32>
// CHECK-DAG: %[[ZPS:.*]] = arith.constant dense<[{{\[}}-1.000000e+00], [4.000000e+00]]> : tensor<2x1xf32>
// CHECK: %[[Q:.*]] = linalg.generic {{.*}} ins(%arg0, %[[SCALES]], %[[ZPS]] : tensor<2x3xf32>, tensor<2x1xf32>, tensor<2x1xf32>) outs(%{{.*}} : tensor<2x3xi8>)
// CHECK: ^bb0(%[[X:.*]]: f32, %[[S:.*]]: f32, %[[Z:.*]]: f32, %{{.*}}: i8):
// CHECK:   arith.divf %[[X]], %[[S]] : f32
// CHECK:   arith.addf %{{.*}}, %[[Z]] : f32
// CHECK:   arith.constant -1.280000e+02 : f32
// CHECK:   arith.constant 1.270000e+02 : f32
// CHECK:   arith.fptosi %{{.*}} : f32 to i8
// CHECK: linalg.generic {{.*}} ins(%[[Q]], %{{.*}}, %{{.*}} : tensor<2x3xi8>, tensor<2x1xf32>, tensor<2x1xf32>) outs(%{{.*}} : tensor<2x3xf32>)
// CHECK: ^bb0(%[[QV:.*]]: i8, %[[S2:.*]]: f32, %[[Z2:.*]]: f32, %{{.*}}: f32):
// CHECK:   %[[F:.*]] = arith.sitofp %[[QV]] : i8 to f32
// CHECK:   %[[C:.*]] = arith.subf %[[F]], %[[Z2]] : f32
// CHECK:   arith.mulf %[[C]], %[[S2]] : f32
func.func @quantize_per_axis(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %q = kiln.quantize %x : tensor<2x3xf32> -> tensor<2x3x!quant.uniform<i8:f32:0, {0.5:-1, 0.25:4}>>
  %y = kiln.dequantize %q : tensor<2x3x!quant.uniform<i8:f32:0, {0.5:-1, 0.25:4}>> -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

// A per-tensor dequantize with zero point 0 only scales.
// CHECK-LABEL: func.func @dequantize
// CHECK: linalg.generic {{.*}} ins(%arg0 : tensor<4xi8>) outs(%{{.*}} : tensor<4xf32>)
// CHECK:   %[[F:.*]] = arith.uitofp %{{.*}} : i8 to f32
// CHECK-NOT: arith.subf
// CHECK:   arith.mulf %[[F]], %{{.*}} : f32
func.func @dequantize(%q: tensor<4xui8>) -> tensor<4xf32> {
  %s = kiln.storage_cast %q : tensor<4xui8> -> tensor<4x!quant.uniform<u8:f32, 0.125>>
  %y = kiln.dequantize %s : tensor<4x!quant.uniform<u8:f32, 0.125>> -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// Attention: a task per batch entry and block of query rows (the largest
// divisor of 64 up to 128), an online softmax over blocks of 256 keys
// carrying the row maxima, the row sums and the unnormalized output; the
// scores exist one [64, 256] block at a time.
// CHECK-LABEL: func.func @attention
// CHECK: scf.forall (%[[N:.*]], %[[QI:.*]]) = (0, 0) to (2, 64) step (1, 64) shared_outs(%[[OUT:.*]] = %{{.*}}) -> (tensor<2x64x8xf32>)
// CHECK: %[[Q:.*]] = tensor.extract_slice %{{.*}}[%[[N]], %[[QI]], 0] [1, 64, 16] [1, 1, 1] : tensor<2x64x16xf32> to tensor<64x16xf32>
// CHECK: %[[C256:.*]] = arith.constant 256 : index
// CHECK: %[[R:.*]]:3 = scf.for %[[KJ:.*]] = %{{.*}} to %{{.*}} step %[[C256]] iter_args(%[[MAX:.*]] = %{{.*}}, %[[SUM:.*]] = %{{.*}}, %[[ACC:.*]] = %{{.*}}) -> (tensor<64xf32>, tensor<64xf32>, tensor<64x8xf32>)
// CHECK: %[[KT:.*]] = tensor.extract_slice %{{.*}}[%[[N]], 0, %[[KJ]]] [1, 16, 256] [1, 1, 1] : tensor<2x16x512xf32> to tensor<16x256xf32>
// CHECK: %[[V:.*]] = tensor.extract_slice %{{.*}}[%[[N]], %[[KJ]], 0] [1, 256, 8] [1, 1, 1] : tensor<2x512x8xf32> to tensor<256x8xf32>
// CHECK: %[[S:.*]] = linalg.matmul ins(%[[Q]], %[[KT]] : tensor<64x16xf32>, tensor<16x256xf32>)
// CHECK: %[[MASK:.*]] = tensor.extract_slice %{{.*}}[0, 0, %[[KJ]]] [1, 1, 256] [1, 1, 1] : tensor<1x1x512xf32> to tensor<1x256xf32>
// CHECK: %[[SM:.*]] = linalg.generic {{.*}} ins(%[[MASK]] : tensor<1x256xf32>) outs(%[[S]] : tensor<64x256xf32>)
// CHECK:   arith.mulf %{{.*}}, %{{.*}} : f32
// CHECK:   arith.addf
// CHECK: %[[ROWMAX:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%[[SM]] : tensor<64x256xf32>)
// CHECK:   arith.maximumf
// CHECK: %[[STATS:.*]]:2 = linalg.generic {{.*}} ins(%[[ROWMAX]] : tensor<64xf32>) outs(%[[MAX]], %{{.*}} : tensor<64xf32>, tensor<64xf32>)
// CHECK:   arith.select
// CHECK:   math.exp
// CHECK: %[[P:.*]] = linalg.generic {{.*}} ins(%[[STATS]]#0 : tensor<64xf32>) outs(%[[SM]] : tensor<64x256xf32>)
// CHECK:   math.exp
// CHECK: %[[SUMSCALED:.*]] = linalg.generic {{.*}} ins(%[[STATS]]#1 : tensor<64xf32>) outs(%[[SUM]] : tensor<64xf32>)
// CHECK: %[[NEWSUM:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%[[P]] : tensor<64x256xf32>) outs(%[[SUMSCALED]] : tensor<64xf32>)
// CHECK: %[[ACCSCALED:.*]] = linalg.generic {{.*}} ins(%[[STATS]]#1 : tensor<64xf32>) outs(%[[ACC]] : tensor<64x8xf32>)
// CHECK: %[[NEWACC:.*]] = linalg.matmul ins(%[[P]], %[[V]] : tensor<64x256xf32>, tensor<256x8xf32>) outs(%[[ACCSCALED]] : tensor<64x8xf32>)
// CHECK: scf.yield %[[STATS]]#0, %[[NEWSUM]], %[[NEWACC]]
// CHECK: %[[O:.*]] = linalg.generic {{.*}} ins(%[[R]]#2, %[[R]]#1 : tensor<64x8xf32>, tensor<64xf32>)
// CHECK:   arith.divf
// CHECK: tensor.parallel_insert_slice %[[O]] into %[[OUT]][%[[N]], %[[QI]], 0] [1, 64, 8] [1, 1, 1]
func.func @attention(%q: tensor<1x2x64x16xf32>, %kt: tensor<1x2x16x512xf32>, %v: tensor<1x2x512x8xf32>, %mask: tensor<1x1x1x512xf32>) -> tensor<1x2x64x8xf32> {
  %0 = kiln.attention %q, %kt, %v, %mask {scale = 0.25 : f32} : (tensor<1x2x64x16xf32>, tensor<1x2x16x512xf32>, tensor<1x2x512x8xf32>, tensor<1x1x1x512xf32>) -> tensor<1x2x64x8xf32>
  return %0 : tensor<1x2x64x8xf32>
}

// -----

// Wrap padding reads the input at (i - pad) mod size.
// CHECK-LABEL: func.func @pad_wrap
// CHECK: linalg.generic
// CHECK: arith.remsi
// CHECK: arith.select
// CHECK: tensor.extract
func.func @pad_wrap(%x: tensor<3x5xf32>) -> tensor<6x10xf32> {
  %0 = kiln.pad %x {pads = array<i64: 1, 2, 2, 3>, mode = "wrap", value = 0.0 : f64} : tensor<3x5xf32> -> tensor<6x10xf32>
  return %0 : tensor<6x10xf32>
}

// -----

// A dilated average pool divides by the taps inside the input: rows 0 and
// 4 of a 3-tap, dilation-2 window over 7 rows padded by 1 see 2 taps, the
// others 3 (columns likewise).
// CHECK-LABEL: func.func @average_pool_dilated
// CHECK: linalg.pooling_nchw_sum {dilations = dense<2> : tensor<2xi64>
// CHECK: arith.constant dense<{{\[\[}}2.500000e-01, 0.166666672, 0.166666672, 0.166666672, 2.500000e-01]
func.func @average_pool_dilated(%x: tensor<1x2x7x7xf32>) -> tensor<1x2x5x5xf32> {
  %0 = kiln.average_pool %x {kernel = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 2, 2>, count_include_pad = false} : tensor<1x2x7x7xf32> -> tensor<1x2x5x5xf32>
  return %0 : tensor<1x2x5x5xf32>
}

// -----

// Reflect padding of a dynamic dimension: the result is the input's size
// plus the pads, and the input must be longer than either pad.
// CHECK-LABEL: func.func @pad_reflect_dynamic
// CHECK: %[[L:.*]] = tensor.dim %arg0, %c1
// CHECK: %[[OUT:.*]] = arith.addi %[[L]], %c5
// CHECK: arith.cmpi sge, %{{.*}}, %c4
// CHECK: call @kiln_check_failed
// CHECK: tensor.empty(%[[OUT]]) : tensor<2x?xf32>
// CHECK: linalg.generic
func.func @pad_reflect_dynamic(%x: tensor<2x?xf32>) -> tensor<2x?xf32> {
  %0 = kiln.pad %x {mode = "reflect", pads = array<i64: 0, 3, 0, 2>, value = 0.0 : f64} : tensor<2x?xf32> -> tensor<2x?xf32>
  return %0 : tensor<2x?xf32>
}

// -----

// Resize by run-time sizes: each size is extracted once, a static result
// dimension is checked against it, and the scale is size / input size.
// CHECK: memref.global "private" constant @kiln_check_message_0
// CHECK-LABEL: func.func @resize_sizes
// CHECK: %[[DIM:.*]] = tensor.dim %arg0, %c1
// CHECK: %[[S0:.*]] = tensor.extract %arg1[%c0] : tensor<2xi64>
// CHECK: %[[N0:.*]] = arith.index_cast %[[S0]] : i64 to index
// CHECK: arith.cmpi eq, %[[N0]], %c1
// CHECK: func.call @kiln_check_failed
// CHECK: %[[S1:.*]] = tensor.extract %arg1[%c1{{.*}}] : tensor<2xi64>
// CHECK: %[[N:.*]] = arith.index_cast %[[S1]] : i64 to index
// CHECK: %[[SCALE:.*]] = arith.divf
// CHECK: tensor.empty(%[[N]]) : tensor<1x?xf32>
// CHECK: linalg.generic
// CHECK: arith.divf %{{.*}}, %[[SCALE]] : f32
func.func @resize_sizes(%x: tensor<1x?xf32>, %n: tensor<2xi64>) -> tensor<1x?xf32> {
  %0 = kiln.resize %x sizes(%n : tensor<2xi64>) {mode = "nearest", coordinate_mode = "asymmetric", nearest_mode = "floor", scales = array<f64: 1.0, 1.0>} : tensor<1x?xf32> -> tensor<1x?xf32>
  return %0 : tensor<1x?xf32>
}

// -----

// tf_crop_and_resize: the box is extracted once; each sample maps to
// start (in - 1) + x (end - start) (in - 1) / (out - 1), and one past the
// input's edge yields extrapolation_value.
// CHECK-LABEL: func.func @resize_crop
// CHECK: %[[START:.*]] = tensor.extract %arg1[%c0] : tensor<2xf32>
// CHECK: %[[END:.*]] = tensor.extract %arg1[%c1] : tensor<2xf32>
// CHECK: linalg.generic
// CHECK: arith.subf %[[END]], %[[START]]
// CHECK: %[[SRC:.*]] = arith.select
// CHECK: %[[BELOW:.*]] = arith.cmpf olt, %[[SRC]]
// CHECK: %[[ABOVE:.*]] = arith.cmpf ogt, %[[SRC]]
// CHECK: %[[OUT:.*]] = arith.ori %[[BELOW]], %[[ABOVE]]
// CHECK: %[[V:.*]] = tensor.extract %arg0
// CHECK: %[[FILL:.*]] = arith.constant 7.000000e+00 : f32
// CHECK: arith.select %[[OUT]], %[[FILL]], %[[V]]
func.func @resize_crop(%x: tensor<4xf32>, %roi: tensor<2xf32>) -> tensor<3xf32> {
  %0 = kiln.resize %x roi(%roi : tensor<2xf32>) {mode = "nearest", coordinate_mode = "tf_crop_and_resize", nearest_mode = "floor", scales = array<f64: 0.75>, extrapolation_value = 7.0} : tensor<4xf32> -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// The target-neutral forms of the convolutions kiln-cpu-conv-as-matmul
// takes on the CPU: named linalg convolutions into the bias.
// CHECK-LABEL: func.func @conv_named_nchw
// CHECK: %[[PADDED:.*]] = tensor.insert_slice %arg0 into %{{.*}}[0, 0, 1, 1] [1, 3, 8, 8] [1, 1, 1, 1]
// CHECK: %[[BIAS:.*]] = linalg.generic {{.*}} ins(%{{.*}} : tensor<8x1x1xf32>) outs(%{{.*}} : tensor<1x8x8x8xf32>)
// CHECK: linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%[[PADDED]], %arg1 : tensor<1x3x10x10xf32>, tensor<8x3x3x3xf32>) outs(%[[BIAS]] : tensor<1x8x8x8xf32>)
// CHECK-LABEL: func.func @conv_named_dynamic
// CHECK: call @kiln_check_failed
// CHECK: linalg.conv_2d_nchw_fchw {{.*}} ins(%arg0, %arg1 : tensor<?x3x?x?xf32>, tensor<8x3x3x3xf32>) outs(%{{.*}} : tensor<?x8x?x?xf32>)
func.func @conv_named_nchw(%x: tensor<1x3x8x8xf32>, %w: tensor<8x3x3x3xf32>, %b: tensor<8xf32>) -> tensor<1x8x8x8xf32> {
  %0 = kiln.conv %x, %w, %b {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, group = 1 : i64} : (tensor<1x3x8x8xf32>, tensor<8x3x3x3xf32>, tensor<8xf32>) -> tensor<1x8x8x8xf32>
  return %0 : tensor<1x8x8x8xf32>
}
func.func @conv_named_dynamic(%x: tensor<?x3x?x?xf32>, %w: tensor<8x3x3x3xf32>) -> tensor<?x8x?x?xf32> {
  %r = kiln.conv %x, %w {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<?x3x?x?xf32>, tensor<8x3x3x3xf32>) -> tensor<?x8x?x?xf32>
  return %r : tensor<?x8x?x?xf32>
}

// -----

// Channels-last: linalg.conv_2d_nhwc_hwcf with the constant FCHW filter
// relaid out to HWCF at compile time ([ky][kx][c][f]: W[f][c][ky][kx]), and
// linalg.depthwise_conv_2d_nhwc_hwc with the taps as [KH, KW, C].
// CHECK-LABEL: func.func @conv_named_channels_last
// CHECK-DAG: %[[HWCF:.*]] = arith.constant dense<{{\[\[\[\[}}1.000000e+00, 5.000000e+00], [3.000000e+00, 7.000000e+00]], {{\[\[}}2.000000e+00, 6.000000e+00], [4.000000e+00, 8.000000e+00]]]]> : tensor<1x2x2x2xf32>
// CHECK-DAG: %[[BIAS:.*]] = linalg.generic {{.*}} ins(%{{.*}} : tensor<1x1x1x2xf32>) outs(%{{.*}} : tensor<1x4x3x2xf32>)
// CHECK: linalg.conv_2d_nhwc_hwcf {{.*}} ins(%arg0, %[[HWCF]] : tensor<1x4x4x2xf32>, tensor<1x2x2x2xf32>) outs(%[[BIAS]] : tensor<1x4x3x2xf32>)
// CHECK-LABEL: func.func @depthwise_named_channels_last
// CHECK: %[[TAPS:.*]] = tensor.expand_shape {{.*}} into tensor<3x3x20xf32>
// CHECK: linalg.depthwise_conv_2d_nhwc_hwc {{.*}} ins(%{{.*}}, %[[TAPS]] : tensor<1x6x6x20xf32>, tensor<3x3x20xf32>) outs(%{{.*}} : tensor<1x4x4x20xf32>)
func.func @conv_named_channels_last(%x: tensor<1x4x4x2xf32>) -> tensor<1x4x3x2xf32> {
  %w = kiln.constant dense<[[[[1.0, 2.0]], [[3.0, 4.0]]], [[[5.0, 6.0]], [[7.0, 8.0]]]]> : tensor<2x2x1x2xf32> -> tensor<2x2x1x2xf32>
  %b = kiln.constant dense<[1.0, 2.0]> : tensor<2xf32> -> tensor<2xf32>
  %0 = kiln.conv %x, %w, %b {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, group = 1 : i64, channels_last} : (tensor<1x4x4x2xf32>, tensor<2x2x1x2xf32>, tensor<2xf32>) -> tensor<1x4x3x2xf32>
  return %0 : tensor<1x4x3x2xf32>
}
func.func @depthwise_named_channels_last(%x: tensor<1x4x4x20xf32>) -> tensor<1x4x4x20xf32> {
  %w = kiln.constant dense<0.25> : tensor<20x1x3x3xf32> -> tensor<20x1x3x3xf32>
  %0 = kiln.conv %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, group = 20 : i64, channels_last} : (tensor<1x4x4x20xf32>, tensor<20x1x3x3xf32>) -> tensor<1x4x4x20xf32>
  return %0 : tensor<1x4x4x20xf32>
}

// -----

// A widening convolution is one linalg.generic over (n, f, oy, ox, c, ky,
// kx) that extends each operand by its own signedness (u8 input, s8
// filter); NCHW or NHWC by its maps.
// CHECK-DAG: #[[IN:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d4, d2 + d5, d3 + d6)>
// CHECK-DAG: #[[FILTER:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d1, d4, d5, d6)>
// CHECK-DAG: #[[OUT:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>
// CHECK-DAG: #[[IN_NHWC:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d2 + d5, d3 + d6, d4)>
// CHECK-DAG: #[[OUT_NHWC:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d2, d3, d1)>
// CHECK-LABEL: func.func @widening_named
// CHECK: linalg.generic {indexing_maps = [#[[IN]], #[[FILTER]], #[[OUT]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%arg0, %arg1 : tensor<1x2x5x5xi8>, tensor<4x2x3x3xi8>) outs(%{{.*}} : tensor<1x4x3x3xi32>)
// CHECK: arith.extui %{{.*}} : i8 to i32
// CHECK: arith.extsi %{{.*}} : i8 to i32
// CHECK-NOT: kiln.widening_matmul
// CHECK-LABEL: func.func @widening_named_channels_last
// CHECK: linalg.generic {indexing_maps = [#[[IN_NHWC]], #[[FILTER]], #[[OUT_NHWC]]]
// CHECK-SAME: outs(%{{.*}} : tensor<1x3x3x4xi32>)
func.func @widening_named(%x: tensor<1x2x5x5xui8>, %w: tensor<4x2x3x3xi8>) -> tensor<1x4x3x3xi32> {
  %0 = kiln.conv %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, group = 1 : i64} : (tensor<1x2x5x5xui8>, tensor<4x2x3x3xi8>) -> tensor<1x4x3x3xi32>
  return %0 : tensor<1x4x3x3xi32>
}
func.func @widening_named_channels_last(%x: tensor<1x5x5x2xui8>, %w: tensor<4x2x3x3xi8>) -> tensor<1x3x3x4xi32> {
  %0 = kiln.conv %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, group = 1 : i64, channels_last} : (tensor<1x5x5x2xui8>, tensor<4x2x3x3xi8>) -> tensor<1x3x3x4xi32>
  return %0 : tensor<1x3x3x4xi32>
}
