//===- CpuBackend.cpp - the CPU target: its stages and object files -------===//
#include "codegen/cpu/CpuBackend.h"
#include "codegen/Passes.h"
#include "codegen/common/Passes.h"
#include "codegen/cpu/Passes.h"
#include "kiln/runtime.h" // KILN_CPU_*
#include "passes/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Conversion/VectorToSCF/VectorToSCF.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/Transforms/Passes.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/Triple.h"

using namespace mlir;
using namespace mlir::kiln;

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
    // "generic+dotprod+i8mm": a CPU, then features it adds.
    llvm::SmallVector<llvm::StringRef> parts;
    (cpu.empty() || cpu == "native" ? llvm::StringRef("generic") : cpu).split(parts, '+');
    target.cpu = parts.front().str();
    std::vector<std::string> features;
    for (llvm::StringRef feature : llvm::drop_begin(parts))
      features.push_back("+" + feature.str());
    target.features = llvm::join(features, ",");
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

FailureOr<std::vector<CpuLevel>> mlir::kiln::parseCpuLevels(llvm::StringRef triple,
                                                            llvm::StringRef list,
                                                            std::string &error) {
  llvm::Triple host(llvm::sys::getProcessTriple());
  llvm::Triple tt(llvm::Triple::normalize(triple.empty() ? host.str() : triple.str()));
  bool x86 = tt.getArch() == llvm::Triple::x86_64;
  // From the least to the most demanding; `portable` marks the levels of
  // --mcpu=portable.
  struct Level {
    CpuLevel level;
    bool portable;
  };
  std::vector<Level> levels;
  if (x86)
    levels = {{{"x86-64", "x86-64", 0}, true},
              {{"x86-64-v2", "x86-64-v2", KILN_CPU_X86_64_V2}, false},
              {{"x86-64-v3", "x86-64-v3", KILN_CPU_X86_64_V2 | KILN_CPU_X86_64_V3}, true},
              {{"x86-64-v4", "x86-64-v4",
                KILN_CPU_X86_64_V2 | KILN_CPU_X86_64_V3 | KILN_CPU_X86_64_V4},
               true}};
  else if (tt.getArch() == llvm::Triple::aarch64)
    levels = {{{"armv8-a", "generic", 0}, true},
              {{"armv8.2-a+dotprod", "generic+dotprod", KILN_CPU_AARCH64_DOTPROD}, true},
              {{"armv8.6-a+i8mm", "generic+dotprod+i8mm",
                KILN_CPU_AARCH64_DOTPROD | KILN_CPU_AARCH64_I8MM},
               true}};
  std::string names;
  for (const Level &l : levels)
    names += (names.empty() ? "" : ", ") + l.level.name;
  llvm::SmallVector<llvm::StringRef> wanted;
  list.split(wanted, ',');
  std::vector<CpuLevel> picked;
  for (const Level &l : levels)
    if ((list == "portable" && l.portable) || llvm::is_contained(wanted, l.level.name))
      picked.push_back(l.level);
  for (llvm::StringRef name : wanted)
    if (list != "portable" &&
        llvm::none_of(levels, [&](const Level &l) { return l.level.name == name; })) {
      error = "--mcpu=" + list.str() + ": a list of CPUs takes the levels " +
              (names.empty() ? "of x86-64 and AArch64" : "of " + tt.getArchName().str() +
                                                             ": " + names) +
              ", not '" + name.str() + "'";
      return failure();
    }
  if (picked.size() < 2) {
    error = "--mcpu=" + list.str() + " names one CPU level: give one CPU without a list";
    return failure();
  }
  return picked;
}

namespace {
class CpuBackend final : public TargetBackend {
public:
  explicit CpuBackend(CpuTarget target) : target(std::move(target)) {}

  llvm::StringRef triple() const override { return target.triple; }
  std::string description() const override { return target.triple + " (" + target.cpu + ")"; }

  void addSparsityPasses(OpPassManager &pm, const PipelineOptions &options) const override {
    KilnSparsifyOptions sparsify;
    // Bitmaps need AVX-512's vexpandps; elsewhere an expand is scalar.
    sparsify.expandLoad = target.vectorWidthF32 == 16;
    sparsify.int8Bitmaps = target.avx512Vnni && target.avx512Vbmi2;
    sparsify.report = options.reportSparsity;
    pm.addPass(createKilnSparsify(sparsify));
    pm.addPass(createCanonicalizerPass());
  }

  LogicalResult emitObject(ModuleOp module, const ModelSignature &signature,
                           llvm::StringRef prefix, bool addMainAlias, bool emitLLVMIR,
                           std::string &out) const override {
    return emitNative(module, target, signature, prefix, addMainAlias, emitLLVMIR, out);
  }

private:
  CpuTarget target;

  /// kiln -> linalg on tensors: convolutions run channels-last, those that
  /// fit register tiles straight from their input, the others as matmuls;
  /// sparse weights in their kernels; the rest through the target-neutral
  /// lowering.
  void addLinalgPasses(OpPassManager &pm, const PipelineOptions &options) const override {
    pm.addPass(createKilnChannelsLast());
    pm.addPass(createCanonicalizerPass());
    pm.addPass(createKilnCpuDirectConv({target.vectorWidthF32}));
    pm.addPass(createKilnCpuConvAsMatmul());
    pm.addPass(createKilnCpuSparseMatmul({target.vectorWidthF32}));
    // Attention tasks of 128 query rows by blocks of 256 keys: a block of
    // f32 scores is 128 KiB, on the task's stack. Each block of keys and
    // values is packed once per task, so taller tasks pack less: on 2 heads
    // x 4096 tokens, 128 rows ran 15% faster than 32 (64: 5%; 256 rows or
    // 512 keys: no better).
    ConvertKilnToLinalgOptions lowering;
    lowering.attentionQueryBlock = 128;
    lowering.attentionKeyBlock = 256;
    pm.addPass(createConvertKilnToLinalg(lowering));
    pm.addPass(createCanonicalizerPass());
    pm.addPass(createKilnFuseElementwise({options.reportFusion}));
    pm.addPass(createCanonicalizerPass());
    pm.addPass(createCSEPass());
    if (options.profile)
      pm.addPass(createKilnProfileFlops());
  }

  bool hasDotProducts() const {
    return target.avx512Vnni || target.avx512Bf16 || target.i8mm || target.dotProd ||
           target.avxVnni || target.amxInt8 || target.amxBf16 || target.pmaddwdLanes;
  }

  /// Register tiles and packing, then bufferization into one arena.
  void addBufferizedPasses(OpPassManager &pm, const PipelineOptions &options) const override {
    OpPassManager &entry = pm.nest<func::FuncOp>();
    if (hasDotProducts()) {
      KilnCpuVnniMatmulOptions vnni;
      vnni.int8 = target.avx512Vnni;
      vnni.bf16 = target.avx512Bf16;
      vnni.usdot = target.i8mm;
      vnni.sdot = target.dotProd;
      vnni.avxvnni = target.avxVnni;
      vnni.amxInt8 = target.amxInt8;
      vnni.amxBf16 = target.amxBf16;
      vnni.pmaddwdLanes = target.pmaddwdLanes;
      entry.addPass(createKilnCpuVnniMatmul(vnni));
    }
    KilnCpuPeelDynamicMatmulOptions peel;
    peel.columns = 2 * target.vectorWidthF32;
    entry.addPass(createKilnCpuPeelDynamicMatmul(peel));
    pm.addPass(createKilnCpuPackMatmul({target.vectorWidthF32}));
    pm.addPass(createCanonicalizerPass());
    pm.addPass(createCSEPass());
    pm.addPass(createKilnCpuSchedule({target.vectorWidthF32}));
    pm.addPass(createCanonicalizerPass());
    pm.addPass(createCSEPass());
    // Subset hoisting turns each tile's accumulator into a vector carried
    // by its K loop, so it stays in registers.
    pm.addPass(createLoopInvariantSubsetHoistingPass());
    OpPassManager &epilogues = pm.nest<func::FuncOp>();
    epilogues.addPass(createKilnCpuFuseEpilogues({options.reportFusion}));
    epilogues.addPass(createKilnDistinctResults());
    addBufferizationPasses(pm);
    OpPassManager &buffers = pm.nest<func::FuncOp>();
    buffers.addPass(createKilnHoistLoopBuffers());
    buffers.addPass(createKilnCpuPrefetchWeights());
    if (options.externalWeights)
      pm.addPass(createKilnExternalizeWeights());
    pm.addPass(createKilnPlanMemory({options.reportMemory}));
    if (options.profile)
      pm.addPass(createKilnProfileKernels());
  }

  /// Loops, threads and the LLVM dialect, with the model's entry point.
  void addLLVMPasses(OpPassManager &pm, const PipelineOptions &options) const override {
    bool amx = target.amxInt8 || target.amxBf16;
    // Without AVX512-BF16, LLVM would call __truncsfbf2 (not in libgcc) for
    // f32 -> bf16 (--precision=bf16, a Cast to bf16): round in integers.
    if (!target.avx512Bf16)
      pm.addPass(createKilnCpuExpandBf16());
    pm.addPass(createForallToParallelLoopPass());
    OpPassManager &loops = pm.nest<func::FuncOp>();
    if (amx)
      loops.addPass(createKilnCpuAmxTiles());
    loops.addPass(createKilnFlattenEmptyArguments());
    loops.addPass(createKilnCopiesToLoops());
    loops.addPass(createConvertLinalgToParallelLoopsPass());
    loops.addPass(createKilnCpuApproximateMath());
    pm.addPass(createKilnCpuOutlineParallelLoops());
    // Views become strided metadata first: folding a collapse_shape into
    // its loads would delinearize every address (div/mod per element) where
    // the collapsed buffer is plainly contiguous.
    OpPassManager &views = pm.nest<func::FuncOp>();
    views.addPass(memref::createExpandStridedMetadataPass());
    views.addPass(memref::createFoldMemRefAliasOpsPass());
    views.addPass(createCanonicalizerPass());
    views.addPass(createCSEPass());
    views.addPass(createLoopInvariantCodeMotionPass());
    pm.addPass(createConvertVectorToSCFPass(VectorTransferToSCFOptions().enableFullUnroll()));
    pm.addPass(createLowerAffinePass());
    pm.addPass(memref::createExpandStridedMetadataPass());
    pm.addPass(createLowerAffinePass());
    pm.addPass(createConvertMathToFuncs());
    pm.addNestedPass<func::FuncOp>(createKilnCpuLoopAllocaScopes());
    pm.addPass(createSCFToControlFlowPass());
    ConvertVectorToLLVMPassOptions vectors;
    vectors.amx = amx;
    pm.addPass(createConvertVectorToLLVMPass(vectors));
    pm.addPass(createConvertMathToLLVMPass());
    pm.addPass(createConvertMathToLibmPass());
    FinalizeMemRefToLLVMConversionPassOptions memrefs;
    memrefs.useGenericFunctions = true;
    memrefs.useAlignedAlloc = true;
    pm.addPass(createFinalizeMemRefToLLVMConversionPass(memrefs));
    pm.addPass(createArithToLLVMConversionPass());
    pm.addPass(createConvertIndexToLLVMPass());
    pm.addPass(createUBToLLVMConversionPass());
    if (amx) {
      // Tiles carried by loops become block arguments, whose type only a
      // converter that knows the amx dialect converts.
      ConvertToLLVMPassOptions toLLVM;
      toLLVM.filterDialects = {"cf", "amx"};
      pm.addPass(createConvertToLLVMPass(toLLVM));
    } else {
      pm.addPass(createConvertControlFlowToLLVMPass());
    }
    ConvertFuncToLLVMPassOptions funcs;
    funcs.useBarePtrCallConv = true;
    pm.addPass(createConvertFuncToLLVMPass(funcs));
    pm.addPass(createKilnCpuLowerParallelCalls());
    pm.addPass(createReconcileUnrealizedCastsPass());
    pm.addPass(createKilnEmitEntryPoint({options.symbolPrefix}));
    pm.addPass(createCanonicalizerPass());
  }
};
} // namespace

FailureOr<std::unique_ptr<TargetBackend>>
mlir::kiln::createCpuBackend(llvm::StringRef triple, llvm::StringRef cpu, std::string &error) {
  auto target = resolveCpuTarget(triple, cpu, error);
  if (failed(target))
    return failure();
  return std::unique_ptr<TargetBackend>(std::make_unique<CpuBackend>(std::move(*target)));
}
