// RUN: kiln-opt %s --kiln-profile-flops | FileCheck %s

// Per node: a 4x8x16 matmul is 2*4*8*16 = 1024; a generic over 4x8 with
// an add, a max and a compare is 3 per element = 96 (selects are not
// counted); a loop of 3 x 2 vector<16> FMAs is 3*2*2*16 = 192, with the
// index arithmetic left out; a dynamic op leaves its node out; an op
// without a node counts for none.
// CHECK: module attributes {kiln.node_flops = {conv = 192 : i64, fc = 1024 : i64, relu = 96 : i64}}

#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @main(%a: tensor<4x16xf32>, %b: tensor<16x8xf32>, %d: tensor<?xf32>,
                %v: vector<16xf32>, %out: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<?xf32>, vector<16xf32>) {
  %zero = arith.constant 0.0 : f32
  %mm = linalg.matmul ins(%a, %b : tensor<4x16xf32>, tensor<16x8xf32>) outs(%out : tensor<4x8xf32>) -> tensor<4x8xf32> loc("fc"("Gemm"))
  %relu = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%mm : tensor<4x8xf32>) outs(%out : tensor<4x8xf32>) {
  ^bb0(%x: f32, %y: f32):
    %s = arith.addf %x, %zero : f32
    %m = arith.maximumf %s, %zero : f32
    %c = arith.cmpf ogt, %m, %zero : f32
    %r = arith.select %c, %m, %zero : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32> loc("relu"("Relu"))
  %dyn = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      outs(%d : tensor<?xf32>) {
  ^bb0(%y: f32):
    %n = arith.negf %y : f32
    linalg.yield %n : f32
  } -> tensor<?xf32> loc("neg"("Neg"))
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %acc = scf.for %i = %c0 to %c3 step %c1 iter_args(%x = %v) -> vector<16xf32> {
    %j = arith.addi %i, %c1 : index
    %f1 = vector.fma %x, %x, %x : vector<16xf32> loc("conv"("Conv"))
    %f2 = vector.fma %f1, %f1, %f1 : vector<16xf32> loc("conv"("Conv"))
    scf.yield %f2 : vector<16xf32>
  }
  %w = arith.addf %acc, %acc : vector<16xf32>
  return %relu, %dyn, %w : tensor<4x8xf32>, tensor<?xf32>, vector<16xf32>
}
