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

/// Finds the runtime for `triple` under `root`: <root>/x86_64, aarch64
/// (Linux) or arm64-apple-macosx.
bool findRuntime(llvm::StringRef root, llvm::StringRef triple, RuntimeLocation &out,
                 std::string &error);

/// Links `object` with the runtime into an executable: for Linux with clang
/// from the LLVM installation as the linker driver, for macOS with ld64.lld.
bool linkExecutable(llvm::StringRef object, const RuntimeLocation &runtime,
                    llvm::StringRef triple, llvm::StringRef output, std::string &error);

/// What a program linking a static library for `triple` adds after it:
/// "-lm -lpthread" (Linux), "-framework Metal -framework Foundation -lobjc"
/// (macOS).
std::string librariesToLink(llvm::StringRef triple);

/// Writes a static library holding the model object and the runtime objects
/// (a BSD archive for macOS, GNU otherwise).
bool writeStaticLibrary(llvm::StringRef objectBytes, llvm::StringRef objectName,
                        const RuntimeLocation &runtime, llvm::StringRef triple,
                        llvm::StringRef output, std::string &error);

} // namespace kiln

#endif
