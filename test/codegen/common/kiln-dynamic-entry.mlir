// RUN: kiln-opt %s --split-input-file --kiln-dynamic-entry | FileCheck %s

// A dynamic input becomes its base pointer, viewed with the size read from
// `shapes` (inputs' sizes first: x is [shapes[0], 3], w is [2]); the result's
// address goes to its slot and its sizes to shapes[3] and shapes[4].
// CHECK-LABEL: func.func @main(
// CHECK-SAME: %[[X:.*]]: memref<f32> {kiln.name = "x"}, %[[W:.*]]: memref<2xf32>,
// CHECK-SAME: %[[SHAPES:.*]]: memref<5xi64>, %[[SLOTS:.*]]: memref<1xi64>) attributes {kiln.dynamic_entry}
// CHECK: %[[N64:.*]] = memref.load %[[SHAPES]][%c0] : memref<5xi64>
// CHECK: %[[N:.*]] = arith.index_cast %[[N64]] : i64 to index
// CHECK: %[[VIEW:.*]] = memref.reinterpret_cast %[[X]] to offset: [0], sizes: [%[[N]], 3], strides: [3, 1]
// CHECK: %[[CAST:.*]] = memref.cast %[[VIEW]] : memref<?x3xf32, strided<[3, 1]>> to memref<?x3xf32>
// CHECK: %[[D:.*]] = memref.dim %[[CAST]], %c0
// CHECK: %[[R:.*]] = memref.alloc(%[[D]])
// CHECK: %[[ADDR:.*]] = memref.extract_aligned_pointer_as_index %[[R]]
// CHECK: %[[ADDR64:.*]] = arith.index_cast %[[ADDR]] : index to i64
// CHECK: memref.store %[[ADDR64]], %[[SLOTS]][%c0{{.*}}] : memref<1xi64>
// CHECK: memref.store %{{.*}}, %[[SHAPES]][%c3{{.*}}] : memref<5xi64>
// CHECK: memref.store %{{.*}}, %[[SHAPES]][%c4{{.*}}] : memref<5xi64>
// CHECK: return{{$}}
func.func @main(%x: memref<?x3xf32> {kiln.name = "x"}, %w: memref<2xf32>) -> memref<?x3xf32> {
  %c0 = arith.constant 0 : index
  %n = memref.dim %x, %c0 : memref<?x3xf32>
  %r = memref.alloc(%n) : memref<?x3xf32>
  memref.copy %x, %r : memref<?x3xf32> to memref<?x3xf32>
  return %r : memref<?x3xf32>
}

// -----

// Static models keep their signature (results become out-parameters later).
// CHECK-LABEL: func.func @main(%{{.*}}: memref<2x3xf32>) -> memref<2x3xf32> {
// CHECK-NOT: kiln.dynamic_entry
func.func @main(%x: memref<2x3xf32>) -> memref<2x3xf32> {
  return %x : memref<2x3xf32>
}
