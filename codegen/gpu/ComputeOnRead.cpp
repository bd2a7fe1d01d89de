//===- ComputeOnRead.cpp - buffers computed where the kernels read them ---===//
//
// A convolution's receptive fields (kiln-gpu-conv-as-matmul) are a copy of
// its input, KH*KW times as large, that one kernel would write and the
// matmul's read once. Instead, each load of the fields computes its
// element from the input: the matmul stages its chunks of fields in shared
// memory straight from the input (an implicit GEMM), and neither the copy
// nor its buffer exists. Marked ops that read each other (the fields of
// an input rounded to 16 bits) are done readers first.
//
//===----------------------------------------------------------------------===//
#include "codegen/gpu/DeviceBuffers.h"
#include "codegen/gpu/Passes.h"

#include "mlir/Dialect/Affine/Utils.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/Transforms/Transforms.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNGPUCOMPUTEONREAD
#include "codegen/gpu/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using namespace mlir::kiln;

namespace {

/// Why `writer` cannot be computed element by element where it is read, or
/// null: it must write one new buffer (a memref.alloc) through an identity
/// map, every loop parallel, its body reading nothing but its inputs'
/// elements, its indices and loads of buffers.
const char *whyNotRecomputable(linalg::GenericOp writer) {
  if (!writer.hasPureBufferSemantics() || writer.getNumDpsInits() != 1 ||
      writer.getNumReductionLoops() != 0)
    return "it is not a parallel op on buffers with one output";
  OpOperand *output = writer.getDpsInitOperand(0);
  if (!writer.getMatchingIndexingMap(output).isIdentity() ||
      !output->get().getDefiningOp<memref::AllocOp>())
    return "its output is not a whole buffer of its own";
  if (!writer.getMatchingBlockArgument(output).use_empty())
    return "it reads its output";
  for (Operation &op : writer.getRegion().front().without_terminator())
    if (!isPure(&op) && !isa<memref::LoadOp>(op))
      return "its body has side effects";
  return nullptr;
}

/// The ops that use `buffer` other than through views (collected in
/// `views`, producers first).
SmallVector<Operation *> readersOf(Value buffer, SmallVectorImpl<Operation *> &views) {
  SmallVector<Operation *> readers;
  for (Operation *user : buffer.getUsers()) {
    auto view = dyn_cast<ViewLikeOpInterface>(user);
    if (view && view.getViewSource() == buffer) {
      views.push_back(user);
      llvm::append_range(readers, readersOf(user->getResult(0), views));
    } else {
      readers.push_back(user);
    }
  }
  return readers;
}

/// The element `writer` writes at `indices`, computed at the builder: its
/// body, its inputs' elements loaded at their maps' indices.
Value computeElement(OpBuilder &b, Location loc, linalg::GenericOp writer, ValueRange indices) {
  Block &body = writer.getRegion().front();
  IRMapping mapping;
  for (OpOperand *input : writer.getDpsInputOperands()) {
    std::optional<SmallVector<Value>> at =
        affine::expandAffineMap(b, loc, writer.getMatchingIndexingMap(input), indices);
    mapping.map(writer.getMatchingBlockArgument(input),
                memref::LoadOp::create(b, loc, input->get(), *at));
  }
  for (Operation &op : body.without_terminator()) {
    if (auto index = dyn_cast<linalg::IndexOp>(op))
      mapping.map(index.getResult(), indices[index.getDim()]);
    else
      b.clone(op, mapping);
  }
  return mapping.lookupOrDefault(body.getTerminator()->getOperand(0));
}

/// The buffers `writer` reads (roots), where it is: the values it reads.
DenseSet<Value> buffersRead(linalg::GenericOp writer) {
  DenseSet<Value> read;
  for (Value input : writer.getDpsInputs())
    read.insert(rootBuffer(input));
  writer.getRegion().walk([&](memref::LoadOp load) { read.insert(rootBuffer(load.getMemRef())); });
  return read;
}

/// Whether `op` (or an op in it) may write one of `buffers`. An op of
/// unknown effects may where it has a buffer operand (a call); one that
/// has none (a barrier) names no buffer to write.
bool mayWrite(Operation *op, const DenseSet<Value> &buffers) {
  return mayAccessBuffers(
      op, /*writesOnly=*/true, [&](Value root) { return buffers.contains(root); },
      [](Operation *inner) {
        return llvm::none_of(inner->getOperandTypes(), llvm::IsaPred<BaseMemRefType>);
      });
}

/// The first op that may change a buffer `writer` reads before one of
/// `readers` reads it, or null: an op after `writer` in its block, up to
/// and including the last reader's (a kernel may not write the input its
/// fields come from), that may write one; or `writer` where a reader's
/// op is not after it. (kiln-gpu-conv-as-matmul's matmul
/// follows its fields; kiln-gpu-unshare-empty-tensors keeps bufferization
/// from giving the matmul's results the input's buffer.)
Operation *inputChangedBy(linalg::GenericOp writer, ArrayRef<Operation *> readers) {
  Block *block = writer->getBlock();
  Operation *last = writer;
  for (Operation *reader : readers) {
    Operation *at = block->findAncestorOpInBlock(*reader);
    if (!at || at->isBeforeInBlock(writer))
      return writer;
    if (last->isBeforeInBlock(at))
      last = at;
  }
  DenseSet<Value> read = buffersRead(writer);
  for (Operation *op = writer->getNextNode(); op != last->getNextNode(); op = op->getNextNode())
    if (mayWrite(op, read))
      return op;
  return nullptr;
}

/// Replaces every read of `writer`'s buffer by the element's computation,
/// then removes `writer`, its buffer and its views. Linalg ops that read
/// the buffer (a matmul whose operands were not staged) become loops first;
/// each load goes through the views onto the buffer (upstream's
/// fold-memref-alias-ops patterns) and becomes computeElement.
LogicalResult computeOnRead(RewriterBase &rewriter, linalg::GenericOp writer) {
  if (const char *why = whyNotRecomputable(writer))
    return writer.emitError("kiln-gpu-compute-on-read: cannot compute this op where it is read: ")
           << why;
  Value buffer = writer.getDpsInits()[0];
  SmallVector<Operation *> views;
  for (Operation *reader : readersOf(buffer, views)) {
    auto linalgOp = dyn_cast<linalg::LinalgOp>(reader);
    if (!linalgOp || reader == writer)
      continue;
    rewriter.setInsertionPoint(reader);
    if (failed(linalg::linalgOpToLoops(rewriter, linalgOp)))
      return reader->emitError("kiln-gpu-compute-on-read: cannot lower this reader to loops");
    rewriter.eraseOp(reader);
  }
  views.clear();
  SmallVector<Operation *> loads, reads;
  for (Operation *reader : readersOf(buffer, views)) {
    if (reader == writer || isa<memref::DeallocOp>(reader))
      continue;
    if (!isa<memref::LoadOp, memref::DimOp>(reader))
      return reader->emitError("kiln-gpu-compute-on-read: cannot compute what this op reads");
    if (isa<memref::LoadOp>(reader))
      loads.push_back(reader);
    reads.push_back(reader);
  }
  if (Operation *changer = inputChangedBy(writer, loads)) {
    InFlightDiagnostic error =
        writer.emitError("kiln-gpu-compute-on-read: its inputs change before it is read");
    error.attachNote(changer->getLoc()) << "written here";
    return error;
  }
  // Loads onto the buffer itself; sizes of views (an edge tile's) from the
  // views' operands.
  RewritePatternSet patterns(rewriter.getContext());
  memref::populateFoldMemRefAliasOpPatterns(patterns);
  memref::DimOp::getCanonicalizationPatterns(patterns, rewriter.getContext());
  GreedyRewriteConfig config;
  config.setStrictness(GreedyRewriteStrictness::ExistingAndNewOps);
  (void)applyOpPatternsGreedily(reads, std::move(patterns), config);

  views.clear();
  for (Operation *reader : readersOf(buffer, views)) {
    if (reader == writer || isa<memref::DeallocOp>(reader))
      continue;
    auto load = dyn_cast<memref::LoadOp>(reader);
    if (!load || load.getMemRef() != buffer)
      return reader->emitError("kiln-gpu-compute-on-read: cannot see which element this op "
                               "reads");
    rewriter.setInsertionPoint(load);
    rewriter.replaceOp(load, computeElement(rewriter, load.getLoc(), writer, load.getIndices()));
  }
  rewriter.eraseOp(writer);
  for (Operation *view : llvm::reverse(views))
    if (view->use_empty())
      rewriter.eraseOp(view);
  for (Operation *user : llvm::make_early_inc_range(buffer.getUsers()))
    if (isa<memref::DeallocOp>(user))
      rewriter.eraseOp(user);
  if (!buffer.use_empty())
    return buffer.getDefiningOp()->emitError(
        "kiln-gpu-compute-on-read: the buffer is still used");
  rewriter.eraseOp(buffer.getDefiningOp());
  return success();
}

struct KilnGpuComputeOnReadPass
    : mlir::kiln::impl::KilnGpuComputeOnReadBase<KilnGpuComputeOnReadPass> {
  void runOnOperation() override {
    SmallVector<linalg::GenericOp> writers;
    getOperation().walk([&](linalg::GenericOp op) {
      if (op->hasAttr(kComputedOnRead))
        writers.push_back(op);
    });
    // Readers first: the fields' loads become loads of the rounding they
    // read, which then become the rounding of the input's.
    IRRewriter rewriter(&getContext());
    for (linalg::GenericOp writer : llvm::reverse(writers))
      if (failed(computeOnRead(rewriter, writer)))
        return signalPassFailure();
  }
};

} // namespace
