// RUN: kiln-opt %s --kiln-vnni-matmul --split-input-file | FileCheck %s

// Signed rows (i8 x i8): K = 5 is one whole group of four and a partial one;
// N = 20 pads to 32 columns, two blocks of 16 (one register each, both in one
// tile); M = 6 gives one tile of 6 rows. B packs into [2 blocks][2 groups][64].
// CHECK-LABEL: func.func @signed_rows
// CHECK-DAG: %[[PANELS:.*]] = arith.constant dense_resource<{{vnni_weight[_0-9]*}}> : tensor<2x2x64xi8>
// CHECK-DAG: %[[START:.*]] = arith.constant dense_resource<{{vnni_signed_start[_0-9]*}}> : tensor<32xi32>
// CHECK: %[[PADDED:.*]] = tensor.insert_slice %{{.*}} into %{{.*}}[0, 0] [6, 20] [1, 1] : tensor<6x20xi32> into tensor<6x32xi32>
// CHECK: %[[R:.*]] = scf.forall (%{{.*}}, %{{.*}}) in (1, 1) shared_outs(%[[OUT:.*]] = %[[PADDED]])
// CHECK:   tensor.extract_slice %[[OUT]]
// CHECK-SAME: [6, 32] [1, 1] : tensor<6x32xi32> to tensor<6x32xi32>
// CHECK:   vector.transfer_read %[[START]]
// CHECK:   scf.for %[[G:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args
// CHECK:     vector.transfer_read %[[PANELS]][%{{.*}}, %[[G]], %{{.*}}], %{{.*}} {in_bounds = [true]} : tensor<2x2x64xi8>, vector<64xi8>
// CHECK:     %[[WORD:.*]] = vector.transfer_read %arg0[%{{.*}}, %{{.*}}], %{{.*}} {in_bounds = [true]} : tensor<6x5xi8>, vector<4xi8>
// CHECK:     vector.bitcast %[[WORD]] : vector<4xi8> to vector<1xi32>
// CHECK:     arith.xori %{{.*}}, %{{.*}} : vector<16xi32>
// CHECK:     llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"(%{{.*}}, %{{.*}}, %{{.*}}) : (vector<16xi32>, vector<64xi8>, vector<64xi8>) -> vector<16xi32>
// CHECK:     scf.yield
// The partial last group reads A masked (zero padding past the row's end).
// CHECK:   vector.transfer_read %arg0[%{{.*}}, %{{.*}}], %{{.*}} : tensor<6x5xi8>, vector<4xi8>
// CHECK:   vector.transfer_write %{{.*}} {in_bounds = [true]} : vector<16xi32>, tensor<6x32xi32>
// CHECK:   scf.forall.in_parallel
// CHECK:     tensor.parallel_insert_slice
// CHECK: %[[Y:.*]] = tensor.extract_slice %[[R]][0, 0] [6, 20] [1, 1] : tensor<6x32xi32> to tensor<6x20xi32>
// CHECK: return %[[Y]]
// The panels start with columns 0-3, each with its k = 0..3; the
// accumulators start at -128 * colsum(B) (column 0: -128 * 154 = -19712).
// CHECK-DAG: vnni_weight{{[_0-9]*}}: "0x010000004FF3700595E480DFAD6393C0BC047997
// CHECK-DAG: vnni_signed_start{{[_0-9]*}}: "0x0400000000B3FFFF
func.func @signed_rows(%a: tensor<6x5xi8>) -> tensor<6x20xi32> {
  %b = arith.constant dense<[[79, -107, -83, -68, -82, 77, 94, 21, -118, -104, -43, -18, 31, -6, -61, -88, 49, 60, -120, -99], [-13, -28, 99, 4, -21, -18, 42, 22, -84, 60, 65, 116, 73, -56, -47, 38, 38, 50, 94, -54], [112, -128, -109, 121, 113, -52, -93, -48, -117, 100, 41, 21, -66, -8, -80, 69, -7, -121, -63, 52], [5, -33, -64, -105, 27, 41, 5, 110, 109, -75, 27, 33, -65, -52, -4, 61, -54, 56, 39, -73], [-29, 84, 87, 40, -127, 46, -71, 81, 105, -19, 116, 66, -45, 96, -30, -102, 23, 89, 40, -28]]> : tensor<5x20xi8>
  %zero = arith.constant 0 : i32
  %e = tensor.empty() : tensor<6x20xi32>
  %init = linalg.fill ins(%zero : i32) outs(%e : tensor<6x20xi32>) -> tensor<6x20xi32>
  %r = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a, %b : tensor<6x5xi8>, tensor<5x20xi8>) outs(%init : tensor<6x20xi32>) attrs = {kiln.widening_matmul} {
  ^bb0(%x: i8, %w: i8, %acc: i32):
    %xe = arith.extsi %x : i8 to i32
    %we = arith.extsi %w : i8 to i32
    %p = arith.muli %xe, %we : i32
    %s = arith.addi %acc, %p : i32
    linalg.yield %s : i32
  } -> tensor<6x20xi32>
  return %r : tensor<6x20xi32>
}

// -----

// Unsigned rows (u8 x i8) need no correction: no start constant, no xor.
// M = 128 rows: tiles of 8 rows, each with both column registers.
// CHECK-LABEL: func.func @unsigned_rows
// CHECK-NOT: vnni_signed_start
// CHECK: scf.forall (%{{.*}}, %{{.*}}) in (16, 1)
// CHECK-NOT: arith.xori
// CHECK: llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"
func.func @unsigned_rows(%a: tensor<128x5xi8>) -> tensor<128x20xi32> {
  %b = arith.constant dense<[[79, -107, -83, -68, -82, 77, 94, 21, -118, -104, -43, -18, 31, -6, -61, -88, 49, 60, -120, -99], [-13, -28, 99, 4, -21, -18, 42, 22, -84, 60, 65, 116, 73, -56, -47, 38, 38, 50, 94, -54], [112, -128, -109, 121, 113, -52, -93, -48, -117, 100, 41, 21, -66, -8, -80, 69, -7, -121, -63, 52], [5, -33, -64, -105, 27, 41, 5, 110, 109, -75, 27, 33, -65, -52, -4, 61, -54, 56, 39, -73], [-29, 84, 87, 40, -127, 46, -71, 81, 105, -19, 116, 66, -45, 96, -30, -102, 23, 89, 40, -28]]> : tensor<5x20xi8>
  %zero = arith.constant 0 : i32
  %e = tensor.empty() : tensor<128x20xi32>
  %init = linalg.fill ins(%zero : i32) outs(%e : tensor<128x20xi32>) -> tensor<128x20xi32>
  %r = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a, %b : tensor<128x5xi8>, tensor<5x20xi8>) outs(%init : tensor<128x20xi32>) attrs = {kiln.widening_matmul} {
  ^bb0(%x: i8, %w: i8, %acc: i32):
    %xe = arith.extui %x : i8 to i32
    %we = arith.extsi %w : i8 to i32
    %p = arith.muli %xe, %we : i32
    %s = arith.addi %acc, %p : i32
    linalg.yield %s : i32
  } -> tensor<128x20xi32>
  return %r : tensor<128x20xi32>
}

// -----

// Weights that are not constants are left to the generic lowering.
// CHECK-LABEL: func.func @runtime_weights
// CHECK: linalg.generic
// CHECK-NOT: vpdpbusd
func.func @runtime_weights(%a: tensor<2x5xi8>, %b: tensor<5x20xi8>) -> tensor<2x20xi32> {
  %zero = arith.constant 0 : i32
  %e = tensor.empty() : tensor<2x20xi32>
  %init = linalg.fill ins(%zero : i32) outs(%e : tensor<2x20xi32>) -> tensor<2x20xi32>
  %r = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a, %b : tensor<2x5xi8>, tensor<5x20xi8>) outs(%init : tensor<2x20xi32>) attrs = {kiln.widening_matmul} {
  ^bb0(%x: i8, %w: i8, %acc: i32):
    %xe = arith.extui %x : i8 to i32
    %we = arith.extsi %w : i8 to i32
    %p = arith.muli %xe, %we : i32
    %s = arith.addi %acc, %p : i32
    linalg.yield %s : i32
  } -> tensor<2x20xi32>
  return %r : tensor<2x20xi32>
}
