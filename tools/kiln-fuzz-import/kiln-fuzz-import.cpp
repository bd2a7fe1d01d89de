//===- kiln-fuzz-import.cpp - libFuzzer target on the ONNX importer -------===//
//
// Each input is taken as an ONNX model file: parsed, validated, imported
// and, when the import succeeds, verified. Most inputs are malformed and
// are refused with a diagnostic, which is the expected outcome; a crash, a
// sanitizer report, a leak, a timeout or running out of memory is a bug.
// Built by scripts/sanitize.sh (CMake -DKILN_FUZZ=ON, clang's
// -fsanitize=fuzzer,address,undefined); its seed corpus is the test models.
//
//===----------------------------------------------------------------------===//
#include "frontend/onnx/Importer.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mlir::MLIRContext context(mlir::MLIRContext::Threading::DISABLED);
  context.getDiagEngine().registerHandler([](mlir::Diagnostic &) { return mlir::success(); });
  llvm::StringRef bytes(reinterpret_cast<const char *>(data), size);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      kiln::onnx_frontend::importModelBytes(bytes, "fuzz.onnx", {}, context);
  if (module)
    (void)mlir::verify(*module);
  return 0;
}
