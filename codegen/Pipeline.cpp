//===- Pipeline.cpp - stages, target backends, named pipelines ------------===//
#include "codegen/Pipeline.h"
#include "codegen/common/Passes.h"
#include "codegen/cpu/CpuBackend.h"
#include "codegen/cuda/CudaBackend.h"
#include "codegen/spirv/SpirvBackend.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace mlir::kiln;

static constexpr Stage kStages[] = {Stage::Kiln, Stage::KilnOpt, Stage::Linalg,
                                    Stage::Bufferized, Stage::LLVM};

llvm::StringRef mlir::kiln::stageName(Stage stage) {
  switch (stage) {
  case Stage::Kiln:
    return "kiln";
  case Stage::KilnOpt:
    return "kiln-opt";
  case Stage::Linalg:
    return "linalg";
  case Stage::Bufferized:
    return "bufferized";
  case Stage::LLVM:
    return "llvm";
  }
  llvm_unreachable("unknown stage");
}

std::optional<Stage> mlir::kiln::parseStage(llvm::StringRef name) {
  for (Stage stage : kStages)
    if (stageName(stage) == name)
      return stage;
  return std::nullopt;
}

std::string mlir::kiln::stageNames() {
  return llvm::join(llvm::map_range(kStages, stageName), ", ");
}

//===----------------------------------------------------------------------===//
// Target backends
//===----------------------------------------------------------------------===//

namespace {
/// One kind of target: which `--target` values it claims, and how to build
/// its backend.
struct BackendEntry {
  bool (*claims)(llvm::StringRef target);
  FailureOr<std::unique_ptr<TargetBackend>> (*create)(llvm::StringRef target,
                                                      llvm::StringRef cpu, std::string &error);
};
} // namespace

/// In order: the first entry that claims a target builds it. CPUs take
/// every target triple, so they come last.
static const BackendEntry kBackends[] = {
    {isSpirvTarget, createSpirvBackend},
    {isCudaTarget, createCudaBackend},
    {[](llvm::StringRef) { return true; }, createCpuBackend},
};

llvm::StringRef mlir::kiln::targetNames() {
  return "x86_64-linux-gnu (the host's default), aarch64-linux-gnu, vulkan "
         "(vulkan-lavapipe, vulkan-nvidia: the same kernels tiled for that device), cuda "
         "(cuda-sm80, cuda-sm90a), or metal (arm64 macOS with MSL kernels)";
}

FailureOr<std::unique_ptr<TargetBackend>>
mlir::kiln::createTargetBackend(llvm::StringRef target, llvm::StringRef cpu, std::string &error) {
  for (const BackendEntry &entry : kBackends)
    if (entry.claims(target))
      return entry.create(target, cpu, error);
  error = "unknown target '" + target.str() + "' (expected " + targetNames().str() + ")";
  return failure();
}

//===----------------------------------------------------------------------===//
// Stages
//===----------------------------------------------------------------------===//

/// The graph passes every target runs: fusion, in the order that each one
/// finds the patterns the previous one leaves.
static void addGraphPasses(OpPassManager &pm, const TargetBackend &backend,
                           const PipelineOptions &options) {
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createKilnComputeHalfInF32({backend.widensHalfMatmuls()}));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createKilnFoldBatchNorm({options.reportFusion}));
  pm.addPass(createKilnFuseLayerNorm({options.reportFusion}));
  pm.addPass(createKilnFuseAttention({options.reportFusion}));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  pm.addPass(createKilnFuseQdq({options.reportQuant}));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}

void mlir::kiln::addWeightPasses(OpPassManager &pm, const TargetBackend &backend,
                                 const PipelineOptions &options) {
  if (options.pruneFraction && options.prunePattern == "channel") {
    KilnPruneChannelsOptions prune;
    prune.fraction = *options.pruneFraction;
    prune.skip.assign(options.pruneSkip.begin(), options.pruneSkip.end());
    prune.pruneFirstLast = options.pruneFirstLast;
    prune.report = options.reportSparsity;
    pm.addPass(createKilnPruneChannels(prune));
  } else if (options.pruneFraction) {
    KilnPruneOptions prune;
    prune.fraction = *options.pruneFraction;
    prune.pattern = options.prunePattern;
    prune.skip.assign(options.pruneSkip.begin(), options.pruneSkip.end());
    prune.pruneFirstLast = options.pruneFirstLast;
    prune.layerFractions.assign(options.pruneLayerFractions.begin(),
                                options.pruneLayerFractions.end());
    prune.report = options.reportSparsity;
    pm.addPass(createKilnPrune(prune));
  }
  if (options.quantizeDynamic) {
    pm.addPass(createKilnQuantizeDynamic({options.reportQuant}));
    pm.addPass(createCanonicalizerPass());
    pm.addPass(createCSEPass());
  }
  if (options.precision == Precision::BF16 || options.precision == Precision::F16) {
    pm.addPass(createKilnConvertToHalf(
        {options.precision == Precision::BF16 ? "bf16" : "f16", options.reportQuant}));
    pm.addPass(createCanonicalizerPass());
    pm.addPass(createCSEPass());
  }
  // After the passes that rewrite each weight matrix on its own.
  pm.addPass(createKilnFuseSiblingMatmuls({options.reportFusion}));
  if (options.sparsify)
    backend.addSparsityPasses(pm, options);
}

void mlir::kiln::addBufferizationPasses(OpPassManager &pm) {
  pm.addPass(createKilnReadOnlyInputs());
  pm.addPass(bufferization::createEmptyTensorEliminationPass());
  pm.addPass(bufferization::createEmptyTensorToAllocTensorPass());
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  // A recurrent layer over a run-time sequence carries its state through
  // an scf.for whose step computes it in a new buffer.
  bufferize.allowReturnAllocsFromLoops = true;
  bufferize.functionBoundaryTypeConversion = bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createKilnDynamicEntry());
  bufferization::BufferResultsToOutParamsPassOptions outParams;
  outParams.hoistStaticAllocs = true;
  outParams.modifyPublicFunctions = true;
  pm.addPass(bufferization::createBufferResultsToOutParamsPass(outParams));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  pm.addPass(createCanonicalizerPass());
}

void TargetBackend::addStagePasses(OpPassManager &pm, Stage stage,
                                   const PipelineOptions &options) const {
  switch (stage) {
  case Stage::Linalg:
    return addLinalgPasses(pm, options);
  case Stage::Bufferized:
    return addBufferizedPasses(pm, options);
  case Stage::LLVM:
    return addLLVMPasses(pm, options);
  case Stage::Kiln:
  case Stage::KilnOpt:
    break;
  }
  llvm_unreachable("a target backend adds the stages after kiln-opt");
}

void mlir::kiln::buildPipeline(OpPassManager &pm, Stage from, Stage to,
                               const TargetBackend &backend, const PipelineOptions &options) {
  for (Stage stage : kStages) {
    if (stage <= from || stage > to)
      continue;
    if (stage == Stage::KilnOpt) {
      addGraphPasses(pm, backend, options);
      if (!options.deferWeightPasses)
        addWeightPasses(pm, backend, options);
    } else {
      backend.addStagePasses(pm, stage, options);
    }
  }
}

//===----------------------------------------------------------------------===//
// Named pipelines
//===----------------------------------------------------------------------===//

namespace {
struct TargetPipelineOptions : PassPipelineOptions<TargetPipelineOptions> {
  Option<std::string> target{*this, "target",
                             llvm::cl::desc("Target, as kiln-compile's --target (default: host)")};
  Option<std::string> mcpu{*this, "mcpu",
                           llvm::cl::desc("CPU, as kiln-compile's --mcpu (default: host CPU)")};
};

struct RangePipelineOptions : PassPipelineOptions<RangePipelineOptions> {
  Option<std::string> from{*this, "from", llvm::cl::desc("Stage the input is at"),
                           llvm::cl::init("kiln")};
  Option<std::string> to{*this, "to", llvm::cl::desc("Stage to stop after"),
                         llvm::cl::init("llvm")};
  Option<std::string> target{*this, "target",
                             llvm::cl::desc("Target, as kiln-compile's --target (default: host)")};
  Option<std::string> mcpu{*this, "mcpu",
                           llvm::cl::desc("CPU, as kiln-compile's --mcpu (default: host CPU)")};
};

using ErrorHandler = function_ref<LogicalResult(const Twine &)>;

/// Adds the passes from `from` to `to` for the target, with kiln-compile's
/// default options.
LogicalResult addRange(OpPassManager &pm, Stage from, Stage to, llvm::StringRef target,
                       llvm::StringRef mcpu, ErrorHandler errorHandler) {
  std::string error;
  auto backend = createTargetBackend(target, mcpu, error);
  if (failed(backend))
    return errorHandler(error);
  buildPipeline(pm, from, to, **backend, PipelineOptions());
  return success();
}

/// Registers a pipeline whose options parse into `Options`.
template <typename Options>
void registerPipeline(llvm::StringRef name, llvm::StringRef description,
                      std::function<LogicalResult(OpPassManager &, const Options &,
                                                  ErrorHandler)>
                          build) {
  registerPassPipeline(
      name, description,
      [build](OpPassManager &pm, llvm::StringRef text, ErrorHandler errorHandler) {
        std::unique_ptr<Options> options = Options::createFromString(text);
        if (!options)
          return failure();
        return build(pm, *options, errorHandler);
      },
      [](function_ref<void(const detail::PassOptions &)> printOptions) {
        printOptions(Options());
      });
}
} // namespace

void mlir::kiln::registerKilnPipelines() {
  registerPipeline<RangePipelineOptions>(
      "kiln-pipeline", "kiln-compile's pipeline from one stage to another",
      [](OpPassManager &pm, const RangePipelineOptions &options, ErrorHandler errorHandler) {
        auto from = parseStage(options.from), to = parseStage(options.to);
        if (!from || !to || *from > *to)
          return errorHandler("kiln-pipeline: from=" + options.from + " to=" + options.to +
                              " is not a range of stages (" + stageNames() + ")");
        return addRange(pm, *from, *to, options.target, options.mcpu, errorHandler);
      });
  for (Stage stage : kStages) {
    if (stage == Stage::Kiln)
      continue;
    Stage previous = static_cast<Stage>(static_cast<int>(stage) - 1);
    registerPipeline<TargetPipelineOptions>(
        ("kiln-stage-" + stageName(stage)).str(),
        ("The passes that take the " + stageName(previous) + " stage to " + stageName(stage))
            .str(),
        [previous, stage](OpPassManager &pm, const TargetPipelineOptions &options,
                          ErrorHandler errorHandler) {
          return addRange(pm, previous, stage, options.target, options.mcpu, errorHandler);
        });
  }
}
