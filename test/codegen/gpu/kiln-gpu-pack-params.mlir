// RUN: kiln-opt %s --split-input-file --verify-diagnostics --kiln-gpu-pack-params --canonicalize | FileCheck %s

// Scalars and the shapes of dynamic or offset buffers go to one params
// buffer of i32 words: %n (word 0), %x's offset, size and stride (1-3),
// %view's (4-6), %scale as two words (7-8, low first). Buffers of dynamic
// shape or with an offset become flat 1-D buffers; their loads and stores
// are linearized, their dims read the params. What a buffer's type knows
// is a constant, not a word: %x's offset (0) and stride (1), %view's
// offset (2), size and stride; the host still writes those words. The
// static buffer stays.
// CHECK-LABEL: gpu.func @kernel(
// CHECK-SAME: %[[X:.*]]: memref<?xf32>, %[[STATIC:.*]]: memref<4xf32>, %[[VIEW:.*]]: memref<?xf32>, %[[P:.*]]: memref<9xi32>)
// CHECK-DAG: %[[W0:.*]] = memref.load %[[P]][%c0]
// CHECK-DAG: %[[N:.*]] = arith.index_cast %[[W0]] : i32 to index
// CHECK-DAG: %[[XSIZEW:.*]] = memref.load %[[P]][%c2]
// CHECK-DAG: %[[XSIZE:.*]] = arith.index_cast %[[XSIZEW]] : i32 to index
// CHECK-DAG: %[[LOW:.*]] = memref.load %[[P]][%c7]
// CHECK-DAG: %[[HIGH:.*]] = memref.load %[[P]][%c8]
// CHECK: arith.bitcast %{{.*}} : i64 to f64
// CHECK: %[[TID:.*]] = gpu.thread_id x
// CHECK: %[[LAST:.*]] = arith.subi %[[XSIZE]], %[[N]]
// CHECK: memref.load %[[X]][%[[LAST]]] : memref<?xf32>
// CHECK: memref.load %[[STATIC]][%[[TID]]] : memref<4xf32>
// CHECK: %[[VAT:.*]] = arith.addi %[[TID]], %c2
// CHECK: memref.store %{{.*}}, %[[VIEW]][%[[VAT]]] : memref<?xf32>
// CHECK-NOT: memref.load %[[P]]
// The host fills the words in a stack array marked kiln.params and passes
// flat views of the dynamic buffers.
// CHECK-LABEL: func.func @host(
// CHECK: %[[PARAMS:.*]] = memref.alloca() {kiln.params} : memref<9xi32>
// CHECK: memref.extract_strided_metadata %arg0
// CHECK: %[[FLAT:.*]] = memref.reinterpret_cast %arg0 to offset: [0], sizes: [%{{.*}}], strides: [1] : memref<?xf32> to memref<?xf32>
// CHECK: memref.store %{{.*}}, %[[PARAMS]][%c7]
// CHECK: memref.store %{{.*}}, %[[PARAMS]][%c8]
// CHECK: gpu.launch_func @kernels::@kernel {{.*}} args(%[[FLAT]] : memref<?xf32>, %arg1 : memref<4xf32>, %{{.*}} : memref<?xf32>, %[[PARAMS]] : memref<9xi32>)
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @kernel(%n: index, %x: memref<?xf32>, %static: memref<4xf32>, %view: memref<4xf32, strided<[1], offset: 2>>, %scale: f64) kernel attributes {known_block_size = array<i32: 4, 1, 1>} {
      %c0 = arith.constant 0 : index
      %i = gpu.thread_id x
      %size = memref.dim %x, %c0 : memref<?xf32>
      %last = arith.subi %size, %n : index
      %s = arith.truncf %scale : f64 to f32
      %a = memref.load %x[%last] : memref<?xf32>
      %b = memref.load %static[%i] : memref<4xf32>
      %sum = arith.addf %a, %b : f32
      %r = arith.mulf %sum, %s : f32
      memref.store %r, %view[%i] : memref<4xf32, strided<[1], offset: 2>>
      gpu.return
    }
  }
  func.func @host(%x: memref<?xf32>, %static: memref<4xf32>, %buf: memref<8xf32>, %n: index, %scale: f64) {
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %view = memref.subview %buf[2] [4] [1] : memref<8xf32> to memref<4xf32, strided<[1], offset: 2>>
    gpu.launch_func @kernels::@kernel blocks in (%c1, %c1, %c1) threads in (%c4, %c1, %c1) args(%n : index, %x : memref<?xf32>, %static : memref<4xf32>, %view : memref<4xf32, strided<[1], offset: 2>>, %scale : f64)
    return
  }
}

// -----

// A view with a dynamic offset and row stride: those two are read from
// params (words 0 and 3), its sizes and its column stride are constants.
// CHECK-LABEL: gpu.func @strided(
// CHECK-SAME: %[[V:.*]]: memref<?xf32>, %[[P:.*]]: memref<5xi32>)
// CHECK-DAG: %[[OFFW:.*]] = memref.load %[[P]][%c0]
// CHECK-DAG: %[[OFF:.*]] = arith.index_cast %[[OFFW]] : i32 to index
// CHECK-DAG: %[[ROWW:.*]] = memref.load %[[P]][%c3]
// CHECK-DAG: %[[ROW:.*]] = arith.index_cast %[[ROWW]] : i32 to index
// CHECK: %[[TID:.*]] = gpu.thread_id x
// CHECK: %[[R:.*]] = arith.muli %[[TID]], %[[ROW]]
// CHECK: %[[A:.*]] = arith.addi %[[OFF]], %[[R]]
// CHECK: %[[AT:.*]] = arith.addi %[[A]], %[[TID]]
// CHECK: memref.store %{{.*}}, %[[V]][%[[AT]]] : memref<?xf32>
// CHECK-NOT: memref.load %[[P]]
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @strided(%v: memref<4x4xf32, strided<[?, 1], offset: ?>>) kernel attributes {known_block_size = array<i32: 4, 1, 1>} {
      %i = gpu.thread_id x
      %one = arith.constant 1.0 : f32
      memref.store %one, %v[%i, %i] : memref<4x4xf32, strided<[?, 1], offset: ?>>
      gpu.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @kernels {
    // expected-error @+1 {{kiln-gpu-pack-params: kernel argument 0 is a 'vector<4xf32>', which kernels cannot be passed}}
    gpu.func @vector(%v: vector<4xf32>) kernel attributes {known_block_size = array<i32: 1, 1, 1>} {
      gpu.return
    }
  }
}

// -----

// CUDA's asynchronous copies from a view of dynamic shape and offset (a
// batch matmul's operand, kiln-gpu-promote-operands): the copy's source indices
// are linearized like a load's, the check of where the view starts keeps
// the flat buffer's pointer (it starts where the original did) and reads
// its offset from the params.
// CHECK-LABEL: gpu.func @async_copy(
// CHECK-SAME: %[[X:.*]]: memref<?xf16>, %[[OUT:.*]]: memref<1xindex>, %[[P:.*]]: memref<5xi32>)
// CHECK-DAG: %[[OFF_WORD:.*]] = memref.load %[[P]][%c0]
// CHECK-DAG: %[[OFF:.*]] = arith.index_cast %[[OFF_WORD]] : i32 to index
// CHECK: %[[START:.*]] = memref.extract_aligned_pointer_as_index %[[X]] : memref<?xf16> -> index
// CHECK: %[[BYTES:.*]] = arith.addi %[[START]], %[[OFF]]
// CHECK: %[[AT:.*]] = arith.addi
// CHECK: nvgpu.device_async_copy %[[X]][%[[AT]]], %{{.*}}[%c0, %c0], 8 {bypassL1} : memref<?xf16> to memref<2x8xf16, #gpu.address_space<workgroup>>
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @async_copy(%x: memref<?x64xf16, strided<[64, 1], offset: ?>>, %out: memref<1xindex>) kernel attributes {known_block_size = array<i32: 1, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c8 = arith.constant 8 : index
      %buf = memref.alloc() : memref<2x8xf16, #gpu.address_space<workgroup>>
      %start = memref.extract_aligned_pointer_as_index %x : memref<?x64xf16, strided<[64, 1], offset: ?>> -> index
      %base, %offset, %sizes:2, %strides:2 = memref.extract_strided_metadata %x : memref<?x64xf16, strided<[64, 1], offset: ?>> -> memref<f16>, index, index, index, index, index
      %bytes = arith.addi %start, %offset : index
      %t = nvgpu.device_async_copy %x[%c0, %c8], %buf[%c0, %c0], 8 {bypassL1} : memref<?x64xf16, strided<[64, 1], offset: ?>> to memref<2x8xf16, #gpu.address_space<workgroup>>
      memref.store %bytes, %out[%c0] : memref<1xindex>
      gpu.return
    }
  }
}
