//===- kiln-opt.cpp - run kiln and upstream passes on .mlir files ---------===//
#include "codegen/Passes.h"
#include "codegen/Pipeline.h"
#include "codegen/common/Passes.h"
#include "codegen/cpu/Passes.h"
#include "codegen/cuda/Passes.h"
#include "codegen/gpu/Passes.h"
#include "codegen/metal/Passes.h"
#include "codegen/spirv/Passes.h"
#include "dialects/kiln/KilnDialect.h"
#include "passes/Passes.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::registerAllPasses();
  mlir::kiln::registerKilnCodegenPasses();
  mlir::kiln::registerKilnCommonPasses();
  mlir::kiln::registerKilnCpuPasses();
  mlir::kiln::registerKilnGpuPasses();
  mlir::kiln::registerKilnSpirvPasses();
  mlir::kiln::registerKilnMetalPasses();
  mlir::kiln::registerKilnCudaPasses();
  mlir::kiln::registerKilnPipelines();
  mlir::kiln::registerKilnGraphPasses();
  mlir::DialectRegistry registry;
  registry.insert<mlir::kiln::KilnDialect>();
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "kiln optimizer driver\n", registry));
}
