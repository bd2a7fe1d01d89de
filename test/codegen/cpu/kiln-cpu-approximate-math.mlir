// RUN: kiln-opt %s --kiln-cpu-approximate-math | FileCheck %s

// f32 exp, erf and tanh, scalar or vector, become inline arithmetic.
// CHECK-LABEL: func.func @approximated
// CHECK-NOT: math.exp
// CHECK-NOT: math.erf
// CHECK-NOT: math.tanh
// CHECK: math.fma {{.*}} : vector<16xf32>
// CHECK: return
func.func @approximated(%x: f32, %v: vector<16xf32>) -> (f32, f32, vector<16xf32>) {
  %e = math.exp %x : f32
  %r = math.erf %x : f32
  %t = math.tanh %v : vector<16xf32>
  return %e, %r, %t : f32, f32, vector<16xf32>
}

// Other functions and other element types keep their math ops (libm calls).
// CHECK-LABEL: func.func @kept
// CHECK: math.log %{{.*}} : f32
// CHECK: math.exp %{{.*}} : f64
// CHECK: math.exp %{{.*}} : bf16
func.func @kept(%x: f32, %d: f64, %h: bf16) -> (f32, f64, bf16) {
  %l = math.log %x : f32
  %e = math.exp %d : f64
  %b = math.exp %h : bf16
  return %l, %e, %b : f32, f64, bf16
}
