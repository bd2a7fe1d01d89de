//===- CpuBackend.h - the CPU target: x86-64 and AArch64 --------*- C++ -*-===//
#ifndef KILN_CODEGEN_CPU_CPUBACKEND_H
#define KILN_CODEGEN_CPU_CPUBACKEND_H

#include "codegen/Pipeline.h"
#include "llvm/ADT/StringRef.h"
#include <cstdint>
#include <string>
#include <vector>

namespace mlir::kiln {

/// What codegen needs to know about the machine it compiles for.
struct CpuTarget {
  std::string triple;   // normalized, e.g. x86_64-unknown-linux-gnu
  std::string cpu;      // e.g. sapphirerapids, generic
  std::string features; // LLVM feature string, e.g. +avx512f,...
  int64_t vectorWidthF32 = 4;
  bool avx512Vnni = false; // vpdpbusd on 512-bit registers (int8 matmuls)
  bool avx512Bf16 = false; // vdpbf16ps on 512-bit registers (bf16 matmuls)
  bool avx512Vbmi2 = false; // vpexpandb on 512-bit registers (int8 sparse weights)
  bool i8mm = false;       // AArch64 USDOT on 128-bit registers (int8 matmuls)
  bool dotProd = false;    // AArch64 SDOT, without I8MM
  bool avxVnni = false;    // vpdpbusd on 256-bit registers only (AVX2 CPUs)
  bool amxInt8 = false;    // AMX tiles, tdpbusd (int8 matmuls)
  bool amxBf16 = false;    // AMX tiles, tdpbf16ps (bf16 matmuls)
  int64_t pmaddwdLanes = 0; // x86 without VNNI: int8 on vpmaddwd, 8 (AVX2) or 16 (AVX512-BW) lanes
};

/// The CPU backend for a target triple (empty: the host) and CPU (empty:
/// the host CPU when the triple is the host's, a generic one otherwise).
FailureOr<std::unique_ptr<TargetBackend>> createCpuBackend(llvm::StringRef triple,
                                                           llvm::StringRef cpu,
                                                           std::string &error);

/// One register tile of a (batch) matmul: rows, columns, K steps.
struct MatmulTile {
  bool batched;
  int64_t m, n, k;
  bool operator==(const MatmulTile &o) const {
    return batched == o.batched && m == o.m && n == o.n && k == o.k;
  }
};

/// The most rows a register tile holds for `vectorWidth` f32 lanes: 8 with
/// 32 vector registers (AVX-512, NEON), 6 with 16 (AVX2).
int64_t maxRegisterRows(int64_t vectorWidth);

/// The register tile of an M x N (batch) matmul for `vectorWidth` f32 lanes:
/// up to 8 rows by one or two whole vector registers of columns, one K step,
/// as exact divisors of M and N so that no tile is partial.
MatmulTile chooseRegisterTile(bool batched, int64_t m, int64_t n, int64_t vectorWidth);

/// The transform-dialect script used by kiln-cpu-schedule: tiles and
/// vectorizes the matmuls tagged `kiln.tile = array<i64: ...>`, and the
/// contractions tagged `kiln.packed` when `packed` is set.
std::string buildCpuScheduleScript(llvm::ArrayRef<MatmulTile> tiles, bool packed,
                                   llvm::ArrayRef<int64_t> rowReductionLoops = {},
                                   int64_t vectorWidth = 16);

/// Resolves `--target` and `--mcpu` into a CpuTarget: the host CPU when
/// `cpu` is empty or "native" and the triple is the host's, else `cpu`
/// ("x86-64-v3"), optionally with features ("generic+dotprod+i8mm").
FailureOr<CpuTarget> resolveCpuTarget(llvm::StringRef triple, llvm::StringRef cpu,
                                      std::string &error);

/// Translates an LLVM-dialect module to an object file (or textual LLVM IR)
/// for `target`, adding the `<prefix>_info` model descriptor.
LogicalResult emitNative(ModuleOp module, const CpuTarget &target,
                         const ModelSignature &signature, llvm::StringRef prefix,
                         bool addMainAlias, bool emitLLVMIR, std::string &out);

/// A CPU level that one binary can hold code for (--mcpu=A,B, --mcpu=portable)
/// and the KILN_CPU_* bits (runtime.h) a CPU needs to run it.
struct CpuLevel {
  std::string name;  // "x86-64-v3", "armv8.2-a+dotprod"
  std::string mcpu;  // what resolveCpuTarget takes: "x86-64-v3", "generic+dotprod"
  uint32_t requires; // KILN_CPU_* bits
};
/// The levels a `--mcpu` list names for `triple` ("portable": every level
/// worth a variant), from the least to the most demanding; an error for a
/// name that is not a level of the triple's architecture.
FailureOr<std::vector<CpuLevel>> parseCpuLevels(llvm::StringRef triple, llvm::StringRef list,
                                                std::string &error);

/// One model compiled for one CPU level: a module at the LLVM stage.
struct CpuVariant {
  ModuleOp module;
  CpuTarget target;
  std::string name;   // the level's
  std::string suffix; // of its symbols: "x86_64_v3"
  uint32_t requires;
};
/// Emits the variants' code in one object (or LLVM IR) with the model's
/// descriptor `<prefix>_info`, which lists each variant's descriptor for
/// the runtime to pick from by the CPU it runs on.
LogicalResult emitNativeVariants(llvm::ArrayRef<CpuVariant> variants,
                                 const ModelSignature &signature, llvm::StringRef prefix,
                                 bool addMainAlias, bool emitLLVMIR, std::string &out);

} // namespace mlir::kiln

#endif
