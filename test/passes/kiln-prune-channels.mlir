// RUN: kiln-opt %s --split-input-file --kiln-prune-channels="fraction=0.5 prune-first-last=true" | FileCheck %s
// RUN: kiln-opt %s --split-input-file --kiln-prune-channels="fraction=0.5 prune-first-last=true report=true" 2>&1 >/dev/null | FileCheck %s --check-prefix=REPORT
// RUN: kiln-opt %s --split-input-file --kiln-prune-channels="fraction=0.5 report=true" 2>&1 >/dev/null | FileCheck %s --check-prefix=FIRST-LAST
// RUN: not kiln-opt %s --kiln-prune-channels="fraction=1.0" 2>&1 | FileCheck %s --check-prefix=FRACTION

// Two 1x1 convs whose output channels have filter norms (1, 4, 2, 3) and
// (0.5, 4, 3, 1); a residual add unites them: the united channels' norms
// are 1.5, 8, 5, 4, so channels 0 and 3 go from both, and from the third
// conv's inputs.
// CHECK-LABEL: func.func @residual
// CHECK: kiln.conv {{.*}} : (tensor<1x4x2x2xf32>, tensor<2x4x1x1xf32>) -> tensor<1x2x2x2xf32>
// CHECK: kiln.conv {{.*}} : (tensor<1x4x2x2xf32>, tensor<2x4x1x1xf32>) -> tensor<1x2x2x2xf32>
// CHECK: kiln.add {{.*}} -> tensor<1x2x2x2xf32>
// CHECK: kiln.conv {{.*}} : (tensor<1x2x2x2xf32>, tensor<4x2x1x1xf32>) -> tensor<1x4x2x2xf32>
// REPORT: remark: {{.*}}sparsity: 4 -> 2 output channels (channel pruning)
// REPORT: remark: {{.*}}sparsity: 4 -> 2 output channels (channel pruning)
// REPORT: remark: {{.*}}sparsity: all 4 output channels kept: they reach a model output
// FIRST-LAST: remark: {{.*}}sparsity: all 4 output channels kept: they come from the first layer (--prune-first-last prunes it too)
// FIRST-LAST: remark: {{.*}}sparsity: all 4 output channels kept: they come from the first layer (--prune-first-last prunes it too)
// FRACTION: error: kiln-prune-channels: fraction 1.000000e+00 is not in [0, 1)
func.func @residual(%x: tensor<1x4x2x2xf32>) -> tensor<1x4x2x2xf32> {
  %w1 = kiln.constant dense<[[[[1.0]], [[0.0]], [[0.0]], [[0.0]]], [[[4.0]], [[0.0]], [[0.0]], [[0.0]]], [[[0.0]], [[2.0]], [[0.0]], [[0.0]]], [[[0.0]], [[0.0]], [[3.0]], [[0.0]]]]> : tensor<4x4x1x1xf32> -> tensor<4x4x1x1xf32>
  %w2 = kiln.constant dense<[[[[0.5]], [[0.0]], [[0.0]], [[0.0]]], [[[0.0]], [[4.0]], [[0.0]], [[0.0]]], [[[0.0]], [[0.0]], [[3.0]], [[0.0]]], [[[0.0]], [[0.0]], [[0.0]], [[1.0]]]]> : tensor<4x4x1x1xf32> -> tensor<4x4x1x1xf32>
  %a = kiln.conv %x, %w1 {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, group = 1 : i64} : (tensor<1x4x2x2xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x2x2xf32>
  %b = kiln.conv %x, %w2 {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, group = 1 : i64} : (tensor<1x4x2x2xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x2x2xf32>
  %s = kiln.add %a, %b : (tensor<1x4x2x2xf32>, tensor<1x4x2x2xf32>) -> tensor<1x4x2x2xf32>
  %y = kiln.conv %s, %w1 {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, group = 1 : i64} : (tensor<1x4x2x2xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x2x2xf32>
  return %y : tensor<1x4x2x2xf32>
}

// -----

// Channels that meet an op that may mix them (a softmax over them) stay.
// REPORT: remark: {{.*}}sparsity: all 4 output channels kept: they reach kiln.softmax, which may mix them
// CHECK-LABEL: func.func @mixed
// CHECK: kiln.conv {{.*}} -> tensor<1x4x2x2xf32>
func.func @mixed(%x: tensor<1x4x2x2xf32>) -> (tensor<1x4x2x2xf32>, tensor<1x4x2x2xf32>) {
  %w = kiln.constant dense<1.0> : tensor<4x4x1x1xf32> -> tensor<4x4x1x1xf32>
  %a = kiln.conv %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, group = 1 : i64} : (tensor<1x4x2x2xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x2x2xf32>
  %s = kiln.softmax %a {axis = 1 : i64} : tensor<1x4x2x2xf32>
  %y = kiln.conv %s, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, group = 1 : i64} : (tensor<1x4x2x2xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x2x2xf32>
  return %y, %a : tensor<1x4x2x2xf32>, tensor<1x4x2x2xf32>
}
