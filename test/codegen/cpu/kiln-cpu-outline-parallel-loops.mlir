// RUN: kiln-opt %s --kiln-cpu-outline-parallel-loops=min-work=1000 | FileCheck %s

// A 2-D loop with enough work becomes a task over its 32 x 64 iterations (32
// rows are fewer than min-chunks, so both dimensions are distributed),
// linearized row-major; the subview and the constant it uses are cloned into
// the task, so only %x and %y are captured.
// CHECK-LABEL: func.func private @scale_task0(
// CHECK-SAME: %[[BEGIN:.*]]: index, %[[END:.*]]: index, %[[X:.*]]: memref<32x64xf32>, %[[Y:.*]]: memref<64x64xf32>)
// CHECK-SAME: attributes {kiln.parallel_task}
// CHECK: %[[TWO:.*]] = arith.constant 2.0
// CHECK: %[[VIEW:.*]] = memref.subview %[[Y]][0, 0] [32, 64] [1, 1]
// CHECK: scf.for %[[I:.*]] = %[[BEGIN]] to %[[END]] step
// CHECK: %[[COL:.*]] = arith.remui %[[I]], %c64
// CHECK: %[[ROW:.*]] = arith.divui %[[I]], %c64
// CHECK: memref.load %[[X]][%{{.*}}, %{{.*}}]
// CHECK: arith.mulf %{{.*}}, %[[TWO]]
// CHECK: memref.store %{{.*}}, %[[VIEW]][%{{.*}}, %{{.*}}]
// CHECK-LABEL: func.func @scale(
// CHECK-NOT: scf.parallel
// CHECK: call @scale_task0(%c0{{.*}}, %c2048{{.*}}, %arg0, %arg1)
func.func @scale(%x: memref<32x64xf32>, %y: memref<64x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  %two = arith.constant 2.0 : f32
  %view = memref.subview %y[0, 0] [32, 64] [1, 1] : memref<64x64xf32> to memref<32x64xf32, strided<[64, 1]>>
  scf.parallel (%i, %j) = (%c0, %c0) to (%c32, %c64) step (%c1, %c1) {
    %v = memref.load %x[%i, %j] : memref<32x64xf32>
    %d = arith.mulf %v, %two : f32
    memref.store %d, %view[%i, %j] : memref<32x64xf32, strided<[64, 1]>>
  }
  return
}

// Too little work (16 iterations of 3 ops) stays a serial loop.
// CHECK-LABEL: func.func @small(
// CHECK: scf.parallel
func.func @small(%x: memref<16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  scf.parallel (%i) = (%c0) to (%c16) step (%c1) {
    %v = memref.load %x[%i] : memref<16xf32>
    %d = arith.addf %v, %v : f32
    memref.store %d, %x[%i] : memref<16xf32>
  }
  return
}

// A loop that allocates becomes a task too: the pool's workers allocate
// from the run's arena.
// CHECK-LABEL: func.func private @allocates_task0(
// CHECK: memref.alloc
// CHECK-LABEL: func.func @allocates(
// CHECK-NOT: scf.parallel
// CHECK: call @allocates_task0
func.func @allocates(%x: memref<4096xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4096 = arith.constant 4096 : index
  scf.parallel (%i) = (%c0) to (%c4096) step (%c1) {
    %t = memref.alloc() : memref<1xf32>
    %v = memref.load %x[%i] : memref<4096xf32>
    memref.store %v, %t[%c0] : memref<1xf32>
  }
  return
}

// A loop that may fail a run-time check stays on the calling thread, which
// the failure unwinds.
// CHECK-LABEL: func.func @checks(
// CHECK: scf.parallel
// CHECK: call @kiln_check_failed
func.func private @kiln_check_failed(i64)
func.func @checks(%x: memref<4096xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4096 = arith.constant 4096 : index
  %zero = arith.constant 0.0 : f32
  %c7 = arith.constant 7 : i64
  scf.parallel (%i) = (%c0) to (%c4096) step (%c1) {
    %v = memref.load %x[%i] : memref<4096xf32>
    %bad = arith.cmpf olt, %v, %zero : f32
    scf.if %bad {
      func.call @kiln_check_failed(%c7) : (i64) -> ()
    }
  }
  return
}

// Only the fewest leading dimensions with at least min-chunks (64) iterations
// are linearized: the 64 channels here. The 8 x 16 inner dimensions stay a
// loop nest inside the task, with no division per element.
// CHECK-LABEL: func.func private @planes_task0(
// CHECK-SAME: %[[BEGIN:.*]]: index, %[[END:.*]]: index, %[[X:.*]]: memref<64x8x16xf32>)
// CHECK: scf.for %[[C:.*]] = %[[BEGIN]] to %[[END]] step
// CHECK-NOT: arith.divui
// CHECK-NOT: arith.remui
// CHECK: scf.parallel (%[[Y:.*]], %[[W:.*]]) = (%c0{{.*}}, %c0{{.*}}) to (%c8{{.*}}, %c16{{.*}})
// CHECK: memref.load %[[X]][%[[C]], %[[Y]], %[[W]]]
// CHECK-LABEL: func.func @planes(
// CHECK: call @planes_task0(%c0{{.*}}, %c64{{.*}}, %arg0)
func.func @planes(%x: memref<64x8x16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  scf.parallel (%c, %y, %w) = (%c0, %c0, %c0) to (%c64, %c8, %c16) step (%c1, %c1, %c1) {
    %v = memref.load %x[%c, %y, %w] : memref<64x8x16xf32>
    %d = arith.addf %v, %v : f32
    memref.store %d, %x[%c, %y, %w] : memref<64x8x16xf32>
  }
  return
}

// Bounds and buffers known only at run time: the trip count is computed
// before the call, and each buffer with dynamic sizes travels as its base
// pointer, offset, sizes and strides, rebuilt inside the task.
// CHECK-LABEL: func.func private @dynamic_task0(
// CHECK-SAME: %[[BEGIN:.*]]: index, %[[END:.*]]: index, %[[BASE:.*]]: memref<f32>, %[[OFF:.*]]: index, %[[N:.*]]: index, %{{.*}}: index, %{{.*}}: index, %{{.*}}: index)
// CHECK: %[[VIEW:.*]] = memref.reinterpret_cast %[[BASE]] to offset: [0], sizes: [%[[N]], 64], strides: [64, 1]
// CHECK: %[[X:.*]] = memref.cast %[[VIEW]] : memref<?x64xf32, strided<[64, 1]>> to memref<?x64xf32>
// CHECK: scf.for %[[I:.*]] = %[[BEGIN]] to %[[END]] step
// CHECK: memref.load %[[X]][
// CHECK-LABEL: func.func @dynamic(
// CHECK: %[[DIM:.*]] = memref.dim %arg0, %c0
// CHECK: %[[META:.*]], %{{.*}}, %{{.*}}:2, %{{.*}}:2 = memref.extract_strided_metadata %arg0
// CHECK: %[[TRIPS:.*]] = arith.ceildivui
// CHECK: %[[TOTAL:.*]] = arith.muli %{{.*}}, %c64
// CHECK: call @dynamic_task0(%{{.*}}, %[[TOTAL]], %[[META]],
func.func @dynamic(%x: memref<?x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %n = memref.dim %x, %c0 : memref<?x64xf32>
  scf.parallel (%i, %j) = (%c0, %c0) to (%n, %c64) step (%c1, %c1) {
    %v = memref.load %x[%i, %j] : memref<?x64xf32>
    %d = arith.addf %v, %v : f32
    memref.store %d, %x[%i, %j] : memref<?x64xf32>
  }
  return
}
