// RUN: kiln-opt %s --kiln-plan-memory | FileCheck %s
// RUN: kiln-opt %s --kiln-plan-memory=report=true -o /dev/null 2>&1 | FileCheck %s --check-prefix=REPORT

// The module records the sum of its functions' arenas for the runtime.
// CHECK: module attributes {kiln.arena_bytes = 2240 : i64}

#id = affine_map<(d0, d1) -> (d0, d1)>

// A chain of three 1 KiB buffers: %a dies where %c is born (the op that
// reads %b), so %a and %c share offset 0 and %b sits beside them.
// CHECK-LABEL: func.func @chain
// CHECK-NEXT: %[[ARENA:.*]] = memref.alloc() {alignment = 64 : i64} : memref<2048xi8>
// CHECK-NOT: memref.alloc
// CHECK: %[[A:.*]] = memref.view %[[ARENA]][%c0{{.*}}][] : memref<2048xi8> to memref<16x16xf32>
// CHECK: %[[B:.*]] = memref.view %[[ARENA]][%c1024{{.*}}][] : memref<2048xi8> to memref<16x16xf32>
// CHECK: %[[C:.*]] = memref.view %[[ARENA]][%c0{{.*}}][] : memref<2048xi8> to memref<16x16xf32>
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%[[A]] : memref<16x16xf32>)
// CHECK: linalg.generic {{.*}} ins(%[[A]] : memref<16x16xf32>) outs(%[[B]] : memref<16x16xf32>)
// CHECK: linalg.generic {{.*}} ins(%[[B]] : memref<16x16xf32>) outs(%[[C]] : memref<16x16xf32>)
// CHECK: memref.copy %[[C]], %arg0
// REPORT: remark: memory: @chain: 3 intermediate buffers, 3072 bytes (3.0 KiB) in all, share an arena of 2048 bytes (2.0 KiB); at most 2048 bytes are live at once
func.func @chain(%out: memref<16x16xf32>) {
  %one = arith.constant 1.0 : f32
  %a = memref.alloc() {alignment = 64 : i64} : memref<16x16xf32>
  %b = memref.alloc() {alignment = 64 : i64} : memref<16x16xf32>
  %c = memref.alloc() {alignment = 64 : i64} : memref<16x16xf32>
  linalg.fill ins(%one : f32) outs(%a : memref<16x16xf32>)
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : memref<16x16xf32>) outs(%b : memref<16x16xf32>) {
  ^bb0(%x: f32, %y: f32):
    %s = arith.addf %x, %x : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%b : memref<16x16xf32>) outs(%c : memref<16x16xf32>) {
  ^bb0(%x: f32, %y: f32):
    %s = arith.addf %x, %one : f32
    linalg.yield %s : f32
  }
  memref.copy %c, %out : memref<16x16xf32> to memref<16x16xf32>
  return
}

// A view keeps its buffer alive: %a is read through a collapse_shape after
// %b is written, so the two cannot share. Sizes round up to 64 bytes.
// CHECK-LABEL: func.func @through_view
// CHECK-NEXT: memref.alloc() {alignment = 64 : i64} : memref<128xi8>
// CHECK: memref.view %{{.*}}[%c0{{.*}}][] : memref<128xi8> to memref<2x3xf32>
// CHECK: memref.view %{{.*}}[%c64{{.*}}][] : memref<128xi8> to memref<6xf32>
// REPORT: remark: memory: @through_view: 2 intermediate buffers, 128 bytes (128 B) in all, share an arena of 128 bytes (128 B); at most 128 bytes are live at once
func.func @through_view(%out: memref<6xf32>) {
  %zero = arith.constant 0.0 : f32
  %a = memref.alloc() : memref<2x3xf32>
  %b = memref.alloc() : memref<6xf32>
  linalg.fill ins(%zero : f32) outs(%a : memref<2x3xf32>)
  linalg.fill ins(%zero : f32) outs(%b : memref<6xf32>)
  %flat = memref.collapse_shape %a [[0, 1]] : memref<2x3xf32> into memref<6xf32>
  memref.copy %flat, %out : memref<6xf32> to memref<6xf32>
  return
}

// Buffers of dynamic size, allocated in a loop, or returned keep their own
// allocations; with nothing left to plan there is no arena.
// CHECK-LABEL: func.func @unplanned
// CHECK-NOT: memref.view
// CHECK: %[[DYN:.*]] = memref.alloc(%arg0) : memref<?xf32>
// CHECK: %[[RET:.*]] = memref.alloc() : memref<4xf32>
// CHECK: scf.for
// CHECK-NEXT: memref.alloc() : memref<8xf32>
// CHECK: return %[[RET]]
// REPORT: remark: memory: @unplanned: no statically sized intermediate buffers; 1 buffer allocated separately (dynamic size); 1 buffer allocated separately (its address escapes)
func.func @unplanned(%n: index) -> memref<4xf32> {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c1 = arith.constant 1 : index
  %dyn = memref.alloc(%n) : memref<?xf32>
  %ret = memref.alloc() : memref<4xf32>
  linalg.fill ins(%zero : f32) outs(%dyn : memref<?xf32>)
  linalg.fill ins(%zero : f32) outs(%ret : memref<4xf32>)
  scf.for %i = %c0 to %c2 step %c1 {
    %tmp = memref.alloc() : memref<8xf32>
    linalg.fill ins(%zero : f32) outs(%tmp : memref<8xf32>)
  }
  return %ret : memref<4xf32>
}

// The report counts the buffers that stay separate, by reason.
// CHECK-LABEL: func.func @mixed
// CHECK-NEXT: memref.alloc() {alignment = 64 : i64} : memref<64xi8>
// CHECK: memref.alloc(%arg0) : memref<?xf32>
// REPORT: remark: memory: @mixed: 1 intermediate buffer, 64 bytes (64 B) in all, share an arena of 64 bytes (64 B); at most 64 bytes are live at once; 1 buffer allocated separately (dynamic size)
func.func @mixed(%n: index, %out: memref<4xf32>) {
  %zero = arith.constant 0.0 : f32
  %a = memref.alloc() : memref<4xf32>
  %dyn = memref.alloc(%n) : memref<?xf32>
  linalg.fill ins(%zero : f32) outs(%a : memref<4xf32>)
  linalg.fill ins(%zero : f32) outs(%dyn : memref<?xf32>)
  memref.copy %a, %out : memref<4xf32> to memref<4xf32>
  return
}

// A buffer that is only written (a vectorized reduction's initial partial
// sums, carried in registers by its loop) is erased with its writes, also
// inside loops; a buffer that is read stays.
// CHECK-LABEL: func.func @write_only
// CHECK: scf.forall
// CHECK-NOT: vector.transfer_write %{{.*}}, %{{.*}} : vector<16xf32>, memref<16xf32>
// CHECK: %[[KEPT:.*]] = memref.alloc() : memref<16xf32>
// CHECK-NEXT: vector.transfer_write %{{.*}}, %[[KEPT]]
// CHECK-NEXT: vector.transfer_read %[[KEPT]]
func.func @write_only(%out: memref<4x16xf32>) {
  %c0 = arith.constant 0 : index
  %zero = arith.constant dense<0.0> : vector<16xf32>
  %pad = arith.constant 0.0 : f32
  scf.forall (%i) in (4) {
    %dead = memref.alloc() : memref<16xf32>
    vector.transfer_write %zero, %dead[%c0] {in_bounds = [true]} : vector<16xf32>, memref<16xf32>
    memref.store %pad, %dead[%c0] : memref<16xf32>
    %kept = memref.alloc() : memref<16xf32>
    vector.transfer_write %zero, %kept[%c0] {in_bounds = [true]} : vector<16xf32>, memref<16xf32>
    %v = vector.transfer_read %kept[%c0], %pad {in_bounds = [true]} : memref<16xf32>, vector<16xf32>
    vector.transfer_write %v, %out[%i, %c0] {in_bounds = [true]} : vector<16xf32>, memref<4x16xf32>
  }
  return
}
