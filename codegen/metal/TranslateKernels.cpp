//===- TranslateKernels.cpp - SPIR-V kernels to MSL (SPIRV-Cross) ---------===//
#include "codegen/metal/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include <spirv_cross_c.h>

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNMETALTRANSLATEKERNELS
#include "codegen/metal/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;

namespace {

/// One kernel in MSL: its source and its entry point's name there.
struct MslKernel {
  std::string source, entry;
};

/// Translates one SPIR-V kernel whose entry point is `entry` and whose
/// storage buffers are bindings 0 .. buffers - 1 of set 0; or the reason
/// SPIRV-Cross gives.
FailureOr<MslKernel> translate(ArrayRef<uint32_t> words, StringRef entry, unsigned buffers,
                               std::string &error) {
  spvc_context context = nullptr;
  if (spvc_context_create(&context) != SPVC_SUCCESS) {
    error = "cannot create a SPIRV-Cross context";
    return failure();
  }
  auto fail = [&]() -> FailureOr<MslKernel> {
    error = spvc_context_get_last_error_string(context);
    spvc_context_destroy(context);
    return failure();
  };
  spvc_parsed_ir ir;
  spvc_compiler compiler;
  spvc_compiler_options options;
  if (spvc_context_parse_spirv(context, words.data(), words.size(), &ir) != SPVC_SUCCESS ||
      spvc_context_create_compiler(context, SPVC_BACKEND_MSL, ir,
                                   SPVC_CAPTURE_MODE_TAKE_OWNERSHIP, &compiler) != SPVC_SUCCESS ||
      spvc_compiler_create_compiler_options(compiler, &options) != SPVC_SUCCESS ||
      spvc_compiler_options_set_uint(options, SPVC_COMPILER_OPTION_MSL_VERSION,
                                     SPVC_MAKE_MSL_VERSION(2, 1, 0)) != SPVC_SUCCESS ||
      spvc_compiler_install_compiler_options(compiler, options) != SPVC_SUCCESS)
    return fail();
  for (unsigned i = 0; i < buffers; ++i) {
    spvc_msl_resource_binding binding;
    spvc_msl_resource_binding_init(&binding);
    binding.stage = SpvExecutionModelGLCompute;
    binding.desc_set = 0;
    binding.binding = i;
    binding.msl_buffer = i;
    if (spvc_compiler_msl_add_resource_binding(compiler, &binding) != SPVC_SUCCESS)
      return fail();
  }
  const char *source = nullptr;
  if (spvc_compiler_compile(compiler, &source) != SPVC_SUCCESS)
    return fail();
  std::string name = entry.str();
  MslKernel kernel{source, spvc_compiler_get_cleansed_entry_point_name(
                               compiler, name.c_str(), SpvExecutionModelGLCompute)};
  spvc_context_destroy(context);
  return kernel;
}

struct KilnMetalTranslateKernelsPass
    : mlir::kiln::impl::KilnMetalTranslateKernelsBase<KilnMetalTranslateKernelsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto kernels = module->getAttrOfType<ArrayAttr>("kiln.gpu_kernels");
    if (!kernels)
      return;
    Builder b(&getContext());
    SmallVector<Attribute> translated;
    for (auto kernel : kernels.getAsRange<DictionaryAttr>()) {
      SmallVector<uint32_t> words;
      for (const APInt &word : kernel.getAs<DenseIntElementsAttr>("spirv").getValues<APInt>())
        words.push_back(word.getZExtValue());
      StringRef name = kernel.getAs<StringAttr>("name").getValue();
      std::string error;
      FailureOr<MslKernel> msl =
          translate(words, name, kernel.getAs<IntegerAttr>("buffers").getInt(), error);
      if (failed(msl)) {
        module.emitError("kiln-metal-translate-kernels: SPIRV-Cross cannot translate kernel '")
            << name << "' to MSL: " << error;
        return signalPassFailure();
      }
      NamedAttrList fields(kernel);
      fields.erase("spirv");
      fields.set("msl", b.getStringAttr(msl->source));
      fields.set("name", b.getStringAttr(msl->entry));
      translated.push_back(fields.getDictionary(&getContext()));
    }
    module->setAttr("kiln.gpu_kernels", b.getArrayAttr(translated));
  }
};

} // namespace
