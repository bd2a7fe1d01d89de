// RUN: kiln-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(kiln-gpu-embed-kernels,canonicalize)' | FileCheck %s

// Launches become runtime calls: kernel index, grid, and a stack array of
// {address, bytes, flags} per buffer (flags 1 for a constant, also through
// a reshape; a static strided view passes its buffer's address and the
// bytes up to its last element). The host's copy waits for the first
// launch; the second launch of the same kernel reuses its index and needs
// no wait (the runtime waits at the end of a run), nor do the host's own
// buffers and run-time checks after it. The kernel's code and features,
// which its gpu.module carries (kiln.<field>), are in kiln.gpu_kernels
// with its name, workgroup size and buffers; the gpu.module is gone. The
// host copies %in to %out: no buffer of @main is the kernels' alone.
// CHECK: module attributes {kiln.gpu_kernels = [{buffers = 3 : i32, features = 1 : i32, name = "scale", spirv = dense<[119734787, 66304]> : tensor<2xi32>, workgroup_size = array<i32: 64, 1, 1>}], kiln.gpu_kernels_only_buffers = array<i32>}
// CHECK-NOT: gpu.module
// CHECK-DAG: func.func private @kiln_gpu_wait()
// CHECK-DAG: func.func private @kiln_gpu_launch(i32, i64, i64, i64, !llvm.ptr)
// CHECK-LABEL: func.func @main
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[C1:.*]] = arith.constant 1 : index
// CHECK-DAG: %[[C2:.*]] = arith.constant 2 : index
// CHECK-DAG: %[[BYTES_IN:.*]] = arith.constant 1024 : i64
// CHECK-DAG: %[[BYTES_VIEW:.*]] = arith.constant 512 : i64
// CHECK-DAG: %[[CONSTANT:.*]] = arith.constant 1 : i64
// CHECK-DAG: %[[NOT_CONSTANT:.*]] = arith.constant 0 : i64
// CHECK-DAG: %[[KERNEL:.*]] = arith.constant 0 : i32
// CHECK-DAG: %[[GRID_X:.*]] = arith.constant 4 : i64
// CHECK: memref.alloca() : memref<3x3xi64>
// CHECK: memref.alloca() : memref<3x3xi64>
// CHECK: %[[W:.*]] = memref.get_global @weights
// CHECK: %[[WR:.*]] = memref.expand_shape %[[W]]
// CHECK: %[[VIEW:.*]] = memref.subview
// CHECK: %[[P0:.*]] = memref.extract_aligned_pointer_as_index %arg0
// CHECK: %[[A0:.*]] = arith.index_cast %[[P0]] : index to i64
// CHECK: memref.store %[[A0]], %[[ARGS:.*]][%[[C0]], %[[C0]]]
// CHECK: memref.store %[[BYTES_IN]], %[[ARGS]][%[[C0]], %[[C1]]]
// CHECK: memref.store %[[NOT_CONSTANT]], %[[ARGS]][%[[C0]], %[[C2]]]
// CHECK: memref.extract_aligned_pointer_as_index %[[WR]]
// CHECK: memref.store %[[BYTES_IN]], %[[ARGS]][%[[C1]], %[[C1]]]
// CHECK: memref.store %[[CONSTANT]], %[[ARGS]][%[[C1]], %[[C2]]]
// The view [64, 128) of a 512-element buffer: 128 floats from its start.
// CHECK: memref.extract_aligned_pointer_as_index %[[VIEW]]
// CHECK: memref.store %[[BYTES_VIEW]], %[[ARGS]][%[[C2]], %[[C1]]]
// CHECK: memref.store %[[NOT_CONSTANT]], %[[ARGS]][%[[C2]], %[[C2]]]
// CHECK: %[[P:.*]] = memref.extract_aligned_pointer_as_index %[[ARGS]]
// CHECK: %[[I:.*]] = arith.index_cast %[[P]] : index to i64
// CHECK: %[[PTR:.*]] = llvm.inttoptr %[[I]] : i64 to !llvm.ptr
// CHECK: call @kiln_gpu_launch(%[[KERNEL]], %[[GRID_X]], %[[CONSTANT]], %[[CONSTANT]], %[[PTR]])
// CHECK-NEXT: call @kiln_gpu_wait()
// CHECK-NEXT: memref.copy
// CHECK: call @kiln_gpu_launch(%[[KERNEL]], %[[GRID_X]]
// CHECK-NOT: kiln_gpu_wait
// CHECK: return
module attributes {gpu.container_module} {
  memref.global "private" constant @weights : memref<256xf32> = dense<1.0>
  memref.global "private" constant @message : memref<4xi8> = dense<0>
  func.func private @kiln_check_failed(i64)
  gpu.module @kernels attributes {kiln.spirv = dense<[119734787, 66304]> : tensor<2xi32>, kiln.features = 1 : i32} {
    gpu.func @scale(%in: memref<256xf32>, %w: memref<16x16xf32>, %out: memref<64xf32, strided<[1], offset: 64>>) kernel attributes {known_block_size = array<i32: 64, 1, 1>} {
      %tid = gpu.thread_id x
      %x = memref.load %in[%tid] : memref<256xf32>
      memref.store %x, %out[%tid] : memref<64xf32, strided<[1], offset: 64>>
      gpu.return
    }
  }
  func.func @main(%in: memref<256xf32>, %out: memref<256xf32>) {
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c64 = arith.constant 64 : index
    %w = memref.get_global @weights : memref<256xf32>
    %wr = memref.expand_shape %w [[0, 1]] output_shape [16, 16] : memref<256xf32> into memref<16x16xf32>
    %tmp = memref.alloc() : memref<512xf32>
    %view = memref.subview %tmp[64] [64] [1] : memref<512xf32> to memref<64xf32, strided<[1], offset: 64>>
    gpu.launch_func @kernels::@scale blocks in (%c4, %c1, %c1) threads in (%c64, %c1, %c1) args(%in : memref<256xf32>, %wr : memref<16x16xf32>, %view : memref<64xf32, strided<[1], offset: 64>>)
    memref.copy %in, %out : memref<256xf32> to memref<256xf32>
    gpu.launch_func @kernels::@scale blocks in (%c4, %c1, %c1) threads in (%c64, %c1, %c1) args(%out : memref<256xf32>, %wr : memref<16x16xf32>, %view : memref<64xf32, strided<[1], offset: 64>>)
    // Host bookkeeping on a buffer no kernel uses, and a run-time check,
    // run while the kernels do.
    %shapes = memref.alloc() : memref<2xindex>
    memref.store %c4, %shapes[%c1] : memref<2xindex>
    %bad = arith.cmpi eq, %c4, %c64 : index
    scf.if %bad {
      %message = memref.get_global @message : memref<4xi8>
      %p = memref.extract_aligned_pointer_as_index %message : memref<4xi8> -> index
      %q = arith.index_cast %p : index to i64
      func.call @kiln_check_failed(%q) : (i64) -> ()
    }
    return
  }
}

// -----

// The buffers of @main that only kernels read and write, by argument
// number: %a, launched through a reshape (and its size asked), and %e,
// launched in a loop. Not %b, which the host reads; nor %c, which it
// writes in the loop that launches; nor %d, which it copies; nor %f, whose
// address it stores (as a dynamic entry returns an output); nor %g, which
// a call takes; nor %h, a branch's result.
// CHECK-LABEL: module attributes
// CHECK-SAME: kiln.gpu_kernels_only_buffers = array<i32: 0, 4>
module attributes {gpu.container_module} {
  gpu.module @kernels attributes {kiln.spirv = dense<[119734787, 66304]> : tensor<2xi32>} {
    gpu.func @touch(%x: memref<64xf32>) kernel attributes {known_block_size = array<i32: 64, 1, 1>} {
      gpu.return
    }
  }
  func.func private @use(memref<64xf32>)
  func.func @main(%a: memref<8x8xf32>, %b: memref<64xf32>, %c: memref<64xf32>, %d: memref<64xf32>, %e: memref<64xf32>, %f: memref<64xf32>, %g: memref<64xf32>, %h: memref<64xf32>, %slots: memref<1xindex>, %flag: i1) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c64 = arith.constant 64 : index
    %rows = memref.dim %a, %c0 : memref<8x8xf32>
    %flat = memref.collapse_shape %a [[0, 1]] : memref<8x8xf32> into memref<64xf32>
    gpu.launch_func @kernels::@touch blocks in (%c1, %c1, %c1) threads in (%c64, %c1, %c1) args(%flat : memref<64xf32>)
    gpu.launch_func @kernels::@touch blocks in (%c1, %c1, %c1) threads in (%c64, %c1, %c1) args(%b : memref<64xf32>)
    %x = memref.load %b[%c0] : memref<64xf32>
    scf.for %i = %c0 to %c2 step %c1 {
      gpu.launch_func @kernels::@touch blocks in (%c1, %c1, %c1) threads in (%c64, %c1, %c1) args(%c : memref<64xf32>)
      gpu.launch_func @kernels::@touch blocks in (%c1, %c1, %c1) threads in (%c64, %c1, %c1) args(%e : memref<64xf32>)
      memref.store %x, %c[%i] : memref<64xf32>
    }
    gpu.launch_func @kernels::@touch blocks in (%c1, %c1, %c1) threads in (%c64, %c1, %c1) args(%d : memref<64xf32>)
    %tmp = memref.alloc() : memref<64xf32>
    memref.copy %d, %tmp : memref<64xf32> to memref<64xf32>
    gpu.launch_func @kernels::@touch blocks in (%c1, %c1, %c1) threads in (%c64, %c1, %c1) args(%f : memref<64xf32>)
    %address = memref.extract_aligned_pointer_as_index %f : memref<64xf32> -> index
    memref.store %address, %slots[%c0] : memref<1xindex>
    gpu.launch_func @kernels::@touch blocks in (%c1, %c1, %c1) threads in (%c64, %c1, %c1) args(%g : memref<64xf32>)
    func.call @use(%g) : (memref<64xf32>) -> ()
    %either = scf.if %flag -> memref<64xf32> {
      scf.yield %h : memref<64xf32>
    } else {
      scf.yield %tmp : memref<64xf32>
    }
    gpu.launch_func @kernels::@touch blocks in (%c1, %c1, %c1) threads in (%c64, %c1, %c1) args(%either : memref<64xf32>)
    return
  }
}

// -----

// A call that is not given a buffer's address cannot reach it, whatever
// else it does.
// CHECK-LABEL: module attributes
// CHECK-SAME: kiln.gpu_kernels_only_buffers = array<i32: 0>
module attributes {gpu.container_module} {
  func.func private @log()
  gpu.module @kernels attributes {kiln.spirv = dense<[119734787, 66304]> : tensor<2xi32>} {
    gpu.func @touch(%x: memref<64xf32>) kernel attributes {known_block_size = array<i32: 64, 1, 1>} {
      gpu.return
    }
  }
  func.func @main(%a: memref<64xf32>) {
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    gpu.launch_func @kernels::@touch blocks in (%c1, %c1, %c1) threads in (%c64, %c1, %c1) args(%a : memref<64xf32>)
    func.call @log() : () -> ()
    return
  }
}

// -----

// A dynamic entry's last two arguments are its shapes and output slots,
// not buffers of the model, whatever uses them.
// CHECK-LABEL: module attributes
// CHECK-SAME: kiln.gpu_kernels_only_buffers = array<i32: 0>
module attributes {gpu.container_module} {
  gpu.module @kernels attributes {kiln.spirv = dense<[119734787, 66304]> : tensor<2xi32>} {
    gpu.func @touch(%x: memref<64xf32>) kernel attributes {known_block_size = array<i32: 64, 1, 1>} {
      gpu.return
    }
  }
  func.func @main(%a: memref<64xf32>, %shapes: memref<64xf32>, %slots: memref<64xf32>) attributes {kiln.dynamic_entry} {
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    gpu.launch_func @kernels::@touch blocks in (%c1, %c1, %c1) threads in (%c64, %c1, %c1) args(%a : memref<64xf32>)
    gpu.launch_func @kernels::@touch blocks in (%c1, %c1, %c1) threads in (%c64, %c1, %c1) args(%shapes : memref<64xf32>)
    gpu.launch_func @kernels::@touch blocks in (%c1, %c1, %c1) threads in (%c64, %c1, %c1) args(%slots : memref<64xf32>)
    return
  }
}

// -----

// A kernel whose gpu.module carries no code: the target's pass did not run.
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @nothing() kernel attributes {known_block_size = array<i32: 1, 1, 1>} {
      gpu.return
    }
  }
  func.func @main() {
    %c1 = arith.constant 1 : index
    // expected-error @+1 {{kiln-gpu-embed-kernels: kernel @kernels::@nothing has no code (run the target's kiln-spirv-serialize-kernels or kiln-cuda-compile-kernels first)}}
    gpu.launch_func @kernels::@nothing blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
    return
  }
}
