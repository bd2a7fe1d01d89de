// RUN: kiln-opt %s --pass-pipeline='builtin.module(kiln-spirv-convert-gpu,spirv.module(spirv-lower-abi-attrs,spirv-update-vce),kiln-spirv-serialize-kernels,kiln-gpu-embed-kernels,kiln-metal-translate-kernels)' | FileCheck %s

// The kernel's SPIR-V becomes MSL: a `kernel void` whose buffers are bound
// to [[buffer(i)]] in argument order (as its Vulkan bindings are), and the
// workgroup and thread ids as Metal's threadgroup positions; the workgroup
// size stays in the dictionary.
// CHECK: kiln.gpu_kernels = [{buffers = 2 : i32, features = 0 : i32, msl = "#include <metal_stdlib>
// CHECK-SAME: kernel void scale(device {{[^ ]+}} {{[^ ]+}} {{\[\[}}buffer(0){{\]\]}}, device {{[^ ]+}} {{[^ ]+}} {{\[\[}}buffer(1){{\]\]}}, uint3 gl_WorkGroupID {{\[\[}}threadgroup_position_in_grid{{\]\]}}, uint3 gl_LocalInvocationID {{\[\[}}thread_position_in_threadgroup{{\]\]}})
// CHECK-SAME: (gl_WorkGroupID.x * 64u) + gl_LocalInvocationID.x
// CHECK-SAME: * 2.0;
// CHECK-SAME: name = "scale", workgroup_size = array<i32: 64, 1, 1>}]
// CHECK-NOT: spirv =
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @scale(%in: memref<256xf32>, %out: memref<256xf32>) kernel attributes {known_block_size = array<i32: 64, 1, 1>} {
      %tid = gpu.thread_id x
      %bid = gpu.block_id x
      %c64 = arith.constant 64 : index
      %base = arith.muli %bid, %c64 : index
      %i = arith.addi %base, %tid : index
      %x = memref.load %in[%i] : memref<256xf32>
      %two = arith.constant 2.0 : f32
      %y = arith.mulf %x, %two : f32
      memref.store %y, %out[%i] : memref<256xf32>
      gpu.return
    }
  }
  func.func @main(%in: memref<256xf32>, %out: memref<256xf32>) {
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c64 = arith.constant 64 : index
    gpu.launch_func @kernels::@scale blocks in (%c4, %c1, %c1) threads in (%c64, %c1, %c1) args(%in : memref<256xf32>, %out : memref<256xf32>)
    return
  }
}
