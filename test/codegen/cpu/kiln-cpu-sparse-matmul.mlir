// RUN: kiln-opt %s --split-input-file --kiln-cpu-sparse-matmul=vector-width=8 --canonicalize | FileCheck %s

// Compressed columns (B = 1) over few rows: a task per output column; per
// row, the entries 8 at a time (row indices widened, x gathered at them,
// times the values), then the masked rest, then the lanes summed.
// CHECK-LABEL: func.func @columns
// CHECK: scf.forall (%[[N:[a-z0-9]+]]) in (2) shared_outs
// CHECK: tensor.extract %arg1[%[[N]]] : tensor<3xi32>
// CHECK: scf.for %[[ROW:[a-z0-9]+]] =
// CHECK: scf.for
// CHECK: %[[IDX:.*]] = vector.transfer_read %arg2[{{.*}}], %{{.*}} {in_bounds = [true]} : tensor<5xi16>, vector<8xi16>
// CHECK: %[[WIDE:.*]] = arith.extui %[[IDX]] : vector<8xi16> to vector<8xi32>
// CHECK: %[[X:.*]] = vector.gather %arg0[%[[ROW]], %c0] [%[[WIDE]]]
// CHECK: vector.fma %[[X]]
// CHECK: %[[MASK:.*]] = vector.create_mask
// CHECK: arith.select %[[MASK]]
// CHECK: vector.gather %arg0[%[[ROW]], %c0] [%{{.*}}], %[[MASK]]
// CHECK: vector.reduction <add>
// CHECK: tensor.insert
// CHECK: tensor.parallel_insert_slice %{{.*}} into %{{.*}}[0, %[[N]]] [3, 1] [1, 1]
func.func @columns(%x: tensor<3x4xf32>, %o: tensor<3xi32>, %i: tensor<5xi16>, %v: tensor<5x1xf32>) -> tensor<3x2xf32> {
  %y = kiln.sparse_matmul %x, %o, %i, %v : (tensor<3x4xf32>, tensor<3xi32>, tensor<5xi16>, tensor<5x1xf32>) -> tensor<3x2xf32>
  return %y : tensor<3x2xf32>
}

// -----

// Compressed columns over 20 rows (at least a vector): a task per tile of
// 2 vectors of 8 rows (2 tiles, the product padded to 32 rows, then
// sliced); each tile's 8x8 blocks of x transposed into a scratch [K rounded
// up to 8, 16] (reads past x give zeros); per output column, its entries 2
// at a time into 2 chains of 2 sums (a value broadcast times both vectors
// of its scratch row: one value and index loaded per 2 multiply-adds), then
// the rest; per vector of rows, the group of column sums transposed back
// and written as whole rows (2 columns: masked along them).
// CHECK-LABEL: func.func @column_rows
// CHECK: scf.forall (%[[T:[a-z0-9]+]]) in (2) shared_outs(%{{.*}} = %{{.*}}) -> (tensor<32x2xf32>)
// CHECK: %[[M0:.*]] = arith.muli %[[T]], %c16
// CHECK: %[[BLOCK:.*]] = vector.transfer_read %arg0[%[[M0]], %c0], %{{.*}} : tensor<20x4xf32>, vector<8x8xf32>
// CHECK: %[[BLOCKT:.*]] = vector.transpose %[[BLOCK]], [1, 0]
// CHECK: %[[XT0:.*]] = vector.transfer_write %[[BLOCKT]], %{{.*}}[%c0, %c0] {in_bounds = [true, true]} : vector<8x8xf32>, tensor<8x16xf32>
// CHECK: %[[M8:.*]] = arith.addi %[[M0]], %c8
// CHECK: vector.transfer_read %arg0[%[[M8]], %c0]
// CHECK: %[[XT:.*]] = vector.transfer_write %{{.*}}, %[[XT0]][%c0, %c8] {in_bounds = [true, true]} : vector<8x8xf32>, tensor<8x16xf32>
// CHECK: scf.for {{.*}} step %c2 iter_args({{.*}}) -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
// CHECK: vector.transfer_read %[[XT]][%[[K:.*]], %c0], %{{.*}} {in_bounds = [true]} : tensor<8x16xf32>, vector<8xf32>
// CHECK: vector.fma
// CHECK: vector.transfer_read %[[XT]][%[[K]], %c8], %{{.*}} {in_bounds = [true]} : tensor<8x16xf32>, vector<8xf32>
// CHECK: vector.fma
// CHECK: scf.for {{.*}} step %c1 iter_args({{.*}}) -> (vector<8xf32>, vector<8xf32>)
// CHECK: vector.insert %{{.*}} [0] : vector<8xf32> into vector<8x8xf32>
// CHECK: vector.insert %{{.*}} [0] : vector<8xf32> into vector<8x8xf32>
// CHECK: vector.insert %{{.*}} [1] : vector<8xf32> into vector<8x8xf32>
// CHECK: vector.insert %{{.*}} [1] : vector<8xf32> into vector<8x8xf32>
// CHECK: %[[ROWS:.*]] = vector.transpose %{{.*}}, [1, 0]
// CHECK: %[[TOP:.*]] = vector.transfer_write %[[ROWS]], %{{.*}}[%c0, %c0] {in_bounds = [true, false]} : vector<8x8xf32>, tensor<16x2xf32>
// CHECK: %[[ROWS8:.*]] = vector.transpose %{{.*}}, [1, 0]
// CHECK: vector.transfer_write %[[ROWS8]], %[[TOP]][%c8, %c0] {in_bounds = [true, false]} : vector<8x8xf32>, tensor<16x2xf32>
// CHECK: tensor.parallel_insert_slice %{{.*}} into %{{.*}}[%[[M0]], 0] [16, 2] [1, 1]
// CHECK: tensor.extract_slice %{{.*}}[0, 0] [20, 2] [1, 1] : tensor<32x2xf32> to tensor<20x2xf32>
func.func @column_rows(%x: tensor<20x4xf32>, %o: tensor<3xi32>, %i: tensor<5xi16>, %v: tensor<5x1xf32>) -> tensor<20x2xf32> {
  %y = kiln.sparse_matmul %x, %o, %i, %v : (tensor<20x4xf32>, tensor<3xi32>, tensor<5xi16>, tensor<5x1xf32>) -> tensor<20x2xf32>
  return %y : tensor<20x2xf32>
}

// -----

// 16x1 blocks: a task per block of 16 outputs; x viewed as [rows, K]; 4
// rows at a time, each entry's x[m, k] broadcast times its 16 values, then
// the remaining rows one at a time.
// CHECK-LABEL: func.func @blocks
// CHECK: %[[X:.*]] = tensor.collapse_shape %arg0 {{\[}}[0, 1], [2]] : tensor<?x5x8xf32> into tensor<?x8xf32>
// CHECK: scf.forall (%[[J:[a-z0-9]+]]) in (2)
// CHECK: scf.for {{.*}} step %c4
// CHECK: scf.for {{.*}} -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
// CHECK: %[[W:.*]] = vector.transfer_read %arg3{{.*}} : tensor<4x16xf32>, vector<16xf32>
// CHECK: %[[XV:.*]] = tensor.extract %[[X]]
// CHECK: %[[S:.*]] = vector.broadcast %[[XV]] : f32 to vector<16xf32>
// CHECK: vector.fma %[[S]], %[[W]]
// CHECK: scf.for {{.*}} step %c1
// CHECK: %[[J0:.*]] = arith.muli %[[J]], %c16
// CHECK: tensor.parallel_insert_slice %{{.*}} into %{{.*}}[0, %[[J0]]] [%{{.*}}, 16] [1, 1]
// CHECK: tensor.expand_shape
func.func @blocks(%x: tensor<?x5x8xf32>, %o: tensor<3xi32>, %i: tensor<4xi32>, %v: tensor<4x16xf32>) -> tensor<?x5x32xf32> {
  %y = kiln.sparse_matmul %x, %o, %i, %v : (tensor<?x5x8xf32>, tensor<3xi32>, tensor<4xi32>, tensor<4x16xf32>) -> tensor<?x5x32xf32>
  return %y : tensor<?x5x32xf32>
}

// -----

// Bitmaps: a task per column block of 16 outputs, the packed values read
// as a buffer; per row of x, per row k of W: the mask expands the values at
// the segment's cursor into 16 lanes, times x[m, k] broadcast; the cursor
// moves on by the mask's bit count. K = 6 in 2 segments of 3 rows, each with
// its own cursor and sums.
// CHECK-LABEL: func.func @bitmap
// CHECK: %[[VALUES:.*]] = bufferization.to_buffer %arg3 read_only : tensor<40xf32> to memref<40xf32>
// CHECK: scf.forall (%[[J:[a-z0-9]+]]) in (2)
// CHECK: scf.for %[[M:[a-z0-9]+]] =
// CHECK: scf.for {{.*}} -> (vector<16xf32>, index, vector<16xf32>, index)
// CHECK: %[[BITS:.*]] = tensor.extract %arg2[%[[J]], %{{.*}}] : tensor<2x6xi16>
// CHECK: %[[WORD:.*]] = vector.broadcast %[[BITS]] : i16 to vector<1xi16>
// CHECK: %[[MASK:.*]] = vector.bitcast %[[WORD]] : vector<1xi16> to vector<16xi1>
// CHECK: %[[W:.*]] = vector.expandload %[[VALUES]][%{{.*}}], %[[MASK]]
// CHECK: math.ctpop %[[BITS]] : i16
// CHECK: %[[X:.*]] = tensor.extract %arg0[%[[M]], %{{.*}}] : tensor<2x6xf32>
// CHECK: %[[S:.*]] = vector.broadcast %[[X]]
// CHECK: vector.fma %[[S]], %[[W]]
// CHECK: arith.addf
// CHECK: tensor.parallel_insert_slice
func.func @bitmap(%x: tensor<2x6xf32>, %s: tensor<5xi32>, %m: tensor<2x6xi16>, %v: tensor<40xf32>) -> tensor<2x32xf32> {
  %y = kiln.bitmap_matmul %x, %s, %m, %v : (tensor<2x6xf32>, tensor<5xi32>, tensor<2x6xi16>, tensor<40xf32>) -> tensor<2x32xf32>
  return %y : tensor<2x32xf32>
}

// -----

// int8 bitmaps: the uint8 input is read as signless bytes; per group g of
// 4 rows, the 64-bit mask expands 64 bytes (16 outputs by 4 rows) at the
// cursor, and vpdpbusd multiplies them by x[m, 4g .. 4g+4) (one i32
// broadcast to 16 lanes) into i32 sums. K = 24: 6 groups, 2 segments of 3.
// CHECK-LABEL: func.func @bitmap_int8
// CHECK: %[[X:.*]] = kiln.bitcast %arg0 : tensor<1x24xui8> -> tensor<1x24xi8>
// CHECK: %[[VALUES:.*]] = bufferization.to_buffer %arg3 read_only : tensor<40xi8> to memref<40xi8>
// CHECK: scf.forall (%[[J:[a-z0-9]+]]) in (2)
// CHECK: scf.for {{.*}} -> (vector<16xi32>, index, vector<16xi32>, index)
// CHECK: %[[BITS:.*]] = tensor.extract %arg2[%[[J]], %{{.*}}] : tensor<2x6xi64>
// CHECK: %[[WORD:.*]] = vector.broadcast %[[BITS]] : i64 to vector<1xi64>
// CHECK: %[[MASK:.*]] = vector.bitcast %[[WORD]] : vector<1xi64> to vector<64xi1>
// CHECK: %[[W:.*]] = vector.expandload %[[VALUES]][%{{.*}}], %[[MASK]], %{{.*}} : memref<40xi8>, vector<64xi1>, vector<64xi8> into vector<64xi8>
// CHECK: math.ctpop %[[BITS]] : i64
// CHECK: %[[FOUR:.*]] = vector.transfer_read %[[X]]{{.*}} : tensor<1x24xi8>, vector<4xi8>
// CHECK: %[[XW:.*]] = vector.bitcast %[[FOUR]] : vector<4xi8> to vector<1xi32>
// CHECK: %[[XL:.*]] = vector.broadcast %[[XW]] : vector<1xi32> to vector<16xi32>
// CHECK: %[[XB:.*]] = vector.bitcast %[[XL]] : vector<16xi32> to vector<64xi8>
// CHECK: llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"(%{{.*}}, %[[XB]], %[[W]]) : (vector<16xi32>, vector<64xi8>, vector<64xi8>) -> vector<16xi32>
// CHECK: arith.addi
// CHECK: tensor.parallel_insert_slice
func.func @bitmap_int8(%x: tensor<1x24xui8>, %s: tensor<5xi32>, %m: tensor<2x6xi64>, %v: tensor<40xi8>) -> tensor<1x32xi32> {
  %y = kiln.bitmap_matmul %x, %s, %m, %v : (tensor<1x24xui8>, tensor<5xi32>, tensor<2x6xi64>, tensor<40xi8>) -> tensor<1x32xi32>
  return %y : tensor<1x32xi32>
}

// -----

// int8 16x4 blocks: each entry's 64 bytes (16 outputs by 4 rows) are read
// once per group of rows and multiplied by each row's 4 bytes at the
// entry's row index (vpdpbusd).
// CHECK-LABEL: func.func @blocks_int8
// CHECK: kiln.bitcast %arg0 : tensor<4x8xui8> -> tensor<4x8xi8>
// CHECK: scf.forall (%[[J:[a-z0-9]+]]) in (2)
// CHECK: scf.for {{.*}} -> (vector<16xi32>, vector<16xi32>, vector<16xi32>, vector<16xi32>)
// CHECK: %[[W:.*]] = vector.transfer_read %arg3{{.*}} : tensor<3x64xi8>, vector<64xi8>
// CHECK-COUNT-4: llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"(%{{.*}}, %{{.*}}, %[[W]])
func.func @blocks_int8(%x: tensor<4x8xui8>, %o: tensor<3xi32>, %i: tensor<3xi16>, %v: tensor<3x64xi8>) -> tensor<4x32xi32> {
  %y = kiln.sparse_matmul %x, %o, %i, %v : (tensor<4x8xui8>, tensor<3xi32>, tensor<3xi16>, tensor<3x64xi8>) -> tensor<4x32xi32>
  return %y : tensor<4x32xi32>
}
