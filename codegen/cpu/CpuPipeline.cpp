//===- CpuPipeline.cpp - stages of the CPU pipeline -----------------------===//
#include "codegen/cpu/CpuPipeline.h"
#include "codegen/Passes.h"
#include "passes/Passes.h"

#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/Triple.h"

using namespace mlir;
using namespace mlir::kiln;

std::optional<Stage> mlir::kiln::parseStage(llvm::StringRef name) {
  return llvm::StringSwitch<std::optional<Stage>>(name)
      .Case("kiln", Stage::Kiln)
      .Case("kiln-opt", Stage::KilnOpt)
      .Case("linalg", Stage::Linalg)
      .Case("bufferized", Stage::Bufferized)
      .Case("llvm", Stage::LLVM)
      .Default(std::nullopt);
}

llvm::StringRef mlir::kiln::stageNames() { return "kiln, kiln-opt, linalg, bufferized, llvm"; }

FailureOr<CpuTarget> mlir::kiln::resolveCpuTarget(llvm::StringRef triple, llvm::StringRef cpu,
                                                  std::string &error) {
  llvm::InitializeAllTargetInfos();
  llvm::InitializeAllTargets();
  llvm::InitializeAllTargetMCs();
  llvm::InitializeAllAsmPrinters();
  llvm::InitializeAllAsmParsers();

  CpuTarget target;
  llvm::Triple host(llvm::sys::getProcessTriple());
  llvm::Triple tt(llvm::Triple::normalize(triple.empty() ? host.str() : triple.str()));
  target.triple = tt.str();
  const llvm::Target *backend = llvm::TargetRegistry::lookupTarget(tt, error);
  if (!backend)
    return failure();
  if (tt.getArch() != llvm::Triple::x86_64 && tt.getArch() != llvm::Triple::aarch64) {
    error = "unsupported target '" + target.triple + "' (supported: x86_64-linux-gnu, aarch64-linux-gnu)";
    return failure();
  }
  bool native = tt.getArch() == host.getArch() && (cpu.empty() || cpu == "native");
  if (native) {
    target.cpu = llvm::sys::getHostCPUName().str();
    std::vector<std::string> features;
    for (auto &f : llvm::sys::getHostCPUFeatures())
      features.push_back((f.second ? "+" : "-") + f.first().str());
    target.features = llvm::join(features, ",");
  } else {
    target.cpu = cpu.empty() || cpu == "native" ? "generic" : cpu.str();
  }
  // Validate the CPU on a generic subtarget first: LLVM prints a warning of
  // its own when a subtarget is created for an unknown CPU.
  std::unique_ptr<llvm::MCSubtargetInfo> generic(backend->createMCSubtargetInfo(tt, "", ""));
  if (!generic || !generic->isCPUStringValid(target.cpu)) {
    error = "unknown CPU '" + target.cpu + "' for target '" + target.triple + "'";
    return failure();
  }
  std::unique_ptr<llvm::MCSubtargetInfo> sti(
      backend->createMCSubtargetInfo(tt, target.cpu, target.features));
  bool x86 = tt.getArch() == llvm::Triple::x86_64;
  if (x86 && sti->checkFeatures("+avx512f"))
    target.vectorWidthF32 = 16;
  else if (x86 && sti->checkFeatures("+avx2"))
    target.vectorWidthF32 = 8;
  else
    target.vectorWidthF32 = 4; // SSE2 / NEON
  target.avx512Vnni = x86 && sti->checkFeatures("+avx512vnni");
  target.avx512Bf16 = x86 && sti->checkFeatures("+avx512bf16");
  target.avx512Vbmi2 = x86 && sti->checkFeatures("+avx512vbmi2");
  target.i8mm = tt.getArch() == llvm::Triple::aarch64 && sti->checkFeatures("+i8mm");
  target.dotProd =
      tt.getArch() == llvm::Triple::aarch64 && !target.i8mm && sti->checkFeatures("+dotprod");
  target.avxVnni = x86 && !target.avx512Vnni && sti->checkFeatures("+avxvnni");
  target.amxInt8 = x86 && sti->checkFeatures("+amx-tile,+amx-int8");
  target.amxBf16 = x86 && sti->checkFeatures("+amx-tile,+amx-bf16");
  if (x86 && !target.avx512Vnni && !target.avxVnni)
    target.pmaddwdLanes = sti->checkFeatures("+avx512bw") ? 16 : sti->checkFeatures("+avx2") ? 8 : 0;
  return target;
}

/// Upstream pass pipeline text for each step; kiln passes are registered too.
static std::string stagePipeline(Stage to, const CpuTarget &target,
                                 const PipelineOptions &options) {
  switch (to) {
  case Stage::Kiln:
    return "";
  case Stage::KilnOpt:
    return llvm::formatv("canonicalize,kiln-compute-half-in-f32,canonicalize,"
                         "kiln-fold-batch-norm{{report={0}},"
                         "kiln-fuse-attention{{report={0}},canonicalize,cse,"
                         "kiln-fuse-qdq{{report={1}},canonicalize,cse",
                         options.reportFusion, options.reportQuant)
        .str();
  case Stage::Linalg:
    return llvm::formatv("kiln-channels-last,canonicalize,kiln-direct-conv{{vector-width={1}},"
                         "kiln-sparse-matmul{{vector-width={1}},"
                         "kiln-convert-to-linalg,canonicalize,"
                         "kiln-fuse-elementwise{{report={0}},canonicalize,cse",
                         options.reportFusion, target.vectorWidthF32)
        .str();
  case Stage::Bufferized:
    return llvm::formatv(
               "func.func({2}kiln-peel-dynamic-matmul{{columns={1}}),"
               "kiln-pack-matmul{{vector-width={0}},canonicalize,cse,"
               // Subset hoisting turns each tile's accumulator into a vector
               // carried by its K loop, so it stays in registers.
               "kiln-cpu-schedule{{vector-width={0}},canonicalize,cse,loop-invariant-subset-hoisting,"
               "func.func(kiln-fuse-epilogues{{report={4}},kiln-distinct-results),eliminate-empty-tensors,empty-tensor-to-alloc-tensor,"
               // A recurrent layer over a run-time sequence carries its state
               // through an scf.for whose step computes it in a new buffer.
               "one-shot-bufferize{{bufferize-function-boundaries allow-return-allocs-from-loops "
               "function-boundary-type-conversion=identity-layout-map},canonicalize,"
               "kiln-dynamic-entry,"
               "buffer-results-to-out-params{{hoist-static-allocs modify-public-functions},"
               "canonicalize,cse,canonicalize,func.func(kiln-hoist-loop-buffers,kiln-prefetch-weights),kiln-plan-memory{{report={3}}",
               target.vectorWidthF32, 2 * target.vectorWidthF32,
               target.avx512Vnni || target.avx512Bf16 || target.i8mm || target.dotProd ||
                       target.avxVnni || target.amxInt8 || target.amxBf16 || target.pmaddwdLanes
                   ? llvm::formatv("kiln-vnni-matmul{{int8={0} bf16={1} usdot={2} sdot={3} "
                                   "avxvnni={4} amx-int8={5} amx-bf16={6} pmaddwd={7}},",
                                   target.avx512Vnni, target.avx512Bf16, target.i8mm,
                                   target.dotProd, target.avxVnni, target.amxInt8,
                                   target.amxBf16, target.pmaddwdLanes)
                         .str()
                   : std::string(),
               options.reportMemory, options.reportFusion)
        .str();
  case Stage::LLVM: {
    bool amx = target.amxInt8 || target.amxBf16;
    return llvm::formatv(
               "{1}scf-forall-to-parallel,"
               "func.func({2}kiln-flatten-empty-arguments,kiln-copies-to-loops,"
               "convert-linalg-to-parallel-loops,kiln-approximate-math),"
               "kiln-outline-parallel-loops,"
               // Views become strided metadata first: folding a collapse_shape
               // into its loads would delinearize every address (div/mod per
               // element) where the collapsed buffer is plainly contiguous.
               "func.func(expand-strided-metadata,fold-memref-alias-ops,canonicalize,cse,"
               "loop-invariant-code-motion),"
               "convert-vector-to-scf{{full-unroll=true},lower-affine,expand-strided-metadata,lower-affine,"
               "convert-math-to-funcs,func.func(kiln-loop-alloca-scopes),convert-scf-to-cf,convert-vector-to-llvm{{enable-amx={3}},"
               "convert-math-to-llvm,"
               "convert-math-to-libm,finalize-memref-to-llvm{{use-generic-functions use-aligned-alloc},"
               "convert-arith-to-llvm,convert-index-to-llvm,convert-ub-to-llvm,{4},"
               "convert-func-to-llvm{{use-bare-ptr-memref-call-conv},kiln-lower-parallel-calls,"
               "reconcile-unrealized-casts,kiln-emit-entry-point{{prefix={0}},canonicalize",
               options.symbolPrefix,
               // Without AVX512-BF16, LLVM would call __truncsfbf2 (not in
               // libgcc) for f32 -> bf16: round in integer arithmetic instead.
               options.bf16 && !target.avx512Bf16 ? "arith-expand{include-bf16=true}," : "",
               amx ? "kiln-amx-tiles," : "", amx,
               // Tiles carried by loops become block arguments, whose type
               // only a converter that knows the amx dialect converts.
               amx ? "convert-to-llvm{filter-dialects=cf,amx}" : "convert-cf-to-llvm")
        .str();
  }
  }
  llvm_unreachable("unknown stage");
}

/// The kiln-opt stage's passes after fusion: pruning, then the arithmetic
/// of the weights (int8, bf16 or sparse f32).
void mlir::kiln::addWeightPasses(OpPassManager &pm, const CpuTarget &target,
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
  if (options.bf16) {
    pm.addPass(createKilnConvertToBF16({options.reportQuant}));
    pm.addPass(createCanonicalizerPass());
    pm.addPass(createCSEPass());
  }
  if (options.sparsify) {
    // Bitmaps need AVX-512's vexpandps; elsewhere an expand is scalar.
    bool expandLoad = target.vectorWidthF32 == 16;
    bool int8Bitmaps = target.avx512Vnni && target.avx512Vbmi2;
    pm.addPass(createKilnSparsify({expandLoad, int8Bitmaps, options.reportSparsity}));
    pm.addPass(createCanonicalizerPass());
  }
}

void mlir::kiln::buildPipeline(OpPassManager &pm, Stage from, Stage to,
                               const CpuTarget &target, const PipelineOptions &options) {
  for (int s = static_cast<int>(from) + 1; s <= static_cast<int>(to); ++s) {
    std::string text = stagePipeline(static_cast<Stage>(s), target, options);
    if (!text.empty() && failed(parsePassPipeline(text, pm)))
      llvm::report_fatal_error("internal error: bad pass pipeline: " + llvm::Twine(text));
    if (static_cast<Stage>(s) == Stage::KilnOpt && !options.deferWeightPasses)
      addWeightPasses(pm, target, options);
  }
}
