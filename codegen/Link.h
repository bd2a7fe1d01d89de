//===- Link.h - turn an object into an executable or a library --*- C++ -*-===//
#ifndef KILN_CODEGEN_LINK_H
#define KILN_CODEGEN_LINK_H

#include "llvm/ADT/StringRef.h"
#include <string>

namespace kiln {

/// Where the prebuilt runtime for `triple` lives:
/// <runtimeRoot>/<triple>/libkiln_runtime.a and libkiln_main.a.
struct RuntimeLocation {
  std::string dir;
  std::string runtimeArchive() const { return dir + "/libkiln_runtime.a"; }
  std::string mainArchive() const { return dir + "/libkiln_main.a"; }
};

/// Finds the runtime for `arch` (x86_64 or aarch64) under `root`.
bool findRuntime(llvm::StringRef root, llvm::StringRef arch, RuntimeLocation &out,
                 std::string &error);

/// Links `object` with the runtime into an executable, using clang from
/// the LLVM installation as the linker driver.
bool linkExecutable(llvm::StringRef object, const RuntimeLocation &runtime,
                    llvm::StringRef triple, llvm::StringRef output, std::string &error);

/// Writes a static library holding the model object and the runtime objects.
bool writeStaticLibrary(llvm::StringRef objectBytes, llvm::StringRef objectName,
                        const RuntimeLocation &runtime, llvm::StringRef output,
                        std::string &error);

} // namespace kiln

#endif
