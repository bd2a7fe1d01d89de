//===- HostEval.cpp - evaluate ONNX ops on compile-time tensors -----------===//
#include "frontend/onnx/HostEval.h"

namespace kiln::onnx_frontend {

namespace {

/// Maps each flat index of the broadcast result to flat indices of the
/// operands (numpy rules); false if the shapes do not broadcast.
bool broadcastIndices(llvm::ArrayRef<const HostTensor *> operands, std::vector<int64_t> &shape,
                      std::vector<std::vector<int64_t>> &indices) {
  size_t rank = 0;
  for (const HostTensor *t : operands)
    rank = std::max(rank, t->shape.size());
  shape.assign(rank, 1);
  for (const HostTensor *t : operands)
    for (size_t i = 0; i < t->shape.size(); ++i) {
      int64_t &d = shape[rank - t->shape.size() + i], s = t->shape[i];
      if (d != s && d != 1 && s != 1)
        return false;
      if (d == 1)
        d = s;
    }
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  if (n > kMaxHostElements)
    return false;
  indices.assign(operands.size(), std::vector<int64_t>(n));
  for (int64_t flat = 0; flat < n; ++flat) {
    for (size_t k = 0; k < operands.size(); ++k) {
      const std::vector<int64_t> &s = operands[k]->shape;
      int64_t rem = flat, src = 0, stride = 1;
      for (size_t d = rank; d-- > 0;) {
        int64_t coord = rem % shape[d];
        rem /= shape[d];
        size_t od = d + s.size();
        if (od < rank)
          continue; // operand has no such dimension
        int64_t size = s[od - rank];
        src += (size == 1 ? 0 : coord) * stride;
        stride *= size;
      }
      indices[k][flat] = src;
    }
  }
  return true;
}

} // namespace

std::optional<HostTensor> hostBinary(const HostTensor &a, const HostTensor &b, FloatFn f,
                                     IntFn i, int32_t resultDtype) {
  std::vector<int64_t> shape;
  std::vector<std::vector<int64_t>> idx;
  if (a.isFloat() != b.isFloat() || !broadcastIndices({&a, &b}, shape, idx))
    return std::nullopt;
  HostTensor r;
  r.dtype = resultDtype ? resultDtype : a.dtype;
  r.shape = shape;
  size_t n = idx[0].size();
  for (size_t k = 0; k < n; ++k) {
    if (a.isFloat()) {
      double v = f(a.floats[idx[0][k]], b.floats[idx[1][k]]);
      if (r.isFloat())
        r.floats.push_back(v);
      else
        r.ints.push_back(static_cast<int64_t>(v));
    } else {
      int64_t v = i(a.ints[idx[0][k]], b.ints[idx[1][k]]);
      if (r.isFloat())
        r.floats.push_back(static_cast<double>(v));
      else
        r.ints.push_back(v);
    }
  }
  return r;
}

std::optional<HostTensor> hostWhere(const HostTensor &c, const HostTensor &x,
                                    const HostTensor &y) {
  std::vector<int64_t> shape;
  std::vector<std::vector<int64_t>> idx;
  if (c.isFloat() || x.dtype != y.dtype || !broadcastIndices({&c, &x, &y}, shape, idx))
    return std::nullopt;
  HostTensor r;
  r.dtype = x.dtype;
  r.shape = shape;
  for (size_t k = 0; k < idx[0].size(); ++k) {
    const HostTensor &src = c.ints[idx[0][k]] ? x : y;
    int64_t at = c.ints[idx[0][k]] ? idx[1][k] : idx[2][k];
    if (r.isFloat())
      r.floats.push_back(src.floats[at]);
    else
      r.ints.push_back(src.ints[at]);
  }
  return r;
}

} // namespace kiln::onnx_frontend
