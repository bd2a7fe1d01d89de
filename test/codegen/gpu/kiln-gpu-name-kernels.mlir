// RUN: kiln-opt %s --split-input-file --verify-diagnostics --kiln-gpu-name-kernels | FileCheck %s
// Named again, the names stay.
// RUN: kiln-opt %s --split-input-file --verify-diagnostics --kiln-gpu-name-kernels --kiln-gpu-name-kernels | FileCheck %s

// Each outlined kernel (and its module) is named after its launch's index
// and the ONNX node of its last linalg op, the one whose result it writes
// (a matmul with its bias and Relu fused in: the Relu's), characters
// outside [A-Za-z0-9_] as `_`; `k<i>` alone where no node is known. The
// launches name the new symbols.
// CHECK: gpu.module @k0__layer_0_Relu
// CHECK:   gpu.func @k0__layer_0_Relu(
// CHECK: gpu.module @k1
// CHECK:   gpu.func @k1(
// CHECK: func.func @main
// CHECK:   gpu.launch_func @k0__layer_0_Relu::@k0__layer_0_Relu
// CHECK:   gpu.launch_func @k1::@k1
module attributes {gpu.container_module} {
  gpu.module @main_kernel {
    gpu.func @main_kernel(%a: memref<4xf32>, %b: memref<4xf32>) kernel {
      linalg.copy ins(%a : memref<4xf32>) outs(%b : memref<4xf32>) loc(#matmul)
      linalg.copy ins(%b : memref<4xf32>) outs(%a : memref<4xf32>) loc(#relu)
      gpu.return
    }
  }
  gpu.module @main_kernel_0 {
    gpu.func @main_kernel(%a: memref<4xf32>) kernel {
      gpu.return
    }
  }
  func.func @main(%a: memref<4xf32>, %b: memref<4xf32>) {
    %c1 = arith.constant 1 : index
    gpu.launch_func @main_kernel::@main_kernel blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%a : memref<4xf32>, %b : memref<4xf32>)
    gpu.launch_func @main_kernel_0::@main_kernel blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%a : memref<4xf32>)
    return
  }
}
#matmul = loc("/layer.0/MatMul"("MatMul"))
#relu = loc("/layer.0/Relu"("Relu"))

// -----

// Two launches of one kernel (which outlining never leaves) are an error.
module attributes {gpu.container_module} {
  gpu.module @main_kernel {
    gpu.func @main_kernel(%a: memref<4xf32>) kernel {
      gpu.return
    }
  }
  func.func @main(%a: memref<4xf32>) {
    %c1 = arith.constant 1 : index
    gpu.launch_func @main_kernel::@main_kernel blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%a : memref<4xf32>)
    // expected-error @+1 {{kiln-gpu-name-kernels: this launch's kernel is not its own}}
    gpu.launch_func @main_kernel::@main_kernel blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%a : memref<4xf32>)
    return
  }
}

// -----

// A name another symbol has already gets a suffix.
// CHECK-LABEL: func.func @k0(
// CHECK: gpu.module @k0_1
// CHECK:   gpu.func @k0_1(
// CHECK: gpu.launch_func @k0_1::@k0_1
module attributes {gpu.container_module} {
  func.func @k0() {
    return
  }
  gpu.module @main_kernel {
    gpu.func @main_kernel(%a: memref<4xf32>) kernel {
      gpu.return
    }
  }
  func.func @main(%a: memref<4xf32>) {
    %c1 = arith.constant 1 : index
    gpu.launch_func @main_kernel::@main_kernel blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%a : memref<4xf32>)
    return
  }
}
