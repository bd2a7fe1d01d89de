//===- Header.h - C header for a model in a static library ------*- C++ -*-===//
#ifndef KILN_TOOLS_KILN_COMPILE_HEADER_H
#define KILN_TOOLS_KILN_COMPILE_HEADER_H

#include "codegen/Pipeline.h"
#include <string>

namespace kiln {
/// The documented C API of one compiled model: <prefix>_create/_run/_destroy
/// over the kiln runtime, plus names, shapes and dtypes as macros.
bool writeModelHeader(const mlir::kiln::ModelSignature &signature, const std::string &prefix,
                      const std::string &modelFile, const std::string &runtimeRoot,
                      const std::string &libraries, std::string &out, std::string &error);
} // namespace kiln

#endif
