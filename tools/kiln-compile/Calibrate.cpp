//===- Calibrate.cpp - activation ranges for static int8 ------------------===//
//
// Calibration runs the f32 model itself: the module is cloned with the
// activations of every int8 candidate (passes/Quantization.h) added as
// outputs, compiled to an executable, and run on each sample. Each
// activation's observed values give its range by the chosen method:
//   minmax      the smallest and largest value;
//   percentile  the 0.01% and 99.99% quantiles (outliers clipped);
//   entropy     the clipping threshold T on |x| whose 8-bit histogram keeps
//               the most information (smallest KL divergence, as TensorRT
//               calibrates), giving [max(min, -T), min(max, T)].
//
//===----------------------------------------------------------------------===//
#include "tools/kiln-compile/Calibrate.h"

#include "dialects/kiln/KilnDialect.h"
#include "passes/Quantization.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>

extern "C" {
#include "kiln/runtime.h"
#include "npy.h"
}

using namespace mlir;
namespace fs = llvm::sys::fs;
namespace path = llvm::sys::path;

namespace kiln {

std::optional<CalibrationMethod> parseCalibrationMethod(llvm::StringRef name) {
  return llvm::StringSwitch<std::optional<CalibrationMethod>>(name)
      .Case("minmax", CalibrationMethod::MinMax)
      .Case("percentile", CalibrationMethod::Percentile)
      .Case("entropy", CalibrationMethod::Entropy)
      .Default(std::nullopt);
}

namespace {

/// The file name an executable gives a tensor name (as runtime/src/main.c).
std::string sanitized(llvm::StringRef name) {
  std::string s = name.str();
  for (char &c : s)
    if (!(isalnum((unsigned char)c) || c == '_' || c == '.' || c == '-'))
      c = '_';
  return s;
}

using Sample = CalibrationSample;
using mlir::kiln::kLayerAttr;

std::vector<std::string> inputNames(ModuleOp module) {
  auto main = module.lookupSymbol<func::FuncOp>("main");
  std::vector<std::string> names;
  for (unsigned i = 0; i < main.getNumArguments(); ++i) {
    auto name = main.getArgAttrOfType<StringAttr>(i, "kiln.name");
    names.push_back(name ? name.str() : "input_" + std::to_string(i));
  }
  return names;
}

/// The file stems of main's f32 results (the first `count` of them).
std::vector<std::string> f32OutputNames(ModuleOp module, unsigned count) {
  auto main = module.lookupSymbol<func::FuncOp>("main");
  std::vector<std::string> names;
  for (unsigned i = 0; i < count; ++i) {
    auto name = main.getResultAttrOfType<StringAttr>(i, "kiln.name");
    if (name && cast<RankedTensorType>(main.getResultTypes()[i]).getElementType().isF32())
      names.push_back(sanitized(name.getValue()));
  }
  return names;
}

FailureOr<std::vector<Sample>> listSamples(llvm::StringRef dir,
                                           const std::vector<std::string> &inputs,
                                           std::string &error) {
  if (!fs::is_directory(dir)) {
    error = "calibration data '" + dir.str() + "' is not a directory";
    return failure();
  }
  std::vector<std::string> dirs;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; it != end && !ec; it.increment(ec))
    if (fs::is_directory(it->path()))
      dirs.push_back(it->path());
  std::sort(dirs.begin(), dirs.end());
  if (dirs.empty()) {
    error = "calibration data '" + dir.str() +
            "' holds no samples: expected one sub-directory per sample, each with one "
            "<input name>.npy per model input";
    return failure();
  }
  std::vector<Sample> samples;
  for (const std::string &d : dirs) {
    Sample s{d, {}};
    for (const std::string &name : inputs) {
      llvm::SmallString<256> file(d);
      path::append(file, sanitized(name) + ".npy");
      if (!fs::exists(file)) {
        error = "calibration sample '" + d + "' has no " + path::filename(file).str() +
                " for input '" + name + "'";
        return failure();
      }
      s.inputs.emplace_back(name, std::string(file));
    }
    samples.push_back(std::move(s));
  }
  return samples;
}

/// The int8 candidates of `module` and their activations, in walk order.
std::vector<ObservedLayer> int8Candidates(ModuleOp module) {
  std::vector<ObservedLayer> layers;
  module.walk([&](Operation *op) {
    std::string why;
    if (!isa<mlir::kiln::MatMulOp, mlir::kiln::GemmOp, mlir::kiln::ConvOp>(op))
      return;
    if (FailureOr<Value> x = mlir::kiln::int8Activation(op, why); succeeded(x))
      layers.push_back({op, *x});
  });
  return layers;
}

std::string calibrationOutput(size_t i) { return "kiln_calibration_" + std::to_string(i); }
std::string layerOutput(int64_t i) { return "kiln_layer_" + std::to_string(i); }

/// Makes main also return `value` as output `name`.
void addOutput(func::FuncOp main, Value value, llvm::StringRef name) {
  Builder b(main.getContext());
  auto attrs = b.getDictionaryAttr(b.getNamedAttr("kiln.name", b.getStringAttr(name)));
  (void)main.insertResult(main.getNumResults(), value.getType(), attrs);
  Operation *ret = main.getBody().front().getTerminator();
  ret->insertOperands(ret->getNumOperands(), value);
}

/// Makes main also return the result of every op tagged kiln.layer.
void addLayerOutputs(ModuleOp module) {
  auto main = module.lookupSymbol<func::FuncOp>("main");
  module.walk([&](Operation *op) {
    if (auto layer = op->getAttrOfType<IntegerAttr>(kLayerAttr))
      addOutput(main, op->getResult(0), layerOutput(layer.getInt()));
  });
}

/// A copy of `module` whose main also returns the observed values and the
/// results of the tagged layers.
OwningOpRef<ModuleOp> instrumented(ModuleOp module, llvm::ArrayRef<ObservedLayer> layers) {
  IRMapping mapping;
  OwningOpRef<ModuleOp> copy(cast<ModuleOp>(module->clone(mapping)));
  auto main = copy->lookupSymbol<func::FuncOp>("main");
  for (auto [i, layer] : llvm::enumerate(layers))
    if (layer.observed)
      addOutput(main, mapping.lookup(layer.observed), calibrationOutput(i));
  addLayerOutputs(*copy);
  return copy;
}

LogicalResult runSample(llvm::StringRef exe, const Sample &sample, llvm::StringRef outDir,
                        std::string &error) {
  std::vector<std::string> args = {exe.str(), "--output-dir", outDir.str()};
  for (auto &[name, file] : sample.inputs) {
    args.push_back("--input");
    args.push_back(name + "=" + file);
  }
  std::vector<llvm::StringRef> argRefs(args.begin(), args.end());
  llvm::SmallString<128> errFile;
  if (fs::createTemporaryFile("kiln-calibration", "txt", errFile)) {
    error = "cannot create a temporary file";
    return failure();
  }
  llvm::FileRemover removeErr(errFile);
  std::optional<llvm::StringRef> redirects[] = {llvm::StringRef(""), llvm::StringRef(""),
                                                llvm::StringRef(errFile)};
  std::string message;
  int rc = llvm::sys::ExecuteAndWait(exe, argRefs, std::nullopt, redirects, 0, 0, &message);
  if (rc != 0) {
    auto text = llvm::MemoryBuffer::getFile(errFile);
    std::string detail = text ? (*text)->getBuffer().trim().str() : "";
    llvm::StringRef rest(detail);
    if (rest.consume_front((exe + ": error: ").str())) // the executable's own prefix
      detail = rest.str();
    if (detail.empty())
      detail = !message.empty() ? message : "exit status " + std::to_string(rc);
    error = "calibration run on sample '" + sample.dir + "' failed: " + detail;
    return failure();
  }
  return success();
}

/// The f32 tensor of an .npy file.
FailureOr<ObservedTensor> readF32(const std::string &file, std::string &error) {
  kiln_npy npy;
  char message[512];
  if (kiln_npy_read(file.c_str(), &npy, message, sizeof message)) {
    error = message;
    return failure();
  }
  ObservedTensor t;
  if (npy.dtype == KILN_FLOAT32) {
    const float *data = static_cast<const float *>(npy.data);
    t.values.assign(data, data + npy.bytes / sizeof(float));
    t.shape.assign(npy.shape, npy.shape + npy.rank);
  }
  bool isF32 = npy.dtype == KILN_FLOAT32;
  kiln_npy_free(&npy);
  if (!isF32) {
    error = file + " does not hold f32 values";
    return failure();
  }
  return t;
}

/// What calibration saw of one activation.
struct Observed {
  float lo = std::numeric_limits<float>::infinity();
  float hi = -std::numeric_limits<float>::infinity();
  std::vector<float> values; // all of them, for the percentile and entropy methods
};

float quantile(std::vector<float> &v, double q) {
  size_t i = std::min(v.size() - 1, static_cast<size_t>(q * (v.size() - 1) + 0.5));
  std::nth_element(v.begin(), v.begin() + i, v.end());
  return v[i];
}

/// The threshold on |x| that minimizes the KL divergence between the
/// 2048-bin histogram of |x| clipped at it and that histogram merged into
/// `levels` bins (TensorRT's entropy calibration).
float entropyThreshold(const std::vector<float> &values, float maxAbs, int levels) {
  constexpr int bins = 2048;
  if (maxAbs == 0 || values.empty())
    return 0;
  std::vector<double> hist(bins, 0);
  double width = maxAbs / bins;
  for (float v : values)
    hist[std::min(bins - 1, static_cast<int>(std::fabs(v) / width))] += 1;
  double bestDivergence = std::numeric_limits<double>::infinity();
  int best = bins;
  std::vector<double> suffix(bins + 1, 0); // mass at or past each bin
  for (int i = bins - 1; i >= 0; --i)
    suffix[i] = suffix[i + 1] + hist[i];
  for (int i = levels; i <= bins; ++i) {
    std::vector<double> p(hist.begin(), hist.begin() + i);
    p[i - 1] += suffix[i]; // outliers clip into the last bin
    std::vector<double> q(i, 0);
    for (int j = 0; j < levels; ++j) {
      int start = j * i / levels, end = (j + 1) * i / levels;
      double mass = 0;
      int used = 0;
      for (int k = start; k < end; ++k) {
        mass += hist[k];
        used += hist[k] != 0;
      }
      for (int k = start; k < end; ++k)
        if (hist[k] != 0)
          q[k] = mass / used;
    }
    double pSum = 0, qSum = 0;
    for (int k = 0; k < i; ++k) {
      pSum += p[k];
      qSum += q[k];
    }
    double divergence = 0;
    for (int k = 0; k < i; ++k) {
      if (p[k] == 0)
        continue;
      double pk = p[k] / pSum, qk = q[k] > 0 ? q[k] / qSum : 1e-12;
      divergence += pk * std::log(pk / qk);
    }
    if (divergence < bestDivergence) {
      bestDivergence = divergence;
      best = i;
    }
  }
  return static_cast<float>((best + 0.5) * width);
}

std::pair<float, float> chooseRange(Observed &o, CalibrationMethod method) {
  switch (method) {
  case CalibrationMethod::MinMax:
    return {o.lo, o.hi};
  case CalibrationMethod::Percentile:
    return {quantile(o.values, 1e-4), quantile(o.values, 1 - 1e-4)};
  case CalibrationMethod::Entropy: {
    // Non-negative activations (after a ReLU) use all 255 uint8 levels.
    float t = entropyThreshold(o.values, std::max(std::fabs(o.lo), std::fabs(o.hi)),
                               o.lo >= 0 ? 255 : 128);
    return {std::max(o.lo, -t), std::min(o.hi, t)};
  }
  }
  return {o.lo, o.hi};
}

/// An executable built from a module in a temporary directory, which goes
/// with it (with the sample outputs written there).
class ScratchExecutable {
public:
  ~ScratchExecutable() {
    if (!work.empty())
      fs::remove_directories(work);
  }
  LogicalResult build(ModuleOp module, const ExecutableBuilder &builder, llvm::StringRef what,
                      std::string &error) {
    if (fs::createUniqueDirectory("kiln-calibration", work)) {
      error = "cannot create a temporary directory";
      return failure();
    }
    exePath = work;
    path::append(exePath, "model");
    if (failed(builder(module, exePath))) {
      error = "could not compile " + what.str() + " (see above)";
      return failure();
    }
    return success();
  }
  llvm::StringRef dir() const { return work; }
  llvm::StringRef exe() const { return exePath; }

private:
  llvm::SmallString<128> work, exePath;
};

/// Reads `names` (.npy stems) from `dir`.
FailureOr<std::map<std::string, std::vector<float>>>
readOutputs(llvm::StringRef dir, const std::vector<std::string> &names, std::string &error) {
  std::map<std::string, std::vector<float>> outputs;
  for (const std::string &name : names) {
    llvm::SmallString<128> file(dir);
    path::append(file, name + ".npy");
    auto tensor = readF32(std::string(file), error);
    if (failed(tensor))
      return failure();
    outputs[name] = std::move(tensor->values);
  }
  return outputs;
}

} // namespace

FailureOr<CalibrationResult> runCalibration(ModuleOp module, llvm::StringRef dir,
                                            llvm::ArrayRef<ObservedLayer> layers,
                                            const ExecutableBuilder &build,
                                            const ObserveFn &observe, std::string &error) {
  auto samples = listSamples(dir, inputNames(module), error);
  if (failed(samples))
    return failure();
  CalibrationResult result{*samples, 0, {}, {}};
  if (layers.empty())
    return result;
  unsigned modelOutputs = module.lookupSymbol<func::FuncOp>("main").getNumResults();
  std::vector<std::string> outputNames = f32OutputNames(module, modelOutputs);
  module.walk([](Operation *op) { op->removeAttr(kLayerAttr); }); // an earlier calibration's
  for (auto [i, layer] : llvm::enumerate(layers)) {
    layer.op->setAttr(kLayerAttr,
                      IntegerAttr::get(IntegerType::get(module.getContext(), 64), i));
    result.layers.push_back(layer.op->getLoc());
    outputNames.push_back(layerOutput(i));
  }

  OwningOpRef<ModuleOp> copy = instrumented(module, layers);
  ScratchExecutable scratch;
  if (failed(scratch.build(*copy, build, "the model for calibration", error)))
    return failure();
  llvm::StringRef work = scratch.dir(), exe = scratch.exe();

  for (auto [s, sample] : llvm::enumerate(*samples)) {
    llvm::SmallString<128> out(work);
    path::append(out, "sample" + std::to_string(s));
    if (failed(runSample(exe, sample, out, error)))
      return failure();
    for (size_t i = 0; i < layers.size(); ++i) {
      if (!layers[i].observed)
        continue;
      llvm::SmallString<128> file(out);
      path::append(file, calibrationOutput(i) + ".npy");
      auto tensor = readF32(std::string(file), error);
      if (failed(tensor))
        return failure();
      observe(i, *tensor);
    }
    auto references = readOutputs(out, outputNames, error);
    if (failed(references))
      return failure();
    result.references.push_back(std::move(*references));
    fs::remove_directories(out);
  }
  result.activations = layers.size();
  return result;
}

FailureOr<CalibrationResult> calibrate(ModuleOp module, llvm::StringRef dir,
                                       CalibrationMethod method, const ExecutableBuilder &build,
                                       std::string &error) {
  std::vector<ObservedLayer> layers = int8Candidates(module);
  std::vector<Observed> observed(layers.size());
  auto observe = [&](size_t i, const ObservedTensor &activation) {
    Observed &o = observed[i];
    for (float v : activation.values) {
      o.lo = std::min(o.lo, v);
      o.hi = std::max(o.hi, v);
    }
    if (method != CalibrationMethod::MinMax)
      o.values.insert(o.values.end(), activation.values.begin(), activation.values.end());
  };
  auto result = runCalibration(module, dir, layers, build, observe, error);
  if (failed(result))
    return failure();
  for (auto [layer, o] : llvm::zip(layers, observed)) {
    auto [lo, hi] = chooseRange(o, method);
    layer.op->setAttr(mlir::kiln::kActivationRangeAttr,
                      DenseF32ArrayAttr::get(module.getContext(), {lo, hi}));
  }
  return result;
}

FailureOr<std::vector<OutputError>> measureOutputs(ModuleOp module,
                                                   const CalibrationResult &calibration,
                                                   const ExecutableBuilder &build,
                                                   std::string &error) {
  addLayerOutputs(module);
  ScratchExecutable scratch;
  if (failed(scratch.build(module, build, "the quantized model to measure it", error)))
    return failure();
  llvm::StringRef work = scratch.dir(), exe = scratch.exe();
  std::map<std::string, double> signal, noise, maxAbs;
  for (auto [s, sample] : llvm::enumerate(calibration.samples)) {
    llvm::SmallString<128> out(work);
    path::append(out, "sample" + std::to_string(s));
    if (failed(runSample(exe, sample, out, error)))
      return failure();
    for (const auto &[name, want] : calibration.references[s]) {
      llvm::SmallString<128> file(out);
      path::append(file, name + ".npy");
      if (!fs::exists(file))
        continue; // an op that stayed f32
      auto got = readOutputs(out, {name}, error);
      if (failed(got))
        return failure();
      const std::vector<float> &values = (*got)[name];
      for (size_t i = 0; i < want.size() && i < values.size(); ++i) {
        double d = double(values[i]) - want[i];
        signal[name] += double(want[i]) * want[i];
        noise[name] += d * d;
        maxAbs[name] = std::max(maxAbs[name], std::fabs(d));
      }
    }
  }
  std::vector<OutputError> errors;
  for (const auto &[name, n] : noise) {
    double sqnr = n == 0 ? std::numeric_limits<double>::infinity()
                         : 10 * std::log10(signal[name] / n);
    OutputError e{name, sqnr, maxAbs[name]};
    llvm::StringRef stem(name);
    int layer;
    if (stem.consume_front("kiln_layer_") && !stem.getAsInteger(10, layer))
      e.layer = layer;
    errors.push_back(e);
  }
  // Outputs first (by name), then layers in model order.
  std::sort(errors.begin(), errors.end(), [](const OutputError &a, const OutputError &b) {
    return std::tie(a.layer, a.output) < std::tie(b.layer, b.output);
  });
  return errors;
}

} // namespace kiln
