//===- EmitObject.cpp - LLVM dialect -> optimized object file -------------===//
#include "codegen/cpu/CpuBackend.h"

#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/GlobalAlias.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"

using namespace mlir;
using namespace mlir::kiln;

/// Must match kiln_tensor_info / kiln_model_info in runtime/include/kiln/runtime.h.
static constexpr uint32_t kAbiVersion = 6;

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

/// The `kiln_gpu_program` of the kernels in `kernels` (the module's
/// kiln.gpu_kernels from kiln-gpu-embed-kernels: SPIR-V words, a CUDA
/// fatbin, or MSL from kiln-metal-translate-kernels), or null without
/// kernels.
static llvm::Constant *gpuProgram(llvm::Module &m, ArrayAttr kernels, llvm::StringRef prefix) {
  llvm::LLVMContext &ctx = m.getContext();
  auto *ptr = llvm::PointerType::get(ctx, 0);
  if (!kernels)
    return llvm::ConstantPointerNull::get(ptr);
  auto *i32 = llvm::Type::getInt32Ty(ctx);
  auto *i64 = llvm::Type::getInt64Ty(ctx);
  auto *kernelType = llvm::StructType::create(
      ctx, {ptr, ptr, i64, llvm::ArrayType::get(i32, 3), i32, i32}, "kiln_gpu_kernel");
  std::vector<llvm::Constant *> entries;
  uint32_t api = 1; // KILN_GPU_VULKAN
  for (auto [i, attr] : llvm::enumerate(kernels.getAsRange<DictionaryAttr>())) {
    std::string base = (prefix + "_kernel" + llvm::Twine(i)).str();
    auto name = attr.getAs<StringAttr>("name");
    auto size = attr.getAs<DenseI32ArrayAttr>("workgroup_size");
    auto buffers = attr.getAs<IntegerAttr>("buffers");
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
                     llvm::ConstantInt::get(i32, attr.getAs<IntegerAttr>("features").getInt())}));
  }
  auto *tableType = llvm::ArrayType::get(kernelType, entries.size());
  auto *table = new llvm::GlobalVariable(m, tableType, true, llvm::GlobalValue::PrivateLinkage,
                                         llvm::ConstantArray::get(tableType, entries),
                                         (prefix + "_kernels").str());
  auto *programType = llvm::StructType::create(ctx, {i32, i32, ptr}, "kiln_gpu_program");
  return new llvm::GlobalVariable(
      m, programType, true, llvm::GlobalValue::PrivateLinkage,
      llvm::ConstantStruct::get(programType, {llvm::ConstantInt::get(i32, api),
                                              llvm::ConstantInt::get(i32, entries.size()),
                                              table}),
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
  auto *kernelType = llvm::StructType::create(ctx, {ptr, i64, i64}, "kiln_profile_kernel");
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
  auto *infoType = llvm::StructType::create(ctx, {i32, ptr}, "kiln_profile_info");
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
  auto *type = llvm::StructType::create(ctx, {i64, i64, i32, ptr}, "kiln_external_weights");
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

/// Adds `const kiln_model_info <prefix>_info`, the descriptor the runtime
/// reads: names, dtypes and shapes of inputs and outputs, the entry, the
/// size of the intermediate buffers' arena, the GPU kernels, the weights'
/// size, the profiled kernels and the weights file.
static void addModelInfo(llvm::Module &m, const ModelSignature &sig, llvm::StringRef prefix,
                         bool addMainAlias, uint64_t arenaBytes, llvm::Constant *gpu,
                         uint64_t weightsBytes, llvm::Constant *profile,
                         llvm::Constant *external) {
  llvm::LLVMContext &ctx = m.getContext();
  auto *ptr = llvm::PointerType::get(ctx, 0);
  auto *i32 = llvm::Type::getInt32Ty(ctx);
  auto *i64 = llvm::Type::getInt64Ty(ctx);
  auto *tensorInfo = llvm::StructType::create(ctx, {ptr, i32, i32, ptr, ptr}, "kiln_tensor_info");
  auto *modelInfo = llvm::StructType::create(
      ctx, {i32, i32, ptr, i32, i32, ptr, ptr, ptr, i64, ptr, i64, ptr, ptr}, "kiln_model_info");
  llvm::Function *entry = m.getFunction((prefix + "_entry").str());
  auto *info = new llvm::GlobalVariable(
      m, modelInfo, true, llvm::GlobalValue::ExternalLinkage,
      llvm::ConstantStruct::get(
          modelInfo,
          {llvm::ConstantInt::get(i32, kAbiVersion), llvm::ConstantInt::get(i32, 0),
           cString(m, prefix, (prefix + "_model_name").str()),
           llvm::ConstantInt::get(i32, sig.inputs.size()),
           llvm::ConstantInt::get(i32, sig.outputs.size()),
           tensorInfos(m, tensorInfo, sig.inputs, prefix, "input"),
           tensorInfos(m, tensorInfo, sig.outputs, prefix, "output"), entry,
           llvm::ConstantInt::get(i64, arenaBytes), gpu,
           llvm::ConstantInt::get(i64, weightsBytes), profile, external}),
      (prefix + "_info").str());
  if (addMainAlias)
    llvm::GlobalAlias::create("kiln_main_model", info);
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

LogicalResult mlir::kiln::emitNative(ModuleOp module, const CpuTarget &target,
                                     const ModelSignature &signature, llvm::StringRef prefix,
                                     bool addMainAlias, bool emitLLVMIR, std::string &out) {
  DialectRegistry registry;
  registerAllToLLVMIRTranslations(registry);
  module->getContext()->appendDialectRegistry(registry);

  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(module, llvmContext, prefix);
  if (!llvmModule)
    return module.emitError("failed to translate the LLVM dialect to LLVM IR");

  std::string error;
  llvm::Triple triple(target.triple);
  const llvm::Target *backend = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!backend)
    return module.emitError(error);
  llvm::TargetOptions options;
  std::unique_ptr<llvm::TargetMachine> tm(backend->createTargetMachine(
      triple, target.cpu, target.features, options, llvm::Reloc::PIC_, std::nullopt,
      llvm::CodeGenOptLevel::Aggressive));
  llvmModule->setTargetTriple(triple);
  llvmModule->setDataLayout(tm->createDataLayout());
  for (llvm::Function &f : *llvmModule) {
    if (f.isDeclaration())
      continue;
    f.addFnAttr("target-cpu", target.cpu);
    if (!target.features.empty())
      f.addFnAttr("target-features", target.features);
  }
  // kiln-plan-memory's arena: the runtime allocates it with the instance.
  uint64_t arenaBytes = 0;
  if (auto bytes = module->getAttrOfType<IntegerAttr>("kiln.arena_bytes"))
    arenaBytes = bytes.getInt();
  uint64_t weightsBytes = constantBytes(*llvmModule);
  addModelInfo(*llvmModule, signature, prefix, addMainAlias, arenaBytes,
               gpuProgram(*llvmModule, module->getAttrOfType<ArrayAttr>("kiln.gpu_kernels"),
                          prefix),
               weightsBytes,
               profileInfo(*llvmModule, module->getAttrOfType<ArrayAttr>("kiln.profile"),
                           prefix),
               externalWeights(*llvmModule, module, prefix));
  optimize(*llvmModule, *tm);

  llvm::raw_string_ostream os(out);
  if (emitLLVMIR) {
    llvmModule->print(os, nullptr);
    return success();
  }
  llvm::SmallVector<char, 0> buffer;
  llvm::raw_svector_ostream objStream(buffer);
  llvm::legacy::PassManager codegen;
  if (tm->addPassesToEmitFile(codegen, objStream, nullptr, llvm::CodeGenFileType::ObjectFile))
    return module.emitError("target '") << target.triple << "' cannot emit object files";
  codegen.run(*llvmModule);
  os << llvm::StringRef(buffer.data(), buffer.size());
  return success();
}
