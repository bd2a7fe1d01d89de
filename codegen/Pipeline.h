//===- Pipeline.h - stages, target backends, named pipelines ----*- C++ -*-===//
//
// A model goes through the stages in order. The first two are the same for
// every target: `kiln` is the imported graph, `kiln-opt` the graph after
// fusion and the passes that rewrite weights. From `linalg` on, a
// TargetBackend adds the passes of each stage; the last stage is the one
// its object emission reads.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_CODEGEN_PIPELINE_H
#define KILN_CODEGEN_PIPELINE_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/StringRef.h"
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mlir::kiln {

/// The stages of the pipeline, in order; `--stage=` names them.
enum class Stage { Kiln, KilnOpt, Linalg, Bufferized, LLVM };
std::optional<Stage> parseStage(llvm::StringRef name);
llvm::StringRef stageName(Stage stage);
std::string stageNames(); // "kiln, kiln-opt, linalg, bufferized, llvm"

/// Name, element type code (ONNX TensorProto.DataType) and shape of one
/// model input or output, as the runtime sees it.
struct TensorSignature {
  std::string name;
  int32_t dtype;
  std::vector<int64_t> shape;         ///< ShapedType::kDynamic where dynamic
  std::vector<std::string> dimNames;  ///< empty, or one ("" if unnamed) per dimension
};
struct ModelSignature {
  std::vector<TensorSignature> inputs, outputs;
};

/// The arithmetic of matmuls (--precision).
enum class Precision {
  F32,  // f32 operands and sums
  BF16, // constant weights and their activations rounded to bf16, f32 sums
  F16,  // likewise in f16
  TF32, // CUDA targets: f32 matmuls on the tensor cores, operands rounded to tf32
};

/// The choices of one compilation that are not about the target.
struct PipelineOptions {
  std::string symbolPrefix = "kiln_model"; // C symbol prefix of the model
  bool reportFusion = false; // fusion passes emit a "fusion: " remark per decision
  bool quantizeDynamic = false; // int8 matmuls, activations quantized at run time
  bool reportQuant = false;     // quantization passes emit a "quant: " remark per decision
  Precision precision = Precision::F32;
  bool reportMemory = false;    // kiln-plan-memory emits a "memory: " remark per function
  bool reportPlacement = false; // GPU targets: a "placement: " remark per kernel and host op
  bool profile = false; // CPU targets: kiln_profile_begin/end around each kernel
  bool externalWeights = false; // CPU targets: constants read from a weights file
  std::string cudaToolkit;      // CUDA targets: the toolkit's folder (empty: looked for)
  bool wideTensorTiles = false; // CUDA targets: 16-bit matmuls in 128x128 tiles
  bool wgmma = false;           // cuda-sm90a: 16-bit matmuls by wgmma (kiln-cuda-wgmma)
  bool wgmmaOverlap = true;     // a chunk's wgmma in flight while the next is staged
  bool sparseMma = false;       // CUDA targets: 2:4-sparse weights by mma.sp (kiln-cuda-mma-sparse)
  bool splitContractions = false; // GPU targets: split-K for matmuls of few workgroups
  // GPU targets: matmul operands staged on the schedule of CUDA's
  // asynchronous copies, each chunk copied at once (kiln-gpu-promote-operands).
  bool synchronousStaging = false;
  // GPU targets: attention whose scores would take more bytes is one kernel
  // of a thread per query row (kiln-gpu-attention-rows); the rest unfused.
  int64_t attentionRowsAbove = 64 << 20;
  // Pruning before everything that reads the weights (kiln-prune, or
  // kiln-prune-channels for the pattern "channel").
  std::optional<double> pruneFraction;
  std::string prunePattern = "unstructured";
  std::vector<std::string> pruneSkip;
  bool pruneFirstLast = false;
  std::vector<std::string> pruneLayerFractions; // "NODE=FRACTION" (--prune-config)
  bool sparsify = true;        // mostly-zero weights run sparse where the target can
  bool reportSparsity = false; // pruning and sparsify emit a "sparsity: " remark per layer
  // The kiln-opt stage leaves out the passes that rewrite weights (pruning,
  // quantization, sparsity): the driver calibrates first, then runs them
  // with addWeightPasses.
  bool deferWeightPasses = false;
};

/// Code generation for one kind of target: the passes of the stages after
/// kiln-opt, and the translation of the last stage to an object file.
class TargetBackend {
public:
  virtual ~TargetBackend() = default;
  /// The normalized triple of the objects it emits.
  virtual llvm::StringRef triple() const = 0;
  /// For progress lines, e.g. "x86_64-unknown-linux-gnu (sapphirerapids)".
  virtual std::string description() const = 0;
  /// Adds the passes that take the module from the stage before `stage`
  /// (Linalg, Bufferized or LLVM) to `stage`: the target's hook below.
  void addStagePasses(OpPassManager &pm, Stage stage, const PipelineOptions &options) const;
  /// Whether 16-bit models' matmuls keep their 16-bit operands and sum in
  /// f32 (kiln-compute-half-in-f32's widen-matmuls), for matrix units that
  /// read them; otherwise they compute in f32 from widened operands.
  virtual bool widensHalfMatmuls() const { return false; }
  /// Adds what the target does with mostly-zero weights (sparse kernels),
  /// the last of the weight passes; nothing by default.
  virtual void addSparsityPasses(OpPassManager &pm, const PipelineOptions &options) const {}
  /// Translates a module at the LLVM stage into an object file (or textual
  /// LLVM IR) with the `<prefix>_info` model descriptor.
  virtual LogicalResult emitObject(ModuleOp module, const ModelSignature &signature,
                                   llvm::StringRef prefix, bool addMainAlias, bool emitLLVMIR,
                                   std::string &out) const = 0;

protected:
  /// kiln-opt -> linalg (on tensors).
  virtual void addLinalgPasses(OpPassManager &pm, const PipelineOptions &options) const = 0;
  /// linalg -> bufferized (memrefs, the memory plan).
  virtual void addBufferizedPasses(OpPassManager &pm, const PipelineOptions &options) const = 0;
  /// bufferized -> llvm (what emitObject translates).
  virtual void addLLVMPasses(OpPassManager &pm, const PipelineOptions &options) const = 0;
};

/// The backend for `--target` (empty: the host) and `--mcpu` (empty: the
/// host CPU for a host target, a generic one otherwise), or an error.
FailureOr<std::unique_ptr<TargetBackend>> createTargetBackend(llvm::StringRef target,
                                                              llvm::StringRef cpu,
                                                              std::string &error);
/// What `--target` accepts, for --help and errors.
llvm::StringRef targetNames();

/// Adds the passes that take the module from stage `from` to stage `to`.
void buildPipeline(OpPassManager &pm, Stage from, Stage to, const TargetBackend &backend,
                   const PipelineOptions &options);

/// Adds the passes of the kiln-opt stage that rewrite weights: kiln-prune
/// (with options.pruneFraction), then int8-dynamic or bf16 arithmetic, then
/// the backend's sparse kernels.
void addWeightPasses(OpPassManager &pm, const TargetBackend &backend,
                     const PipelineOptions &options);

/// Adds bufferization as every target runs it, after its own passes on
/// tensors: one-shot bufferization (identity layouts at function
/// boundaries, allocations returned from loops allowed), the dynamic entry,
/// results as out-parameters, then canonicalization and CSE.
void addBufferizationPasses(OpPassManager &pm);

/// Registers `kiln-pipeline{from= to= target= mcpu=}` and one
/// `kiln-stage-<stage>{target= mcpu=}` per stage after `kiln`, so that
/// kiln-opt replays any part of the pipeline kiln-compile runs.
void registerKilnPipelines();

} // namespace mlir::kiln

#endif
