// REQUIRES: cuda-toolkit
// RUN: kiln-opt %s --split-input-file --verify-diagnostics --kiln-cuda-compile-kernels | FileCheck %s
// RUN: kiln-opt %s --split-input-file --verify-diagnostics --kiln-cuda-compile-kernels='chips=sm_90a' | FileCheck %s --check-prefix=SM90A
// RUN: not kiln-opt %s --split-input-file --kiln-cuda-compile-kernels='toolkit=/nonexistent' 2>&1 | FileCheck %s --check-prefix=NO-TOOLKIT
// RUN: kiln-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(gpu.module(gpu.func(kiln-gpu-unroll-private-loops)),kiln-cuda-compile-kernels)' | FileCheck %s --check-prefix=HOIST

// Each gpu.module gets its fatbin (magic 0xba55ed50, little-endian), the
// PTX of the first chip (sm_80 by default; sm_90a when asked) and the most
// registers ptxas gave a thread. A buffer of dynamic size (kiln-gpu-pack-
// params' flat buffers) is a bare pointer like the others: one .u64
// parameter each. exp comes from libdevice. The gpu.module stays for the
// launches.
// CHECK: gpu.module @kernels attributes {kiln.cuda = "P\EDU\BA{{.*}}", kiln.ptx = "{{.*}}.target sm_80{{.*}}.entry scale({{.*}}.param .u64 .ptr .align 1 scale_param_0,{{.*}}.param .u64 .ptr .align 1 scale_param_1{{.*}}", kiln.registers = {{[1-9][0-9]*}} : i32}
// CHECK:   gpu.func @scale
// SM90A: kiln.ptx = "{{.*}}.target sm_90a
// NO-TOOLKIT: error: kiln-cuda-compile-kernels: no CUDA toolkit (ptxas) in /nonexistent; pass --cuda-toolkit=DIR
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @scale(%in: memref<?xf32>, %out: memref<256xf32>) kernel attributes {known_block_size = array<i32: 64, 1, 1>} {
      %tid = gpu.thread_id x
      %x = memref.load %in[%tid] : memref<?xf32>
      %y = math.exp %x : f32
      memref.store %y, %out[%tid] : memref<256xf32>
      gpu.return
    }
  }
}

// -----

// A dynamic buffer that something other than loads and stores uses has no
// bare-pointer form.
module attributes {gpu.container_module} {
  gpu.module @kernels {
    // expected-error @+1 {{kiln-cuda-compile-kernels: kernel argument 0 ('memref<?xf32>') has a dynamic shape used other than by loads, stores and asynchronous copies (run kiln-gpu-pack-params first)}}
    gpu.func @size(%in: memref<?xf32>, %out: memref<1xindex>) kernel attributes {known_block_size = array<i32: 1, 1, 1>} {
      %c0 = arith.constant 0 : index
      %n = memref.dim %in, %c0 : memref<?xf32>
      memref.store %n, %out[%c0] : memref<1xindex>
      gpu.return
    }
  }
}

// -----

// Workgroup memory (kiln-gpu-promote-operands' buffers) is the kernel's
// shared memory, with the alloc's alignment, never a device malloc. A
// multiply and an add become one fma (contraction allowed, as nvcc does).
// CHECK: gpu.module @staged attributes {kiln.cuda = {{.*}}kiln.ptx = "{{.*}}.shared .align 16 .b8 __wg_reverse_0[256]{{.*}}st.shared.b32{{.*}}bar.sync{{.*}}ld.shared.b32{{.*}}fma.rn.f32
// CHECK-NOT: malloc
module attributes {gpu.container_module} {
  gpu.module @staged {
    gpu.func @reverse(%in: memref<64xf32>, %out: memref<64xf32>) kernel attributes {known_block_size = array<i32: 64, 1, 1>} {
      %c63 = arith.constant 63 : index
      %tid = gpu.thread_id x
      %shared = memref.alloc() {alignment = 16 : i64} : memref<64xf32, #gpu.address_space<workgroup>>
      %x = memref.load %in[%tid] : memref<64xf32>
      memref.store %x, %shared[%tid] : memref<64xf32, #gpu.address_space<workgroup>>
      gpu.barrier
      %r = arith.subi %c63, %tid : index
      %y = memref.load %shared[%r] : memref<64xf32, #gpu.address_space<workgroup>>
      %square = arith.mulf %y, %y : f32
      %z = arith.addf %square, %x : f32
      memref.store %z, %out[%tid] : memref<64xf32>
      gpu.return
    }
  }
}


// -----

// A thread's 8x8 sums (their loops unrolled by kiln-gpu-unroll-private-
// loops, as in a kernel) after a loop: the array moves to the kernel's
// start, where LLVM's SROA makes it registers. Left after the loop's
// control flow, out of the entry block, it was a 256-byte local frame.
// HOIST-LABEL: gpu.module @private_after_loop attributes
// HOIST-SAME: kiln.ptx = "
// HOIST-NOT: __local_depot
// HOIST-SAME: kiln.registers
module attributes {gpu.container_module} {
  gpu.module @private_after_loop {
    gpu.func @sum(%in: memref<64xf32>, %out: memref<64x64xf32>) kernel attributes {known_block_size = array<i32: 64, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c8 = arith.constant 8 : index
      %tid = gpu.thread_id x
      %x = memref.load %in[%tid] : memref<64xf32>
      scf.for %i = %c0 to %tid step %c1 {
        memref.store %x, %out[%tid, %i] : memref<64x64xf32>
      }
      %acc = memref.alloca() : memref<8x8xf32, #gpu.address_space<private>>
      scf.for %i = %c0 to %c8 step %c1 {
        scf.for %j = %c0 to %c8 step %c1 {
          memref.store %x, %acc[%i, %j] : memref<8x8xf32, #gpu.address_space<private>>
        }
      }
      scf.for %k = %c0 to %tid step %c1 {
        %y = memref.load %in[%k] : memref<64xf32>
        scf.for %i = %c0 to %c8 step %c1 {
          scf.for %j = %c0 to %c8 step %c1 {
            %a = memref.load %acc[%i, %j] : memref<8x8xf32, #gpu.address_space<private>>
            %s = arith.mulf %a, %y : f32
            memref.store %s, %acc[%i, %j] : memref<8x8xf32, #gpu.address_space<private>>
          }
        }
      }
      scf.for %i = %c0 to %c8 step %c1 {
        scf.for %j = %c0 to %c8 step %c1 {
          %a = memref.load %acc[%i, %j] : memref<8x8xf32, #gpu.address_space<private>>
          %r = arith.muli %i, %c8 : index
          %c = arith.addi %r, %j : index
          memref.store %a, %out[%tid, %c] : memref<64x64xf32>
        }
      }
      gpu.return
    }
  }
}

// -----

// Workgroup memory past 48 KiB (a 128x128 tile's f32 sums) is dynamic
// shared memory: the buffers are views of it, one after another (16-byte
// aligned), and kiln.shared_bytes says how much the launches give; the PTX
// declares no static buffer, and the dynamic one as clang declares
// `extern __shared__ char s[]` (not a variable of the kernel, of no size).
// Within 48 KiB (above) it stays static.
// CHECK-LABEL: gpu.module @big_shared
// CHECK-SAME: kiln.ptx = "
// CHECK-NOT: __wg_
// CHECK-SAME: .extern .shared .align 16 .b8 __dynamic_shmem__0[];
// CHECK-NOT: __wg_
// CHECK-SAME: kiln.shared_bytes = 65552 : i32
module attributes {gpu.container_module} {
  gpu.module @big_shared {
    gpu.func @two_buffers(%in: memref<16384xf32>, %out: memref<16384xf32>) kernel attributes {known_block_size = array<i32: 64, 1, 1>} {
      %tid = gpu.thread_id x
      %sums = memref.alloc() {alignment = 16 : i64} : memref<128x128xf32, #gpu.address_space<workgroup>>
      %flag = memref.alloc() {alignment = 16 : i64} : memref<3xf32, #gpu.address_space<workgroup>>
      %c0 = arith.constant 0 : index
      %x = memref.load %in[%tid] : memref<16384xf32>
      memref.store %x, %sums[%tid, %tid] : memref<128x128xf32, #gpu.address_space<workgroup>>
      memref.store %x, %flag[%c0] : memref<3xf32, #gpu.address_space<workgroup>>
      gpu.barrier
      %y = memref.load %sums[%c0, %tid] : memref<128x128xf32, #gpu.address_space<workgroup>>
      %z = memref.load %flag[%c0] : memref<3xf32, #gpu.address_space<workgroup>>
      %s = arith.addf %y, %z : f32
      memref.store %s, %out[%tid] : memref<16384xf32>
      gpu.return
    }
  }
}

// -----

// Dynamic shared memory is aligned to 16 bytes, and its size is the
// module's: a buffer asking for more alignment, or a second kernel in the
// module, is an error.
module attributes {gpu.container_module} {
  gpu.module @aligned_64 {
    gpu.func @stage(%in: memref<16384xf32>) kernel attributes {known_block_size = array<i32: 64, 1, 1>} {
      %tid = gpu.thread_id x
      // expected-error @+1 {{kiln-cuda-compile-kernels: workgroup memory past 48 KiB is dynamic shared memory, aligned to 16 bytes, not 64}}
      %shared = memref.alloc() {alignment = 64 : i64} : memref<16384xf32, #gpu.address_space<workgroup>>
      %x = memref.load %in[%tid] : memref<16384xf32>
      memref.store %x, %shared[%tid] : memref<16384xf32, #gpu.address_space<workgroup>>
      gpu.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @two_kernels {
    gpu.func @small(%in: memref<64xf32>) kernel attributes {known_block_size = array<i32: 64, 1, 1>} {
      gpu.return
    }
    // expected-error @+1 {{kiln-cuda-compile-kernels: a kernel of more than 48 KiB of workgroup memory must be its gpu.module's only one}}
    gpu.func @big(%in: memref<16384xf32>) kernel attributes {known_block_size = array<i32: 64, 1, 1>} {
      %tid = gpu.thread_id x
      %shared = memref.alloc() {alignment = 16 : i64} : memref<16384xf32, #gpu.address_space<workgroup>>
      %x = memref.load %in[%tid] : memref<16384xf32>
      memref.store %x, %shared[%tid] : memref<16384xf32, #gpu.address_space<workgroup>>
      gpu.return
    }
  }
}

// -----

// More shared memory than a chip gives a workgroup (256 KiB; sm_80: 163
// KiB, sm_90a: 227) is an error naming the module, the bytes and the
// chip's limit; the module beside it compiles (in parallel) as usual.
module attributes {gpu.container_module} {
  gpu.module @fits {
    gpu.func @copy(%in: memref<64xf32>, %out: memref<64xf32>) kernel attributes {known_block_size = array<i32: 64, 1, 1>} {
      %tid = gpu.thread_id x
      %x = memref.load %in[%tid] : memref<64xf32>
      memref.store %x, %out[%tid] : memref<64xf32>
      gpu.return
    }
  }
  // expected-error @+1 {{kiln-cuda-compile-kernels: kernel module 'too_much_shared' takes 262144 bytes of shared memory; sm_}}
  gpu.module @too_much_shared {
    gpu.func @stage(%in: memref<65536xf32>, %out: memref<65536xf32>) kernel attributes {known_block_size = array<i32: 64, 1, 1>} {
      %tid = gpu.thread_id x
      %shared = memref.alloc() : memref<65536xf32, #gpu.address_space<workgroup>>
      %x = memref.load %in[%tid] : memref<65536xf32>
      memref.store %x, %shared[%tid] : memref<65536xf32, #gpu.address_space<workgroup>>
      gpu.barrier
      %c = arith.constant 65535 : index
      %r = arith.subi %c, %tid : index
      %y = memref.load %shared[%r] : memref<65536xf32, #gpu.address_space<workgroup>>
      memref.store %y, %out[%tid] : memref<65536xf32>
      gpu.return
    }
  }
}

// -----

// A kernel ptxas refuses (an instruction it does not know) is an error
// naming its module and chip, with ptxas's words.
module attributes {gpu.container_module} {
  // expected-error @+1 {{kiln-cuda-compile-kernels: ptxas refused kernel module 'unknown_instruction' for sm_}}
  gpu.module @unknown_instruction {
    gpu.func @bad() kernel attributes {known_block_size = array<i32: 32, 1, 1>} {
      llvm.inline_asm has_side_effects "no.such.instruction;", "" : () -> ()
      gpu.return
    }
  }
}
