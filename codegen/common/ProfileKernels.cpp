//===- ProfileKernels.cpp - timing calls around each kernel of @main -------===//
#include "codegen/common/Passes.h"
#include "dialects/kiln/KilnDialect.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNPROFILEKERNELS
#include "codegen/common/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;

namespace {

constexpr llvm::StringLiteral kBegin = "kiln_profile_begin", kEnd = "kiln_profile_end";

/// A run of top-level ops of @main timed as one kernel.
struct Kernel {
  Operation *first = nullptr, *last = nullptr;
  std::vector<kiln::OnnxNode> nodes;
  SetVector<Value> buffers; // memrefs its ops use, defined outside them
};

/// Whether an op touches memory: reads or writes, or effects unknown.
bool isWork(Operation *op) {
  std::optional<SmallVector<MemoryEffects::EffectInstance>> effects =
      getEffectsRecursively(op);
  if (!effects)
    return true;
  return llvm::any_of(*effects, [](const MemoryEffects::EffectInstance &e) {
    return isa<MemoryEffects::Read, MemoryEffects::Write>(e.getEffect());
  });
}

/// The memrefs `op` and the ops in its regions use, defined outside it.
void collectBuffers(Operation *op, SetVector<Value> &buffers) {
  op->walk([&](Operation *inner) {
    for (Value v : inner->getOperands())
      if (isa<MemRefType>(v.getType()) && !op->isAncestor(v.getParentRegion()->getParentOp()))
        buffers.insert(v);
  });
}

/// Groups the top-level ops of `body` into kernels.
std::vector<Kernel> findKernels(Block &body) {
  std::vector<Kernel> kernels;
  for (Operation &op : body.without_terminator()) {
    if (!isWork(&op))
      continue;
    std::vector<kiln::OnnxNode> nodes = kiln::onnxNodesOf(op.getLoc());
    auto sameNodes = [&](const Kernel &k) {
      return k.nodes.size() == nodes.size() &&
             llvm::all_of(llvm::zip(k.nodes, nodes),
                          [](auto p) { return std::get<0>(p).name == std::get<1>(p).name; });
    };
    if (kernels.empty() || (!nodes.empty() && !kernels.back().nodes.empty() &&
                            !sameNodes(kernels.back()))) {
      kernels.push_back(Kernel{&op, &op, nodes, {}});
    } else if (kernels.back().nodes.empty()) {
      kernels.back().nodes = nodes; // an unnamed start takes the first name
    }
    kernels.back().last = &op;
    collectBuffers(&op, kernels.back().buffers);
  }
  return kernels;
}

std::string kernelName(const Kernel &k) {
  if (k.nodes.empty())
    return "(unnamed)";
  std::string name;
  for (const kiln::OnnxNode &node : k.nodes)
    name += (name.empty() ? "" : " + ") + node.describe();
  return name;
}

int64_t staticBytes(const SetVector<Value> &buffers) {
  int64_t bytes = 0;
  for (Value v : buffers) {
    auto type = cast<MemRefType>(v.getType());
    if (type.hasStaticShape() && type.getElementType().isIntOrFloat())
      bytes += type.getNumElements() * ((type.getElementTypeBitWidth() + 7) / 8);
  }
  return bytes;
}

void declareHook(ModuleOp module, StringRef name) {
  if (module.lookupSymbol(name))
    return;
  OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
  auto type = b.getFunctionType({b.getI32Type()}, {});
  func::FuncOp::create(b, module.getLoc(), name, type).setPrivate();
}

struct KilnProfileKernelsPass
    : mlir::kiln::impl::KilnProfileKernelsBase<KilnProfileKernelsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto main = module.lookupSymbol<func::FuncOp>("main");
    if (!main || main.isExternal()) {
      module.emitError("kiln-profile-kernels expects a func.func @main with a body");
      return signalPassFailure();
    }
    auto nodeFlops = module->getAttrOfType<DictionaryAttr>("kiln.node_flops");
    declareHook(module, kBegin);
    declareHook(module, kEnd);
    // Kernels of one name (a node's ops split by another's) share an id.
    llvm::StringMap<unsigned> ids;
    std::vector<std::string> names;
    std::vector<int64_t> flops, bytes;
    llvm::StringSet<> counted; // nodes whose flops a kernel already has
    for (const Kernel &kernel : findKernels(main.getBody().front())) {
      auto [it, added] = ids.try_emplace(kernelName(kernel), names.size());
      unsigned id = it->second;
      if (added) {
        names.push_back(it->first().str());
        flops.push_back(0);
        bytes.push_back(0);
      }
      for (const kiln::OnnxNode &node : kernel.nodes) {
        auto count = nodeFlops ? nodeFlops.getAs<IntegerAttr>(node.name) : IntegerAttr();
        if (count && counted.insert(node.name).second)
          flops[id] += count.getInt();
      }
      bytes[id] += staticBytes(kernel.buffers);
      OpBuilder b(kernel.first);
      Value idValue = arith::ConstantIntOp::create(b, kernel.first->getLoc(), id, 32);
      func::CallOp::create(b, kernel.first->getLoc(), kBegin, TypeRange(), ValueRange{idValue});
      b.setInsertionPointAfter(kernel.last);
      func::CallOp::create(b, kernel.last->getLoc(), kEnd, TypeRange(), ValueRange{idValue});
    }
    Builder attrs(&getContext());
    SmallVector<Attribute> table;
    for (auto [name, kernelFlops, kernelBytes] : llvm::zip(names, flops, bytes))
      table.push_back(attrs.getDictionaryAttr({
          attrs.getNamedAttr("name", attrs.getStringAttr(name)),
          attrs.getNamedAttr("flops", attrs.getI64IntegerAttr(kernelFlops)),
          attrs.getNamedAttr("bytes", attrs.getI64IntegerAttr(kernelBytes)),
      }));
    module->setAttr("kiln.profile", attrs.getArrayAttr(table));
    module->removeAttr("kiln.node_flops");
  }
};
} // namespace
