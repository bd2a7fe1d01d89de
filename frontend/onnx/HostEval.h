//===- HostEval.h - evaluate ONNX ops on compile-time tensors ---*- C++ -*-===//
//
// Shape arithmetic in ONNX graphs (Shape -> Sub -> Concat -> Reshape, ...) is
// evaluated while importing, so kiln sees static shapes. These helpers
// compute elementwise ops on HostTensors with numpy broadcasting.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_FRONTEND_ONNX_HOSTEVAL_H
#define KILN_FRONTEND_ONNX_HOSTEVAL_H

#include "frontend/onnx/ImportContext.h"

#include <cmath>
#include <optional>

namespace kiln::onnx_frontend {

/// Host tensors larger than this stay run-time computations.
constexpr int64_t kMaxHostElements = 1 << 20;

using FloatFn = llvm::function_ref<double(double, double)>;
using IntFn = llvm::function_ref<int64_t(int64_t, int64_t)>;

/// a op b with broadcasting; the result has `resultDtype` (the operands'
/// when 0). Returns nullopt when the shapes do not broadcast or the result is
/// too large.
std::optional<HostTensor> hostBinary(const HostTensor &a, const HostTensor &b, FloatFn f,
                                     IntFn i, int32_t resultDtype = 0);

/// condition ? x : y with broadcasting.
std::optional<HostTensor> hostWhere(const HostTensor &c, const HostTensor &x,
                                    const HostTensor &y);

} // namespace kiln::onnx_frontend

#endif
