// RUN: kiln-opt %s --split-input-file --verify-diagnostics --kiln-gpu-map-forall --canonicalize --cse | FileCheck %s

// A static grid: linear dimension 0 on x, 1 on y; 8x4 threads, every one
// with an iteration (no guard); the self-copy of the tile is erased.
// CHECK-LABEL: func.func @matmul_tiles
// CHECK-DAG: %[[C3:.*]] = arith.constant 3 : index
// CHECK-DAG: %[[C4:.*]] = arith.constant 4 : index
// CHECK-DAG: %[[C8:.*]] = arith.constant 8 : index
// CHECK-DAG: %[[C1:.*]] = arith.constant 1 : index
// CHECK: gpu.launch blocks(%[[BX:.*]], %[[BY:.*]], %{{.*}}) in (%{{.*}} = %[[C3]], %{{.*}} = %[[C4]], %{{.*}} = %[[C1]]) threads(%[[TX:.*]], %[[TY:.*]], %{{.*}}) in (%{{.*}} = %[[C8]], %{{.*}} = %[[C4]], %{{.*}} = %[[C1]])
// CHECK:   %[[ROW:.*]] = affine.apply #{{.*}}()[%[[BY]]]
// CHECK:   %[[COL:.*]] = affine.apply #{{.*}}()[%[[BX]]]
// CHECK:   affine.apply #{{.*}}()[%[[TY]]]
// CHECK:   affine.apply #{{.*}}()[%[[TX]]]
// CHECK-NOT: scf.if
// CHECK:   linalg.matmul
// CHECK-NOT: memref.copy
// CHECK:   gpu.terminator
func.func @matmul_tiles(%a: memref<64x128xf32>, %b: memref<128x96xf32>, %c: memref<64x96xf32>) {
  scf.forall (%i, %j) = (0, 0) to (64, 96) step (16, 32) {
    %sa = memref.subview %a[%i, 0] [16, 128] [1, 1] : memref<64x128xf32> to memref<16x128xf32, strided<[128, 1], offset: ?>>
    %sb = memref.subview %b[0, %j] [128, 32] [1, 1] : memref<128x96xf32> to memref<128x32xf32, strided<[96, 1], offset: ?>>
    %sc = memref.subview %c[%i, %j] [16, 32] [1, 1] : memref<64x96xf32> to memref<16x32xf32, strided<[96, 1], offset: ?>>
    scf.forall (%ti, %tj) = (0, 0) to (16, 32) step (4, 4) {
      %ta = memref.subview %sa[%ti, 0] [4, 128] [1, 1] : memref<16x128xf32, strided<[128, 1], offset: ?>> to memref<4x128xf32, strided<[128, 1], offset: ?>>
      %tb = memref.subview %sb[0, %tj] [128, 4] [1, 1] : memref<128x32xf32, strided<[96, 1], offset: ?>> to memref<128x4xf32, strided<[96, 1], offset: ?>>
      %tc = memref.subview %sc[%ti, %tj] [4, 4] [1, 1] : memref<16x32xf32, strided<[96, 1], offset: ?>> to memref<4x4xf32, strided<[96, 1], offset: ?>>
      linalg.matmul ins(%ta, %tb : memref<4x128xf32, strided<[128, 1], offset: ?>>, memref<128x4xf32, strided<[96, 1], offset: ?>>) outs(%tc : memref<4x4xf32, strided<[96, 1], offset: ?>>)
      memref.copy %tc, %tc : memref<4x4xf32, strided<[96, 1], offset: ?>> to memref<4x4xf32, strided<[96, 1], offset: ?>>
    } {mapping = [#gpu.thread<y>, #gpu.thread<x>]}
  } {mapping = [#gpu.block<linear_dim_1>, #gpu.block<linear_dim_0>]}
  return
}

// -----

// A dynamic grid (ceil(n / 32) workgroups) whose last tile is partial: 32
// threads (the bound of the affine.min), those past the tile idle. The
// grid is launched as it is (no loop): the runtime refuses one beyond the
// device's limit.
// CHECK-LABEL: func.func @partial_tiles
// CHECK: %[[N:.*]] = memref.dim
// CHECK: %[[GRID:.*]] = affine.apply #{{.*}}()[%[[N]]]
// CHECK: gpu.launch blocks(%[[BX:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[GRID]], %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) threads(%[[TX:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %c32,
// CHECK:   %[[ROWS:.*]] = affine.min #{{.*}}()[%[[N]], %[[BX]]]
// CHECK:   %[[IN:.*]] = arith.cmpi ult, %[[TX]], %[[ROWS]] : index
// CHECK:   scf.if %[[IN]] {
// CHECK:     memref.store
func.func @partial_tiles(%x: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %one = arith.constant 1.0 : f32
  %n = memref.dim %x, %c0 : memref<?xf32>
  scf.forall (%i) = (0) to (%n) step (32) {
    %rows = affine.min affine_map<(d0)[s0] -> (-d0 + s0, 32)>(%i)[%n]
    %s = memref.subview %x[%i] [%rows] [1] : memref<?xf32> to memref<?xf32, strided<[1], offset: ?>>
    scf.forall (%t) in (%rows) {
      memref.store %one, %s[%t] : memref<?xf32, strided<[1], offset: ?>>
    } {mapping = [#gpu.thread<x>]}
  } {mapping = [#gpu.block<linear_dim_0>]}
  return
}

// -----

// Four workgroup dimensions: 0 on x, 1 on y, 2 and 3 share z (3 slowest).
// CHECK-LABEL: func.func @four_dims
// CHECK: gpu.launch blocks(%{{.*}}, %{{.*}}, %[[BZ:.*]]) in (%{{.*}} = %c5, %{{.*}} = %c4, %{{.*}} = %c6)
// CHECK:   %[[D2:.*]] = arith.remui %[[BZ]], %c3 : index
// CHECK:   %[[D3:.*]] = arith.divui %[[BZ]], %c3 : index
// CHECK:   memref.store %{{.*}}, %{{.*}}[%[[D3]], %[[D2]], %{{.*}}, %{{.*}}]
func.func @four_dims(%x: memref<2x3x4x5xf32>) {
  %one = arith.constant 1.0 : f32
  scf.forall (%a, %b, %c, %d) in (2, 3, 4, 5) {
    memref.store %one, %x[%a, %b, %c, %d] : memref<2x3x4x5xf32>
  } {mapping = [#gpu.block<linear_dim_3>, #gpu.block<linear_dim_2>, #gpu.block<linear_dim_1>, #gpu.block<linear_dim_0>]}
  return
}

// -----

func.func @unmapped_inner_loop(%x: memref<4x4xf32>) {
  %one = arith.constant 1.0 : f32
  scf.forall (%i) in (4) {
    // expected-error @+1 {{kiln-gpu-map-forall: a loop in a workgroup loop must map to distinct thread dimensions x, y, z}}
    scf.forall (%j) in (4) {
      memref.store %one, %x[%i, %j] : memref<4x4xf32>
    }
  } {mapping = [#gpu.block<linear_dim_0>]}
  return
}

// -----

func.func @thread_linear_dim(%x: memref<4x4xf32>) {
  %one = arith.constant 1.0 : f32
  scf.forall (%i) in (4) {
    // expected-error @+1 {{kiln-gpu-map-forall: a loop in a workgroup loop must map to distinct thread dimensions x, y, z}}
    scf.forall (%j) in (4) {
      memref.store %one, %x[%i, %j] : memref<4x4xf32>
    } {mapping = [#gpu.thread<linear_dim_0>]}
  } {mapping = [#gpu.block<linear_dim_0>]}
  return
}

// -----

func.func @duplicate_block_dims(%x: memref<4x4xf32>) {
  %one = arith.constant 1.0 : f32
  // expected-error @+1 {{kiln-gpu-map-forall: a workgroup loop must map to distinct block linear dimensions}}
  scf.forall (%i, %j) in (4, 4) {
    memref.store %one, %x[%i, %j] : memref<4x4xf32>
  } {mapping = [#gpu.block<linear_dim_0>, #gpu.block<linear_dim_0>]}
  return
}

// -----

// Thread loops in turn, sharing a workgroup buffer (the alloc every
// thread would run is no work outside them): a barrier between them; the
// block is the larger loop's (8 threads), the smaller's guarded.
// CHECK-LABEL: func.func @thread_loops_in_turn
// CHECK: gpu.launch blocks(%[[B:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %c4, %{{.*}} = %c1, %{{.*}} = %c1) threads(%[[T:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %c8, %{{.*}} = %c1, %{{.*}} = %c1)
// CHECK:   %[[SHARED:.*]] = memref.alloc() : memref<8xf32, #gpu.address_space<workgroup>>
// CHECK:   memref.store %{{.*}}, %[[SHARED]][%[[T]]]
// CHECK-NEXT: gpu.barrier
// CHECK:   %[[IN:.*]] = arith.cmpi ult, %[[T]], %c4
// CHECK:   scf.if %[[IN]] {
// CHECK:     memref.load %[[SHARED]]
// CHECK:     memref.store %{{.*}}, %{{.*}}[%[[B]], %[[T]]]
// CHECK:   }
// CHECK-NOT: gpu.barrier
// CHECK:   gpu.terminator
func.func @thread_loops_in_turn(%x: memref<4x4xf32>) {
  %one = arith.constant 1.0 : f32
  %c7 = arith.constant 7 : index
  scf.forall (%i) in (4) {
    %shared = memref.alloc() : memref<8xf32, #gpu.address_space<workgroup>>
    scf.forall (%t) in (8) {
      memref.store %one, %shared[%t] : memref<8xf32, #gpu.address_space<workgroup>>
    } {mapping = [#gpu.thread<x>]}
    scf.forall (%j) in (4) {
      %v = memref.load %shared[%c7] : memref<8xf32, #gpu.address_space<workgroup>>
      memref.store %v, %x[%i, %j] : memref<4x4xf32>
    } {mapping = [#gpu.thread<x>]}
  } {mapping = [#gpu.block<linear_dim_0>]}
  return
}

// -----

// A block that loops over several workgroups' ids also meets after its
// last thread loop, before the next id's first.
// CHECK-LABEL: func.func @thread_loops_in_turn_huge_grid
// CHECK: scf.for
// CHECK:   gpu.barrier
// CHECK:   gpu.barrier
// CHECK-NEXT: }
func.func @thread_loops_in_turn_huge_grid(%x: memref<70000x4xf32>) {
  %one = arith.constant 1.0 : f32
  %c0 = arith.constant 0 : index
  scf.forall (%i) in (70000) {
    %shared = memref.alloc() : memref<4xf32, #gpu.address_space<workgroup>>
    scf.forall (%t) in (4) {
      memref.store %one, %shared[%t] : memref<4xf32, #gpu.address_space<workgroup>>
    } {mapping = [#gpu.thread<x>]}
    scf.forall (%j) in (4) {
      %v = memref.load %shared[%c0] : memref<4xf32, #gpu.address_space<workgroup>>
      memref.store %v, %x[%i, %j] : memref<70000x4xf32>
    } {mapping = [#gpu.thread<x>]}
  } {mapping = [#gpu.block<linear_dim_0>]}
  return
}

// -----

// So does a block of a grid known only at run time (a workgroup per row
// of a run-time batch): at most 65535 blocks, each looping over its ids.
// CHECK-LABEL: func.func @thread_loops_in_turn_dynamic_grid
// CHECK: %[[ROWS:.*]] = memref.dim
// CHECK: %[[GRID:.*]] = affine.min #{{.*}}()[%[[ROWS]]]
// CHECK: gpu.launch blocks(%[[B:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[GRID]], %{{.*}} = %c1, %{{.*}} = %c1)
// CHECK:   scf.for %{{.*}} = %[[B]] to %[[ROWS]] step %{{.*}} {
// CHECK:     gpu.barrier
// CHECK:     gpu.barrier
// CHECK-NEXT: }
func.func @thread_loops_in_turn_dynamic_grid(%x: memref<?x4xf32>) {
  %one = arith.constant 1.0 : f32
  %c0 = arith.constant 0 : index
  %rows = memref.dim %x, %c0 : memref<?x4xf32>
  scf.forall (%i) in (%rows) {
    %shared = memref.alloc() : memref<4xf32, #gpu.address_space<workgroup>>
    scf.forall (%t) in (4) {
      memref.store %one, %shared[%t] : memref<4xf32, #gpu.address_space<workgroup>>
    } {mapping = [#gpu.thread<x>]}
    scf.forall (%j) in (4) {
      %v = memref.load %shared[%c0] : memref<4xf32, #gpu.address_space<workgroup>>
      memref.store %v, %x[%i, %j] : memref<?x4xf32>
    } {mapping = [#gpu.thread<x>]}
  } {mapping = [#gpu.block<linear_dim_0>]}
  return
}

// -----

func.func @nested_thread_loops(%x: memref<4x4xf32>) {
  %one = arith.constant 1.0 : f32
  scf.forall (%i) in (4) {
    scf.forall (%j) in (4) {
      // expected-error @+1 {{kiln-gpu-map-forall: of several thread loops in a workgroup loop, each must be directly in its body}}
      scf.forall (%k) in (4) {
        memref.store %one, %x[%j, %k] : memref<4x4xf32>
      } {mapping = [#gpu.thread<y>]}
    } {mapping = [#gpu.thread<x>]}
  } {mapping = [#gpu.block<linear_dim_0>]}
  return
}

// -----

// Every thread would run the store outside the thread loop: the loops stay
// on the host, unmapped, with the reason.
// CHECK-LABEL: func.func @work_outside_threads
// CHECK-NOT: gpu.launch
// CHECK: scf.forall (%{{.*}}) in (4)
// CHECK:   memref.store
// CHECK:   scf.forall (%{{.*}}) in (4)
// CHECK-NOT: mapping
// CHECK: } {kiln.placement = "each workgroup would run 'memref.store' outside its threads' tiles"}
func.func @work_outside_threads(%x: memref<4x4xf32>) {
  %one = arith.constant 1.0 : f32
  %c0 = arith.constant 0 : index
  scf.forall (%i) in (4) {
    memref.store %one, %x[%i, %c0] : memref<4x4xf32>
    scf.forall (%j) in (4) {
      memref.store %one, %x[%i, %j] : memref<4x4xf32>
    } {mapping = [#gpu.thread<x>]}
  } {mapping = [#gpu.block<linear_dim_0>]}
  return
}

// -----

// Copies of a tile onto an identical view (bufferized parallel_insert_slice
// ops, before CSE) are erased, not run by every thread.
// CHECK-LABEL: func.func @identical_views
// CHECK-NOT: memref.copy
// CHECK: return
func.func @identical_views(%x: memref<4x4xf32>) {
  %one = arith.constant 1.0 : f32
  %c0 = arith.constant 0 : index
  scf.forall (%i) in (4) {
    %a = memref.subview %x[%i, 0] [1, 4] [1, 1] : memref<4x4xf32> to memref<1x4xf32, strided<[4, 1], offset: ?>>
    %b = memref.subview %x[%i, 0] [1, 4] [1, 1] : memref<4x4xf32> to memref<1x4xf32, strided<[4, 1], offset: ?>>
    scf.forall (%j) in (4) {
      memref.store %one, %a[%c0, %j] : memref<1x4xf32, strided<[4, 1], offset: ?>>
    } {mapping = [#gpu.thread<x>]}
    memref.copy %a, %b : memref<1x4xf32, strided<[4, 1], offset: ?>> to memref<1x4xf32, strided<[4, 1], offset: ?>>
  } {mapping = [#gpu.block<linear_dim_0>]}
  return
}

// -----

// More workgroups than a grid dimension holds (2 x 40000 on z): 65535
// blocks, each looping over the ids it stands for, delinearized as before.
// CHECK-LABEL: func.func @huge_grid
// CHECK: gpu.launch blocks(%{{.*}}, %{{.*}}, %[[BZ:.*]]) in (%{{.*}} = %c1, %{{.*}} = %c8, %[[GZ:.*]] = %c65535)
// CHECK:   scf.for %[[Z:.*]] = %[[BZ]] to %c80000 step %[[GZ]] {
// CHECK:     %[[D2:.*]] = arith.remui %[[Z]], %c40000 : index
// CHECK:     %[[D3:.*]] = arith.divui %[[Z]], %c40000 : index
// CHECK:     memref.store %{{.*}}, %{{.*}}[%[[D3]], %[[D2]], %{{.*}}, %{{.*}}]
func.func @huge_grid(%x: memref<2x40000x8x1xf32>) {
  %one = arith.constant 1.0 : f32
  scf.forall (%a, %b, %c, %d) in (2, 40000, 8, 1) {
    memref.store %one, %x[%a, %b, %c, %d] : memref<2x40000x8x1xf32>
  } {mapping = [#gpu.block<linear_dim_3>, #gpu.block<linear_dim_2>, #gpu.block<linear_dim_1>, #gpu.block<linear_dim_0>]}
  return
}
