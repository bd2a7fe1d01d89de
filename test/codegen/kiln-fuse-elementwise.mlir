// RUN: kiln-opt %s --kiln-fuse-elementwise | FileCheck %s
// RUN: kiln-opt %s --kiln-fuse-elementwise=report=true -o /dev/null 2>&1 | FileCheck %s --check-prefix=REPORT
// RUN: kiln-opt %s --kiln-fuse-elementwise=keep-contractions=true | FileCheck %s --check-prefix=KEEP
// RUN: kiln-opt %s "--kiln-fuse-elementwise=keep-contractions=true report=true" -o /dev/null 2>&1 | FileCheck %s --check-prefix=KEEP-REPORT

// Two elementwise ops fuse into one generic; the reshape feeding the matmul
// is not folded into it, so the matmul stays a named op for the CPU schedule.
#id = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @matmul_then_chain
// CHECK: tensor.collapse_shape
// CHECK: %[[MM:.*]] = linalg.matmul
// CHECK: linalg.generic
// CHECK: arith.addf
// CHECK: arith.maximumf
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @matmul_then_chain(%a: tensor<2x4x8xf32>, %b: tensor<8x16xf32>, %bias: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %a2 = tensor.collapse_shape %a [[0, 1], [2]] : tensor<2x4x8xf32> into tensor<8x8xf32>
  %e = tensor.empty() : tensor<8x16xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<8x16xf32>) -> tensor<8x16xf32>
  %mm = linalg.matmul ins(%a2, %b : tensor<8x8xf32>, tensor<8x16xf32>) outs(%init : tensor<8x16xf32>) -> tensor<8x16xf32>
  %add = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%mm, %bias : tensor<8x16xf32>, tensor<8x16xf32>) outs(%e : tensor<8x16xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<8x16xf32>
  %relu = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%add : tensor<8x16xf32>) outs(%e : tensor<8x16xf32>) {
  ^bb0(%x: f32, %o: f32):
    %m = arith.maximumf %x, %zero : f32
    linalg.yield %m : f32
  } -> tensor<8x16xf32>
  return %relu : tensor<8x16xf32>
}

// A producer with other users: a one-op scale is recomputed in each consumer
// (cheaper than a pass over memory), but a normalization (several ops) stays
// one generic whose result both consumers read, instead of being recomputed
// in each (a LayerNormalization chain recomputed every earlier one).

#rowr = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func.func @shared_producers
// CHECK: %[[NORM:.*]] = linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "parallel"]
// CHECK: arith.mulf
// CHECK: arith.subf
// CHECK: arith.mulf
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "reduction"]
// CHECK-SAME: ins(%[[NORM]] : tensor<4x8xf32>)
// CHECK: linalg.generic
// CHECK-SAME: ins(%[[NORM]], %arg2, %arg0 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>)
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK: arith.addf
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @shared_producers(%x: tensor<4x8xf32>, %m: tensor<4xf32>, %r: tensor<4x8xf32>) -> (tensor<4xf32>, tensor<4x8xf32>) {
  %half = arith.constant 0.5 : f32
  %two = arith.constant 2.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %scaled = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.mulf %a, %half : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  %norm = linalg.generic {indexing_maps = [#id, #rowr, #id], iterator_types = ["parallel", "parallel"]}
      ins(%scaled, %m : tensor<4x8xf32>, tensor<4xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %mean: f32, %o: f32):
    %d = arith.subf %a, %mean : f32
    %s = arith.mulf %d, %two : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  %z = arith.constant dense<0.0> : tensor<4xf32>
  %sum = linalg.generic {indexing_maps = [#id, #rowr], iterator_types = ["parallel", "reduction"]}
      ins(%norm : tensor<4x8xf32>) outs(%z : tensor<4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %a, %acc : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %res = linalg.generic {indexing_maps = [#id, #id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%norm, %r, %scaled : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    %t = arith.addf %s, %c : f32
    linalg.yield %t : f32
  } -> tensor<4x8xf32>
  return %sum, %res : tensor<4xf32>, tensor<4x8xf32>
}

// The report names the ONNX nodes: a producer that stays for another matmul
// is not fused; a single-use one is. Nothing is said about the matmuls
// (kiln-cpu-fuse-epilogues reports on their consumers).
// REPORT-NOT: "MatMul"
// REPORT-DAG: remark: loc("act"("Relu")): fusion: not fused into flip (Neg): it has other users, and recomputing it would not save its pass
// REPORT-DAG: remark: loc("scale"("Mul")): fusion: fused into shift (Add)
// REPORT-NOT: "MatMul"
// CHECK-LABEL: func.func @report
func.func @report(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %two = arith.constant 2.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %mm = linalg.matmul ins(%x, %w : tensor<4x8xf32>, tensor<8x8xf32>) outs(%init : tensor<4x8xf32>) -> tensor<4x8xf32> loc("fc"("MatMul"))
  %relu = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%mm : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.maximumf %a, %zero : f32
    linalg.yield %m : f32
  } -> tensor<4x8xf32> loc("act"("Relu"))
  %neg = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%relu : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %n = arith.negf %a : f32
    linalg.yield %n : f32
  } -> tensor<4x8xf32> loc("flip"("Neg"))
  %mm2 = linalg.matmul ins(%relu, %w : tensor<4x8xf32>, tensor<8x8xf32>) outs(%init : tensor<4x8xf32>) -> tensor<4x8xf32> loc("fc2"("MatMul"))
  %mm3 = linalg.matmul ins(%x, %w : tensor<4x8xf32>, tensor<8x8xf32>) outs(%init : tensor<4x8xf32>) -> tensor<4x8xf32> loc("fc3"("MatMul"))
  %scale = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%mm3 : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.mulf %a, %two : f32
    linalg.yield %m : f32
  } -> tensor<4x8xf32> loc("scale"("Mul"))
  %shift = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%scale : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.addf %a, %two : f32
    linalg.yield %m : f32
  } -> tensor<4x8xf32> loc("shift"("Add"))
  return %neg, %mm2, %shift : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// A tree of single-use elementwise producers becomes one generic in one
// step: the broadcast leaf keeps its map composed into the root's space, the
// splat constants become scalars in the body, and a leaf read twice (%x) is
// one operand.
#row = affine_map<(d0, d1) -> (d1)>
#one = affine_map<(d0, d1) -> (0)>
// CHECK-LABEL: func.func @tree
// CHECK: %[[HALF:.*]] = arith.constant 5.000000e-01 : f32
// CHECK: linalg.generic {indexing_maps = [#[[ID:.*]], #[[ROW:.*]], #[[ID]]], iterator_types = ["parallel", "parallel"]} ins(%arg0, %arg1 : tensor<4x8xf32>, tensor<8xf32>)
// CHECK-NEXT: ^bb0(%[[X:.*]]: f32, %[[B:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: %[[S:.*]] = arith.mulf %[[X]], %[[HALF]]
// CHECK-NEXT: %[[A:.*]] = arith.addf %[[X]], %[[B]]
// CHECK-NEXT: %[[D:.*]] = arith.subf %[[S]], %[[A]]
// CHECK-NEXT: arith.maximumf %[[D]], %[[HALF]]
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @tree(%x: tensor<4x8xf32>, %bias: tensor<8xf32>) -> tensor<4x8xf32> {
  %half = arith.constant dense<0.5> : tensor<1xf32>
  %e = tensor.empty() : tensor<4x8xf32>
  %scaled = linalg.generic {indexing_maps = [#id, #one, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %half : tensor<4x8xf32>, tensor<1xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %h: f32, %o: f32):
    %s = arith.mulf %a, %h : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  %biased = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %bias : tensor<4x8xf32>, tensor<8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  %diff = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%scaled, %biased : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.subf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  %relu = linalg.generic {indexing_maps = [#id, #one, #id], iterator_types = ["parallel", "parallel"]}
      ins(%diff, %half : tensor<4x8xf32>, tensor<1xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %h: f32, %o: f32):
    %s = arith.maximumf %a, %h : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  return %relu : tensor<4x8xf32>
}

// A convolution's requantization: its i32 sums dequantized (per-channel
// scales [C, 1, 1]) and through a ReLU, then quantized for the next layer
// with a constant scale. The quantization reads its input once, so the
// dequantization is fused into it: one op from i32 to u8, which the GPU
// applies in the convolution's tiles (kiln-gpu-distribute).
// CHECK-LABEL: func.func @requantize
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<1x8x4x4xi32>, tensor<8x1x1xf32>) outs(%{{.*}} : tensor<1x8x4x4xi8>)
// CHECK:   arith.sitofp
// CHECK:   arith.maximumf
// CHECK:   arith.fptoui
// CHECK-NOT: linalg.generic
// KEEP-LABEL: func.func @requantize
// KEEP: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<1x8x4x4xi32>, tensor<8x1x1xf32>) outs(%{{.*}} : tensor<1x8x4x4xi8>)
// KEEP-NOT: linalg.generic
func.func @requantize(%sums: tensor<1x8x4x4xi32>, %scales: tensor<8x1x1xf32>) -> tensor<1x8x4x4xi8> {
  %zero = arith.constant 0.0 : f32
  %scale = arith.constant 0.25 : f32
  %high = arith.constant 255.0 : f32
  %ef = tensor.empty() : tensor<1x8x4x4xf32>
  %deq = linalg.generic {indexing_maps = [affine_map<(n, c, y, x) -> (n, c, y, x)>, affine_map<(n, c, y, x) -> (c, 0, 0)>, affine_map<(n, c, y, x) -> (n, c, y, x)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%sums, %scales : tensor<1x8x4x4xi32>, tensor<8x1x1xf32>) outs(%ef : tensor<1x8x4x4xf32>) {
  ^bb0(%v: i32, %s: f32, %o: f32):
    %f = arith.sitofp %v : i32 to f32
    %d = arith.mulf %f, %s : f32
    %r = arith.maximumf %d, %zero : f32
    linalg.yield %r : f32
  } -> tensor<1x8x4x4xf32>
  %eq = tensor.empty() : tensor<1x8x4x4xi8>
  %q = linalg.generic {indexing_maps = [affine_map<(n, c, y, x) -> (n, c, y, x)>, affine_map<(n, c, y, x) -> (n, c, y, x)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%deq : tensor<1x8x4x4xf32>) outs(%eq : tensor<1x8x4x4xi8>) {
  ^bb0(%a: f32, %o: i8):
    %s = arith.divf %a, %scale : f32
    %r = math.roundeven %s : f32
    %hi = arith.minimumf %r, %high : f32
    %u = arith.fptoui %hi : f32 to i8
    linalg.yield %u : i8
  } -> tensor<1x8x4x4xi8>
  return %q : tensor<1x8x4x4xi8>
}

// A quantized matmul (u8 x s8 summed in i32) whose activations are the
// requantization of f32 values (scale, round, clamp, to u8). By default the
// requantization is fused into the matmul's body, as the CPU wants it;
// with keep-contractions (the GPU pipeline) it stays an op of its own, the
// matmul a contraction the GPU tiles as one, and the requantization
// computed once per value.
// CHECK-LABEL: func.func @requantized_matmul
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]
// CHECK:   arith.fptoui
// CHECK:   arith.muli
// KEEP-LABEL: func.func @requantized_matmul
// KEEP: %[[Q:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]
// KEEP:   arith.fptoui
// KEEP: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]{{.*}} ins(%[[Q]], %{{.*}} : tensor<4x16xi8>, tensor<16x8xi8>)
// KEEP-NOT: arith.fptoui
// KEEP:   arith.extui
// KEEP:   arith.extsi
// KEEP:   arith.muli
// KEEP:   arith.addi
// KEEP-REPORT: remark: loc("requantize"("QuantizeLinear")): fusion: not fused into matmul (MatMulInteger): the GPU tiles the consumer as a matmul, which would compute the producer again for every output
func.func @requantized_matmul(%x: tensor<4x16xf32>, %w: tensor<16x8xi8>) -> tensor<4x8xi32> {
  %scale = arith.constant 0.5 : f32
  %low = arith.constant 0.0 : f32
  %high = arith.constant 255.0 : f32
  %zero = arith.constant 0 : i32
  %eq = tensor.empty() : tensor<4x16xi8>
  %q = linalg.generic {indexing_maps = [affine_map<(i, k) -> (i, k)>, affine_map<(i, k) -> (i, k)>], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x16xf32>) outs(%eq : tensor<4x16xi8>) {
  ^bb0(%a: f32, %o: i8):
    %s = arith.divf %a, %scale : f32
    %r = math.roundeven %s : f32
    %lo = arith.maximumf %r, %low : f32
    %hi = arith.minimumf %lo, %high : f32
    %u = arith.fptoui %hi : f32 to i8
    linalg.yield %u : i8
  } -> tensor<4x16xi8> loc(#requantize)
  %e = tensor.empty() : tensor<4x8xi32>
  %init = linalg.fill ins(%zero : i32) outs(%e : tensor<4x8xi32>) -> tensor<4x8xi32>
  %y = linalg.generic {indexing_maps = [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (k, j)>, affine_map<(i, j, k) -> (i, j)>], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%q, %w : tensor<4x16xi8>, tensor<16x8xi8>) outs(%init : tensor<4x8xi32>) {
  ^bb0(%a: i8, %b: i8, %acc: i32):
    %au = arith.extui %a : i8 to i32
    %bs = arith.extsi %b : i8 to i32
    %p = arith.muli %au, %bs : i32
    %t = arith.addi %acc, %p : i32
    linalg.yield %t : i32
  } -> tensor<4x8xi32> loc(#matmul)
  return %y : tensor<4x8xi32>
}
#requantize = loc("requantize"("QuantizeLinear"))
#matmul = loc("matmul"("MatMulInteger"))
