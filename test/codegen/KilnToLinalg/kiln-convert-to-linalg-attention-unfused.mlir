// RUN: kiln-opt %s --split-input-file --kiln-convert-to-linalg=attention-key-block=0 | FileCheck %s
// RUN: kiln-opt %s --split-input-file "--kiln-convert-to-linalg=attention-key-block=0 attention-half-matmuls=true" | FileCheck %s --check-prefix=HALF

// attention-key-block=0 (GPU targets): no blocks, no loops; the whole
// score matrix of each of the 2 heads: a batch matmul, scale and mask
// (broadcast over heads and query rows), the row maximum, exp, the row sum,
// a batch matmul with the values, the division by the sums.
// CHECK-DAG: #[[S:.*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG: #[[MASK:.*]] = affine_map<(d0, d1, d2) -> (0, 0, d2)>
// CHECK-DAG: #[[ROW:.*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-LABEL: func.func @attention
// CHECK-NOT: scf.
// CHECK: %[[S0:.*]] = linalg.batch_matmul ins(%{{.*}}, %{{.*}} : tensor<2x64x16xf32>, tensor<2x16x512xf32>) outs(%{{.*}} : tensor<2x64x512xf32>)
// CHECK: %[[S1:.*]] = linalg.generic {indexing_maps = [#[[MASK]], #[[S]]], iterator_types = ["parallel", "parallel", "parallel"]} ins(%{{.*}} : tensor<1x1x512xf32>) outs(%[[S0]] : tensor<2x64x512xf32>)
// CHECK:   arith.mulf
// CHECK:   arith.addf
// CHECK: %[[MAX:.*]] = linalg.generic {indexing_maps = [#[[S]], #[[ROW]]], iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[S1]] : tensor<2x64x512xf32>) outs(%{{.*}} : tensor<2x64xf32>)
// CHECK:   arith.maximumf
// CHECK: %[[P:.*]] = linalg.generic {indexing_maps = [#[[ROW]], #[[S]]], iterator_types = ["parallel", "parallel", "parallel"]} ins(%[[MAX]] : tensor<2x64xf32>) outs(%[[S1]] : tensor<2x64x512xf32>)
// CHECK:   math.exp
// CHECK: %[[SUM:.*]] = linalg.generic {indexing_maps = [#[[S]], #[[ROW]]], iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[P]] : tensor<2x64x512xf32>) outs(%{{.*}} : tensor<2x64xf32>)
// CHECK:   arith.addf
// CHECK: %[[O:.*]] = linalg.batch_matmul ins(%[[P]], %{{.*}} : tensor<2x64x512xf32>, tensor<2x512x8xf32>) outs(%{{.*}} : tensor<2x64x8xf32>)
// CHECK: linalg.generic {indexing_maps = [#[[ROW]], #[[S]]], iterator_types = ["parallel", "parallel", "parallel"]} ins(%[[SUM]] : tensor<2x64xf32>) outs(%[[O]] : tensor<2x64x8xf32>)
// CHECK:   arith.divf
// CHECK-NOT: scf.
func.func @attention(%q: tensor<1x2x64x16xf32>, %kt: tensor<1x2x16x512xf32>, %v: tensor<1x2x512x8xf32>, %mask: tensor<1x1x1x512xf32>) -> tensor<1x2x64x8xf32> {
  %0 = kiln.attention %q, %kt, %v, %mask {scale = 0.25 : f32} : (tensor<1x2x64x16xf32>, tensor<1x2x16x512xf32>, tensor<1x2x512x8xf32>, tensor<1x1x1x512xf32>) -> tensor<1x2x64x8xf32>
  return %0 : tensor<1x2x64x8xf32>
}

// -----

// A half model's (Q, K^T and V widened from f16): with
// attention-half-matmuls (targets whose tensor cores take 16-bit matmuls),
// the matmuls multiply the f16 values, P rounded to f16, f32 sums; the
// softmax stays f32. Without it, f32 as above.
// HALF-LABEL: func.func @half
// HALF-SAME: (%[[Q:[a-z0-9]*]]: tensor<2x64x16xf16>, %[[KT:[a-z0-9]*]]: tensor<2x16x128xf16>, %[[V:[a-z0-9]*]]: tensor<2x128x8xf16>)
// HALF: linalg.batch_matmul ins(%[[Q]], %[[KT]] : tensor<2x64x16xf16>, tensor<2x16x128xf16>) outs(%{{.*}} : tensor<2x64x128xf32>)
// HALF: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction"]
// HALF: %[[P:.*]] = linalg.generic
// HALF-NEXT: ^bb0
// HALF: math.exp
// HALF: %[[P16:.*]] = linalg.generic {{.*}} ins(%[[P]] : tensor<2x64x128xf32>) outs(%{{.*}} : tensor<2x64x128xf16>)
// HALF:   arith.truncf
// HALF: linalg.batch_matmul ins(%[[P16]], %[[V]] : tensor<2x64x128xf16>, tensor<2x128x8xf16>) outs(%{{.*}} : tensor<2x64x8xf32>)
// CHECK-LABEL: func.func @half
// CHECK: linalg.batch_matmul ins(%{{.*}}, %{{.*}} : tensor<2x64x16xf32>, tensor<2x16x128xf32>)
func.func @half(%q: tensor<2x64x16xf16>, %kt: tensor<2x16x128xf16>, %v: tensor<2x128x8xf16>) -> tensor<2x64x8xf32> {
  %q32 = kiln.cast %q : tensor<2x64x16xf16> -> tensor<2x64x16xf32>
  %kt32 = kiln.cast %kt : tensor<2x16x128xf16> -> tensor<2x16x128xf32>
  %v32 = kiln.cast %v : tensor<2x128x8xf16> -> tensor<2x128x8xf32>
  %0 = kiln.attention %q32, %kt32, %v32 {scale = 1.0 : f32} : (tensor<2x64x16xf32>, tensor<2x16x128xf32>, tensor<2x128x8xf32>) -> tensor<2x64x8xf32>
  return %0 : tensor<2x64x8xf32>
}
