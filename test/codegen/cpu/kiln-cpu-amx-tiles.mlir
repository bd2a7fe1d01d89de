// RUN: kiln-opt %s --kiln-cpu-amx-tiles --canonicalize --split-input-file | FileCheck %s

// u8 rows x i8 weights, a 32 x 32 block (2 x 2 accumulator tiles) and K =
// 128 (two 64-byte tile widths): the accumulators are loaded, carried by the
// K loop and stored back; each step loads two tiles of A and two of B (one
// per panel, at group k / 4) and multiplies every pair (tdpbusd: zext lhs).
// CHECK-LABEL: func.func @int8_block
// CHECK-SAME: (%[[A:.*]]: memref<32x128xi8>, %[[P:.*]]: memref<2x32x64xi8>, %[[C:.*]]: memref<32x32xi32>)
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[C16:.*]] = arith.constant 16 : index
// CHECK-DAG: %[[C64:.*]] = arith.constant 64 : index
// CHECK-DAG: %[[C128:.*]] = arith.constant 128 : index
// CHECK: %[[ACC00:.*]] = amx.tile_load %[[C]][%[[C0]], %[[C0]]] : memref<32x32xi32> into !amx.tile<16x16xi32>
// CHECK: amx.tile_load %[[C]][%[[C0]], %[[C16]]]
// CHECK: amx.tile_load %[[C]][%[[C16]], %[[C0]]]
// CHECK: amx.tile_load %[[C]][%[[C16]], %[[C16]]]
// CHECK: %[[R:.*]]:4 = scf.for %[[K:.*]] = %[[C0]] to %[[C128]] step %[[C64]] iter_args(%[[X:.*]] = %[[ACC00]], %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) -> (!amx.tile<16x16xi32>, !amx.tile<16x16xi32>, !amx.tile<16x16xi32>, !amx.tile<16x16xi32>)
// CHECK:   %[[A0:.*]] = amx.tile_load %[[A]][%{{.*}}, %[[K]]] : memref<32x128xi8> into !amx.tile<16x64xi8>
// CHECK:   %[[A1:.*]] = amx.tile_load %[[A]][%{{.*}}, %[[K]]] : memref<32x128xi8> into !amx.tile<16x64xi8>
// CHECK:   %[[G:.*]] = arith.divui %[[K]], %{{.*}} : index
// CHECK:   %[[B0:.*]] = amx.tile_load %[[P]][%{{.*}}, %[[G]], %{{.*}}] : memref<2x32x64xi8> into !amx.tile<16x64xi8>
// CHECK:   %[[B1:.*]] = amx.tile_load %[[P]][%{{.*}}, %[[G]], %{{.*}}] : memref<2x32x64xi8> into !amx.tile<16x64xi8>
// CHECK:   amx.tile_muli %[[A0]] zext, %[[B0]], %[[X]] : !amx.tile<16x64xi8>, !amx.tile<16x64xi8>, !amx.tile<16x16xi32>
// CHECK:   amx.tile_muli %[[A0]] zext, %[[B1]]
// CHECK:   amx.tile_muli %[[A1]] zext, %[[B0]]
// CHECK:   amx.tile_muli %[[A1]] zext, %[[B1]]
// CHECK:   scf.yield
// CHECK: amx.tile_store %[[C]][%[[C0]], %[[C0]]], %[[R]]#0 : memref<32x32xi32>, !amx.tile<16x16xi32>
// CHECK: amx.tile_store %[[C]][%[[C16]], %[[C16]]], %[[R]]#3
// CHECK-NOT: linalg.generic
func.func @int8_block(%a: memref<32x128xi8>, %p: memref<2x32x64xi8>, %c: memref<32x32xi32>) {
  linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n floordiv 16, k floordiv 4, (n mod 16) * 4 + k mod 4)>, affine_map<(m, n, k) -> (m, n)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a, %p : memref<32x128xi8>, memref<2x32x64xi8>) outs(%c : memref<32x32xi32>) attrs = {kiln.amx_tile} {
  ^bb0(%x: i8, %w: i8, %acc: i32):
    %xe = arith.extui %x : i8 to i32
    %we = arith.extsi %w : i8 to i32
    %m = arith.muli %xe, %we : i32
    %s = arith.addi %acc, %m : i32
    linalg.yield %s : i32
  }
  return
}

// -----

// Signed rows: tdpbssd (no zext); a 16 x 16 block is one accumulator, and
// K = 64 one step (the loop folds away).
// CHECK-LABEL: func.func @signed_rows
// CHECK: amx.tile_muli %{{.*}}, %{{.*}}, %{{.*}} : !amx.tile<16x64xi8>, !amx.tile<16x64xi8>, !amx.tile<16x16xi32>
// CHECK-NOT: amx.tile_muli
// CHECK: amx.tile_store
// CHECK-NOT: amx.tile_store
func.func @signed_rows(%a: memref<16x64xi8, strided<[128, 1], offset: ?>>, %p: memref<1x16x64xi8>, %c: memref<16x16xi32, strided<[48, 1], offset: ?>>) {
  linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n floordiv 16, k floordiv 4, (n mod 16) * 4 + k mod 4)>, affine_map<(m, n, k) -> (m, n)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a, %p : memref<16x64xi8, strided<[128, 1], offset: ?>>, memref<1x16x64xi8>) outs(%c : memref<16x16xi32, strided<[48, 1], offset: ?>>) attrs = {kiln.amx_tile} {
  ^bb0(%x: i8, %w: i8, %acc: i32):
    %xe = arith.extsi %x : i8 to i32
    %we = arith.extsi %w : i8 to i32
    %m = arith.muli %xe, %we : i32
    %s = arith.addi %acc, %m : i32
    linalg.yield %s : i32
  }
  return
}

// -----

// bf16: 32 k per tile row (pairs of bf16), f32 accumulators (tdpbf16ps).
// CHECK-LABEL: func.func @bf16_block
// CHECK-DAG: %[[C32:.*]] = arith.constant 32 : index
// CHECK-DAG: %[[C64:.*]] = arith.constant 64 : index
// CHECK: amx.tile_load %{{.*}} : memref<16x32xf32> into !amx.tile<16x16xf32>
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[C64]] step %[[C32]]
// CHECK:   amx.tile_load %{{.*}} : memref<16x64xbf16> into !amx.tile<16x32xbf16>
// CHECK:   amx.tile_load %{{.*}} : memref<2x32x32xbf16> into !amx.tile<16x32xbf16>
// CHECK:   amx.tile_mulf %{{.*}}, %{{.*}}, %{{.*}} : !amx.tile<16x32xbf16>, !amx.tile<16x32xbf16>, !amx.tile<16x16xf32>
func.func @bf16_block(%a: memref<16x64xbf16>, %p: memref<2x32x32xbf16>, %c: memref<16x32xf32>) {
  linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n floordiv 16, k floordiv 2, (n mod 16) * 2 + k mod 2)>, affine_map<(m, n, k) -> (m, n)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a, %p : memref<16x64xbf16>, memref<2x32x32xbf16>) outs(%c : memref<16x32xf32>) attrs = {kiln.amx_tile} {
  ^bb0(%x: bf16, %w: bf16, %acc: f32):
    %xe = arith.extf %x : bf16 to f32
    %we = arith.extf %w : bf16 to f32
    %m = arith.mulf %xe, %we : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Blocks that are not whole tiles (8 rows here) stay generics: they lower
// to loops, slowly but correctly.
// CHECK-LABEL: func.func @partial_block
// CHECK-NOT: amx.
// CHECK: linalg.generic
func.func @partial_block(%a: memref<8x64xi8>, %p: memref<1x16x64xi8>, %c: memref<8x16xi32>) {
  linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n floordiv 16, k floordiv 4, (n mod 16) * 4 + k mod 4)>, affine_map<(m, n, k) -> (m, n)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a, %p : memref<8x64xi8>, memref<1x16x64xi8>) outs(%c : memref<8x16xi32>) attrs = {kiln.amx_tile} {
  ^bb0(%x: i8, %w: i8, %acc: i32):
    %xe = arith.extui %x : i8 to i32
    %we = arith.extsi %w : i8 to i32
    %m = arith.muli %xe, %we : i32
    %s = arith.addi %acc, %m : i32
    linalg.yield %s : i32
  }
  return
}
