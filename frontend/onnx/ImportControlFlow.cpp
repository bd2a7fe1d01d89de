//===- ImportControlFlow.cpp - ONNX If --------------------------------------===//
//
// If with a compile-time condition inlines the taken branch. With a run-time
// condition both branches are inlined (they have no side effects) and each
// output is selected with kiln.where, which needs matching branch types.
//
//===----------------------------------------------------------------------===//
#include "frontend/onnx/ImportContext.h"

using namespace mlir;
namespace k = mlir::kiln;

namespace kiln::onnx_frontend {

namespace {

const onnx::GraphProto *branch(ImportContext &ctx, llvm::StringRef name) {
  for (const auto &a : ctx.node->attribute())
    if (a.name() == name && a.has_g())
      return &a.g();
  return nullptr;
}

/// Imports a branch; returns its outputs (materialized or host).
FailureOr<SmallVector<GraphValue>> importBranch(ImportContext &ctx, const onnx::GraphProto &g) {
  if (failed(importNodes(ctx, g)))
    return failure();
  SmallVector<GraphValue> outs;
  for (const auto &o : g.output()) {
    auto it = ctx.values.find(o.name());
    if (it == ctx.values.end())
      return ctx.fail("branch output '" + o.name() + "' is never produced");
    outs.push_back(it->second);
  }
  return outs;
}

LogicalResult importIf(ImportContext &ctx) {
  const onnx::GraphProto *thenG = branch(ctx, "then_branch"), *elseG = branch(ctx, "else_branch");
  if (!thenG || !elseG)
    return ctx.fail("If needs then_branch and else_branch");
  const onnx::NodeProto *node = ctx.node;
  if (const HostTensor *c = ctx.hostInput(0)) {
    bool taken = c->isFloat() ? c->floats.at(0) != 0 : c->ints.at(0) != 0;
    auto outs = importBranch(ctx, taken ? *thenG : *elseG);
    if (failed(outs))
      return failure();
    ctx.node = node;
    for (auto [i, v] : llvm::enumerate(*outs))
      if (i < (size_t)node->output_size() && !node->output(i).empty())
        ctx.values[node->output(i)] = v;
    return success();
  }
  auto cond = ctx.input(0);
  if (failed(cond))
    return failure();
  auto explain = [&] {
    llvm::errs() << "note: If '" << node->name()
                 << "' has a run-time condition, so both branches are compiled for the pinned "
                    "shapes; if the inputs deciding it are fixed in your use, bind them with "
                    "--input-value NAME=VALUE\n";
    return failure();
  };
  auto thenOuts = importBranch(ctx, *thenG);
  if (failed(thenOuts))
    return explain();
  ctx.node = node;
  auto elseOuts = importBranch(ctx, *elseG);
  if (failed(elseOuts))
    return explain();
  ctx.node = node;
  Emitter e{ctx};
  Value c = e.reshape(*cond, {});
  for (size_t i = 0; i < thenOuts->size() && i < (size_t)node->output_size(); ++i) {
    auto value = [&](GraphValue &gv, llvm::StringRef name) -> FailureOr<Value> {
      if (gv.value)
        return gv.value;
      return ctx.materialize(*gv.host, name);
    };
    auto t = value((*thenOuts)[i], "then"), f = value((*elseOuts)[i], "else");
    if (failed(t) || failed(f))
      return failure();
    if (t->getType() != f->getType())
      return ctx.fail("If with a run-time condition needs branches with the same output types "
                      "(output " + llvm::Twine(i) + " differs)");
    ctx.setOutput(i, k::WhereOp::create(ctx.b, ctx.loc, t->getType(), c, *t, *f));
  }
  return success();
}

} // namespace

void registerControlFlowOps(ImportTable &t) { t["If"] = importIf; }

} // namespace kiln::onnx_frontend
