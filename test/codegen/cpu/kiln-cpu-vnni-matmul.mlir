// RUN: kiln-opt %s --kiln-cpu-vnni-matmul --split-input-file | FileCheck %s
// RUN: kiln-opt %s --kiln-cpu-vnni-matmul="int8=false bf16=false usdot=true" --split-input-file | FileCheck %s --check-prefix=USDOT

// AArch64 I8MM (USDOT): the same kernel on 4-lane registers. N = 20 is five
// blocks of 4 columns (four registers of a tile, then one); the bf16 matmul
// further down is left alone.
// USDOT-LABEL: func.func @signed_rows
// USDOT: arith.constant dense_resource<{{vnni_weight[_0-9]*}}> : tensor<5x2x16xi8>
// USDOT: arith.constant dense_resource<{{vnni_flip_start[_0-9]*}}> : tensor<20xi32>
// USDOT: scf.forall
// USDOT:   arith.xori %{{.*}}, %{{.*}} : vector<4xi32>
// USDOT:   llvm.call_intrinsic "llvm.aarch64.neon.usdot"(%{{.*}}, %{{.*}}, %{{.*}}) : (vector<4xi32>, vector<16xi8>, vector<16xi8>) -> vector<4xi32>
// USDOT-LABEL: func.func @bf16_rows
// USDOT-NOT: llvm.call_intrinsic
// USDOT-LABEL: func.func @amx_blocks
// RUN: kiln-opt %s --kiln-cpu-vnni-matmul="int8=false bf16=false sdot=true" --split-input-file | FileCheck %s --check-prefix=SDOT

// AArch64 dot product without I8MM: SDOT multiplies signed bytes, so signed
// rows go as they are, and unsigned rows are flipped (a - 128) with
// 128 * colsum(B) starting the accumulators.
// SDOT-LABEL: func.func @signed_rows
// SDOT-NOT: vnni_flip_start
// SDOT-NOT: arith.xori
// SDOT: llvm.call_intrinsic "llvm.aarch64.neon.sdot"(%{{.*}}, %{{.*}}, %{{.*}}) : (vector<4xi32>, vector<16xi8>, vector<16xi8>) -> vector<4xi32>
// SDOT-LABEL: func.func @unsigned_rows
// SDOT: arith.constant dense_resource<{{vnni_flip_start[_0-9]*}}> : tensor<20xi32>
// SDOT: arith.xori %{{.*}}, %{{.*}} : vector<4xi32>
// SDOT: llvm.call_intrinsic "llvm.aarch64.neon.sdot"
// SDOT-LABEL: func.func @bf16_rows
// SDOT-NOT: llvm.call_intrinsic
// SDOT-LABEL: func.func @amx_blocks
// RUN: kiln-opt %s --kiln-cpu-vnni-matmul="int8=false bf16=false avxvnni=true" --split-input-file | FileCheck %s --check-prefix=AVX2

// AVX-VNNI (AVX2 CPUs): 8-lane registers, and only 16 of them: tiles of two
// registers of columns (N = 20 pads to 24: three blocks, so one register).
// AVX2-LABEL: func.func @signed_rows
// AVX2: arith.constant dense_resource<{{vnni_weight[_0-9]*}}> : tensor<3x2x32xi8>
// AVX2: scf.forall
// AVX2:   llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.256"(%{{.*}}, %{{.*}}, %{{.*}}) : (vector<8xi32>, vector<32xi8>, vector<32xi8>) -> vector<8xi32>

// RUN: kiln-opt %s --kiln-cpu-vnni-matmul="int8=false bf16=false pmaddwd=8" --split-input-file | FileCheck %s --check-prefix=PMADDWD
// RUN: kiln-opt %s --kiln-cpu-vnni-matmul="int8=false bf16=false pmaddwd=16" --split-input-file | FileCheck %s --check-prefix=PMADDWD512

// x86 without VNNI: vpmaddwd on 16-bit values, two k per lane. A is
// extended once by its signedness (signed rows: extsi, no flip), B packed
// as i16 ([3 blocks of 8 columns][3 groups of two k][16]); the instruction
// does not accumulate, so each product is added.
// PMADDWD-LABEL: func.func @signed_rows
// PMADDWD-NOT: vnni_flip_start
// PMADDWD: %[[WIDE:.*]] = linalg.generic {{.*}} ins(%arg0 : tensor<6x5xi8>) outs(%{{.*}} : tensor<6x5xi16>)
// PMADDWD:   arith.extsi %{{.*}} : i8 to i16
// PMADDWD: %[[PANELS:.*]] = arith.constant dense_resource<{{vnni_weight[_0-9]*}}> : tensor<3x3x16xi16>
// PMADDWD: scf.forall
// PMADDWD:   vector.transfer_read %[[PANELS]]{{.*}} : tensor<3x3x16xi16>, vector<16xi16>
// PMADDWD:   %[[PAIR:.*]] = vector.transfer_read %[[WIDE]]{{.*}} : tensor<6x5xi16>, vector<2xi16>
// PMADDWD:   vector.bitcast %[[PAIR]] : vector<2xi16> to vector<1xi32>
// PMADDWD-NOT: arith.xori
// PMADDWD:   %[[P:.*]] = llvm.call_intrinsic "llvm.x86.avx2.pmadd.wd"(%{{.*}}, %{{.*}}) : (vector<16xi16>, vector<16xi16>) -> vector<8xi32>
// PMADDWD:   arith.addi %{{.*}}, %[[P]] : vector<8xi32>
// Column 0's first pair (k = 0, 1) is 79, -13 as little-endian i16.
// PMADDWD: vnni_weight{{[_0-9]*}}: "0x020000004F00F3FF
// PMADDWD-LABEL: func.func @unsigned_rows
// PMADDWD: arith.extui %{{.*}} : i8 to i16
// PMADDWD: llvm.call_intrinsic "llvm.x86.avx2.pmadd.wd"
// PMADDWD-LABEL: func.func @bf16_rows
// PMADDWD-NOT: llvm.call_intrinsic
// PMADDWD-LABEL: func.func @amx_blocks
// AVX512-BW without VNNI: the same on 16 lanes.
// PMADDWD512-LABEL: func.func @unsigned_rows
// PMADDWD512: tensor<2x3x32xi16>
// PMADDWD512: llvm.call_intrinsic "llvm.x86.avx512.pmaddw.d.512"(%{{.*}}, %{{.*}}) : (vector<32xi16>, vector<32xi16>) -> vector<16xi32>

// Signed rows (i8 x i8): K = 5 is one whole group of four and a partial one;
// N = 20 pads to 32 columns, two blocks of 16 (one register each, both in one
// tile); M = 6 gives one tile of 6 rows. B packs into [2 blocks][2 groups][64].
// CHECK-LABEL: func.func @signed_rows
// CHECK-DAG: %[[PANELS:.*]] = arith.constant dense_resource<{{vnni_weight[_0-9]*}}> : tensor<2x2x64xi8>
// CHECK-DAG: %[[START:.*]] = arith.constant dense_resource<{{vnni_flip_start[_0-9]*}}> : tensor<32xi32>
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
// CHECK-DAG: vnni_flip_start{{[_0-9]*}}: "0x0400000000B3FFFF
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
// CHECK-NOT: vnni_flip_start
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
// CHECK-NOT: vnni_flip_start
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
// RUN: kiln-opt %s --kiln-cpu-vnni-matmul="int8=false bf16=false" --split-input-file | FileCheck %s --check-prefix=NONE
// NONE-NOT: llvm.call_intrinsic

// -----

// AMX (amx-int8, amx-bf16): 56 rows of u8 x constant i8 with K = 64 (one
// 64-byte tile row) and N = 32 become whole 16 x 16 tiles in blocks: one of
// 32 rows, one of 16 at row 32, and one of 16 ending at row 56 (rows 40-55,
// overlapping the one before). Each block zeroes its slice of the output and
// multiplies in a generic tagged kiln.amx_tile over the weight panels
// [N/16][K/4][64] that kiln-cpu-amx-tiles lowers; the whole output is not
// zero-filled first.
// RUN: kiln-opt %s --kiln-cpu-vnni-matmul="amx-int8=true amx-bf16=true" --split-input-file | FileCheck %s --check-prefix=AMX
// AMX-LABEL: func.func @amx_blocks
// AMX-DAG: %[[PANELS:.*]] = arith.constant dense_resource<{{vnni_weight[_0-9]*}}> : tensor<2x16x64xi8>
// AMX-DAG: %[[EMPTY:.*]] = tensor.empty() : tensor<56x32xi32>
// AMX-NOT: vnni_flip_start
// AMX-NOT: linalg.fill ins(%{{.*}} : i32) outs(%[[EMPTY]]
// AMX: %[[B32:.*]] = scf.forall (%{{.*}}, %{{.*}}) in (1, 1) shared_outs(%[[OUT:.*]] = %[[EMPTY]])
// AMX:   %[[SLICE:.*]] = tensor.extract_slice %[[OUT]]{{.*}} [32, 32] [1, 1]
// AMX:   %[[ZERO:.*]] = linalg.fill ins(%{{.*}} : i32) outs(%[[SLICE]] : tensor<32x32xi32>)
// AMX:   %[[ROWS:.*]] = tensor.extract_slice %arg0[%{{.*}}, 0] [32, 64] [1, 1] : tensor<56x64xi8> to tensor<32x64xi8>
// AMX:   %[[P:.*]] = tensor.extract_slice %[[PANELS]][%{{.*}}, 0, 0] [2, 16, 64] [1, 1, 1]
// AMX:   linalg.generic {{.*}} ins(%[[ROWS]], %[[P]] : tensor<32x64xi8>, tensor<2x16x64xi8>) outs(%[[ZERO]] : tensor<32x32xi32>) attrs = {kiln.amx_tile}
// AMX:     arith.extui
// AMX: %[[B16:.*]] = scf.forall (%{{.*}}, %{{.*}}) in (1, 1) shared_outs(%{{.*}} = %[[B32]])
// AMX:   arith.constant 32 : index
// AMX:   tensor.extract_slice %arg0[%{{.*}}, 0] [16, 64] [1, 1] : tensor<56x64xi8> to tensor<16x64xi8>
// AMX:   kiln.amx_tile
// AMX: %[[LAST:.*]] = scf.forall (%{{.*}}, %{{.*}}) in (1, 1) shared_outs(%{{.*}} = %[[B16]])
// AMX:   arith.constant 40 : index
// AMX:   tensor.extract_slice %arg0[%{{.*}}, 0] [16, 64] [1, 1] : tensor<56x64xi8> to tensor<16x64xi8>
// AMX:   kiln.amx_tile
// AMX: return %[[LAST]]
func.func @amx_blocks(%a: tensor<56x64xi8>) -> tensor<56x32xi32> {
  %b = arith.constant dense_resource<amx_weight> : tensor<64x32xi8>
  %zero = arith.constant 0 : i32
  %e = tensor.empty() : tensor<56x32xi32>
  %init = linalg.fill ins(%zero : i32) outs(%e : tensor<56x32xi32>) -> tensor<56x32xi32>
  %r = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a, %b : tensor<56x64xi8>, tensor<64x32xi8>) outs(%init : tensor<56x32xi32>) attrs = {kiln.widening_matmul} {
  ^bb0(%x: i8, %w: i8, %acc: i32):
    %xe = arith.extui %x : i8 to i32
    %we = arith.extsi %w : i8 to i32
    %p = arith.muli %xe, %we : i32
    %s = arith.addi %acc, %p : i32
    linalg.yield %s : i32
  } -> tensor<56x32xi32>
  return %r : tensor<56x32xi32>
}

// Fewer than 16 rows, or an output that does not start at zero, take the
// vector kernel instead.
// AMX-LABEL: func.func @amx_too_few_rows
// AMX-NOT: kiln.amx_tile
// AMX: llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"
// AMX-LABEL: func.func @amx_nonzero_start
// AMX-NOT: kiln.amx_tile
// AMX: llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"
func.func @amx_too_few_rows(%a: tensor<8x64xi8>) -> tensor<8x32xi32> {
  %b = arith.constant dense_resource<amx_weight> : tensor<64x32xi8>
  %zero = arith.constant 0 : i32
  %e = tensor.empty() : tensor<8x32xi32>
  %init = linalg.fill ins(%zero : i32) outs(%e : tensor<8x32xi32>) -> tensor<8x32xi32>
  %r = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a, %b : tensor<8x64xi8>, tensor<64x32xi8>) outs(%init : tensor<8x32xi32>) attrs = {kiln.widening_matmul} {
  ^bb0(%x: i8, %w: i8, %acc: i32):
    %xe = arith.extui %x : i8 to i32
    %we = arith.extsi %w : i8 to i32
    %p = arith.muli %xe, %we : i32
    %s = arith.addi %acc, %p : i32
    linalg.yield %s : i32
  } -> tensor<8x32xi32>
  return %r : tensor<8x32xi32>
}

func.func @amx_nonzero_start(%a: tensor<16x64xi8>, %init: tensor<16x32xi32>) -> tensor<16x32xi32> {
  %b = arith.constant dense_resource<amx_weight> : tensor<64x32xi8>
  %r = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a, %b : tensor<16x64xi8>, tensor<64x32xi8>) outs(%init : tensor<16x32xi32>) attrs = {kiln.widening_matmul} {
  ^bb0(%x: i8, %w: i8, %acc: i32):
    %xe = arith.extui %x : i8 to i32
    %we = arith.extsi %w : i8 to i32
    %p = arith.muli %xe, %we : i32
    %s = arith.addi %acc, %p : i32
    linalg.yield %s : i32
  } -> tensor<16x32xi32>
  return %r : tensor<16x32xi32>
}

{-#
  dialect_resources: {
    builtin: {
      amx_weight: "0x0100000078423E4F139A6D9575536FAD851D1FBCB66CEDAE47D2A04DA487065EB91288158E8F968A1050989887A98BD5BBE861EE6249881F9A9B23FAA1A949C3C62664A8B233803109BF8D3C7FC0DE88881C999D1D123EF35B07A7E46DFFC8632895C90490190CEBD023BDEEAF65142AE1EEB816CA41BEAC6E6F623C8E4D3941C96E4D7420EEC449CFE841C8D8456AD114B0872615A8FE26A8B6BB328D19075EBB3F6FCA411AD270F327E18039523093CC31B479EDDE22714585E4CCB27726A37AE2E1D0E741888BBDADC7649DDA242989BD4D15679223BE8E4027F8F3D13AB0EBFB7545B4FBF7F906414487FFD6A1C19D2A7B34A7B78B0521F14EDFDE616EC0199FC297B7ED4D1BCC0896293826AC05C9EAF46EA6F20D6D7AFA8AB55582301BE117CD211D58F7BF13EAD4CC79CB40FC8A44633DDF6661CA794A5F38DA07DD276B3B7DB76CABC9E3D8F7F354BB143957B165DB28FDF2B58143684B2E9D9D21B97FFB705167496369AF7436ED84DE7C74E605BA42311FDAD34F9364601A8CF4E2EE23B19AAC066A1772EA0A59DAE4892872EB58E4E13275664B104CFACF4B3CE22FAEF6A50647EBB626914C321D70154CCE9C3FCA8EAC73202E79825FBBED7BA5E76FFEC607F7AD068043520FC97E72E53F5ECFE6729783A16F22671CCF22FB6E7F72D6B2C22A9F4C83D3A7AE1535C38B83BEB23F7EE8EEAE45361140253F32D4C4F6A51143C23F7032604B6B7BB579F9EE2C2DB4C59FB2C0762754593F783B161F40C2AB0C2A526248A560768F108C781DD32A1FCB1D4179E53CDC1B74E7B600820AF678153B5A1A5679FA49B78256D69E88B84AED53B9792896598D1388C3099F0C09DE1F13D38D6E293B9591C433C489860BB1F7BBFA37327C3FB60C18F620A9754F5B013749FE2C83F3A0B3098E91AED178CB283713E9B8B8ABFE49AAC7CE4DBCF659B92CF11189E89977C5B6E46F4679C8350AE0828723B434B6B0141E3FA97C030BB2833371D93B393435495551DFACC88D28C72BCB07638C2EF3009A226537C7DE415314A89619761614CFC796FA08E62BA959984D0870CB2BD1CACE9090176605DF9E78CD3AC5830E4BD9102E0B7039B22553BD89541944FEE4CF361E4F559AA0F136A86CCABC92FB6CAC627771D8C709C30A193A353BAB464A35A3FFC3B747E42EEE452AF4088485C09FC11E1F1E9A07D9E6D2A65B9D0AB4A3072588148D433DD2FE072FE42901E368AF3E74F430E6E13AD6FACE6D835268041E8C95853619E47C8AA286C3D6CED933526D39C55297D921028CFE51F393FB71B36C8F5C7D6197A91733CCDC23770B0F17C5920F2B626BBBC8725A92299B10600FAE3BBB66F03E41CAA282FD4FF772F36AD78C3F5F1457E7F58755A1B3F73E367FBAA232FFAB50F0E3677559217451F2CCEB31369976C0994C7A0DA56EE1FB72BE255E73C83CD7483F50E8807480C3E3809DFDDDB4D11282D266F54A78E0D12CB6440CFFC6E01EC46A3FAA6EBF99150F465D34A464399A3DB9101E00C8C2F10C95E66EED074DE3D52D51D0A3AC67344BBCFC5E415F0F962E3A0C9B4157C0AB79EFF5D7BD16B90333DBEC11E1F413E7FB44756177A8D42ABB9510AA0C98B6D50B857CB2606DFCB2BB3E545871EB0D6E6B6AF7EEA680F0BEEBFD2A55268126A55B5BE7A32FA427C70E7F2BDDC2AD78D61387CEC722B321B92666D4207188CC091A82052801655A6FC4E2576FFD45C2A0B8F0DE4AE2BAC8EA83CE685135DD8C2B2360D88EDC2EFC62FF01BB6DDC97737F230D048F93E445A400CDEB217AD70C09551289981CDB16612B7783BCCFDA138D93DDFB5CD8E11A16473B2486C6F405AC5C7DAE61A8061044186E615DE5168870E14D71CCC7C14D094CA77FDEF520CB820754DEBC0635F2903B848A9E78F0EBEA4F0A086A396968585CA545244D411CBC621423A01919CC2B3CAF903CB6C142E7C23C67A266B561C3E164447C1A93B2345B527810AC6A69CEBC1EB55C8217B3DFD81C6CF2DBE06B4314ACC1EA54EB45FEB9E1048786632E48BE83FCC808C5AC047550AC0CAD6773A8B4C7E9BDBCAE16F151241A997907ED5F39E2F7D835F41E1079424EA560A67E76763969F8AFC3CB808A9B71D838C1A2D7C0FEF0BC0DF86044FB1AE17B6216272FCF4B62AF63CB1C0FD246C4F6AF906B29F68FAF561146DD607E86864EB2BA7D2E1F85D4F43BAB970C47C8EDAD816F7D0F375BF4031B2D172A0DB3C5F75E686BD23D0742028D9BE02BDC8B54B1EEAFF11D894E30D99BF3B149D28E0517578870FA9A16138973896A8649DEA3BD9531F30931445AF942F5115B55EEFDA05CC85823E0349EE4DA1C3A244D674497C7B895E430BD73A3A4C5C8DBB5C2B4B15AC88A38744B072D9AC1699395FCF5CC50764E5DEA0D6D66A209D4600B74729DC641E2769D05C7EA02443BA2A7C97036F3E1099D5D8E05894C1D5E646FAD7D9DFAA730E6C23F226046DDB6C5974E59C76F5158E188932743BFBF55289101E4CD4725D7A9AB273FEE554536FC93E507EB7695792873C7279AE00604380A59FC0A3F23A383644BBC2BF968164F5EF8DEDC6CE4A6EF6CBAAA14100610EF80B390041661760F8EAC3718967636C7E4ADBE9BFAB28063FBBF80F40F02CEB603042E7FA7046F0AE303E8D3764784AB325B7B82334C391DD4BF611E09DA6366628521793EF97461E83CED8FC4E6FAA24CC18B1778E5771FC2953EB5B6CFFE6442233470CEBFC5B3364A4D247BFAACEAB9CA750E1FD61136D8F915002ECA743CBE691CC45AE300F39897BEA64D01FC230BB1D8E432C4BE2B497E0279E6C1E6DAAF501347B1CB6E260EF7D63DD8755113E64714C3476207328FA76DDBA3AB7B027D44DE0B76D8A0D6842B2CFA637BB4EF83A6C2C4A5EDA66C"
    }
  }
#-}
