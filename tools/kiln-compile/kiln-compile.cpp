//===- kiln-compile.cpp - the kiln ahead-of-time compiler driver ----------===//
//
//   kiln-compile model.onnx -o model                 executable
//   kiln-compile model.onnx --emit=static-lib -o libmodel.a   + model.h
//   kiln-compile model.onnx --emit=object -o model.o
//   kiln-compile model.onnx --emit=mlir --stage=linalg -o -
//
//===----------------------------------------------------------------------===//
#include "codegen/Link.h"
#include "codegen/cuda/CudaBackend.h"
#include "codegen/gpu/GpuTarget.h"
#include "codegen/Passes.h"
#include "codegen/common/Passes.h"
#include "codegen/Pipeline.h"
#include "codegen/cpu/CpuBackend.h"
#include "codegen/cpu/Passes.h"
#include "passes/Passes.h"
#include "dialects/kiln/KilnDialect.h"
#include "frontend/onnx/Importer.h"
#include "tools/kiln-compile/Calibrate.h"
#include "tools/kiln-compile/Header.h"
#include "tools/kiln-compile/InputStatistics.h"
#include "tools/kiln-compile/WeightsFile.h"

#include "mlir/Debug/CLOptionsSetup.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/Timing.h"
#include "mlir/Transforms/Passes.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include <chrono>
#include <limits>
#include "llvm/TargetParser/Triple.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

using llvm::cl::opt;
namespace cl = llvm::cl;
using llvm::StringRef;
using llvm::Twine;
using llvm::SmallString;
using llvm::SmallVector;
using llvm::errs;
namespace sys = llvm::sys;
using namespace mlir;

namespace {
enum class Emit { Exe, StaticLib, Object, LLVMIR, MLIR };
enum class Report { Fusion, Quant, Memory, Sparsity, Placement };
enum class GpuAttention { Auto, Fused, Unfused };

cl::OptionCategory category("kiln-compile options");
cl::opt<std::string> inputFile(cl::Positional, cl::desc("<model.onnx>"), cl::Required,
                               cl::cat(category));
cl::opt<std::string> outputFile("o", cl::desc("Output file ('-' for stdout with text emits)"),
                                cl::value_desc("file"), cl::cat(category));
cl::opt<Emit> emit("emit", cl::desc("What to produce"), cl::init(Emit::Exe),
                   cl::values(clEnumValN(Emit::Exe, "exe", "native executable (default)"),
                              clEnumValN(Emit::StaticLib, "static-lib",
                                         "static library plus a C header next to it"),
                              clEnumValN(Emit::Object, "object", "object file"),
                              clEnumValN(Emit::LLVMIR, "llvm-ir", "optimized LLVM IR"),
                              clEnumValN(Emit::MLIR, "mlir", "MLIR after --stage")),
                   cl::cat(category));
cl::opt<std::string> stage("stage",
                           cl::desc("With --emit=mlir: stop after this stage (kiln, kiln-opt, "
                                    "linalg, bufferized, llvm)"),
                           cl::init("llvm"), cl::cat(category));
cl::opt<std::string> targetTriple("target",
                                  cl::desc("Target: x86_64-linux-gnu (host default), "
                                           "aarch64-linux-gnu, vulkan (kernels on a Vulkan "
                                           "GPU, tiled for any device; vulkan-nvidia and "
                                           "vulkan-lavapipe tile for those; "
                                           "vulkan-lavapipe-sm80 and -sm90a run CUDA's "
                                           "tensor-core kernels on lavapipe, emulated, to "
                                           "test them), "
                                           "cuda (NVIDIA "
                                           "GPUs: sm_80 and sm_90a cubins plus PTX; cuda-sm80 "
                                           "and cuda-sm90a tile for those), or metal (arm64 "
                                           "macOS 13+, MSL kernels on the Metal GPU)"),
                                  cl::cat(category));
cl::opt<std::string> dumpKernels("dump-kernels",
                                 cl::desc("For a GPU target: also write each kernel to "
                                          "DIR/<index>-<name>.spv (Vulkan), .metal (Metal), "
                                          "or .ptx and .fatbin (CUDA)"),
                                 cl::value_desc("DIR"), cl::cat(category));
cl::opt<bool> cudaWideTiles(
    "cuda-wide-tiles",
    cl::desc("For --target=cuda: 16-bit matmuls in 128x128 workgroup tiles (8x16 results "
             "per thread, the sums in dynamic shared memory) instead of 128x64; not yet "
             "timed on a GPU"),
    cl::cat(category));
cl::opt<bool> cudaWgmma(
    "cuda-wgmma",
    cl::desc("For --target=cuda-sm90a: 16-bit matmuls by wgmma (warpgroups of 4 warps, both "
             "operands from shared memory) instead of mma.sync; such kernels run on sm_90a "
             "(H100, H200) alone; not yet run on a GPU (numerics checked by "
             "--target=vulkan-lavapipe-sm90a, which emulates it)"),
    cl::cat(category));
cl::opt<bool> cudaWgmmaOverlap(
    "cuda-wgmma-overlap",
    cl::desc("With --cuda-wgmma: keep a chunk's wgmma in flight while the next chunk is "
             "staged (default); =false waits for each chunk's, to compare"),
    cl::init(true), cl::cat(category));
cl::opt<bool> cudaMmaSp(
    "cuda-mma-sp",
    cl::desc("For --target=cuda: 16-bit matmuls and convolutions whose constant weights "
             "have at most 2 nonzeros in every 4 steps of k (--prune-pattern=2:4) by "
             "mma.sp, the weights laid out compressed at compile time; not yet run on a GPU "
             "(numerics checked by --target=vulkan-lavapipe-sm80, which emulates it)"),
    cl::cat(category));
cl::opt<bool> splitK(
    "split-k",
    cl::desc("For GPU targets: a matmul or convolution with too few workgroups for the "
             "GPU (under 256) and a long reduction sums it in up to 16 slices, each a "
             "batch of workgroups, then adds the partial sums up; not yet timed on a GPU"),
    cl::cat(category));
cl::opt<bool> gpuSynchronousStaging(
    "gpu-synchronous-staging",
    cl::desc("For GPU targets: matmul operands staged in chunks on the schedule of CUDA's "
             "asynchronous copies (up to four in flight), each copied at once by the threads, "
             "not by cp.async: on CUDA to time against cp.async, elsewhere to check that "
             "schedule's results"),
    cl::cat(category));
cl::opt<GpuAttention> gpuAttention(
    "gpu-attention",
    cl::desc("For GPU targets: how attention runs (one kernel, a thread per query row over "
             "all keys, never holding the scores, or on CUDA with --precision=f16|bf16 a warp "
             "per 16 rows on the tensor cores; or unfused, the scores written out between "
             "two batch matmuls, which run on the tensor cores where the target's matmuls do)"),
    cl::init(GpuAttention::Auto),
    cl::values(clEnumValN(GpuAttention::Auto, "auto",
                          "one kernel where the scores would take more than 64 MiB (default)"),
               clEnumValN(GpuAttention::Fused, "fused", "one kernel wherever the heads fit "
                                                        "a thread (D + Dv <= 256)"),
               clEnumValN(GpuAttention::Unfused, "unfused", "always unfused")),
    cl::cat(category));
cl::opt<std::string> cudaToolkit("cuda-toolkit",
                                 cl::desc("For --target=cuda: the CUDA toolkit's folder, whose "
                                          "ptxas and fatbinary build the kernels (default: "
                                          "$CUDA_HOME, /usr/local/cuda, or the PATH's)"),
                                 cl::value_desc("DIR"), cl::cat(category));
cl::opt<std::string> mcpu(
    "mcpu",
    cl::desc("Target CPU (default: the host CPU for host targets, generic otherwise), e.g. "
             "skylake-avx512 or generic+dotprod; or CPU levels, each compiled into the same "
             "binary, which runs the best one the CPU it runs on has: a list "
             "(x86-64,x86-64-v2,x86-64-v3,x86-64-v4; AArch64: armv8-a,armv8.2-a+dotprod,"
             "armv8.6-a+i8mm) or 'portable' (x86-64,x86-64-v3,x86-64-v4; AArch64: all three)"),
    cl::value_desc("CPU|LEVEL,LEVEL...|portable"), cl::cat(category));
cl::list<std::string> inputShapes("input-shape",
                                  cl::desc("Pin an input's shape, e.g. x=1x3x224x224"),
                                  cl::value_desc("NAME=DxDx..."), cl::cat(category));
cl::list<std::string> inputValues("input-value",
                                  cl::desc("Bind an input to a constant (every element), e.g. "
                                           "sr=16000; it leaves the compiled signature"),
                                  cl::value_desc("NAME=VALUE"), cl::cat(category));
cl::opt<std::string> symbolName("name",
                                cl::desc("C symbol prefix of the model (default: from -o)"),
                                cl::cat(category));
cl::opt<bool> profile("profile",
                      cl::desc("Time every kernel when the model runs with --profile "
                               "(executables) or kiln_model_profile_start (C API); off, "
                               "the code has no instrumentation. CPU targets"),
                      cl::cat(category));
cl::opt<std::string> weightsMode(
    "weights",
    cl::desc("Where the weights live: 'embedded' in the code (default), or 'external': in "
             "a weights file beside the output (<output>.kw; a static library's or "
             "object's <name>.kw) that the runtime maps, and that other weights of the same "
             "architecture can replace. CPU targets"),
    cl::value_desc("embedded|external"), cl::init("embedded"), cl::cat(category));
cl::opt<bool> packWeights(
    "pack-weights",
    cl::desc("Write only the weights of the model, in the layout of the weights file given "
             "by --for (a fine-tuned model of the same architecture, compiled with the same "
             "flags), to -o FILE.kw"),
    cl::cat(category));
cl::opt<std::string> packFor("for",
                             cl::desc("--pack-weights: the weights file whose code the new "
                                      "weights must fit"),
                             cl::value_desc("model.kw"), cl::cat(category));
cl::opt<bool> verbose("v",
                      cl::desc("Print a progress line per phase with its time (default when "
                               "stderr is a terminal)"),
                      cl::cat(category));
cl::opt<std::string> runtimeDir("runtime-dir",
                                cl::desc("Directory holding <arch>/libkiln_runtime.a (x86_64, aarch64, "
                                         "arm64-apple-macosx) "
                                         "(default: ../lib/kiln next to kiln-compile)"),
                                cl::cat(category));
cl::list<Report> reports("report",
                         cl::desc("Print what the compiler decided (comma-separated)"),
                         cl::values(clEnumValN(Report::Fusion, "fusion",
                                               "what was fused or folded, and what was not "
                                               "and why"),
                                    clEnumValN(Report::Quant, "quant",
                                               "which ops run quantized, and why the others "
                                               "do not"),
                                    clEnumValN(Report::Memory, "memory",
                                               "the intermediate buffers' total size against "
                                               "the arena they share by liveness"),
                                    clEnumValN(Report::Sparsity, "sparsity",
                                               "what was pruned, and which matmuls run on "
                                               "sparse weights and why"),
                                    clEnumValN(Report::Placement, "placement",
                                               "GPU targets: which ops run in kernels, which "
                                               "stay on the host and why")),
                         cl::CommaSeparated, cl::cat(category));
cl::opt<std::string> quantize("quantize",
                              cl::desc("Run matmuls in int8: int8 (activations calibrated on "
                                       "--calibration-data; convolutions too) or int8-dynamic "
                                       "(activations quantized at run time)"),
                              cl::value_desc("mode"), cl::cat(category));
cl::opt<std::string> precision("precision",
                               cl::desc("Arithmetic of matmuls: f32 (default), bf16 or f16 "
                                        "(matmuls with constant weights: 16-bit operands, "
                                        "f32 sums; on CUDA, attention as one kernel too) or, "
                                        "on CUDA, tf32 (f32 matmuls on the tensor cores, "
                                        "operands rounded to tf32, f32 sums)"),
                               cl::init("f32"), cl::cat(category));
cl::opt<std::string> calibrationData("calibration-data",
                                     cl::desc("With --quantize=int8 or --prune: a directory "
                                              "with one sub-directory per sample, each holding "
                                              "one <input name>.npy per model input"),
                                     cl::value_desc("DIR"), cl::cat(category));
cl::opt<double> quantMinSqnr("quant-min-sqnr",
                             cl::desc("With --quantize=int8: warn (with --strict, fail) when an "
                                      "output's SQNR against f32 on the calibration data is "
                                      "below this many dB"),
                             cl::value_desc("dB"), cl::cat(category));
cl::opt<bool> strict("strict", cl::desc("Make --quant-min-sqnr violations errors"),
                     cl::cat(category));
cl::opt<std::string> calibrationMethod("calibration-method",
                                       cl::desc("How calibration picks activation ranges: "
                                                "minmax (default), percentile (0.01%-99.99%) "
                                                "or entropy (smallest KL divergence)"),
                                       cl::init("minmax"), cl::cat(category));
cl::opt<double> prune("prune",
                      cl::desc("Zero this fraction of the weights of MatMul, Gemm and Conv "
                               "(least important first; see --prune-pattern and "
                               "--prune-method)"),
                      cl::value_desc("fraction"), cl::cat(category));
cl::opt<std::string> pruneMethod("prune-method",
                                 cl::desc("How --prune ranks weights: magnitude (default "
                                          "without --calibration-data), wanda (|w| times its "
                                          "input's norm on the calibration data; the default "
                                          "with it) or sparsegpt (the kept weights are updated "
                                          "to make up for the pruned ones)"),
                                 cl::value_desc("method"), cl::cat(category));
cl::opt<std::string> prunePattern("prune-pattern",
                                  cl::desc("What --prune zeros: unstructured (default), N:M "
                                           "(N of every M inputs stay, e.g. 2:4), block:RxC "
                                           "(R outputs by C inputs, e.g. block:16x1), or "
                                           "channel (whole output channels are removed)"),
                                  cl::value_desc("pattern"), cl::cat(category));
cl::list<std::string> pruneSkip("prune-skip",
                                cl::desc("ONNX node names of layers --prune leaves dense"),
                                cl::value_desc("node,..."), cl::CommaSeparated,
                                cl::cat(category));
cl::opt<std::string> pruneConfig("prune-config",
                                 cl::desc("A file of per-layer fractions for --prune: one "
                                          "'<ONNX node name> <fraction>' per line (0 leaves "
                                          "the layer dense; # starts a comment)"),
                                 cl::value_desc("FILE"), cl::cat(category));
cl::opt<bool> pruneFirstLast("prune-first-last",
                             cl::desc("Let --prune prune the first and the last layer too "
                                      "(left dense by default: they cost the most accuracy)"),
                             cl::cat(category));
cl::opt<std::string> sparseWeights("sparse-weights",
                                   cl::desc("auto (default): f32 and int8 matmuls whose "
                                            "weights are mostly zeros run sparse kernels where "
                                            "a cost model predicts a gain; off: always dense"),
                                   cl::init("auto"), cl::cat(category));
} // namespace

static int error(const Twine &message) {
  errs() << "kiln-compile: error: " << message << "\n";
  return 1;
}

/// `value` as printf's %g writes it: 0.9, 1.5, 50.
static std::string shortNumber(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g", value);
  return text;
}

/// The "NODE=FRACTION" entries of --prune-config, checked against the
/// model's layers and the pattern; failure after printing the error.
static FailureOr<std::vector<std::string>> readPruneConfig(ModuleOp module) {
  auto text = llvm::MemoryBuffer::getFile(pruneConfig);
  if (!text)
    return error("cannot read --prune-config file '" + pruneConfig +
                 "': " + text.getError().message()),
           failure();
  llvm::StringSet<> layers;
  module.walk([&](Operation *op) {
    if (isa<mlir::kiln::MatMulOp, mlir::kiln::GemmOp, mlir::kiln::ConvOp>(op))
      if (auto node = mlir::kiln::onnxNodeOf(op->getLoc()))
        layers.insert(node->name);
  });
  auto nm = mlir::kiln::parsePrunePattern(prunePattern.empty() ? StringRef("unstructured")
                                                                : StringRef(prunePattern));
  std::vector<std::string> entries;
  SmallVector<StringRef> lines;
  (*text)->getBuffer().split(lines, '\n');
  for (auto [i, line] : llvm::enumerate(lines)) {
    std::string where = pruneConfig + ":" + std::to_string(i + 1) + ": ";
    StringRef content = line.split('#').first.trim();
    if (content.empty())
      continue;
    auto [name, value] = content.rsplit(' ');
    name = name.trim();
    double f;
    if (name.empty() || value.trim().getAsDouble(f) || !(f >= 0.0 && f < 1.0))
      return error(where + "expected '<ONNX node name> <fraction in [0, 1)>', got '" +
                   content + "'"),
             failure();
    if (!layers.contains(name))
      return error(where + "'" + name + "' is not a MatMul, Gemm or Conv node of the model"),
             failure();
    if (nm && nm->kind == mlir::kiln::PrunePattern::NofM && f != 0 &&
        std::abs(f - (1.0 - double(nm->a) / nm->b)) > 1e-9)
      return error(where + "--prune-pattern=" + prunePattern + " zeros " +
                   shortNumber(100.0 * (1.0 - double(nm->a) / nm->b)) +
                   "% of a layer's weights: its fraction is that or 0"),
             failure();
    entries.push_back((name + "=" + value.trim()).str());
  }
  return entries;
}

/// Whether --prune-pattern is one kiln-prune takes and fits --prune: N:M
/// zeros exactly 1 - N/M of the weights.
static bool checkPrunePattern(StringRef pattern, double fraction, std::string &why) {
  if (pattern == "channel")
    return true;
  auto p = mlir::kiln::parsePrunePattern(pattern);
  if (!p) {
    why = ("unknown --prune-pattern '" + pattern +
           "' (expected unstructured, N:M with N < M such as 2:4, block:RxC such as "
           "block:16x1, or channel)")
              .str();
    return false;
  }
  double zeros = 1.0 - double(p->a) / p->b;
  if (p->kind == mlir::kiln::PrunePattern::NofM && std::abs(fraction - zeros) > 1e-9) {
    why = ("--prune-pattern=" + pattern + " zeros " + shortNumber(100.0 * zeros) +
           "% of the weights, not the --prune=" + shortNumber(fraction) + " asked for")
              .str();
    return false;
  }
  return true;
}

/// "name (OpType)" for the location of an imported ONNX node.
static std::string describeNode(Location loc) {
  std::string names;
  for (const mlir::kiln::OnnxNode &node : mlir::kiln::onnxNodesOf(loc))
    names += (names.empty() ? "" : " + ") + node.describe();
  return names.empty() ? "?" : names;
}

/// Prints the report remarks of passes ("<kind>: message") to stdout as
/// "<kind>: <node>: message" ("memory: message": its remarks are about whole
/// functions, not nodes); other diagnostics go on to the default handler.
static LogicalResult printReportRemark(Diagnostic &diag) {
  std::string message = diag.str();
  StringRef kind = StringRef(message).split(": ").first;
  if (diag.getSeverity() != DiagnosticSeverity::Remark ||
      (kind != "fusion" && kind != "quant" && kind != "memory" && kind != "sparsity" &&
       kind != "placement"))
    return failure();
  if (kind == "memory") {
    llvm::outs() << message << "\n";
    return success();
  }
  llvm::outs() << kind << ": " << describeNode(diag.getLocation()) << ": "
               << StringRef(message).drop_front(kind.size() + 2) << "\n";
  return success();
}

/// Prints errors at an ONNX node as "error: <model>: node '<name>' (<op>):
/// message" and those about the whole model as "error: <model>: message",
/// and warnings at a node likewise (each once); others go on to the default
/// handler (which prints only errors).
static LogicalResult printModelDiagnostic(Diagnostic &diag) {
  std::optional<mlir::kiln::OnnxNode> node = mlir::kiln::onnxNodeOf(diag.getLocation());
  bool atNode = node && !node->opType.empty();
  auto file = dyn_cast<FileLineColLoc>(diag.getLocation());
  bool warning = diag.getSeverity() == DiagnosticSeverity::Warning;
  if ((diag.getSeverity() != DiagnosticSeverity::Error && !(warning && atNode)) ||
      (!atNode && !(file && file.getLine() == 0)))
    return failure();
  std::string text;
  llvm::raw_string_ostream os(text);
  os << (warning ? "warning: " : "error: ") << inputFile << ": ";
  if (atNode)
    os << "node '" << node->name << "' (" << node->opType << "): ";
  os << diag.str() << "\n";
  static llvm::StringSet<> warned;
  if (warning && !warned.insert(text).second)
    return success();
  errs() << text;
  for (const Diagnostic &note : diag.getNotes())
    errs() << "note: " << note.str() << "\n";
  return success();
}

/// One line per finished phase: "kiln-compile: <phase> (<ms> ms)".
class Progress {
public:
  Progress() : enabled(verbose || errs().is_displayed()), last(now()) {}
  void done(const Twine &phase) {
    double t = now();
    if (enabled)
      errs() << "kiln-compile: " << phase << " (" << llvm::format("%.0f", (t - last) * 1e3)
             << " ms)\n";
    last = t;
  }

private:
  static double now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
  bool enabled;
  double last;
};

static bool parseInputShapes(::kiln::onnx_frontend::ImportOptions &options) {
  for (const std::string &spec : inputShapes) {
    auto [name, dims] = StringRef(spec).split('=');
    if (name.empty() || dims.empty()) {
      error("--input-shape expects NAME=DxDx..., got '" + spec + "'");
      return false;
    }
    std::vector<int64_t> shape;
    SmallVector<StringRef> parts;
    dims.split(parts, 'x');
    for (StringRef p : parts) {
      int64_t d;
      if (p.getAsInteger(10, d) || d < 0) {
        error("--input-shape " + spec + ": '" + p + "' is not a dimension size");
        return false;
      }
      shape.push_back(d);
    }
    options.inputShapes[name] = shape;
  }
  for (const std::string &spec : inputValues) {
    auto [name, text] = StringRef(spec).split('=');
    double value;
    if (name.empty() || text.getAsDouble(value)) {
      error("--input-value expects NAME=NUMBER, got '" + spec + "'");
      return false;
    }
    options.inputValues[name] = value;
  }
  return true;
}

/// A C identifier from a file stem: "libmodel.a" -> "model".
static std::string defaultSymbolName(StringRef output) {
  StringRef stem = sys::path::stem(output.empty() || output == "-" ? inputFile : output);
  if (emit == Emit::StaticLib)
    stem.consume_front("lib");
  std::string name;
  for (char c : stem)
    name += isalnum((unsigned char)c) ? c : '_';
  if (name.empty() || isdigit((unsigned char)name[0]))
    name = "m_" + name;
  return name;
}

/// ONNX TensorProto.DataType code of an element type (0 if none).
static int32_t dtypeCode(Type t) {
  if (t.isF32()) return 1;
  if (t.isF64()) return 11;
  if (t.isF16()) return 10;
  if (t.isBF16()) return 16;
  if (t.isInteger(1)) return 9;
  if (t.isUnsignedInteger(8)) return 2;
  if (t.isUnsignedInteger(16)) return 4;
  if (t.isUnsignedInteger(32)) return 12;
  if (t.isUnsignedInteger(64)) return 13;
  if (t.isInteger(8)) return 3;
  if (t.isInteger(16)) return 5;
  if (t.isInteger(32)) return 6;
  if (t.isInteger(64)) return 7;
  return 0;
}

static FailureOr<mlir::kiln::ModelSignature> signatureOf(ModuleOp module) {
  auto main = module.lookupSymbol<func::FuncOp>("main");
  mlir::kiln::ModelSignature sig;
  auto describe = [](Type t, StringAttr name,
                     ArrayAttr dims = {}) -> FailureOr<mlir::kiln::TensorSignature> {
    auto tt = cast<RankedTensorType>(t);
    int32_t dtype = dtypeCode(tt.getElementType());
    if (!dtype)
      return failure();
    std::vector<std::string> dimNames;
    for (Attribute d : dims ? dims.getValue() : ArrayRef<Attribute>{})
      dimNames.push_back(cast<StringAttr>(d).str());
    return mlir::kiln::TensorSignature{
        name ? name.str() : "", dtype,
        std::vector<int64_t>(tt.getShape().begin(), tt.getShape().end()), dimNames};
  };
  for (unsigned i = 0; i < main.getNumArguments(); ++i) {
    auto t = describe(main.getArgumentTypes()[i],
                      main.getArgAttrOfType<StringAttr>(i, "kiln.name"),
                      main.getArgAttrOfType<ArrayAttr>(i, "kiln.dims"));
    if (failed(t))
      return failure();
    sig.inputs.push_back(*t);
  }
  for (unsigned i = 0; i < main.getNumResults(); ++i) {
    auto t = describe(main.getResultTypes()[i],
                      main.getResultAttrOfType<StringAttr>(i, "kiln.name"));
    if (failed(t))
      return failure();
    sig.outputs.push_back(*t);
  }
  return sig;
}

static bool writeFile(StringRef path, StringRef bytes) {
  std::string message;
  auto out = openOutputFile(path, &message);
  if (!out) {
    error(message);
    return false;
  }
  out->os() << bytes;
  out->keep();
  return true;
}

/// Writes each kernel of kiln.gpu_kernels to `dir`: a SPIR-V binary, MSL
/// source for Metal, or for CUDA its PTX and its fatbin.
static bool writeKernels(ModuleOp module, StringRef dir) {
  auto kernels = module->getAttrOfType<ArrayAttr>("kiln.gpu_kernels");
  if (!kernels) {
    error("--dump-kernels: the model has no GPU kernels (compile it with --target=vulkan, "
          "cuda or metal)");
    return false;
  }
  if (std::error_code ec = sys::fs::create_directories(dir)) {
    error("cannot create '" + dir + "': " + ec.message());
    return false;
  }
  for (auto [i, kernel] : llvm::enumerate(kernels.getAsRange<DictionaryAttr>())) {
    // Files by extension: .spv, .metal, or .ptx and .fatbin.
    SmallVector<std::pair<StringRef, std::string>> files;
    if (auto msl = kernel.getAs<StringAttr>("msl")) {
      files.push_back({".metal", msl.str()});
    } else if (auto fatbin = kernel.getAs<StringAttr>("cuda")) {
      files.push_back({".ptx", kernel.getAs<StringAttr>("ptx").str()});
      files.push_back({".fatbin", fatbin.str()});
    } else {
      std::string code;
      for (const APInt &word : kernel.getAs<DenseIntElementsAttr>("spirv").getValues<APInt>()) {
        uint32_t w = word.getZExtValue();
        code.append(reinterpret_cast<const char *>(&w), sizeof w);
      }
      files.push_back({".spv", code});
    }
    for (auto &[extension, code] : files) {
      SmallString<256> path(dir);
      sys::path::append(path, Twine(i) + "-" + kernel.getAs<StringAttr>("name").getValue() +
                                  extension);
      if (!writeFile(path, code))
        return false;
    }
  }
  return true;
}

static std::string runtimeRoot(const char *argv0) {
  if (!runtimeDir.empty())
    return runtimeDir;
  std::string exe = sys::fs::getMainExecutable(argv0, (void *)&runtimeRoot);
  SmallString<256> root(sys::path::parent_path(sys::path::parent_path(exe)));
  sys::path::append(root, "lib", "kiln");
  return std::string(root);
}

/// Links the model's object code `native` with the runtime into an
/// executable at `path`.
static LogicalResult linkModel(StringRef native, StringRef prefix,
                               const ::kiln::RuntimeLocation &runtime, StringRef triple,
                               StringRef path) {
  SmallString<128> object;
  if (auto ec = sys::fs::createTemporaryFile("kiln-" + prefix, "o", object))
    return error("cannot create a temporary object file: " + ec.message()), failure();
  llvm::FileRemover removeObject(object);
  if (!writeFile(object, native))
    return failure();
  std::string message;
  if (!::kiln::linkExecutable(object, runtime, triple.str(), path, message))
    return error(message), failure();
  return success();
}

/// Compiles `module` (at the kiln-opt stage, not quantized) to an
/// executable at `path`: the f32 model that calibration runs.
static LogicalResult buildExecutable(ModuleOp module, const mlir::kiln::TargetBackend &target,
                                     StringRef prefix, const ::kiln::RuntimeLocation &runtime,
                                     StringRef path) {
  auto signature = signatureOf(module);
  if (failed(signature))
    return failure();
  mlir::kiln::PipelineOptions options;
  options.symbolPrefix = prefix.str();
  PassManager pm(module.getContext(), ModuleOp::getOperationName());
  mlir::kiln::buildPipeline(pm, mlir::kiln::Stage::KilnOpt, mlir::kiln::Stage::LLVM, target,
                            options);
  if (failed(pm.run(module)))
    return failure();
  std::string native;
  if (failed(target.emitObject(module, *signature, prefix, /*addMainAlias=*/true,
                               /*emitLLVMIR=*/false, native)))
    return failure();
  return linkModel(native, prefix, runtime, target.triple(), path);
}

/// Measures `module`'s outputs, and the results of its tagged layers,
/// against the reference model's on the calibration samples; with `report`
/// prints one line each, "<report>: <what>: SQNR ..., (<comparison>)".
static FailureOr<std::vector<::kiln::OutputError>>
measure(ModuleOp module, const ::kiln::CalibrationResult &calibration,
        const ::kiln::ExecutableBuilder &build, StringRef report, StringRef comparison) {
  OwningOpRef<ModuleOp> copy(module.clone());
  std::string message;
  auto errors = ::kiln::measureOutputs(*copy, calibration, build, message);
  if (failed(errors))
    return error(message), failure();
  for (const ::kiln::OutputError &e : *errors) {
    if (report.empty())
      break;
    std::string what = e.layer < 0 ? "output '" + e.output + "'"
                                   : "layer " + describeNode(calibration.layers[e.layer]);
    llvm::outs() << report << ": " << what << ": SQNR " << llvm::format("%.1f", e.sqnrDb)
                 << " dB, max abs error " << llvm::format("%.4g", e.maxAbsError) << " ("
                 << comparison << " on " << calibration.samples.size()
                 << " calibration samples)\n";
  }
  return errors;
}

/// Measures the quantized module against the f32 model on the calibration
/// samples: prints the figures with --report=quant and checks the outputs
/// against --quant-min-sqnr.
static LogicalResult checkAccuracy(ModuleOp module, const ::kiln::CalibrationResult &calibration,
                                   const ::kiln::ExecutableBuilder &build) {
  bool print = llvm::is_contained(reports, Report::Quant);
  auto errors = measure(module, calibration, build, print ? "quant" : "", "int8 vs f32");
  if (failed(errors))
    return failure();
  bool violated = false;
  for (const ::kiln::OutputError &e : *errors) {
    if (e.layer >= 0)
      continue; // --quant-min-sqnr bounds the outputs
    if (quantMinSqnr.getNumOccurrences() && e.sqnrDb < quantMinSqnr) {
      violated = true;
      errs() << "kiln-compile: " << (strict ? "error" : "warning") << ": output '" << e.output
             << "' has SQNR " << llvm::format("%.1f", e.sqnrDb)
             << " dB on the calibration data, below --quant-min-sqnr="
             << llvm::format("%g", quantMinSqnr.getValue()) << "\n";
    }
  }
  return failure(violated && strict);
}

/// Prunes `module` (at the kiln-opt stage) on the calibration data with
/// `statistics` of each layer's inputs, then with --report=sparsity
/// measures it against the dense model.
static LogicalResult
pruneCalibrated(ModuleOp module, const ::kiln::ExecutableBuilder &build,
                llvm::function_ref<LogicalResult(const mlir::kiln::PipelineOptions &)> runPasses,
                const mlir::kiln::PipelineOptions &options, ::kiln::PruneStatistics statistics,
                Progress &progress) {
  std::string message;
  auto calibration =
      ::kiln::calibrateForPruning(module, calibrationData, statistics, build, message);
  if (failed(calibration))
    return error(message), failure();
  progress.done("ran the dense model on " + Twine(calibration->samples.size()) +
                " calibration samples for " + pruneMethod + " pruning of " +
                Twine(calibration->layers.size()) + " layers");
  mlir::kiln::PipelineOptions pruneOnly = options;
  pruneOnly.quantizeDynamic = pruneOnly.sparsify = false;
  pruneOnly.precision = mlir::kiln::Precision::F32;
  if (failed(runPasses(pruneOnly)))
    return error("pruning failed (see above)"), failure();
  if (!options.reportSparsity)
    return success();
  if (failed(measure(module, *calibration, build, "sparsity", "pruned vs dense")))
    return failure();
  progress.done("measured the pruned model on the calibration samples");
  return success();
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  registerAllPasses();
  mlir::kiln::registerKilnCodegenPasses();
  mlir::kiln::registerKilnCommonPasses();
  mlir::kiln::registerKilnCpuPasses();
  mlir::kiln::registerKilnGraphPasses();
  registerMLIRContextCLOptions();
  registerPassManagerCLOptions();
  registerAsmPrinterCLOptions();
  registerDefaultTimingManagerCLOptions();
  cl::HideUnrelatedOptions({&category});
  cl::ParseCommandLineOptions(
      argc, argv,
      "kiln-compile: ahead-of-time compiler from ONNX to native code\n\n"
      "  kiln-compile model.onnx -o model                      executable\n"
      "  kiln-compile model.onnx --emit=static-lib -o libm.a   library + m.h\n"
      "  kiln-compile model.onnx --emit=mlir --stage=linalg -o -\n");

  auto stageValue = mlir::kiln::parseStage(stage);
  if (!stageValue)
    return error("unknown --stage '" + stage + "' (expected one of " +
                 mlir::kiln::stageNames() + ")");
  if (emit != Emit::MLIR && stage.getNumOccurrences())
    return error("--stage only applies to --emit=mlir");
  if (outputFile.empty()) {
    if (emit == Emit::MLIR || emit == Emit::LLVMIR)
      outputFile = "-";
    else
      return error("no output file; pass -o FILE");
  }

  if (!quantize.empty() && quantize != "int8" && quantize != "int8-dynamic")
    return error("unknown --quantize mode '" + quantize + "' (expected int8 or int8-dynamic)");
  bool quantizeStatic = quantize == "int8";
  std::optional<mlir::kiln::Precision> arithmetic =
      llvm::StringSwitch<std::optional<mlir::kiln::Precision>>(precision)
          .Case("f32", mlir::kiln::Precision::F32)
          .Case("bf16", mlir::kiln::Precision::BF16)
          .Case("f16", mlir::kiln::Precision::F16)
          .Case("tf32", mlir::kiln::Precision::TF32)
          .Default(std::nullopt);
  if (!arithmetic)
    return error("unknown --precision '" + precision + "' (expected f32, bf16, f16 or tf32)");
  std::optional<mlir::kiln::GpuTarget> gpu = mlir::kiln::lookupGpuTarget(targetTriple);
  if (precision == "tf32" && !(gpu && gpu->has(mlir::kiln::MmaKind::MmaSync)))
    return error("--precision=tf32 needs a CUDA target (tf32 is the tensor cores' format); " +
                 (targetTriple.empty() ? std::string("the host") : "--target=" + targetTriple) +
                 " computes f32 matmuls in f32");
  if (precision != "f32" && !quantize.empty())
    return error("--precision=" + precision +
                 " and --quantize exclude each other: pick one arithmetic for the matmuls");
  if (quantizeStatic && calibrationData.empty())
    return error("--quantize=int8 needs --calibration-data=DIR (one sub-directory per sample, "
                 "each with one <input name>.npy per model input); --quantize=int8-dynamic "
                 "needs no calibration");
  bool pruning = prune.getNumOccurrences() > 0;
  if (!quantizeStatic && !pruning && calibrationData.getNumOccurrences())
    return error("--calibration-data only applies to --quantize=int8 and --prune");
  if (!quantizeStatic &&
      (calibrationMethod.getNumOccurrences() || quantMinSqnr.getNumOccurrences()))
    return error("--calibration-method and --quant-min-sqnr only apply to --quantize=int8");
  if (strict && !quantMinSqnr.getNumOccurrences())
    return error("--strict only applies to --quant-min-sqnr");
  if (sparseWeights != "auto" && sparseWeights != "off")
    return error("unknown --sparse-weights '" + sparseWeights + "' (expected auto or off)");
  if (prune.getNumOccurrences() && !(prune >= 0.0 && prune < 1.0))
    return error("--prune=" + shortNumber(prune) + " is not a fraction in [0, 1)");
  if (!pruning && (prunePattern.getNumOccurrences() || pruneSkip.getNumOccurrences() ||
                  pruneFirstLast.getNumOccurrences() || pruneMethod.getNumOccurrences() ||
                  pruneConfig.getNumOccurrences()))
    return error("--prune-pattern, --prune-method, --prune-config, --prune-skip and "
                 "--prune-first-last only apply to --prune");
  if (std::string why; pruning && !prunePattern.empty() &&
                       !checkPrunePattern(prunePattern, prune, why))
    return error(why);
  bool channelPruning = prunePattern == "channel";
  if (pruneMethod.empty())
    pruneMethod = calibrationData.empty() || channelPruning ? "magnitude" : "wanda";
  if (channelPruning && pruneConfig.getNumOccurrences())
    return error("--prune-config sets fractions of weights, not of channels: it does not "
                 "apply to --prune-pattern=channel");
  if (channelPruning && pruneMethod != "magnitude")
    return error("--prune-pattern=channel ranks channels by the norm of their weights: "
                 "--prune-method=" + pruneMethod + " does not apply to it");
  auto pruneStatistics = llvm::StringSwitch<std::optional<::kiln::PruneStatistics>>(pruneMethod)
                             .Case("magnitude", ::kiln::PruneStatistics::None)
                             .Case("wanda", ::kiln::PruneStatistics::Norms)
                             .Case("sparsegpt", ::kiln::PruneStatistics::NormsAndGram)
                             .Default(std::nullopt);
  if (!pruneStatistics)
    return error("unknown --prune-method '" + pruneMethod +
                 "' (expected magnitude, wanda or sparsegpt)");
  if (*pruneStatistics != ::kiln::PruneStatistics::None && calibrationData.empty())
    return error("--prune-method=" + pruneMethod +
                 " needs --calibration-data=DIR (one sub-directory per sample, each with one "
                 "<input name>.npy per model input)");
  if (pruneMethod == "sparsegpt" && StringRef(prunePattern).starts_with("block:"))
    return error("--prune-method=sparsegpt prunes unstructured and N:M patterns, not "
                 "--prune-pattern=" + prunePattern + " (wanda and magnitude prune blocks)");
  auto method = ::kiln::parseCalibrationMethod(calibrationMethod);
  if (!method)
    return error("unknown --calibration-method '" + calibrationMethod +
                 "' (expected minmax, percentile or entropy)");

  std::string targetError;
  // Several CPU levels: the stages before code generation run once, for
  // the least demanding level; the rest once per level.
  std::vector<mlir::kiln::CpuLevel> cpuLevels;
  if (StringRef(mcpu).contains(',') || mcpu == "portable") {
    if (gpu)
      return error("--mcpu=" + mcpu + " compiles for several CPUs; --target=" + targetTriple +
                   " is a GPU target");
    auto levels = mlir::kiln::parseCpuLevels(targetTriple, mcpu, targetError);
    if (failed(levels))
      return error(targetError);
    cpuLevels = std::move(*levels);
    if (emit == Emit::MLIR)
      return error("--emit=mlir shows the code of one CPU: give --mcpu one CPU, not " + mcpu);
    if (weightsMode == "external" || packWeights)
      return error("--weights=external takes one CPU: each CPU level packs the weights its "
                   "own way (--mcpu=" + mcpu + ")");
  }
  auto target = mlir::kiln::createTargetBackend(
      targetTriple, cpuLevels.empty() ? StringRef(mcpu) : StringRef(cpuLevels.front().mcpu),
      targetError);
  if (failed(target))
    return error(targetError);
  if (profile && gpu)
    return error("--profile instruments the kernels of CPU targets; --target=" + targetTriple +
                 " is a GPU target, whose kernels the runtime times as they are (CUDA: "
                 "./model --profile TRACE)");
  if (weightsMode != "embedded" && weightsMode != "external")
    return error("unknown --weights '" + weightsMode + "' (expected embedded or external)");
  if (packWeights && packFor.empty())
    return error("--pack-weights needs --for model.kw, the weights file of the compiled "
                 "model whose code the new weights must fit");
  if (!packFor.empty() && !packWeights)
    return error("--for only applies to --pack-weights");
  bool externalWeights = weightsMode == "external" || packWeights;
  if (externalWeights && gpu)
    return error("--weights=external and --pack-weights apply to CPU targets; --target=" +
                 targetTriple + " is a GPU target");
  if (!gpu) {
    std::string target = targetTriple.empty() ? "the host" : "--target=" + targetTriple;
    const std::pair<bool, StringRef> gpuOnly[] = {
        {splitK, "--split-k"},
        {gpuSynchronousStaging, "--gpu-synchronous-staging"},
        {gpuAttention.getNumOccurrences() > 0, "--gpu-attention"}};
    for (auto [given, flag] : gpuOnly)
      if (given)
        return error(flag.str() + " applies to GPU targets (vulkan, cuda, metal), not " + target);
  }
  if (externalWeights && emit == Emit::LLVMIR)
    return error("--weights=external writes a weights file beside an executable, static "
                 "library or object, not beside --emit=llvm-ir");
  // CUDA kernels are assembled by the toolkit's ptxas: find it before
  // compiling anything.
  std::string cudaKit;
  if (cudaWideTiles && !mlir::kiln::isCudaTarget(targetTriple))
    return error("--cuda-wide-tiles needs --target=cuda (or cuda-sm80, cuda-sm90a)");
  if (cudaWgmma && !(gpu && gpu->has(mlir::kiln::MmaKind::Wgmma)))
    return error("--cuda-wgmma needs --target=cuda-sm90a (wgmma is sm_90a's; "
                 "vulkan-lavapipe-sm90a emulates it)");
  if (cudaWgmmaOverlap.getNumOccurrences() && !cudaWgmma)
    return error("--cuda-wgmma-overlap needs --cuda-wgmma");
  if (cudaMmaSp && !(gpu && gpu->has(mlir::kiln::MmaKind::MmaSync)))
    return error("--cuda-mma-sp needs --target=cuda (or cuda-sm80, cuda-sm90a; "
                 "vulkan-lavapipe-sm80 emulates it)");
  if (mlir::kiln::isCudaTarget(targetTriple)) {
    cudaKit = mlir::kiln::findCudaToolkit(cudaToolkit);
    if (cudaKit.empty())
      return error("--target=" + targetTriple + " needs the CUDA toolkit: " +
                   mlir::kiln::cudaToolkitMissing(cudaToolkit));
  }

  ::kiln::onnx_frontend::ImportOptions options;
  if (!parseInputShapes(options))
    return 1;

  DialectRegistry registry;
  registry.insert<mlir::kiln::KilnDialect>();
  registerAllDialects(registry);
  registerAllExtensions(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();

  ScopedDiagnosticHandler modelDiagnostics(&context, printModelDiagnostic);

  // --mlir-timing and its siblings: the import, every pass and code
  // generation, printed when the compilation ends.
  DefaultTimingManager timing;
  applyDefaultTimingManagerCLOptions(timing);
  TimingScope timingRoot = timing.getRootScope();

  Progress progress;
  TimingScope importTiming = timingRoot.nest("import " + inputFile);
  OwningOpRef<ModuleOp> module = ::kiln::onnx_frontend::importModel(inputFile, options, context);
  importTiming.stop();
  if (!module)
    return 1;
  progress.done("imported " + inputFile);
  if (failed(mlir::verify(*module)))
    return error("the imported IR does not verify (see above)");
  auto signature = signatureOf(*module);
  if (failed(signature))
    return error("a model input or output has an element type the runtime cannot describe");

  std::string prefix = symbolName.empty() ? defaultSymbolName(outputFile) : symbolName;
  mlir::kiln::PipelineOptions pipelineOptions;
  pipelineOptions.symbolPrefix = prefix;
  pipelineOptions.reportFusion = llvm::is_contained(reports, Report::Fusion);
  pipelineOptions.quantizeDynamic = quantize == "int8-dynamic";
  pipelineOptions.reportQuant = llvm::is_contained(reports, Report::Quant);
  pipelineOptions.reportMemory = llvm::is_contained(reports, Report::Memory);
  pipelineOptions.reportPlacement = llvm::is_contained(reports, Report::Placement);
  pipelineOptions.cudaToolkit = cudaKit;
  pipelineOptions.wideTensorTiles = cudaWideTiles;
  pipelineOptions.wgmma = cudaWgmma;
  pipelineOptions.wgmmaOverlap = cudaWgmmaOverlap;
  pipelineOptions.sparseMma = cudaMmaSp;
  pipelineOptions.splitContractions = splitK;
  pipelineOptions.synchronousStaging = gpuSynchronousStaging;
  if (gpuAttention == GpuAttention::Fused)
    pipelineOptions.attentionRowsAbove = 0;
  else if (gpuAttention == GpuAttention::Unfused)
    pipelineOptions.attentionRowsAbove = std::numeric_limits<int64_t>::max();
  pipelineOptions.profile = profile;
  pipelineOptions.externalWeights = externalWeights;
  pipelineOptions.precision = *arithmetic;
  if (prune.getNumOccurrences()) {
    pipelineOptions.pruneFraction = prune;
    if (!prunePattern.empty())
      pipelineOptions.prunePattern = prunePattern;
    pipelineOptions.pruneSkip.assign(pruneSkip.begin(), pruneSkip.end());
    pipelineOptions.pruneFirstLast = pruneFirstLast;
    if (!pruneConfig.empty()) {
      auto entries = readPruneConfig(*module);
      if (failed(entries))
        return 1;
      pipelineOptions.pruneLayerFractions = std::move(*entries);
    }
  }
  // The sparse kernels are f32 and int8: 16-bit weights stay dense.
  pipelineOptions.sparsify = sparseWeights == "auto" && precision == "f32";
  pipelineOptions.reportSparsity = llvm::is_contained(reports, Report::Sparsity);
  mlir::kiln::Stage last = emit == Emit::MLIR ? *stageValue : mlir::kiln::Stage::LLVM;
  if (packWeights)
    last = mlir::kiln::Stage::Bufferized; // where the weights leave the code
  ScopedDiagnosticHandler reportPrinter(&context, printReportRemark);
  // Runs the stages from..to on `m` (default: the model, for --target).
  auto runPipeline = [&](mlir::kiln::Stage from, mlir::kiln::Stage to,
                         ModuleOp m = nullptr,
                         const mlir::kiln::TargetBackend *backend = nullptr,
                         const mlir::kiln::PipelineOptions *options = nullptr) {
    PassManager pm(&context, ModuleOp::getOperationName());
    if (failed(applyPassManagerCLOptions(pm)))
      return failure();
    mlir::kiln::buildPipeline(pm, from, to, backend ? *backend : **target,
                              options ? *options : pipelineOptions);
    pm.enableTiming(timingRoot);
    return pm.run(m ? m : *module);
  };
  mlir::kiln::Stage from = mlir::kiln::Stage::Kiln;
  // Static int8 and pruning with calibration data run the model between the
  // kiln-opt stage and the passes that rewrite its weights.
  if ((quantizeStatic || (pruning && !calibrationData.empty())) &&
      last >= mlir::kiln::Stage::KilnOpt) {
    pipelineOptions.deferWeightPasses = true;
    if (failed(runPipeline(from, mlir::kiln::Stage::KilnOpt)))
      return error("compilation failed (see above)");
    from = mlir::kiln::Stage::KilnOpt;
    // Calibration runs the model here, so it is built for this machine
    // whatever the target (the integer arithmetic is the same everywhere).
    std::string message;
    auto host = mlir::kiln::createTargetBackend("", "", message);
    if (failed(host))
      return error(message);
    ::kiln::RuntimeLocation hostRuntime;
    if (!::kiln::findRuntime(runtimeRoot(argv[0]), (*host)->triple(), hostRuntime, message))
      return error(message);
    ::kiln::ExecutableBuilder build = [&](ModuleOp m, StringRef path) {
      return buildExecutable(m, **host, prefix, hostRuntime, path);
    };
    auto runWeightPasses = [&](const mlir::kiln::PipelineOptions &options) {
      PassManager pm(&context, ModuleOp::getOperationName());
      mlir::kiln::addWeightPasses(pm, **target, options);
      pm.enableTiming(timingRoot);
      return pm.run(*module);
    };

    if (pruning && failed(pruneCalibrated(*module, build, runWeightPasses, pipelineOptions,
                                          *pruneStatistics, progress)))
      return 1;
    pipelineOptions.pruneFraction.reset(); // done

    if (quantizeStatic) {
      auto calibration = ::kiln::calibrate(*module, calibrationData, *method, build, message);
      if (failed(calibration))
        return error(message);
      progress.done("calibrated " + Twine(calibration->activations) + " activations on " +
                    Twine(calibration->samples.size()) + " samples (" + calibrationMethod +
                    ")");
      PassManager quantizer(&context, ModuleOp::getOperationName());
      quantizer.addPass(mlir::kiln::createKilnQuantizeStatic({pipelineOptions.reportQuant}));
      quantizer.addPass(createCanonicalizerPass());
      quantizer.addPass(createCSEPass());
      if (failed(quantizer.run(*module)))
        return error("quantization failed (see above)");
      if ((pipelineOptions.reportQuant || quantMinSqnr.getNumOccurrences()) &&
          calibration->activations > 0) {
        if (failed(checkAccuracy(*module, *calibration, build)))
          return 1;
        progress.done("measured the quantized model on the calibration samples");
      }
    }
    if (failed(runWeightPasses(pipelineOptions)))
      return error("compilation failed (see above)");
  }
  // One module per CPU level, lowered on its own (the first the others
  // were cloned from).
  std::vector<OwningOpRef<ModuleOp>> levelModules;
  std::vector<mlir::kiln::CpuVariant> variants;
  for (const mlir::kiln::CpuLevel &level : cpuLevels) {
    std::string suffix;
    for (char c : level.name)
      suffix += isalnum((unsigned char)c) ? c : '_';
    auto backend = mlir::kiln::createTargetBackend(targetTriple, level.mcpu, targetError);
    auto cpu = mlir::kiln::resolveCpuTarget(targetTriple, level.mcpu, targetError);
    if (failed(backend) || failed(cpu))
      return error(targetError);
    levelModules.push_back(OwningOpRef<ModuleOp>(module->clone()));
    mlir::kiln::PipelineOptions levelOptions = pipelineOptions;
    levelOptions.symbolPrefix = prefix + "_" + suffix;
    if (failed(runPipeline(from, last, *levelModules.back(), backend->get(), &levelOptions)))
      return error("compilation failed for CPU " + level.name + " (see above)");
    variants.push_back({*levelModules.back(), *cpu, level.name, suffix, level.requires});
    progress.done("lowered the " + level.name + " variant to the llvm stage");
  }
  if (cpuLevels.empty()) {
    if (failed(runPipeline(from, last)))
      return error("compilation failed (see above)");
    progress.done("lowered to the " + (emit == Emit::MLIR ? stage.getValue() : "llvm") +
                  " stage");
  }
  if (!dumpKernels.empty() && last == mlir::kiln::Stage::LLVM &&
      !writeKernels(*module, dumpKernels))
    return 1;

  if (packWeights) {
    std::string message;
    if (!::kiln::weightsFitFile(*module, packFor, message) ||
        !::kiln::writeWeightsFile(*module, outputFile, dtypeCode, message))
      return error(message);
    progress.done("wrote " + outputFile + ", the weights of " + inputFile + " for " + packFor);
    return 0;
  }

  if (emit == Emit::MLIR) {
    std::string text;
    llvm::raw_string_ostream os(text);
    module->print(os);
    os << "\n";
    return writeFile(outputFile, text) ? 0 : 1;
  }

  // The weights file: <output>.kw beside an executable, <name>.kw beside a
  // library or object.
  SmallString<256> weightsFile(outputFile);
  if (emit != Emit::Exe) {
    weightsFile = sys::path::parent_path(outputFile);
    sys::path::append(weightsFile, prefix);
  }
  weightsFile += ".kw";
  if (externalWeights) {
    (*module)->setAttr("kiln.weights_file",
                       StringAttr::get(&context, sys::path::filename(weightsFile)));
    std::string message;
    if (!::kiln::writeWeightsFile(*module, weightsFile, dtypeCode, message))
      return error(message);
    progress.done("wrote " + weightsFile);
  }

  std::string native;
  TimingScope codegenTiming = timingRoot.nest("LLVM code generation");
  if (variants.empty()
          ? failed((*target)->emitObject(*module, *signature, prefix,
                                         /*addMainAlias=*/emit == Emit::Exe,
                                         emit == Emit::LLVMIR, native))
          : failed(mlir::kiln::emitNativeVariants(variants, *signature, prefix,
                                                  /*addMainAlias=*/emit == Emit::Exe,
                                                  emit == Emit::LLVMIR, native)))
    return 1;
  codegenTiming.stop();
  progress.done("generated code for " + (*target)->description());
  if (emit == Emit::LLVMIR || emit == Emit::Object)
    return writeFile(outputFile, native) ? 0 : 1;

  ::kiln::RuntimeLocation runtime;
  std::string message;
  if (!::kiln::findRuntime(runtimeRoot(argv[0]), (*target)->triple(), runtime, message))
    return error(message);

  if (emit == Emit::StaticLib) {
    if (!::kiln::writeStaticLibrary(native, prefix + ".o", runtime, (*target)->triple(),
                                    outputFile, message))
      return error("writing " + outputFile + ": " + message);
    SmallString<256> header(sys::path::parent_path(outputFile));
    sys::path::append(header, prefix + ".h");
    std::string text;
    if (!::kiln::writeModelHeader(*signature, prefix, inputFile, runtimeRoot(argv[0]),
                                  ::kiln::librariesToLink((*target)->triple()), text, message))
      return error(message);
    if (!writeFile(header, text))
      return 1;
    progress.done("wrote " + outputFile + " and " + header);
    return 0;
  }

  if (failed(linkModel(native, prefix, runtime, (*target)->triple(), outputFile)))
    return 1;
  progress.done("linked " + outputFile);
  return 0;
}
