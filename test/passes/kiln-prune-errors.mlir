// RUN: kiln-opt %s --split-input-file --verify-diagnostics --kiln-prune="prune-first-last=true report=true"

// Calibration statistics that do not fit the layer are an error.
func.func @norms(%x: tensor<3x4xf32>) -> tensor<3x2xf32> {
  %w = kiln.constant dense<1.0> : tensor<4x2xf32> -> tensor<4x2xf32>
  // expected-error @+1 {{kiln-prune: kiln.input_norms has 3 norms for 4 input channels}}
  %y = kiln.matmul %x, %w {kiln.input_norms = array<f32: 1.0, 1.0, 1.0>} : (tensor<3x4xf32>, tensor<4x2xf32>) -> tensor<3x2xf32>
  return %y : tensor<3x2xf32>
}

// -----

func.func @gram_shape(%x: tensor<3x4xf32>) -> tensor<3x2xf32> {
  %w = kiln.constant dense<1.0> : tensor<4x2xf32> -> tensor<4x2xf32>
  // expected-error @+1 {{kiln-prune: kiln.input_gram has 4 elements, not 4x4}}
  %y = kiln.matmul %x, %w {kiln.input_gram = dense<1.0> : tensor<2x2xf32>} : (tensor<3x4xf32>, tensor<4x2xf32>) -> tensor<3x2xf32>
  return %y : tensor<3x2xf32>
}

// -----

func.func @gram_type(%x: tensor<3x4xf32>) -> tensor<3x2xf32> {
  %w = kiln.constant dense<1.0> : tensor<4x2xf32> -> tensor<4x2xf32>
  // expected-error @+1 {{kiln-prune: kiln.input_gram is not f32 elements}}
  %y = kiln.matmul %x, %w {kiln.input_gram = dense<1> : tensor<4x4xi32>} : (tensor<3x4xf32>, tensor<4x2xf32>) -> tensor<3x2xf32>
  return %y : tensor<3x2xf32>
}

// -----

// A Gram matrix that is not positive definite (a negative diagonal) makes
// SparseGPT give way to Wanda, which needs only the norms.
func.func @not_positive(%x: tensor<3x2xf32>) -> tensor<3x2xf32> {
  %w = kiln.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32> -> tensor<2x2xf32>
  // expected-remark @+1 {{sparsity: pruned to 50.0% zeros (unstructured, magnitude: the Gram matrix of its calibration inputs is not positive definite)}}
  %y = kiln.matmul %x, %w {kiln.input_gram = dense<[[1.0, 0.0], [0.0, -5.0]]> : tensor<2x2xf32>} : (tensor<3x2xf32>, tensor<2x2xf32>) -> tensor<3x2xf32>
  return %y : tensor<3x2xf32>
}

