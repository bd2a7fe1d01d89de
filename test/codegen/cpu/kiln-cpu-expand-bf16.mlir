// RUN: kiln-opt %s --kiln-cpu-expand-bf16 --split-input-file | FileCheck %s

// f32 -> bf16: rounded to nearest even in i32 (bits + 0x7fff + the lowest
// kept bit), the upper half kept; a NaN becomes the quiet NaN 0x7fc0.
// bf16 -> f32: the bits shifted into the upper half.
// CHECK-LABEL: func.func @scalar
// CHECK-DAG: %[[ONE:.*]] = arith.constant 1 : i32
// CHECK-DAG: %[[SIXTEEN:.*]] = arith.constant 16 : i32
// CHECK-DAG: %[[QNAN:.*]] = arith.constant 32704 : i16
// CHECK-DAG: %[[HALF:.*]] = arith.constant 32767 : i32
// CHECK: %[[NAN:.*]] = arith.cmpf une, %arg0, %arg0 : f32
// CHECK: %[[BITS:.*]] = arith.bitcast %arg0 : f32 to i32
// CHECK: %[[KEPT:.*]] = arith.shrui %[[BITS]], %[[SIXTEEN]]
// CHECK: %[[LSB:.*]] = arith.andi %[[KEPT]], %[[ONE]]
// CHECK: %[[BIAS:.*]] = arith.addi %[[LSB]], %[[HALF]]
// CHECK: %[[ROUNDED:.*]] = arith.addi %[[BITS]], %[[BIAS]]
// CHECK: %[[UPPER:.*]] = arith.shrui %[[ROUNDED]], %[[SIXTEEN]]
// CHECK: %[[NARROW:.*]] = arith.trunci %[[UPPER]] : i32 to i16
// CHECK: %[[SELECTED:.*]] = arith.select %[[NAN]], %[[QNAN]], %[[NARROW]] : i16
// CHECK: %[[T:.*]] = arith.bitcast %[[SELECTED]] : i16 to bf16
// CHECK: %[[I16:.*]] = arith.bitcast %arg1 : bf16 to i16
// CHECK: %[[I32:.*]] = arith.extui %[[I16]] : i16 to i32
// CHECK: %[[SHIFTED:.*]] = arith.shli %[[I32]], %[[SIXTEEN]] : i32
// CHECK: %[[E:.*]] = arith.bitcast %[[SHIFTED]] : i32 to f32
// CHECK: return %[[T]], %[[E]]
// CHECK-NOT: arith.truncf
// CHECK-NOT: arith.extf
func.func @scalar(%x: f32, %y: bf16) -> (bf16, f32) {
  %t = arith.truncf %x : f32 to bf16
  %e = arith.extf %y : bf16 to f32
  return %t, %e : bf16, f32
}

// -----

// Vectors alike.
// CHECK-LABEL: func.func @vector
// CHECK: arith.bitcast %arg0 : vector<8xf32> to vector<8xi32>
// CHECK: arith.select {{.*}} : vector<8xi1>, vector<8xi16>
// CHECK: arith.bitcast {{.*}} : vector<8xi16> to vector<8xbf16>
// CHECK-NOT: arith.truncf
func.func @vector(%x: vector<8xf32>) -> vector<8xbf16> {
  %t = arith.truncf %x : vector<8xf32> to vector<8xbf16>
  return %t : vector<8xbf16>
}

// -----

// Nothing else: f16 has its instructions (F16C), and the rest of
// arith-expand's rewrites (maximumf, ...) are not this pass's.
// CHECK-LABEL: func.func @untouched
// CHECK-NEXT: arith.truncf %arg0 : f32 to f16
// CHECK-NEXT: arith.maximumf %arg0, %arg1 : f32
func.func @untouched(%x: f32, %y: f32) -> (f16, f32) {
  %h = arith.truncf %x : f32 to f16
  %m = arith.maximumf %x, %y : f32
  return %h, %m : f16, f32
}
