// RUN: kiln-opt %s --kiln-vnni-matmul --split-input-file | FileCheck %s
// RUN: kiln-opt %s --kiln-vnni-matmul="int8=false bf16=false usdot=true" --split-input-file | FileCheck %s --check-prefix=USDOT

// AArch64 I8MM (USDOT): the same kernel on 4-lane registers. N = 20 is five
// blocks of 4 columns (four registers of a tile, then one); the bf16 matmul
// further down is left alone.
// USDOT-LABEL: func.func @signed_rows
// USDOT: arith.constant dense_resource<{{vnni_weight[_0-9]*}}> : tensor<5x2x16xi8>
// USDOT: arith.constant dense_resource<{{vnni_signed_start[_0-9]*}}> : tensor<20xi32>
// USDOT: scf.forall
// USDOT:   arith.xori %{{.*}}, %{{.*}} : vector<4xi32>
// USDOT:   llvm.call_intrinsic "llvm.aarch64.neon.usdot"(%{{.*}}, %{{.*}}, %{{.*}}) : (vector<4xi32>, vector<16xi8>, vector<16xi8>) -> vector<4xi32>
// USDOT-LABEL: func.func @bf16_rows
// USDOT-NOT: llvm.call_intrinsic
// RUN: kiln-opt %s --kiln-vnni-matmul="int8=false bf16=false avxvnni=true" --split-input-file | FileCheck %s --check-prefix=AVX2

// AVX-VNNI (AVX2 CPUs): 8-lane registers, and only 16 of them: tiles of two
// registers of columns (N = 20 pads to 24: three blocks, so one register).
// AVX2-LABEL: func.func @signed_rows
// AVX2: arith.constant dense_resource<{{vnni_weight[_0-9]*}}> : tensor<3x2x32xi8>
// AVX2: scf.forall
// AVX2:   llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.256"(%{{.*}}, %{{.*}}, %{{.*}}) : (vector<8xi32>, vector<32xi8>, vector<32xi8>) -> vector<8xi32>

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

// -----

// bf16 x bf16 -> f32: two k per lane (vdpbf16ps), so K = 5 is two whole
// groups and a partial one; B packs into [2 blocks][3 groups][32 bf16], the
// accumulators are f32 and there is no signed correction.
// CHECK-LABEL: func.func @bf16_rows
// CHECK-DAG: %[[PANELS:.*]] = arith.constant dense_resource<{{vnni_weight[_0-9]*}}> : tensor<2x3x32xbf16>
// CHECK-NOT: vnni_signed_start
// CHECK: scf.forall
// CHECK:   vector.transfer_read %{{.*}} : tensor<6x32xf32>, vector<16xf32>
// CHECK:   scf.for
// CHECK:     vector.transfer_read %[[PANELS]]{{.*}} : tensor<2x3x32xbf16>, vector<32xbf16>
// CHECK:     %[[PAIR:.*]] = vector.transfer_read %arg0{{.*}} : tensor<6x5xbf16>, vector<2xbf16>
// CHECK:     vector.bitcast %[[PAIR]] : vector<2xbf16> to vector<1xi32>
// CHECK-NOT: arith.xori
// CHECK:     llvm.call_intrinsic "llvm.x86.avx512bf16.dpbf16ps.512"(%{{.*}}, %{{.*}}, %{{.*}}) : (vector<16xf32>, vector<32xbf16>, vector<32xbf16>) -> vector<16xf32>
func.func @bf16_rows(%a: tensor<6x5xbf16>) -> tensor<6x20xf32> {
  %b = arith.constant dense<[[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0, 18.0, 19.0, 20.0], [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0, 18.0, 19.0, 20.0], [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0, 18.0, 19.0, 20.0], [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0, 18.0, 19.0, 20.0], [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0, 18.0, 19.0, 20.0]]> : tensor<5x20xbf16>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<6x20xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<6x20xf32>) -> tensor<6x20xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a, %b : tensor<6x5xbf16>, tensor<5x20xbf16>) outs(%init : tensor<6x20xf32>) attrs = {kiln.widening_matmul} {
  ^bb0(%x: bf16, %w: bf16, %acc: f32):
    %xe = arith.extf %x : bf16 to f32
    %we = arith.extf %w : bf16 to f32
    %p = arith.mulf %xe, %we : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<6x20xf32>
  return %r : tensor<6x20xf32>
}

// -----

// Without the instructions (int8=false bf16=false) nothing changes.
// RUN: kiln-opt %s --kiln-vnni-matmul="int8=false bf16=false" --split-input-file | FileCheck %s --check-prefix=NONE
// NONE-NOT: llvm.call_intrinsic
