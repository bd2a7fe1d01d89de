// RUN: kiln-opt %s --split-input-file --verify-diagnostics

func.func @add_not_broadcastable(%a: tensor<2x3xf32>, %b: tensor<4xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'kiln.add' op operand shapes 2x3 and 4 are not broadcast-compatible}}
  %0 = kiln.add %a, %b : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @matmul_contraction(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) -> tensor<2x5xf32> {
  // expected-error @+1 {{'kiln.matmul' op contraction dimensions differ: lhs has 3, rhs has 4}}
  %0 = kiln.matmul %a, %b : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<2x5xf32>
  return %0 : tensor<2x5xf32>
}

// -----

func.func @reshape_count(%a: tensor<2x3xf32>) -> tensor<7xf32> {
  // expected-error @+1 {{'kiln.reshape' op cannot reshape 6 elements (2x3) into 7}}
  %0 = kiln.reshape %a : tensor<2x3xf32> -> tensor<7xf32>
  return %0 : tensor<7xf32>
}

// -----

func.func @transpose_perm(%a: tensor<2x3xf32>) -> tensor<3x2xf32> {
  // expected-error @+1 {{'kiln.transpose' op perm is not a permutation of 0..1}}
  %0 = kiln.transpose %a {perm = array<i64: 0, 0>} : tensor<2x3xf32> -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

func.func @conv_groups(%x: tensor<1x6x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32> {
  // expected-error @+1 {{'kiln.conv' op group 4 does not divide input channels 6 and filter count 4}}
  %0 = kiln.conv %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, group = 4 : i64} : (tensor<1x6x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  return %0 : tensor<1x4x6x6xf32>
}

// -----

func.func @compare_result(%a: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{'kiln.less' op result element type 'f32' does not match operand element type 'i1'}}
  %0 = kiln.less %a, %a : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @slice_bounds(%a: tensor<4xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{'kiln.slice' op dimension 0 reads outside the input}}
  %0 = kiln.slice %a {starts = array<i64: 2>, steps = array<i64: 1>} : tensor<4xf32> -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @slice_dynamic_whole(%a: tensor<?xf32>) -> tensor<?xf32> {
  // expected-error @+1 {{'kiln.slice' op dimension 0 is dynamic and must be taken whole}}
  %0 = kiln.slice %a {starts = array<i64: 1>, steps = array<i64: 1>} : tensor<?xf32> -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

func.func @slice_onnx_count(%a: tensor<4x?xf32>) -> tensor<2x?xf32> {
  // expected-error @+1 {{'kiln.slice' op dimension 0 takes 4 elements, not 2}}
  %0 = kiln.slice %a {starts = array<i64: -1, 0>, ends = array<i64: -9223372036854775807, -1>, steps = array<i64: -1, 1>} : tensor<4x?xf32> -> tensor<2x?xf32>
  return %0 : tensor<2x?xf32>
}

// -----

func.func @slice_onnx_dynamic(%a: tensor<?xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{'kiln.slice' op dimension 0 is dynamic and so is its slice}}
  %0 = kiln.slice %a {starts = array<i64: 0>, ends = array<i64: 3>, steps = array<i64: 1>} : tensor<?xf32> -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @slice_onnx_rank(%a: tensor<?xf32>) -> tensor<?xf32> {
  // expected-error @+1 {{'kiln.slice' op ends needs one entry per input dimension}}
  %0 = kiln.slice %a {starts = array<i64: 0>, ends = array<i64: 3, 4>, steps = array<i64: 1>} : tensor<?xf32> -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

func.func @gather_indices(%d: tensor<4x2xf32>, %i: tensor<3xf32>) -> tensor<3x2xf32> {
  // expected-error @+1 {{'kiln.gather' op indices must be integers}}
  %0 = kiln.gather %d, %i {axis = 0 : i64} : (tensor<4x2xf32>, tensor<3xf32>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

func.func @reduce_kind(%a: tensor<4xf32>) -> tensor<f32> {
  // expected-error @+1 {{'kiln.reduce' op kind must be sum, prod, max or min, got 'mean'}}
  %0 = kiln.reduce %a {kind = "mean", axes = array<i64: 0>, keepdims = false} : tensor<4xf32> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @pad_mode(%a: tensor<4xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'kiln.pad' op reflect pads must be smaller than the dimension}}
  %0 = kiln.pad %a {pads = array<i64: 4, 0>, mode = "reflect", value = 0.0 : f64} : tensor<4xf32> -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

func.func @resize_mode(%a: tensor<4xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'kiln.resize' op mode must be nearest, linear or cubic}}
  %0 = kiln.resize %a {mode = "lanczos", coordinate_mode = "half_pixel", nearest_mode = "floor", scales = array<f64: 2.0>} : tensor<4xf32> -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

func.func @assert_not_i1(%x: tensor<2xi64>) {
  // expected-error @+1 {{'kiln.assert' op condition must be an i1 tensor, got 'tensor<2xi64>'}}
  kiln.assert %x, "x" : tensor<2xi64>
  return
}

// -----

func.func @assert_without_message(%x: tensor<2xi1>) {
  // expected-error @+1 {{'kiln.assert' op needs a message saying what failed}}
  kiln.assert %x, "" : tensor<2xi1>
  return
}

// -----

func.func @window_starts(%x: tensor<3x4xf32>, %starts: tensor<3xi64>, %steps: tensor<2xi64>, %pad: tensor<f32>) -> tensor<2x2xf32> {
  // expected-error @+1 {{'kiln.window' op starts and steps must be tensor<2xi64>, got 'tensor<3xi64>'}}
  %0 = kiln.window %x, %starts, %steps, %pad {mode = "constant"} : (tensor<3x4xf32>, tensor<3xi64>, tensor<2xi64>, tensor<f32>) -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}

// -----

func.func @window_mode(%x: tensor<3x4xf32>, %starts: tensor<2xi64>, %pad: tensor<f32>) -> tensor<2x2xf32> {
  // expected-error @+1 {{'kiln.window' op mode must be constant, edge, reflect or wrap, got 'mirror'}}
  %0 = kiln.window %x, %starts, %starts, %pad {mode = "mirror"} : (tensor<3x4xf32>, tensor<2xi64>, tensor<2xi64>, tensor<f32>) -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}

// -----

func.func @top_k_too_many(%x: tensor<2x5xf32>) -> (tensor<2x6xf32>, tensor<2x6xi64>) {
  // expected-error @+1 {{'kiln.top_k' op k must not exceed the input's size along the axis}}
  %v, %i = kiln.top_k %x {axis = 1 : i64, largest = true} : tensor<2x5xf32> -> tensor<2x6xf32>, tensor<2x6xi64>
  return %v, %i : tensor<2x6xf32>, tensor<2x6xi64>
}

// -----

func.func @resize_runtime_scales(%a: tensor<4xf32>, %s: tensor<2xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'kiln.resize' op runtime scales must be tensor<1xf32>, got 'tensor<2xf32>'}}
  %0 = kiln.resize %a scales(%s : tensor<2xf32>) {mode = "linear", coordinate_mode = "half_pixel", nearest_mode = "floor", scales = array<f64: 2.0>} : tensor<4xf32> -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

func.func @resize_runtime_sizes(%a: tensor<?xf32>, %n: tensor<1xi32>) -> tensor<?xf32> {
  // expected-error @+1 {{'kiln.resize' op runtime sizes must be tensor<1xi64>, got 'tensor<1xi32>'}}
  %0 = kiln.resize %a sizes(%n : tensor<1xi32>) {mode = "linear", coordinate_mode = "half_pixel", nearest_mode = "floor", scales = array<f64: 1.0>} : tensor<?xf32> -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

func.func @resize_scales_and_sizes(%a: tensor<?xf32>, %s: tensor<1xf32>, %n: tensor<1xi64>) -> tensor<?xf32> {
  // expected-error @+1 {{'kiln.resize' op takes run-time scales or run-time sizes, not both}}
  %0 = kiln.resize %a scales(%s : tensor<1xf32>) sizes(%n : tensor<1xi64>) {mode = "linear", coordinate_mode = "half_pixel", nearest_mode = "floor", scales = array<f64: 1.0>} : tensor<?xf32> -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

func.func @grid_sample_bicubic_border(%x: tensor<1x1x3x2xf32>, %g: tensor<1x2x4x2xf32>) -> tensor<1x1x2x4xf32> {
  // expected-error @+1 {{'kiln.grid_sample' op bicubic mode needs zeros padding}}
  %0 = kiln.grid_sample %x, %g {mode = "bicubic", padding_mode = "border", align_corners = false} : (tensor<1x1x3x2xf32>, tensor<1x2x4x2xf32>) -> tensor<1x1x2x4xf32>
  return %0 : tensor<1x1x2x4xf32>
}

// -----

// The widening form takes 8-bit operands only.
func.func @matmul_widening_needs_bytes(%a: tensor<2x3xi16>, %b: tensor<3x4xi8>) -> tensor<2x4xi32> {
  // expected-error @+1 {{'kiln.matmul' op operand element types differ: 'i16' and 'i8'}}
  %0 = kiln.matmul %a, %b : (tensor<2x3xi16>, tensor<3x4xi8>) -> tensor<2x4xi32>
  return %0 : tensor<2x4xi32>
}

// -----

func.func @matmul_widening_result(%a: tensor<2x3xui8>, %b: tensor<3x4xi8>) -> tensor<2x4xi16> {
  // expected-error @+1 {{'kiln.matmul' op operand element types differ: 'ui8' and 'i8'}}
  %0 = kiln.matmul %a, %b : (tensor<2x3xui8>, tensor<3x4xi8>) -> tensor<2x4xi16>
  return %0 : tensor<2x4xi16>
}

// -----

func.func @dynamic_quantize_result(%x: tensor<2x3xf32>) -> tensor<2x3xi8> {
  // expected-error @+1 {{'kiln.dynamic_quantize' op result must be ui8 of the input's shape, not 'tensor<2x3xi8>'}}
  %q, %s, %z = kiln.dynamic_quantize %x : tensor<2x3xf32> -> tensor<2x3xi8>, tensor<f32>, tensor<ui8>
  return %q : tensor<2x3xi8>
}

// -----

func.func @dynamic_quantize_scale(%x: tensor<2x3xf32>) -> tensor<2x3xui8> {
  // expected-error @+1 {{'kiln.dynamic_quantize' op scale must be tensor<f32>, not 'tensor<1xf32>'}}
  %q, %s, %z = kiln.dynamic_quantize %x : tensor<2x3xf32> -> tensor<2x3xui8>, tensor<1xf32>, tensor<ui8>
  return %q : tensor<2x3xui8>
}

// -----

func.func @conv_widening_group(%x: tensor<1x4x5x5xui8>, %w: tensor<4x2x3x3xi8>) -> tensor<1x4x3x3xi32> {
  // expected-error @+1 {{'kiln.conv' op the widening integer form takes no group and no bias}}
  %0 = kiln.conv %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, group = 2 : i64} : (tensor<1x4x5x5xui8>, tensor<4x2x3x3xi8>) -> tensor<1x4x3x3xi32>
  return %0 : tensor<1x4x3x3xi32>
}

// -----

func.func @conv_channels_last_grouped(%x: tensor<1x5x5x4xf32>, %w: tensor<4x2x3x3xf32>) -> tensor<1x3x3x4xf32> {
  // expected-error @+1 {{'kiln.conv' op channels_last takes no group, or one per channel (depthwise)}}
  %0 = kiln.conv %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, group = 2 : i64, channels_last} : (tensor<1x5x5x4xf32>, tensor<4x2x3x3xf32>) -> tensor<1x3x3x4xf32>
  return %0 : tensor<1x3x3x4xf32>
}

// -----

func.func @conv_channels_last_shape(%x: tensor<1x5x5x4xui8>, %w: tensor<6x4x3x3xi8>) -> tensor<1x6x3x3xi32> {
  // expected-error @+1 {{'kiln.conv' op result shape 1x6x3x3 does not match expected shape 1x3x3x6}}
  %0 = kiln.conv %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, group = 1 : i64, channels_last} : (tensor<1x5x5x4xui8>, tensor<6x4x3x3xi8>) -> tensor<1x6x3x3xi32>
  return %0 : tensor<1x6x3x3xi32>
}

// -----

func.func @max_pool_channels_last_shape(%x: tensor<1x6x6x4xf32>) -> tensor<1x4x3x3xf32> {
  // expected-error @+1 {{'kiln.max_pool' op result shape 1x4x3x3 does not match expected shape 1x3x3x4}}
  %0 = kiln.max_pool %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, channels_last} : tensor<1x6x6x4xf32> -> tensor<1x4x3x3xf32>
  return %0 : tensor<1x4x3x3xf32>
}

// -----

func.func @quantize_to_integer(%x: tensor<2x3xf32>) -> tensor<2x3xui8> {
  // expected-error @+1 {{'kiln.quantize' op quantized side must hold a !quant.uniform type expressed in f32, not 'ui8'}}
  %q = kiln.quantize %x : tensor<2x3xf32> -> tensor<2x3xui8>
  return %q : tensor<2x3xui8>
}

// -----

func.func @quantize_from_f16(%x: tensor<2x3xf16>) -> tensor<2x3x!quant.uniform<u8:f32, 0.5:3>> {
  // expected-error @+1 {{'kiln.quantize' op float side must hold f32, not 'f16'}}
  %q = kiln.quantize %x : tensor<2x3xf16> -> tensor<2x3x!quant.uniform<u8:f32, 0.5:3>>
  return %q : tensor<2x3x!quant.uniform<u8:f32, 0.5:3>>
}

// -----

func.func @dequantize_axis_size(%q: tensor<2x3x!quant.uniform<i8:f32:1, {0.5, 0.25}>>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'kiln.dequantize' op quantized dimension 1 has size 3 but 2 scales}}
  %x = kiln.dequantize %q : tensor<2x3x!quant.uniform<i8:f32:1, {0.5, 0.25}>> -> tensor<2x3xf32>
  return %x : tensor<2x3xf32>
}

// -----

func.func @dequantize_axis_range(%q: tensor<2x!quant.uniform<i8:f32:1, {0.5, 0.25}>>) -> tensor<2xf32> {
  // expected-error @+1 {{'kiln.dequantize' op quantized dimension 1 is out of range for rank 1}}
  %x = kiln.dequantize %q : tensor<2x!quant.uniform<i8:f32:1, {0.5, 0.25}>> -> tensor<2xf32>
  return %x : tensor<2xf32>
}

// -----

func.func @dequantize_shape(%q: tensor<2x3x!quant.uniform<u8:f32, 0.5>>) -> tensor<3x2xf32> {
  // expected-error @+1 {{'kiln.dequantize' op shapes differ: 'tensor<3x2xf32>' and 'tensor<2x3x!quant.uniform<u8:f32, 5.000000e-01>>'}}
  %x = kiln.dequantize %q : tensor<2x3x!quant.uniform<u8:f32, 0.5>> -> tensor<3x2xf32>
  return %x : tensor<3x2xf32>
}

// -----

func.func @storage_cast_signedness(%x: tensor<4xi8>) -> tensor<4x!quant.uniform<u8:f32, 0.5>> {
  // expected-error @+1 {{'kiln.storage_cast' op storage type must be 'ui8', not 'i8'}}
  %q = kiln.storage_cast %x : tensor<4xi8> -> tensor<4x!quant.uniform<u8:f32, 0.5>>
  return %q : tensor<4x!quant.uniform<u8:f32, 0.5>>
}

// -----

func.func @storage_cast_between_integers(%x: tensor<4xi8>) -> tensor<4xui8> {
  // expected-error @+1 {{'kiln.storage_cast' op exactly one side must be a quantized type, not 'i8' and 'ui8'}}
  %q = kiln.storage_cast %x : tensor<4xi8> -> tensor<4xui8>
  return %q : tensor<4xui8>
}

// -----

func.func @matmul_mixed_halves(%a: tensor<2x3xbf16>, %b: tensor<3x4xf16>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'kiln.matmul' op operand element types differ: 'bf16' and 'f16'}}
  %0 = kiln.matmul %a, %b : (tensor<2x3xbf16>, tensor<3x4xf16>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

func.func @matmul_bf16_result(%a: tensor<2x3xbf16>, %b: tensor<3x4xbf16>) -> tensor<2x4xf16> {
  // expected-error @+1 {{'kiln.matmul' op result element type 'f16' does not match operand element type 'bf16'}}
  %0 = kiln.matmul %a, %b : (tensor<2x3xbf16>, tensor<3x4xbf16>) -> tensor<2x4xf16>
  return %0 : tensor<2x4xf16>
}

// -----

func.func @attention_chain(%q: tensor<2x8x4xf32>, %kt: tensor<2x5x16xf32>, %v: tensor<2x16x6xf32>) -> tensor<2x8x6xf32> {
  // expected-error @+1 {{'kiln.attention' op query 2x8x4, key_t 2x5x16 and value 2x16x6 do not chain as [Lq, D] x [D, Lk] x [Lk, Dv]}}
  %0 = kiln.attention %q, %kt, %v {scale = 1.0 : f32} : (tensor<2x8x4xf32>, tensor<2x5x16xf32>, tensor<2x16x6xf32>) -> tensor<2x8x6xf32>
  return %0 : tensor<2x8x6xf32>
}

// -----

func.func @attention_batch(%q: tensor<2x8x4xf32>, %kt: tensor<3x4x16xf32>, %v: tensor<2x16x6xf32>) -> tensor<2x8x6xf32> {
  // expected-error @+1 {{'kiln.attention' op batch dimensions differ: 2x8x4, 3x4x16, 2x16x6}}
  %0 = kiln.attention %q, %kt, %v {scale = 1.0 : f32} : (tensor<2x8x4xf32>, tensor<3x4x16xf32>, tensor<2x16x6xf32>) -> tensor<2x8x6xf32>
  return %0 : tensor<2x8x6xf32>
}

// -----

// The mask broadcasts over all batch dimensions or none.
func.func @attention_mask(%q: tensor<2x3x8x4xf32>, %kt: tensor<2x3x4x16xf32>, %v: tensor<2x3x16x6xf32>, %m: tensor<2x1x8x16xf32>) -> tensor<2x3x8x6xf32> {
  // expected-error @+1 {{'kiln.attention' op mask of shape 2x1x8x16 is not [1 or B..., 1 or 8, 16]}}
  %0 = kiln.attention %q, %kt, %v, %m {scale = 1.0 : f32} : (tensor<2x3x8x4xf32>, tensor<2x3x4x16xf32>, tensor<2x3x16x6xf32>, tensor<2x1x8x16xf32>) -> tensor<2x3x8x6xf32>
  return %0 : tensor<2x3x8x6xf32>
}

// -----

func.func @attention_dynamic(%q: tensor<?x4xf32>, %kt: tensor<4x16xf32>, %v: tensor<16x6xf32>) -> tensor<?x6xf32> {
  // expected-error @+1 {{'kiln.attention' op operands must be f32 tensors of static shape}}
  %0 = kiln.attention %q, %kt, %v {scale = 1.0 : f32} : (tensor<?x4xf32>, tensor<4x16xf32>, tensor<16x6xf32>) -> tensor<?x6xf32>
  return %0 : tensor<?x6xf32>
}

// -----

func.func @bitcast_width(%x: tensor<4xf32>) -> tensor<4xi16> {
  // expected-error @+1 {{'kiln.bitcast' op needs element types of one width of at least 8 bits, got 'f32' and 'i16'}}
  %0 = kiln.bitcast %x : tensor<4xf32> -> tensor<4xi16>
  return %0 : tensor<4xi16>
}

// -----

func.func @cumulative_kind(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'kiln.cumulative' op kind must be "sum" or "prod", got "max"}}
  %0 = kiln.cumulative %x {kind = "max", axis = 0 : i64} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @nonzero_static_count(%a: tensor<2x3xf32>) -> tensor<2x4xi64> {
  // expected-error @+1 {{'kiln.nonzero' op result must be i64 of shape [2, ?]}}
  %0 = kiln.nonzero %a : tensor<2x3xf32> -> tensor<2x4xi64>
  return %0 : tensor<2x4xi64>
}

// -----

func.func @unique_row_width(%a: tensor<5x2xf32>) -> tensor<?x3xf32> {
  // expected-error @+1 {{'kiln.unique' op unique must hold rows of the input: ?x2}}
  %0:4 = kiln.unique %a {sorted = true} : tensor<5x2xf32> -> tensor<?x3xf32>, tensor<?xi64>, tensor<5xi64>, tensor<?xi64>
  return %0#0 : tensor<?x3xf32>
}

// -----

func.func @unique_inverse_length(%a: tensor<5x2xf32>) -> tensor<4xi64> {
  // expected-error @+1 {{'kiln.unique' op first and counts must be i64 of shape [?], inverse i64 of shape [5]}}
  %0:4 = kiln.unique %a {sorted = false} : tensor<5x2xf32> -> tensor<?x2xf32>, tensor<?xi64>, tensor<4xi64>, tensor<?xi64>
  return %0#2 : tensor<4xi64>
}

// -----

func.func @nms_scores(%b: tensor<1x6x4xf32>, %s: tensor<1x2x5xf32>, %m: tensor<i64>, %t: tensor<f32>) -> tensor<?x3xi64> {
  // expected-error @+1 {{'kiln.non_max_suppression' op scores must be f32 of shape [B, C, N] for boxes [B, N, 4]}}
  %0 = kiln.non_max_suppression %b, %s, %m, %t {center_point_box = false} : tensor<1x6x4xf32>, tensor<1x2x5xf32>, tensor<i64>, tensor<f32> -> tensor<?x3xi64>
  return %0 : tensor<?x3xi64>
}

// -----

func.func @nms_threshold(%b: tensor<1x6x4xf32>, %s: tensor<1x2x6xf32>, %m: tensor<i64>, %t: tensor<1xf32>) -> tensor<?x3xi64> {
  // expected-error @+1 {{'kiln.non_max_suppression' op max_per_class must be an i64 scalar and the thresholds f32 scalars}}
  %0 = kiln.non_max_suppression %b, %s, %m, %t {center_point_box = false} : tensor<1x6x4xf32>, tensor<1x2x6xf32>, tensor<i64>, tensor<1xf32> -> tensor<?x3xi64>
  return %0 : tensor<?x3xi64>
}

// -----

func.func @top_k_runtime_static(%x: tensor<3x9xf32>, %k: tensor<i64>) -> tensor<3x4xf32> {
  // expected-error @+1 {{'kiln.top_k' op a run-time k must be an i64 scalar, with a dynamic result axis}}
  %0:2 = kiln.top_k %x k %k {axis = 1 : i64, largest = true} : tensor<3x9xf32>, tensor<i64> -> tensor<3x4xf32>, tensor<3x4xi64>
  return %0#0 : tensor<3x4xf32>
}

// -----

func.func @iota_count(%n: tensor<1xi64>) -> tensor<?xi64> {
  // expected-error @+1 {{'kiln.iota' op takes an i64 scalar count and gives i64 of shape [?]}}
  %0 = kiln.iota %n : tensor<1xi64> -> tensor<?xi64>
  return %0 : tensor<?xi64>
}

// -----

func.func @resize_crop_without_roi(%a: tensor<4xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'kiln.resize' op takes a roi exactly when coordinate_mode is tf_crop_and_resize}}
  %0 = kiln.resize %a {mode = "linear", coordinate_mode = "tf_crop_and_resize", nearest_mode = "floor", scales = array<f64: 0.5>} : tensor<4xf32> -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @resize_roi_type(%a: tensor<4xf32>, %r: tensor<4xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'kiln.resize' op roi must be tensor<2xf32>, got 'tensor<4xf32>'}}
  %0 = kiln.resize %a roi(%r : tensor<4xf32>) {mode = "linear", coordinate_mode = "tf_crop_and_resize", nearest_mode = "floor", scales = array<f64: 0.5>} : tensor<4xf32> -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @sparse_matmul_result(%x: tensor<2x4xf32>) -> tensor<2x3xf32> {
  %o = kiln.constant dense<[0, 1, 2]> : tensor<3xi32> -> tensor<3xi32>
  %i = kiln.constant dense<[0, 3]> : tensor<2xi16> -> tensor<2xi16>
  %v = kiln.constant dense<1.0> : tensor<2x1xf32> -> tensor<2x1xf32>
  // expected-error @+1 {{'kiln.sparse_matmul' op result shape 2x3 does not match expected shape 2x2}}
  %y = kiln.sparse_matmul %x, %o, %i, %v : (tensor<2x4xf32>, tensor<3xi32>, tensor<2xi16>, tensor<2x1xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

func.func @sparse_matmul_row_out_of_range(%x: tensor<2x4xf32>) -> tensor<2x2xf32> {
  %o = kiln.constant dense<[0, 1, 2]> : tensor<3xi32> -> tensor<3xi32>
  %i = kiln.constant dense<[0, 4]> : tensor<2xi16> -> tensor<2xi16>
  %v = kiln.constant dense<1.0> : tensor<2x1xf32> -> tensor<2x1xf32>
  // expected-error @+1 {{'kiln.sparse_matmul' op row index 4 is out of range for 4 rows}}
  %y = kiln.sparse_matmul %x, %o, %i, %v : (tensor<2x4xf32>, tensor<3xi32>, tensor<2xi16>, tensor<2x1xf32>) -> tensor<2x2xf32>
  return %y : tensor<2x2xf32>
}

// -----

func.func @sparse_matmul_offsets(%x: tensor<2x4xf32>) -> tensor<2x2xf32> {
  %o = kiln.constant dense<[0, 2, 1]> : tensor<3xi32> -> tensor<3xi32>
  %i = kiln.constant dense<[0, 3]> : tensor<2xi16> -> tensor<2xi16>
  %v = kiln.constant dense<1.0> : tensor<2x1xf32> -> tensor<2x1xf32>
  // expected-error @+1 {{'kiln.sparse_matmul' op offsets must run from 0 to the entry count 2}}
  %y = kiln.sparse_matmul %x, %o, %i, %v : (tensor<2x4xf32>, tensor<3xi32>, tensor<2xi16>, tensor<2x1xf32>) -> tensor<2x2xf32>
  return %y : tensor<2x2xf32>
}

// -----

func.func @sparse_matmul_decreasing(%x: tensor<2x4xf32>) -> tensor<2x2xf32> {
  %o = kiln.constant dense<[0, 2, 1, 2]> : tensor<4xi32> -> tensor<4xi32>
  %i = kiln.constant dense<[0, 3]> : tensor<2xi16> -> tensor<2xi16>
  %v = kiln.constant dense<1.0> : tensor<2x1xf32> -> tensor<2x1xf32>
  // expected-error @+1 {{'kiln.sparse_matmul' op offsets must not decrease}}
  %y = kiln.sparse_matmul %x, %o, %i, %v : (tensor<2x4xf32>, tensor<4xi32>, tensor<2xi16>, tensor<2x1xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

func.func @sparse_matmul_entries(%x: tensor<2x4xf32>, %v: tensor<3x16xf32>) -> tensor<2x16xf32> {
  %o = kiln.constant dense<[0, 2]> : tensor<2xi32> -> tensor<2xi32>
  %i = kiln.constant dense<[0, 3]> : tensor<2xi16> -> tensor<2xi16>
  // expected-error @+1 {{'kiln.sparse_matmul' op values has 3 entries, indices 2}}
  %y = kiln.sparse_matmul %x, %o, %i, %v : (tensor<2x4xf32>, tensor<2xi32>, tensor<2xi16>, tensor<3x16xf32>) -> tensor<2x16xf32>
  return %y : tensor<2x16xf32>
}

// -----

func.func @sparse_matmul_dynamic_k(%x: tensor<2x?xf32>, %o: tensor<2xi32>, %i: tensor<2xi32>, %v: tensor<2x16xf32>) -> tensor<2x16xf32> {
  // expected-error @+1 {{'kiln.sparse_matmul' op input must have a static last dimension}}
  %y = kiln.sparse_matmul %x, %o, %i, %v : (tensor<2x?xf32>, tensor<2xi32>, tensor<2xi32>, tensor<2x16xf32>) -> tensor<2x16xf32>
  return %y : tensor<2x16xf32>
}

// -----

func.func @bitmap_matmul_bits(%x: tensor<1x2xf32>) -> tensor<1x16xf32> {
  %s = kiln.constant dense<[0, 2, 3]> : tensor<3xi32> -> tensor<3xi32>
  %m = kiln.constant dense<[[1, 3]]> : tensor<1x2xi16> -> tensor<1x2xi16>
  %v = kiln.constant dense<1.0> : tensor<3xf32> -> tensor<3xf32>
  // expected-error @+1 {{'kiln.bitmap_matmul' op segment 0 of column block 0 has 1 mask bits but 2 values}}
  %y = kiln.bitmap_matmul %x, %s, %m, %v : (tensor<1x2xf32>, tensor<3xi32>, tensor<1x2xi16>, tensor<3xf32>) -> tensor<1x16xf32>
  return %y : tensor<1x16xf32>
}

// -----

func.func @bitmap_matmul_starts(%x: tensor<1x2xf32>, %s: tensor<4xi32>, %m: tensor<2x2xi16>, %v: tensor<3xf32>) -> tensor<1x32xf32> {
  // expected-error @+1 {{'kiln.bitmap_matmul' op starts needs a whole number of entries per column block, and one}}
  %y = kiln.bitmap_matmul %x, %s, %m, %v : (tensor<1x2xf32>, tensor<4xi32>, tensor<2x2xi16>, tensor<3xf32>) -> tensor<1x32xf32>
  return %y : tensor<1x32xf32>
}

// -----

func.func @bitmap_matmul_rows(%x: tensor<1x3xf32>, %s: tensor<2xi32>, %m: tensor<1x2xi16>, %v: tensor<3xf32>) -> tensor<1x16xf32> {
  // expected-error @+1 {{'kiln.bitmap_matmul' op masks have 2 rows, the input 3}}
  %y = kiln.bitmap_matmul %x, %s, %m, %v : (tensor<1x3xf32>, tensor<2xi32>, tensor<1x2xi16>, tensor<3xf32>) -> tensor<1x16xf32>
  return %y : tensor<1x16xf32>
}

// -----

func.func @bitmap_matmul_splat_masks(%x: tensor<1x2xf32>) -> tensor<1x16xf32> {
  %s = kiln.constant dense<[0, 3]> : tensor<2xi32> -> tensor<2xi32>
  %m = kiln.constant dense<1> : tensor<1x2xi16> -> tensor<1x2xi16>
  %v = kiln.constant dense<1.0> : tensor<3xf32> -> tensor<3xf32>
  // expected-error @+1 {{'kiln.bitmap_matmul' op segment 0 of column block 0 has 2 mask bits but 3 values}}
  %y = kiln.bitmap_matmul %x, %s, %m, %v : (tensor<1x2xf32>, tensor<2xi32>, tensor<1x2xi16>, tensor<3xf32>) -> tensor<1x16xf32>
  return %y : tensor<1x16xf32>
}

// -----

func.func @bitmap_matmul_int8_values(%x: tensor<1x8xui8>, %s: tensor<2xi32>, %m: tensor<1x2xi64>, %v: tensor<3xf32>) -> tensor<1x16xi32> {
  // expected-error @+1 {{'kiln.bitmap_matmul' op input must be f32 and values 1-D f32, or input ui8 and values 1-D i8}}
  %y = kiln.bitmap_matmul %x, %s, %m, %v : (tensor<1x8xui8>, tensor<2xi32>, tensor<1x2xi64>, tensor<3xf32>) -> tensor<1x16xi32>
  return %y : tensor<1x16xi32>
}

// -----

func.func @bitmap_matmul_int8_masks(%x: tensor<1x8xui8>, %s: tensor<2xi32>, %m: tensor<1x2xi16>, %v: tensor<3xi8>) -> tensor<1x16xi32> {
  // expected-error @+1 {{'kiln.bitmap_matmul' op masks must be a 2-D i64 tensor}}
  %y = kiln.bitmap_matmul %x, %s, %m, %v : (tensor<1x8xui8>, tensor<2xi32>, tensor<1x2xi16>, tensor<3xi8>) -> tensor<1x16xi32>
  return %y : tensor<1x16xi32>
}

// -----

func.func @bitmap_matmul_int8_k(%x: tensor<1x6xui8>, %s: tensor<2xi32>, %m: tensor<1x2xi64>, %v: tensor<3xi8>) -> tensor<1x16xi32> {
  // expected-error @+1 {{'kiln.bitmap_matmul' op a ui8 input needs a last dimension divisible by 4, got 6}}
  %y = kiln.bitmap_matmul %x, %s, %m, %v : (tensor<1x6xui8>, tensor<2xi32>, tensor<1x2xi64>, tensor<3xi8>) -> tensor<1x16xi32>
  return %y : tensor<1x16xi32>
}

// -----

func.func @bitmap_matmul_int8_groups(%x: tensor<1x8xui8>, %s: tensor<2xi32>, %m: tensor<1x3xi64>, %v: tensor<3xi8>) -> tensor<1x16xi32> {
  // expected-error @+1 {{'kiln.bitmap_matmul' op masks have 3 groups of 4 rows, the input 8 rows}}
  %y = kiln.bitmap_matmul %x, %s, %m, %v : (tensor<1x8xui8>, tensor<2xi32>, tensor<1x3xi64>, tensor<3xi8>) -> tensor<1x16xi32>
  return %y : tensor<1x16xi32>
}

// -----

func.func @bitmap_matmul_int8_result(%x: tensor<1x8xui8>, %s: tensor<2xi32>, %m: tensor<1x2xi64>, %v: tensor<3xi8>) -> tensor<1x16xf32> {
  // expected-error @+1 {{'kiln.bitmap_matmul' op result element type 'f32' does not match operand element type 'i32'}}
  %y = kiln.bitmap_matmul %x, %s, %m, %v : (tensor<1x8xui8>, tensor<2xi32>, tensor<1x2xi64>, tensor<3xi8>) -> tensor<1x16xf32>
  return %y : tensor<1x16xf32>
}

// -----

// All 64 bits of a group's mask count (i64, not i16).
func.func @bitmap_matmul_int8_bits(%x: tensor<1x4xui8>) -> tensor<1x16xi32> {
  %s = kiln.constant dense<[0, 3]> : tensor<2xi32> -> tensor<2xi32>
  %m = kiln.constant dense<[[-1]]> : tensor<1x1xi64> -> tensor<1x1xi64>
  %v = kiln.constant dense<1> : tensor<3xi8> -> tensor<3xi8>
  // expected-error @+1 {{'kiln.bitmap_matmul' op segment 0 of column block 0 has 64 mask bits but 3 values}}
  %y = kiln.bitmap_matmul %x, %s, %m, %v : (tensor<1x4xui8>, tensor<2xi32>, tensor<1x1xi64>, tensor<3xi8>) -> tensor<1x16xi32>
  return %y : tensor<1x16xi32>
}

// -----

func.func @sparse_matmul_int8_block(%x: tensor<1x8xui8>, %o: tensor<2xi32>, %i: tensor<1xi16>, %v: tensor<1x16xi8>) -> tensor<1x16xi32> {
  // expected-error @+1 {{'kiln.sparse_matmul' op int8 entries are 4 rows by 16 outputs (values [entries, 64]) of an input with a last dimension divisible by 4}}
  %y = kiln.sparse_matmul %x, %o, %i, %v : (tensor<1x8xui8>, tensor<2xi32>, tensor<1xi16>, tensor<1x16xi8>) -> tensor<1x16xi32>
  return %y : tensor<1x16xi32>
}

// -----

func.func @sparse_matmul_int8_row(%x: tensor<1x8xui8>, %v: tensor<1x64xi8>) -> tensor<1x16xi32> {
  %o = kiln.constant dense<[0, 1]> : tensor<2xi32> -> tensor<2xi32>
  %i = kiln.constant dense<[2]> : tensor<1xi16> -> tensor<1xi16>
  // expected-error @+1 {{'kiln.sparse_matmul' op int8 row index 2 is not a multiple of 4}}
  %y = kiln.sparse_matmul %x, %o, %i, %v : (tensor<1x8xui8>, tensor<2xi32>, tensor<1xi16>, tensor<1x64xi8>) -> tensor<1x16xi32>
  return %y : tensor<1x16xi32>
}

// -----

func.func @sparse_matmul_int8_input(%x: tensor<1x8xi8>, %o: tensor<2xi32>, %i: tensor<1xi16>, %v: tensor<1x64xi8>) -> tensor<1x16xi32> {
  // expected-error @+1 {{'kiln.sparse_matmul' op input and values must be f32, or input ui8 and values i8}}
  %y = kiln.sparse_matmul %x, %o, %i, %v : (tensor<1x8xi8>, tensor<2xi32>, tensor<1xi16>, tensor<1x64xi8>) -> tensor<1x16xi32>
  return %y : tensor<1x16xi32>
}
