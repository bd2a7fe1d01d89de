// RUN: kiln-opt %s --pass-pipeline='builtin.module(kiln-spirv-convert-gpu,spirv.module(spirv-lower-abi-attrs,spirv-update-vce),kiln-spirv-serialize-kernels)' | FileCheck %s

// Each kernel's spirv.module becomes SPIR-V words (magic number 0x07230203
// first) on its gpu.module, with the features it needs that a device may
// lack: 64-bit integers here (KILN_GPU_FEATURE_INT64 = 1). The
// spirv.module is gone; the gpu.module stays for the launches.
// CHECK-NOT: spirv.module
// CHECK: gpu.module @kernels attributes {kiln.features = 1 : i32, kiln.spirv = dense<"0x03022307{{[0-9A-F]+}}"> : tensor<{{[0-9]+}}xi32>}
// CHECK:   gpu.func @widen
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @widen(%in: memref<8xi32>, %out: memref<8xi64>) kernel attributes {known_block_size = array<i32: 8, 1, 1>} {
      %i = gpu.thread_id x
      %x = memref.load %in[%i] : memref<8xi32>
      %y = arith.extsi %x : i32 to i64
      memref.store %y, %out[%i] : memref<8xi64>
      gpu.return
    }
  }
}
