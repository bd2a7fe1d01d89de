//===- EmitObject.cpp - LLVM dialect -> optimized object file -------------===//
#include "codegen/cpu/CpuBackend.h"

#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/GlobalAlias.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/Linker/Linker.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"

using namespace mlir;
using namespace mlir::kiln;

/// Must match kiln_tensor_info / kiln_model_info in runtime/include/kiln/runtime.h.
static constexpr uint32_t kAbiVersion = 7;
/// KILN_GPU_BUFFER_KERNELS_ONLY.
static constexpr uint8_t kKernelsOnly = 1;

/// The struct type `name` of the context: created once, so that the
/// descriptors of several variants in one context share it.
static llvm::StructType *namedStruct(llvm::LLVMContext &ctx, llvm::ArrayRef<llvm::Type *> fields,
                                     llvm::StringRef name) {
  if (llvm::StructType *existing = llvm::StructType::getTypeByName(ctx, name))
    return existing;
  return llvm::StructType::create(ctx, fields, name);
}

static llvm::Constant *cString(llvm::Module &m, llvm::StringRef s, const llvm::Twine &name) {
  llvm::Constant *data = llvm::ConstantDataArray::getString(m.getContext(), s);
  auto *g = new llvm::GlobalVariable(m, data->getType(), /*isConstant=*/true,
                                     llvm::GlobalValue::PrivateLinkage, data, name);
  g->setUnnamedAddr(llvm::GlobalValue::UnnamedAddr::Global);
  return g;
}

static llvm::Constant *tensorInfos(llvm::Module &m, llvm::StructType *infoType,
                                   const std::vector<TensorSignature> &tensors,
                                   llvm::StringRef prefix, llvm::StringRef what) {
  llvm::LLVMContext &ctx = m.getContext();
  auto *i32 = llvm::Type::getInt32Ty(ctx);
  auto *ptr = llvm::PointerType::get(ctx, 0);
  std::vector<llvm::Constant *> infos;
  for (auto [i, t] : llvm::enumerate(tensors)) {
    std::string base = (prefix + "_" + what + llvm::Twine(i)).str();
    std::vector<int64_t> dims;
    for (int64_t d : t.shape)
      dims.push_back(mlir::ShapedType::isDynamic(d) ? -1 : d); // KILN_DYNAMIC
    auto *shapeData = llvm::ConstantDataArray::get(ctx, llvm::ArrayRef<int64_t>(dims));
    auto *shape = new llvm::GlobalVariable(m, shapeData->getType(), true,
                                           llvm::GlobalValue::PrivateLinkage, shapeData,
                                           base + "_shape");
    llvm::Constant *dimNames = llvm::ConstantPointerNull::get(ptr);
    if (!t.dimNames.empty()) {
      std::vector<llvm::Constant *> names;
      for (auto [d, name] : llvm::enumerate(t.dimNames))
        names.push_back(name.empty() ? (llvm::Constant *)llvm::ConstantPointerNull::get(ptr)
                                     : cString(m, name, base + "_dim" + llvm::Twine(d)));
      auto *namesType = llvm::ArrayType::get(ptr, names.size());
      dimNames = new llvm::GlobalVariable(m, namesType, true, llvm::GlobalValue::PrivateLinkage,
                                          llvm::ConstantArray::get(namesType, names),
                                          base + "_dim_names");
    }
    infos.push_back(llvm::ConstantStruct::get(
        infoType, {cString(m, t.name, base + "_name"),
                   llvm::ConstantInt::get(i32, t.dtype),
                   llvm::ConstantInt::get(i32, t.shape.size()), shape, dimNames}));
  }
  auto *arrayType = llvm::ArrayType::get(infoType, infos.size());
  return new llvm::GlobalVariable(m, arrayType, true, llvm::GlobalValue::PrivateLinkage,
                                  llvm::ConstantArray::get(arrayType, infos),
                                  (prefix + "_" + what + "s").str());
}

/// The KILN_GPU_BUFFER_* flags of the entry's `numBuffers` buffers (inputs,
/// then outputs): those of kiln.gpu_kernels_only_buffers (from
/// kiln-gpu-embed-kernels) only kernels use. Null when there are none.
static llvm::Constant *bufferFlags(llvm::Module &m, ModuleOp module, size_t numBuffers,
                                   llvm::StringRef prefix) {
  llvm::LLVMContext &ctx = m.getContext();
  auto kernelsOnly = module->getAttrOfType<DenseI32ArrayAttr>("kiln.gpu_kernels_only_buffers");
  std::vector<uint8_t> flags(numBuffers, 0);
  bool any = false;
  for (int32_t i : kernelsOnly ? kernelsOnly.asArrayRef() : ArrayRef<int32_t>())
    if (i >= 0 && size_t(i) < numBuffers) {
      flags[i] |= kKernelsOnly;
      any = true;
    }
  if (!any)
    return llvm::ConstantPointerNull::get(llvm::PointerType::get(ctx, 0));
  auto *data = llvm::ConstantDataArray::get(ctx, llvm::ArrayRef<uint8_t>(flags));
  return new llvm::GlobalVariable(m, data->getType(), true, llvm::GlobalValue::PrivateLinkage,
                                  data, (prefix + "_buffer_flags").str());
}

/// The `kiln_gpu_program` of the module's kernels (kiln.gpu_kernels from
/// kiln-gpu-embed-kernels: SPIR-V words, a CUDA fatbin, or MSL from
/// kiln-metal-translate-kernels) and of its entry's `numBuffers` buffers,
/// or null without kernels.
static llvm::Constant *gpuProgram(llvm::Module &m, ModuleOp module, size_t numBuffers,
                                  llvm::StringRef prefix) {
  llvm::LLVMContext &ctx = m.getContext();
  auto *ptr = llvm::PointerType::get(ctx, 0);
  auto kernels = module->getAttrOfType<ArrayAttr>("kiln.gpu_kernels");
  if (!kernels)
    return llvm::ConstantPointerNull::get(ptr);
  auto *i32 = llvm::Type::getInt32Ty(ctx);
  auto *i64 = llvm::Type::getInt64Ty(ctx);
  auto *kernelType = namedStruct(
      ctx, {ptr, ptr, i64, llvm::ArrayType::get(i32, 3), i32, i32, i32}, "kiln_gpu_kernel");
  std::vector<llvm::Constant *> entries;
  uint32_t api = 1; // KILN_GPU_VULKAN
  for (auto [i, attr] : llvm::enumerate(kernels.getAsRange<DictionaryAttr>())) {
    std::string base = (prefix + "_kernel" + llvm::Twine(i)).str();
    auto name = attr.getAs<StringAttr>("name");
    auto size = attr.getAs<DenseI32ArrayAttr>("workgroup_size");
    auto buffers = attr.getAs<IntegerAttr>("buffers");
    auto sharedBytes = attr.getAs<IntegerAttr>("shared_bytes"); // CUDA's dynamic, if any
    llvm::Constant *codeData;
    uint64_t codeBytes;
    if (auto msl = attr.getAs<StringAttr>("msl")) {
      api = 2; // KILN_GPU_METAL
      codeData = llvm::ConstantDataArray::getString(ctx, msl.getValue());
      codeBytes = msl.size();
    } else if (auto fatbin = attr.getAs<StringAttr>("cuda")) {
      api = 3; // KILN_GPU_CUDA
      codeData = llvm::ConstantDataArray::getString(ctx, fatbin.getValue(), /*AddNull=*/false);
      codeBytes = fatbin.size();
    } else {
      std::vector<uint32_t> words;
      for (const llvm::APInt &word : attr.getAs<DenseIntElementsAttr>("spirv").getValues<llvm::APInt>())
        words.push_back(word.getZExtValue());
      codeData = llvm::ConstantDataArray::get(ctx, llvm::ArrayRef<uint32_t>(words));
      codeBytes = 4 * words.size();
    }
    auto *code = new llvm::GlobalVariable(m, codeData->getType(), true,
                                          llvm::GlobalValue::PrivateLinkage, codeData,
                                          base + "_code");
    code->setAlignment(llvm::Align(16)); // a fatbin's header has 64-bit fields
    std::vector<llvm::Constant *> workgroup;
    for (int32_t extent : size.asArrayRef())
      workgroup.push_back(llvm::ConstantInt::get(i32, extent));
    entries.push_back(llvm::ConstantStruct::get(
        kernelType, {cString(m, name.getValue(), base + "_name"), code,
                     llvm::ConstantInt::get(i64, codeBytes),
                     llvm::ConstantArray::get(llvm::ArrayType::get(i32, 3), workgroup),
                     llvm::ConstantInt::get(i32, buffers.getInt()),
                     llvm::ConstantInt::get(i32, attr.getAs<IntegerAttr>("features").getInt()),
                     llvm::ConstantInt::get(i32, sharedBytes ? sharedBytes.getInt() : 0)}));
  }
  auto *tableType = llvm::ArrayType::get(kernelType, entries.size());
  auto *table = new llvm::GlobalVariable(m, tableType, true, llvm::GlobalValue::PrivateLinkage,
                                         llvm::ConstantArray::get(tableType, entries),
                                         (prefix + "_kernels").str());
  auto *programType = namedStruct(ctx, {i32, i32, ptr, ptr}, "kiln_gpu_program");
  return new llvm::GlobalVariable(
      m, programType, true, llvm::GlobalValue::PrivateLinkage,
      llvm::ConstantStruct::get(programType, {llvm::ConstantInt::get(i32, api),
                                              llvm::ConstantInt::get(i32, entries.size()),
                                              table,
                                              bufferFlags(m, module, numBuffers, prefix)}),
      (prefix + "_gpu_program").str());
}

/// The `kiln_profile_info` of the module's kiln.profile (kiln-profile-kernels),
/// or null for a model compiled without --profile.
static llvm::Constant *profileInfo(llvm::Module &m, ArrayAttr kernels, llvm::StringRef prefix) {
  llvm::LLVMContext &ctx = m.getContext();
  auto *ptr = llvm::PointerType::get(ctx, 0);
  if (!kernels)
    return llvm::ConstantPointerNull::get(ptr);
  auto *i32 = llvm::Type::getInt32Ty(ctx);
  auto *i64 = llvm::Type::getInt64Ty(ctx);
  auto *kernelType = namedStruct(ctx, {ptr, i64, i64}, "kiln_profile_kernel");
  std::vector<llvm::Constant *> entries;
  for (auto [i, attr] : llvm::enumerate(kernels.getAsRange<DictionaryAttr>()))
    entries.push_back(llvm::ConstantStruct::get(
        kernelType,
        {cString(m, attr.getAs<StringAttr>("name").getValue(),
                 (prefix + "_profile" + llvm::Twine(i)).str()),
         llvm::ConstantInt::get(i64, attr.getAs<IntegerAttr>("flops").getInt()),
         llvm::ConstantInt::get(i64, attr.getAs<IntegerAttr>("bytes").getInt())}));
  auto *tableType = llvm::ArrayType::get(kernelType, entries.size());
  auto *table = new llvm::GlobalVariable(m, tableType, true, llvm::GlobalValue::PrivateLinkage,
                                         llvm::ConstantArray::get(tableType, entries),
                                         (prefix + "_profile_kernels").str());
  auto *infoType = namedStruct(ctx, {i32, ptr}, "kiln_profile_info");
  return new llvm::GlobalVariable(
      m, infoType, true, llvm::GlobalValue::PrivateLinkage,
      llvm::ConstantStruct::get(infoType, {llvm::ConstantInt::get(i32, entries.size()), table}),
      (prefix + "_profile").str());
}

/// The `kiln_external_weights` of the module's kiln.external_weights
/// (kiln-externalize-weights), naming the file kiln.weights_file; null for
/// a model whose weights are in its code.
static llvm::Constant *externalWeights(llvm::Module &m, ModuleOp module,
                                       llvm::StringRef prefix) {
  llvm::LLVMContext &ctx = m.getContext();
  auto *ptr = llvm::PointerType::get(ctx, 0);
  auto weights = module->getAttrOfType<DictionaryAttr>("kiln.external_weights");
  if (!weights)
    return llvm::ConstantPointerNull::get(ptr);
  auto *i32 = llvm::Type::getInt32Ty(ctx);
  auto *i64 = llvm::Type::getInt64Ty(ctx);
  auto file = module->getAttrOfType<StringAttr>("kiln.weights_file");
  std::string fileName = file ? file.str() : (prefix + ".kw").str();
  auto *type = namedStruct(ctx, {i64, i64, i32, ptr}, "kiln_external_weights");
  return new llvm::GlobalVariable(
      m, type, true, llvm::GlobalValue::PrivateLinkage,
      llvm::ConstantStruct::get(
          type, {llvm::ConstantInt::get(i64, weights.getAs<IntegerAttr>("fingerprint").getInt()),
                 llvm::ConstantInt::get(i64, weights.getAs<IntegerAttr>("bytes").getInt()),
                 llvm::ConstantInt::get(i32, weights.getAs<ArrayAttr>("tensors").size()),
                 cString(m, fileName, (prefix + "_weights_file").str())}),
      (prefix + "_external_weights").str());
}

/// Bytes of the module's constant data (its weights): every constant global
/// with an initializer, before the descriptor's own strings are added.
static uint64_t constantBytes(const llvm::Module &m) {
  uint64_t bytes = 0;
  for (const llvm::GlobalVariable &g : m.globals())
    if (g.isConstant() && g.hasInitializer())
      bytes += m.getDataLayout().getTypeAllocSize(g.getValueType());
  return bytes;
}

/// The fields of a `kiln_model_info` besides the signature.
struct ModelInfoParts {
  llvm::Constant *entry = nullptr; // null: a model of several CPU variants
  uint64_t arenaBytes = 0;
  llvm::Constant *gpu = nullptr, *profile = nullptr, *external = nullptr;
  uint64_t weightsBytes = 0;
  uint32_t numVariants = 0;
  llvm::Constant *variants = nullptr;
};

/// Adds `const kiln_model_info <prefix>_info`, the descriptor the runtime
/// reads: the model's `name`, names, dtypes and shapes of inputs and
/// outputs, and `parts`.
static llvm::GlobalVariable *addModelInfo(llvm::Module &m, const ModelSignature &sig,
                                          llvm::StringRef prefix, llvm::StringRef name,
                                          const ModelInfoParts &parts) {
  llvm::LLVMContext &ctx = m.getContext();
  auto *ptr = llvm::PointerType::get(ctx, 0);
  auto *i32 = llvm::Type::getInt32Ty(ctx);
  auto *i64 = llvm::Type::getInt64Ty(ctx);
  auto *tensorInfo = namedStruct(ctx, {ptr, i32, i32, ptr, ptr}, "kiln_tensor_info");
  auto *modelInfo = namedStruct(
      ctx, {i32, i32, ptr, i32, i32, ptr, ptr, ptr, i64, ptr, i64, ptr, ptr, i32, ptr},
      "kiln_model_info");
  auto orNull = [&](llvm::Constant *c) { return c ? c : llvm::ConstantPointerNull::get(ptr); };
  return new llvm::GlobalVariable(
      m, modelInfo, true, llvm::GlobalValue::ExternalLinkage,
      llvm::ConstantStruct::get(
          modelInfo,
          {llvm::ConstantInt::get(i32, kAbiVersion), llvm::ConstantInt::get(i32, 0),
           cString(m, name, (prefix + "_model_name").str()),
           llvm::ConstantInt::get(i32, sig.inputs.size()),
           llvm::ConstantInt::get(i32, sig.outputs.size()),
           tensorInfos(m, tensorInfo, sig.inputs, prefix, "input"),
           tensorInfos(m, tensorInfo, sig.outputs, prefix, "output"), orNull(parts.entry),
           llvm::ConstantInt::get(i64, parts.arenaBytes), orNull(parts.gpu),
           llvm::ConstantInt::get(i64, parts.weightsBytes), orNull(parts.profile),
           orNull(parts.external), llvm::ConstantInt::get(i32, parts.numVariants),
           orNull(parts.variants)}),
      (prefix + "_info").str());
}

static void optimize(llvm::Module &m, llvm::TargetMachine &tm) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder pb(&tm);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3).run(m, mam);
}

static std::unique_ptr<llvm::TargetMachine> createTargetMachine(const CpuTarget &target,
                                                                std::string &error) {
  llvm::Triple triple(target.triple);
  const llvm::Target *backend = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!backend)
    return nullptr;
  llvm::TargetOptions options;
  return std::unique_ptr<llvm::TargetMachine>(backend->createTargetMachine(
      triple, target.cpu, target.features, options, llvm::Reloc::PIC_, std::nullopt,
      llvm::CodeGenOptLevel::Aggressive));
}

/// The module in LLVM IR for `target` with its descriptor `<prefix>_info`
/// (the model called `name`), optimized; null after an error on `module`.
static std::unique_ptr<llvm::Module> lowerToLLVMIR(ModuleOp module, const CpuTarget &target,
                                                   llvm::TargetMachine &tm,
                                                   const ModelSignature &signature,
                                                   llvm::StringRef prefix, llvm::StringRef name,
                                                   llvm::LLVMContext &llvmContext) {
  DialectRegistry registry;
  registerAllToLLVMIRTranslations(registry);
  module->getContext()->appendDialectRegistry(registry);
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(module, llvmContext, prefix);
  if (!llvmModule) {
    module.emitError("failed to translate the LLVM dialect to LLVM IR");
    return nullptr;
  }
  llvmModule->setTargetTriple(llvm::Triple(target.triple));
  llvmModule->setDataLayout(tm.createDataLayout());
  for (llvm::Function &f : *llvmModule) {
    if (f.isDeclaration())
      continue;
    f.addFnAttr("target-cpu", target.cpu);
    if (!target.features.empty())
      f.addFnAttr("target-features", target.features);
  }
  ModelInfoParts parts;
  parts.entry = llvmModule->getFunction((prefix + "_entry").str());
  // kiln-plan-memory's arena: the runtime allocates it with the instance.
  if (auto bytes = module->getAttrOfType<IntegerAttr>("kiln.arena_bytes"))
    parts.arenaBytes = bytes.getInt();
  parts.weightsBytes = constantBytes(*llvmModule);
  parts.gpu =
      gpuProgram(*llvmModule, module, signature.inputs.size() + signature.outputs.size(), prefix);
  parts.profile =
      profileInfo(*llvmModule, module->getAttrOfType<ArrayAttr>("kiln.profile"), prefix);
  parts.external = externalWeights(*llvmModule, module, prefix);
  addModelInfo(*llvmModule, signature, prefix, name, parts);
  optimize(*llvmModule, tm);
  return llvmModule;
}

/// Writes `m` as an object file (or textual LLVM IR) to `out`.
static LogicalResult emitCode(llvm::Module &m, llvm::TargetMachine &tm, bool emitLLVMIR,
                              ModuleOp module, std::string &out) {
  llvm::raw_string_ostream os(out);
  if (emitLLVMIR) {
    m.print(os, nullptr);
    return success();
  }
  llvm::SmallVector<char, 0> buffer;
  llvm::raw_svector_ostream objStream(buffer);
  llvm::legacy::PassManager codegen;
  if (tm.addPassesToEmitFile(codegen, objStream, nullptr, llvm::CodeGenFileType::ObjectFile))
    return module.emitError("target '") << m.getTargetTriple().str()
                                        << "' cannot emit object files";
  codegen.run(m);
  os << llvm::StringRef(buffer.data(), buffer.size());
  return success();
}

LogicalResult mlir::kiln::emitNative(ModuleOp module, const CpuTarget &target,
                                     const ModelSignature &signature, llvm::StringRef prefix,
                                     bool addMainAlias, bool emitLLVMIR, std::string &out) {
  std::string error;
  std::unique_ptr<llvm::TargetMachine> tm = createTargetMachine(target, error);
  if (!tm)
    return module.emitError(error);
  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule =
      lowerToLLVMIR(module, target, *tm, signature, prefix, prefix, llvmContext);
  if (!llvmModule)
    return failure();
  if (addMainAlias)
    llvm::GlobalAlias::create("kiln_main_model",
                              llvmModule->getNamedGlobal((prefix + "_info").str()));
  return emitCode(*llvmModule, *tm, emitLLVMIR, module, out);
}

LogicalResult mlir::kiln::emitNativeVariants(llvm::ArrayRef<CpuVariant> variants,
                                             const ModelSignature &signature,
                                             llvm::StringRef prefix, bool addMainAlias,
                                             bool emitLLVMIR, std::string &out) {
  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> linked;
  std::unique_ptr<llvm::TargetMachine> baseline;
  auto *ptr = llvm::PointerType::get(llvmContext, 0);
  auto *i32 = llvm::Type::getInt32Ty(llvmContext);
  auto *variantType = namedStruct(llvmContext, {ptr, i32, ptr}, "kiln_cpu_variant");
  std::vector<std::pair<std::string, const CpuVariant *>> infos;
  for (const CpuVariant &variant : variants) {
    std::string error;
    std::unique_ptr<llvm::TargetMachine> tm = createTargetMachine(variant.target, error);
    if (!tm)
      return ModuleOp(variant.module).emitError(error);
    std::string variantPrefix = (prefix + "_" + variant.suffix).str();
    std::unique_ptr<llvm::Module> m = lowerToLLVMIR(variant.module, variant.target, *tm, signature,
                                                    variantPrefix, prefix, llvmContext);
    if (!m)
      return failure();
    infos.push_back({variantPrefix + "_info", &variant});
    if (!linked) {
      linked = std::move(m);
      baseline = std::move(tm);
    } else if (llvm::Linker::linkModules(*linked, std::move(m))) {
      return ModuleOp(variant.module).emitError("cannot link the code of CPU variant ")
             << variant.name;
    }
  }
  std::vector<llvm::Constant *> entries;
  for (auto &[info, variant] : infos)
    entries.push_back(llvm::ConstantStruct::get(
        variantType, {cString(*linked, variant->name, info + "_cpu"),
                      llvm::ConstantInt::get(i32, variant->requires),
                      linked->getNamedGlobal(info)}));
  auto *tableType = llvm::ArrayType::get(variantType, entries.size());
  ModelInfoParts parts;
  parts.numVariants = entries.size();
  parts.variants = new llvm::GlobalVariable(*linked, tableType, true,
                                            llvm::GlobalValue::PrivateLinkage,
                                            llvm::ConstantArray::get(tableType, entries),
                                            (prefix + "_variants").str());
  llvm::GlobalVariable *info = addModelInfo(*linked, signature, prefix, prefix, parts);
  if (addMainAlias)
    llvm::GlobalAlias::create("kiln_main_model", info);
  return emitCode(*linked, *baseline, emitLLVMIR, variants.front().module, out);
}
