// RUN: kiln-opt %s --split-input-file --verify-diagnostics --kiln-spirv-convert-gpu | FileCheck %s

// A kernel's spirv.module sits beside its gpu.module, for Vulkan 1.1: its
// known_block_size becomes its entry point's workgroup size (LocalSize,
// once spirv-lower-abi-attrs runs); each memref argument a storage buffer
// at (set 0, binding = index); a private alloca a Function variable; erf a
// polynomial (GLSL has none), exp GLSL's own.
// CHECK: spirv.module @__spv__kernels Logical GLSL450
// CHECK-SAME: spirv.target_env = #spirv.target_env<#spirv.vce<v1.3, [Shader, Int64, Int16, Int8, Float16, Float64, StorageBuffer16BitAccess, StorageBuffer8BitAccess], [SPV_KHR_storage_buffer_storage_class, SPV_KHR_16bit_storage, SPV_KHR_8bit_storage]>, api=Vulkan
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

// Buffers keep the host's layout: f16, int8 and bool (a byte) elements
// stay 2 and 1 bytes wide, not widened to 32-bit words.
// CHECK-LABEL: spirv.module @__spv__narrow
// CHECK: spirv.func @widen(
// CHECK-SAME: !spirv.array<8 x f16, stride=2>
// CHECK-SAME: !spirv.array<8 x i8, stride=1>
// CHECK-SAME: !spirv.array<8 x i8, stride=1>
// CHECK-SAME: !spirv.array<8 x f32, stride=4>
module attributes {gpu.container_module} {
  gpu.module @narrow {
    gpu.func @widen(%h: memref<8xf16>, %q: memref<8xi8>, %m: memref<8xi1>, %out: memref<8xf32>) kernel attributes {known_block_size = array<i32: 8, 1, 1>} {
      %i = gpu.thread_id x
      %x = memref.load %h[%i] : memref<8xf16>
      %y = memref.load %q[%i] : memref<8xi8>
      %keep = memref.load %m[%i] : memref<8xi1>
      %xf = arith.extf %x : f16 to f32
      %yf = arith.sitofp %y : i8 to f32
      %sum = arith.addf %xf, %yf : f32
      %zero = arith.constant 0.0 : f32
      %r = arith.select %keep, %sum, %zero : f32
      memref.store %r, %out[%i] : memref<8xf32>
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

// -----

// 64-bit compares of index values (Trilu's column against its diagonal)
// compare the 32-bit indices: with a constant that fits in 32 bits, or with
// another index. A constant that does not fit keeps the 64-bit compare.
// CHECK-LABEL: spirv.module @__spv__diagonal
// CHECK: spirv.func @tril(
// CHECK:   %[[ZERO:.*]] = spirv.Constant 0 : i32
// CHECK:   %[[J:.*]] = spirv.CompositeExtract %{{.*}}[0 : i32] : vector<3xi32>
// CHECK:   %[[I:.*]] = spirv.CompositeExtract %{{.*}}[0 : i32] : vector<3xi32>
// CHECK:   %[[J64:.*]] = spirv.SConvert %[[J]] : i32 to i64
// CHECK:   spirv.SLessThanEqual %[[J]], %[[ZERO]] : i32
// CHECK:   spirv.SLessThanEqual %[[J]], %[[I]] : i32
// CHECK:   spirv.SLessThan %[[J64]], %{{.*}} : i64
module attributes {gpu.container_module} {
  gpu.module @diagonal {
    gpu.func @tril(%in: memref<8xi64>, %out: memref<8xi64>) kernel attributes {known_block_size = array<i32: 8, 1, 1>} {
      %j = gpu.thread_id x
      %i = gpu.block_id x
      %zero = arith.constant 0 : i64
      %huge = arith.constant 8589934592 : i64
      %j64 = arith.index_cast %j : index to i64
      %i64 = arith.index_cast %i : index to i64
      %x = memref.load %in[%j] : memref<8xi64>
      %onDiagonal = arith.cmpi sle, %j64, %zero : i64
      %below = arith.cmpi sle, %j64, %i64 : i64
      %small = arith.cmpi slt, %j64, %huge : i64
      %keep = arith.andi %onDiagonal, %below : i1
      %keep2 = arith.andi %keep, %small : i1
      %y = arith.select %keep2, %x, %zero : i64
      memref.store %y, %out[%j] : memref<8xi64>
      gpu.return
    }
  }
}

// -----

// Workgroup memory (kiln-gpu-promote-operands' buffers) is a Workgroup
// variable of the module; gpu.barrier a control barrier of the workgroup.
// CHECK: spirv.module
// CHECK:   spirv.GlobalVariable @[[SHARED:.*]] : !spirv.ptr<!spirv.struct<(!spirv.array<64 x f32>)>, Workgroup>
// CHECK:   spirv.func @reverse
// CHECK:     spirv.mlir.addressof @[[SHARED]]
// CHECK:     spirv.Store "Workgroup"
// CHECK:     spirv.ControlBarrier <Workgroup>, <Workgroup>, <AcquireRelease|WorkgroupMemory>
// CHECK:     spirv.Load "Workgroup"
module attributes {gpu.container_module} {
  gpu.module @staged {
    gpu.func @reverse(%in: memref<64xf32>, %out: memref<64xf32>) kernel attributes {known_block_size = array<i32: 64, 1, 1>} {
      %c63 = arith.constant 63 : index
      %tid = gpu.thread_id x
      %shared = memref.alloc() : memref<64xf32, #gpu.address_space<workgroup>>
      %x = memref.load %in[%tid] : memref<64xf32>
      memref.store %x, %shared[%tid] : memref<64xf32, #gpu.address_space<workgroup>>
      gpu.barrier
      %r = arith.subi %c63, %tid : index
      %y = memref.load %shared[%r] : memref<64xf32, #gpu.address_space<workgroup>>
      memref.store %y, %out[%tid] : memref<64xf32>
      gpu.return
    }
  }
}
