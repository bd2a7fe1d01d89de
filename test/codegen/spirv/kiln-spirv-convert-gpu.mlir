// RUN: kiln-opt %s --split-input-file --verify-diagnostics --kiln-spirv-convert-gpu | FileCheck %s

// A kernel's spirv.module sits beside its gpu.module, for Vulkan 1.1: its
// known_block_size becomes its entry point's workgroup size (LocalSize,
// once spirv-lower-abi-attrs runs); each memref argument a storage buffer
// at (set 0, binding = index); a private alloca a Function variable; erf a
// polynomial (GLSL has none), exp GLSL's own.
// CHECK: spirv.module @__spv__kernels Logical GLSL450
// CHECK-SAME: spirv.target_env = #spirv.target_env<#spirv.vce<v1.3, [Shader, Int64], [SPV_KHR_storage_buffer_storage_class]>, api=Vulkan
// CHECK: spirv.func @gelu(
// CHECK-SAME: !spirv.ptr<!spirv.struct<(!spirv.array<256 x f32, stride=4> [0])>, StorageBuffer> {spirv.interface_var_abi = #spirv.interface_var_abi<(0, 0)>}
// CHECK-SAME: !spirv.ptr<!spirv.struct<(!spirv.array<256 x f32, stride=4> [0])>, StorageBuffer> {spirv.interface_var_abi = #spirv.interface_var_abi<(0, 1)>}
// CHECK-SAME: spirv.entry_point_abi = #spirv.entry_point_abi<workgroup_size = [64, 1, 1]>
// CHECK:   spirv.Variable : !spirv.ptr<!spirv.struct<(!spirv.array<4 x f32>)>, Function>
// CHECK:   spirv.GL.Exp
// CHECK-NOT: math.
// CHECK: spirv.Return
// The gpu.module stays for the launches that name it.
// CHECK: gpu.module @kernels
// CHECK:   gpu.func @gelu
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @gelu(%in: memref<256xf32>, %out: memref<256xf32>) kernel attributes {known_block_size = array<i32: 64, 1, 1>} {
      %c0 = arith.constant 0 : index
      %tid = gpu.thread_id x
      %bid = gpu.block_id x
      %c64 = arith.constant 64 : index
      %base = arith.muli %bid, %c64 : index
      %i = arith.addi %base, %tid : index
      %scratch = memref.alloca() : memref<4xf32, #gpu.address_space<private>>
      %x = memref.load %in[%i] : memref<256xf32>
      %e = math.erf %x : f32
      %y = math.exp %e : f32
      memref.store %y, %scratch[%c0] : memref<4xf32, #gpu.address_space<private>>
      %z = memref.load %scratch[%c0] : memref<4xf32, #gpu.address_space<private>>
      memref.store %z, %out[%i] : memref<256xf32>
      gpu.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @kernels {
    // expected-error @+1 {{kiln-spirv-convert-gpu: kernel has no known_block_size}}
    gpu.func @unsized(%out: memref<4xf32>) kernel {
      gpu.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @kernels {
    // expected-error @+1 {{kiln-spirv-convert-gpu: kernel argument 1 is a view with dynamic strides or offset ('memref<4xf32, strided<[1], offset: ?>>'); kernels take whole buffers or static views}}
    gpu.func @view(%in: memref<4xf32>, %out: memref<4xf32, strided<[1], offset: ?>>) kernel attributes {known_block_size = array<i32: 4, 1, 1>} {
      gpu.return
    }
  }
}
