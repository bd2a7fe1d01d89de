// RUN: kiln-opt %s --split-input-file --kiln-gpu-private-accumulators | FileCheck %s

// A thread's 4x4 tile of a matmul: the fill initializes a private 4x4
// accumulator, the matmul (generalized, k outermost) accumulates into it,
// and one copy writes the tile back to global memory.
// CHECK-LABEL: func.func @matmul_tile
// CHECK: gpu.launch
// CHECK:   %[[ACC:.*]] = memref.alloca() : memref<4x4xf32, #gpu.address_space<private>>
// CHECK:   linalg.fill ins(%{{.*}} : f32) outs(%[[ACC]] : memref<4x4xf32, #gpu.address_space<private>>)
// CHECK:   linalg.generic {indexing_maps = [#[[A:.*]], #[[B:.*]], #[[C:.*]]], iterator_types = ["reduction", "parallel", "parallel"]}
// CHECK-SAME: outs(%[[ACC]] : memref<4x4xf32, #gpu.address_space<private>>)
// CHECK:   linalg.copy ins(%[[ACC]] : memref<4x4xf32, #gpu.address_space<private>>) outs(%[[TILE:.*]] : memref<4x4xf32, strided<[64, 1], offset: ?>>)
// CHECK-NOT: linalg.matmul
func.func @matmul_tile(%a: memref<4x32xf32>, %b: memref<32x64xf32>, %c: memref<4x64xf32>) {
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %zero = arith.constant 0.0 : f32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c16, %sy = %c1, %sz = %c1) {
    %col = arith.muli %tx, %c1 : index
    %bt = memref.subview %b[0, %col] [32, 4] [1, 1] : memref<32x64xf32> to memref<32x4xf32, strided<[64, 1], offset: ?>>
    %ct = memref.subview %c[0, %col] [4, 4] [1, 1] : memref<4x64xf32> to memref<4x4xf32, strided<[64, 1], offset: ?>>
    linalg.fill ins(%zero : f32) outs(%ct : memref<4x4xf32, strided<[64, 1], offset: ?>>)
    linalg.matmul ins(%a, %bt : memref<4x32xf32>, memref<32x4xf32, strided<[64, 1], offset: ?>>) outs(%ct : memref<4x4xf32, strided<[64, 1], offset: ?>>)
    gpu.terminator
  }
  return
}

// -----

// An epilogue that updates the tile in place after the matmul (a bias and
// ReLU that kiln-gpu-distribute gave the matmul's threads) reads the
// accumulator instead: no copy, the results are written once.
// CHECK-LABEL: func.func @matmul_epilogue
// CHECK:   %[[ACC:.*]] = memref.alloca() : memref<4x4xf32, #gpu.address_space<private>>
// CHECK:   linalg.generic {{.*}} iterator_types = ["reduction", "parallel", "parallel"]
// CHECK-NOT: linalg.copy
// CHECK:   %[[BIAS:.*]] = memref.subview %{{.*}}[%{{.*}}] [4] [1]
// CHECK:   linalg.generic {indexing_maps = [#{{.*}}, #[[ID:.*]], #[[ID]]], iterator_types = ["parallel", "parallel"]} ins(%[[BIAS]], %[[ACC]] : memref<4xf32, strided<[1], offset: ?>>, memref<4x4xf32, #gpu.address_space<private>>) outs(%[[TILE:.*]] : memref<4x4xf32, strided<[64, 1], offset: ?>>)
// CHECK:   ^bb0(%[[B:.*]]: f32, %[[SUM:.*]]: f32, %{{.*}}: f32):
// CHECK:     arith.addf %[[SUM]], %[[B]]
// CHECK-NOT: linalg.copy
func.func @matmul_epilogue(%a: memref<4x32xf32>, %b: memref<32x64xf32>, %bias: memref<64xf32>, %c: memref<4x64xf32>) {
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %zero = arith.constant 0.0 : f32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c16, %sy = %c1, %sz = %c1) {
    %col = arith.muli %tx, %c4 : index
    %bt = memref.subview %b[0, %col] [32, 4] [1, 1] : memref<32x64xf32> to memref<32x4xf32, strided<[64, 1], offset: ?>>
    %ct = memref.subview %c[0, %col] [4, 4] [1, 1] : memref<4x64xf32> to memref<4x4xf32, strided<[64, 1], offset: ?>>
    linalg.fill ins(%zero : f32) outs(%ct : memref<4x4xf32, strided<[64, 1], offset: ?>>)
    linalg.matmul ins(%a, %bt : memref<4x32xf32>, memref<32x4xf32, strided<[64, 1], offset: ?>>) outs(%ct : memref<4x4xf32, strided<[64, 1], offset: ?>>)
    %biast = memref.subview %bias[%col] [4] [1] : memref<64xf32> to memref<4xf32, strided<[1], offset: ?>>
    linalg.generic {indexing_maps = [affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%biast : memref<4xf32, strided<[1], offset: ?>>) outs(%ct : memref<4x4xf32, strided<[64, 1], offset: ?>>) {
    ^bb0(%x: f32, %acc: f32):
      %s = arith.addf %acc, %x : f32
      %r = arith.maximumf %s, %zero : f32
      linalg.yield %r : f32
    }
    gpu.terminator
  }
  return
}

// -----

// A matmul that already sums into private memory (the tile of a rounding
// epilogue that kiln-gpu-distribute made the root): only its reduced loops
// move outermost; no second accumulator, no copy.
// CHECK-LABEL: func.func @private_sums
// CHECK:   %[[SUMS:.*]] = memref.alloca() : memref<4x4xf32, #gpu.address_space<private>>
// CHECK-NOT: memref.alloca
// CHECK:   linalg.generic {{.*}} iterator_types = ["reduction", "parallel", "parallel"]{{.*}} outs(%[[SUMS]]
// CHECK-NOT: linalg.copy
func.func @private_sums(%a: memref<4x32xf32>, %b: memref<32x4xf32>, %c: memref<4x4xf16>) {
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    %sums = memref.alloca() : memref<4x4xf32, #gpu.address_space<private>>
    linalg.fill ins(%zero : f32) outs(%sums : memref<4x4xf32, #gpu.address_space<private>>)
    linalg.matmul ins(%a, %b : memref<4x32xf32>, memref<32x4xf32>) outs(%sums : memref<4x4xf32, #gpu.address_space<private>>)
    linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%sums : memref<4x4xf32, #gpu.address_space<private>>) outs(%c : memref<4x4xf16>) {
    ^bb0(%x: f32, %o: f16):
      %t = arith.truncf %x : f32 to f16
      linalg.yield %t : f16
    }
    gpu.terminator
  }
  return
}

// -----

// An edge tile of dynamic size (at most 4x4): the accumulator is a view of
// a 4x4 private buffer; without a fill just before, the tile is copied in.
// CHECK-LABEL: func.func @edge_tile
// CHECK:   %[[BUF:.*]] = memref.alloca() : memref<4x4xf32, #gpu.address_space<private>>
// CHECK:   %[[ACC:.*]] = memref.subview %[[BUF]][0, 0] [%{{.*}}, 4] [1, 1]
// CHECK:   linalg.copy ins(%[[TILE:.*]] : memref<?x4xf32, {{.*}}>) outs(%[[ACC]]
// CHECK:   linalg.generic {{.*}} iterator_types = ["reduction", "parallel", "parallel"]
// CHECK:   linalg.copy ins(%[[ACC]] : {{.*}}) outs(%[[TILE]]
#rows = affine_map<()[s0] -> (4, 10 - s0 * 4)>
func.func @edge_tile(%a: memref<10x32xf32>, %b: memref<32x4xf32>, %c: memref<10x4xf32>) {
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c3, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    %n = affine.min #rows()[%bx]
    %row = arith.muli %bx, %c3 : index
    %at = memref.subview %a[%row, 0] [%n, 32] [1, 1] : memref<10x32xf32> to memref<?x32xf32, strided<[32, 1], offset: ?>>
    %ct = memref.subview %c[%row, 0] [%n, 4] [1, 1] : memref<10x4xf32> to memref<?x4xf32, strided<[4, 1], offset: ?>>
    linalg.matmul ins(%at, %b : memref<?x32xf32, strided<[32, 1], offset: ?>>, memref<32x4xf32>) outs(%ct : memref<?x4xf32, strided<[4, 1], offset: ?>>)
    gpu.terminator
  }
  return
}

// -----

// Left alone: a tile of more than 64 results, a reduction outside kernels,
// and one whose input is its own result.
// CHECK-LABEL: func.func @left_alone
// CHECK-NOT: memref.alloca
// CHECK: linalg.matmul
// CHECK: linalg.matmul
// CHECK: linalg.generic
func.func @left_alone(%a: memref<16x32xf32>, %b: memref<32x16xf32>, %c: memref<16x16xf32>, %row: memref<16xf32>, %m: memref<16x16xf32>) {
  %c1 = arith.constant 1 : index
  linalg.matmul ins(%a, %b : memref<16x32xf32>, memref<32x16xf32>) outs(%c : memref<16x16xf32>)
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    linalg.matmul ins(%a, %b : memref<16x32xf32>, memref<32x16xf32>) outs(%c : memref<16x16xf32>)
    linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>, affine_map<(i, j) -> (i)>], iterator_types = ["parallel", "reduction"]} ins(%m, %row : memref<16x16xf32>, memref<16xf32>) outs(%row : memref<16xf32>) {
    ^bb0(%x: f32, %y: f32, %acc: f32):
      %s = arith.addf %x, %acc : f32
      linalg.yield %s : f32
    }
    gpu.terminator
  }
  return
}
