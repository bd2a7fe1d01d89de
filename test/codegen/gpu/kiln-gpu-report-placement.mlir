// RUN: kiln-opt %s --kiln-gpu-report-placement --verify-diagnostics -o /dev/null

// One remark per kernel, at its last linalg op, and one per host op that
// touches buffers the kernels use, with the reason; views, allocations and
// host bookkeeping (%shapes, which no kernel uses) say nothing. In a loop
// that launches, each op inside is reported.
func.func @model(%a: memref<8x16xf32>, %b: memref<8x16xf32>, %s: memref<f32>, %n: index, %shapes: memref<4xi64>) {
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %zero = arith.constant 0.0 : f32
  %tmp = memref.alloc() : memref<8x16xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c8, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c16, %sy = %c1, %sz = %c1) {
    %row = memref.subview %tmp[%bx, 0] [1, 16] [1, 1] : memref<8x16xf32> to memref<1x16xf32, strided<[16, 1], offset: ?>>
    %init = memref.load %s[] : memref<f32>
    linalg.fill ins(%init : f32) outs(%row : memref<1x16xf32, strided<[16, 1], offset: ?>>)
    // expected-remark @+1 {{placement: GPU kernel, 8x1x1 workgroups of 16x1x1 threads: linalg.fill, linalg.copy}}
    linalg.copy ins(%row : memref<1x16xf32, strided<[16, 1], offset: ?>>) outs(%row : memref<1x16xf32, strided<[16, 1], offset: ?>>)
    gpu.terminator
  }
  // expected-remark @+1 {{placement: host: a copy between buffers (a slice, a concatenation or a pad), done by the host}}
  memref.copy %tmp, %b : memref<8x16xf32> to memref<8x16xf32>
  // expected-remark @+1 {{placement: host: no parallel loop to distribute (a 0-d op or a reduction to a scalar)}}
  linalg.fill ins(%zero : f32) outs(%s : memref<f32>)
  %c0 = arith.constant 0 : index
  %size = memref.load %shapes[%c0] : memref<4xi64>
  memref.store %size, %shapes[%c1] : memref<4xi64>
  scf.for %i = %c1 to %n step %c1 {
    // expected-remark @+1 {{placement: GPU kernel, ?x1x1 workgroups of 1x1x1 threads}}
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %n, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
      gpu.terminator
    }
    // expected-remark @+1 {{placement: host: the host writes a value (a run-time size, a loop's state)}}
    memref.store %zero, %s[] : memref<f32>
  }
  // expected-remark @+1 {{placement: host: a loop or branch (a recurrent or data-dependent op, attention's blocks) runs on the host}}
  scf.for %i = %c1 to %n step %c1 {
    memref.store %zero, %s[] : memref<f32>
  }
  return
}

// A declaration has nothing to report.
func.func private @kiln_check_failed(i64)
