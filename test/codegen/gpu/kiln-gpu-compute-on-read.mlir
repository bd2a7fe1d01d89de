// RUN: kiln-opt %s --split-input-file --verify-diagnostics --kiln-gpu-compute-on-read | FileCheck %s

// A convolution's fields [1, 2, 3, 3, 2, 2] (stride 2 along H), read in a
// kernel through their collapsed [1, 18, 4] and a tile of it: the load
// becomes one of the input, k + 9 delinearized into (c, kh, kw), the
// column into (oh, ow), at row oh * 2 + kh and column ow + kw. The copy,
// its views, its buffer and its dealloc are gone.
// CHECK-DAG: #[[K:.*]] = affine_map<()[s0] -> (s0 + 9)>
// CHECK-LABEL: func.func @staged
// CHECK-SAME: (%[[X:.*]]: memref<1x2x5x4xf32>, %[[OUT:.*]]: memref<4xf32>)
// CHECK-NOT: memref.alloc
// CHECK-NOT: linalg.generic
// CHECK: gpu.launch blocks({{.*}}) threads(%[[TX:.*]], %[[TY:.*]], %{{.*}}) in
// CHECK:   %[[K9:.*]] = affine.apply #[[K]]()[%[[TX]]]
// CHECK:   %[[CKK:.*]]:3 = affine.delinearize_index %[[K9]] into (2, 3, 3)
// CHECK:   %[[P:.*]]:2 = affine.delinearize_index %[[TY]] into (2, 2)
// CHECK:   %[[OH2:.*]] = arith.muli %[[P]]#0, %{{.*}}
// CHECK:   %[[ROW:.*]] = arith.addi %[[OH2]], %[[CKK]]#1
// CHECK:   %[[COL:.*]] = arith.addi %[[CKK]]#2, %[[P]]#1
// CHECK:   %[[V:.*]] = memref.load %[[X]][%{{.*}}, %[[CKK]]#0, %[[ROW]], %[[COL]]] : memref<1x2x5x4xf32>
// CHECK:   memref.store %[[V]], %[[OUT]][%[[TY]]]
// CHECK-NOT: memref.dealloc
#read = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d4 * 2 + d2, d5 + d3)>
#id6 = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3, d4, d5)>
func.func @staged(%x: memref<1x2x5x4xf32>, %out: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %fields = memref.alloc() : memref<1x2x3x3x2x2xf32>
  linalg.generic {indexing_maps = [#read, #id6], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%x : memref<1x2x5x4xf32>) outs(%fields : memref<1x2x3x3x2x2xf32>) attrs = {kiln.gpu.computed_on_read} {
  ^bb0(%in: f32, %o: f32):
    linalg.yield %in : f32
  }
  %cols = memref.collapse_shape %fields [[0], [1, 2, 3], [4, 5]] : memref<1x2x3x3x2x2xf32> into memref<1x18x4xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c4, %sy = %c4, %sz = %c1) {
    %tile = memref.subview %cols[0, 9, 0] [1, 9, 4] [1, 1, 1] : memref<1x18x4xf32> to memref<1x9x4xf32, strided<[72, 4, 1], offset: 36>>
    %v = memref.load %tile[%c0, %tx, %ty] : memref<1x9x4xf32, strided<[72, 4, 1], offset: 36>>
    memref.store %v, %out[%ty] : memref<4xf32>
    gpu.terminator
  }
  memref.dealloc %fields : memref<1x2x3x3x2x2xf32>
  return
}

// -----

// Fields read through the input's padding (kiln-gpu-read-through-padding's
// body: the clamped element or 0), by a matmul whose operands were not
// staged: the matmul becomes loops (n, f, p, k), each load of the fields
// the body at its indices (the linalg.index ops replaced by them). The size of an edge
// tile's view comes from the view's operand.
// CHECK-LABEL: func.func @padded_unstaged
// CHECK-SAME: (%[[X:.*]]: memref<1x1x2x2xf32>, %[[W:.*]]: memref<2x4xf32>, %[[OUT:.*]]: memref<1x2x4xf32>, %[[N:.*]]: index)
// CHECK-NOT: memref.alloc
// CHECK: gpu.launch
// CHECK:   scf.for %{{.*}} =
// CHECK:     scf.for %{{.*}} =
// CHECK:       scf.for %[[P:.*]] = %{{.*}} to %[[N]]
// CHECK:         scf.for %[[K:.*]] =
// CHECK:           affine.delinearize_index %[[K]] into (1, 2, 2)
// CHECK:           affine.delinearize_index %[[P]] into (2, 2)
// CHECK:           arith.cmpi sge
// CHECK:           %[[E:.*]] = memref.load %[[X]]
// CHECK:           %[[V:.*]] = arith.select %{{.*}}, %[[E]], %{{.*}} : f32
// CHECK:           arith.mulf %[[V]], %{{.*}} : f32
// CHECK-NOT: linalg.generic
#id6 = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3, d4, d5)>
#a = affine_map<(n, f, p, k) -> (n, k, p)>
#b = affine_map<(n, f, p, k) -> (f, k)>
#c = affine_map<(n, f, p, k) -> (n, f, p)>
func.func @padded_unstaged(%x: memref<1x1x2x2xf32>, %w: memref<2x4xf32>, %out: memref<1x2x4xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %fields = memref.alloc() : memref<1x1x2x2x2x2xf32>
  linalg.generic {indexing_maps = [#id6], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel"]} outs(%fields : memref<1x1x2x2x2x2xf32>) attrs = {kiln.gpu.computed_on_read} {
  ^bb0(%o: f32):
    %i0 = linalg.index 0 : index
    %i1 = linalg.index 1 : index
    %kh = linalg.index 2 : index
    %kw = linalg.index 3 : index
    %oh = linalg.index 4 : index
    %ow = linalg.index 5 : index
    %r = arith.addi %oh, %kh : index
    %row = arith.subi %r, %c1 : index
    %s = arith.addi %ow, %kw : index
    %col = arith.subi %s, %c1 : index
    %r0 = arith.cmpi sge, %row, %c0 : index
    %r1 = arith.cmpi sle, %row, %c1 : index
    %c0ok = arith.cmpi sge, %col, %c0 : index
    %c1ok = arith.cmpi sle, %col, %c1 : index
    %in0 = arith.andi %r0, %r1 : i1
    %in1 = arith.andi %c0ok, %c1ok : i1
    %inside = arith.andi %in0, %in1 : i1
    %rc = arith.maxsi %row, %c0 : index
    %rcl = arith.minsi %rc, %c1 : index
    %cc = arith.maxsi %col, %c0 : index
    %ccl = arith.minsi %cc, %c1 : index
    %e = memref.load %x[%i0, %i1, %rcl, %ccl] : memref<1x1x2x2xf32>
    %v = arith.select %inside, %e, %zero : f32
    linalg.yield %v : f32
  }
  %cols = memref.collapse_shape %fields [[0], [1, 2, 3], [4, 5]] : memref<1x1x2x2x2x2xf32> into memref<1x4x4xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    %tile = memref.subview %cols[0, 0, 0] [1, 4, %n] [1, 1, 1] : memref<1x4x4xf32> to memref<1x4x?xf32, strided<[16, 4, 1]>>
    %o = memref.subview %out[0, 0, 0] [1, 2, %n] [1, 1, 1] : memref<1x2x4xf32> to memref<1x2x?xf32, strided<[8, 4, 1]>>
    linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%tile, %w : memref<1x4x?xf32, strided<[16, 4, 1]>>, memref<2x4xf32>) outs(%o : memref<1x2x?xf32, strided<[8, 4, 1]>>) {
    ^bb0(%f: f32, %g: f32, %acc: f32):
      %m = arith.mulf %f, %g : f32
      %t = arith.addf %acc, %m : f32
      linalg.yield %t : f32
    }
    gpu.terminator
  }
  return
}

// -----

// The input is written between the copy and its reader: computing the
// fields there would read the new values.
#read = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d4 + d2, d5 + d3)>
#id6 = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3, d4, d5)>
func.func @input_written(%x: memref<1x1x3x3xf32>, %out: memref<f32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %fields = memref.alloc() : memref<1x1x2x2x2x2xf32>
  // expected-error @below {{kiln-gpu-compute-on-read: its inputs change before it is read}}
  linalg.generic {indexing_maps = [#read, #id6], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%x : memref<1x1x3x3xf32>) outs(%fields : memref<1x1x2x2x2x2xf32>) attrs = {kiln.gpu.computed_on_read} {
  ^bb0(%in: f32, %o: f32):
    linalg.yield %in : f32
  }
  // expected-note @below {{written here}}
  memref.store %zero, %x[%c0, %c0, %c0, %c0] : memref<1x1x3x3xf32>
  %v = memref.load %fields[%c0, %c0, %c1, %c1, %c0, %c0] : memref<1x1x2x2x2x2xf32>
  memref.store %v, %out[] : memref<f32>
  return
}

// -----

// The kernel that reads the fields writes its results over the input they
// come from (two convolutions' outputs given one buffer): its later
// workgroups would read them instead. (Its barrier, which names no
// buffer, is no write.)
#read = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d4 + d2, d5 + d3)>
#id6 = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3, d4, d5)>
func.func @reader_writes_input(%x: memref<1x1x3x3xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %fields = memref.alloc() : memref<1x1x2x2x2x2xf32>
  // expected-error @below {{kiln-gpu-compute-on-read: its inputs change before it is read}}
  linalg.generic {indexing_maps = [#read, #id6], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%x : memref<1x1x3x3xf32>) outs(%fields : memref<1x1x2x2x2x2xf32>) attrs = {kiln.gpu.computed_on_read} {
  ^bb0(%in: f32, %o: f32):
    linalg.yield %in : f32
  }
  // expected-note @below {{written here}}
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    %v = memref.load %fields[%c0, %c0, %c1, %c1, %c0, %c0] : memref<1x1x2x2x2x2xf32>
    gpu.barrier
    memref.store %v, %x[%c0, %c0, %c0, %c0] : memref<1x1x3x3xf32>
    gpu.terminator
  }
  return
}

// -----

// A copy out of the fields cannot be computed element by element.
#read = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d4 + d2, d5 + d3)>
#id6 = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3, d4, d5)>
func.func @copied(%x: memref<1x1x3x3xf32>, %out: memref<1x1x2x2x2x2xf32>) {
  %fields = memref.alloc() : memref<1x1x2x2x2x2xf32>
  linalg.generic {indexing_maps = [#read, #id6], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%x : memref<1x1x3x3xf32>) outs(%fields : memref<1x1x2x2x2x2xf32>) attrs = {kiln.gpu.computed_on_read} {
  ^bb0(%in: f32, %o: f32):
    linalg.yield %in : f32
  }
  // expected-error @below {{kiln-gpu-compute-on-read: cannot compute what this op reads}}
  memref.copy %fields, %out : memref<1x1x2x2x2x2xf32> to memref<1x1x2x2x2x2xf32>
  return
}

// -----

// An op that accumulates into its output is no copy to recompute.
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @reads_output(%x: memref<2x2xf32>) {
  %acc = memref.alloc() : memref<2x2xf32>
  // expected-error @below {{kiln-gpu-compute-on-read: cannot compute this op where it is read: it reads its output}}
  linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%x : memref<2x2xf32>) outs(%acc : memref<2x2xf32>) attrs = {kiln.gpu.computed_on_read} {
  ^bb0(%in: f32, %o: f32):
    %s = arith.addf %in, %o : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Fields of an input rounded to bf16, both computed on read
// (kiln-gpu-round-on-read): the fields first, their loads becoming loads
// of the rounding's buffer, which then become the input's element
// rounded. Neither buffer is left.
// CHECK-LABEL: func.func @rounded_fields
// CHECK-SAME: (%[[X:.*]]: memref<1x2x5x4xf32>, %[[OUT:.*]]: memref<4xbf16>)
// CHECK-NOT: memref.alloc
// CHECK-NOT: linalg.generic
// CHECK: gpu.launch
// CHECK:   %[[V:.*]] = memref.load %[[X]][%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] : memref<1x2x5x4xf32>
// CHECK:   %[[R:.*]] = arith.truncf %[[V]] : f32 to bf16
// CHECK:   memref.store %[[R]], %[[OUT]][%{{.*}}]
// CHECK-NOT: memref.dealloc
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#read = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d4 * 2 + d2, d5 + d3)>
#id6 = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3, d4, d5)>
func.func @rounded_fields(%x: memref<1x2x5x4xf32>, %out: memref<4xbf16>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %rounded = memref.alloc() : memref<1x2x5x4xbf16>
  linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x : memref<1x2x5x4xf32>) outs(%rounded : memref<1x2x5x4xbf16>) attrs = {kiln.gpu.computed_on_read} {
  ^bb0(%in: f32, %o: bf16):
    %t = arith.truncf %in : f32 to bf16
    linalg.yield %t : bf16
  }
  %fields = memref.alloc() : memref<1x2x3x3x2x2xbf16>
  linalg.generic {indexing_maps = [#read, #id6], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%rounded : memref<1x2x5x4xbf16>) outs(%fields : memref<1x2x3x3x2x2xbf16>) attrs = {kiln.gpu.computed_on_read} {
  ^bb0(%in: bf16, %o: bf16):
    linalg.yield %in : bf16
  }
  %cols = memref.collapse_shape %fields [[0], [1, 2, 3], [4, 5]] : memref<1x2x3x3x2x2xbf16> into memref<1x18x4xbf16>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c4, %sy = %c4, %sz = %c1) {
    %v = memref.load %cols[%c0, %tx, %ty] : memref<1x18x4xbf16>
    memref.store %v, %out[%ty] : memref<4xbf16>
    gpu.terminator
  }
  memref.dealloc %fields : memref<1x2x3x3x2x2xbf16>
  memref.dealloc %rounded : memref<1x2x5x4xbf16>
  return
}
