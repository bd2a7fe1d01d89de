//===- WeightsFile.cpp - a model's weights file (.kw) ---------------------===//
#include "tools/kiln-compile/WeightsFile.h"
#include "dialects/kiln/KilnDialect.h"
#include "kiln/runtime.h"
#include "weights.h" // runtime/src: the file format, its writer and reader

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"

#include <cstring>

using namespace mlir;

namespace {
/// One tensor of kiln.external_weights.
struct Tensor {
  std::string name;
  uint64_t offset;
  ElementsAttr value;
};

std::vector<Tensor> tensorsOf(DictionaryAttr weights) {
  std::vector<Tensor> tensors;
  for (auto t : weights.getAs<ArrayAttr>("tensors").getAsRange<DictionaryAttr>())
    tensors.push_back({t.getAs<StringAttr>("name").str(),
                       (uint64_t)t.getAs<IntegerAttr>("offset").getInt(),
                       t.getAs<ElementsAttr>("value")});
  return tensors;
}

/// The elements of `value` as they lie in memory: row-major, splats
/// expanded, booleans a byte each.
std::vector<char> bytesOf(ElementsAttr value) {
  Type element = value.getElementType();
  uint64_t count = value.getNumElements();
  if (element.isInteger(1)) {
    std::vector<char> bytes;
    for (bool b : value.getValues<bool>())
      bytes.push_back(b);
    return bytes;
  }
  uint64_t width = element.getIntOrFloatBitWidth() / 8;
  if (std::optional<ArrayRef<char>> raw = mlir::kiln::rawElementsData(value))
    return std::vector<char>(raw->begin(), raw->end());
  auto dense = cast<DenseElementsAttr>(value); // a splat
  ArrayRef<char> one = dense.getRawData();
  std::vector<char> bytes(count * width);
  for (uint64_t i = 0; i < count; ++i)
    std::memcpy(&bytes[i * width], one.data(), width);
  return bytes;
}
} // namespace

bool ::kiln::writeWeightsFile(ModuleOp module, StringRef path,
                            function_ref<int32_t(Type)> dtypeOf, std::string &error) {
  auto weights = module->getAttrOfType<DictionaryAttr>("kiln.external_weights");
  if (!weights) {
    error = "the model has no external weights";
    return false;
  }
  std::vector<Tensor> tensors = tensorsOf(weights);
  std::vector<kiln_weights_entry> entries(tensors.size());
  std::vector<std::vector<char>> data;
  std::vector<const void *> pointers;
  for (auto [entry, tensor] : llvm::zip(entries, tensors)) {
    auto type = cast<ShapedType>(tensor.value.getType());
    if (type.getRank() > KILN_WEIGHTS_MAX_RANK) {
      error = "constant '" + tensor.name + "' has rank " + std::to_string(type.getRank()) +
              "; a weights file holds ranks up to " + std::to_string(KILN_WEIGHTS_MAX_RANK);
      return false;
    }
    data.push_back(bytesOf(tensor.value));
    std::strncpy(entry.name, tensor.name.c_str(), sizeof entry.name - 1);
    entry.offset = tensor.offset;
    entry.bytes = data.back().size();
    entry.dtype = dtypeOf(type.getElementType());
    entry.rank = type.getRank();
    llvm::copy(type.getShape(), entry.shape);
  }
  for (const std::vector<char> &d : data)
    pointers.push_back(d.data());
  char message[512];
  if (kiln_weights_write(path.str().c_str(), weights.getAs<IntegerAttr>("fingerprint").getInt(),
                         entries.size(), entries.data(), pointers.data(),
                         weights.getAs<IntegerAttr>("bytes").getInt(), message,
                         sizeof message)) {
    error = message;
    return false;
  }
  return true;
}

/// "conv1 (Conv): float32 [64, 3, 7, 7], 37632 bytes".
static std::string describe(const kiln_weights_entry &e) {
  std::string shape;
  for (int32_t d = 0; d < e.rank; ++d)
    shape += (d ? ", " : "") + std::to_string(e.shape[d]);
  return std::string(e.name) + ": " + kiln_dtype_name(e.dtype) + " [" + shape + "], " +
         std::to_string(e.bytes) + " bytes";
}

bool ::kiln::weightsFitFile(ModuleOp module, StringRef path, std::string &error) {
  auto weights = module->getAttrOfType<DictionaryAttr>("kiln.external_weights");
  kiln_weights_header header;
  kiln_weights_entry *entries;
  char message[512];
  if (kiln_weights_read_table(path.str().c_str(), &header, &entries, message, sizeof message)) {
    error = message;
    return false;
  }
  std::unique_ptr<kiln_weights_entry, decltype(&free)> owned(entries, free);
  uint64_t fingerprint = weights ? weights.getAs<IntegerAttr>("fingerprint").getInt() : 0;
  if (weights && fingerprint == header.fingerprint)
    return true;
  std::vector<Tensor> tensors = weights ? tensorsOf(weights) : std::vector<Tensor>();
  std::string why;
  if (tensors.size() != header.num_tensors) {
    why = "it has " + std::to_string(tensors.size()) + " constant tensors, " + path.str() +
          " has " + std::to_string(header.num_tensors);
  } else {
    for (auto [tensor, entry] : llvm::zip(tensors, llvm::ArrayRef(entries, header.num_tensors))) {
      auto type = cast<ShapedType>(tensor.value.getType());
      bool same = tensor.offset == entry.offset && type.getRank() == entry.rank &&
                  llvm::equal(type.getShape(), llvm::ArrayRef(entry.shape, entry.rank));
      if (!same) {
        why = "its constant " + tensor.name + " is shaped " +
              llvm::join(llvm::map_range(type.getShape(),
                                         [](int64_t d) { return std::to_string(d); }),
                         "x") +
              " where " + path.str() + " has " + describe(entry);
        break;
      }
    }
    if (why.empty())
      why = "its tensors have the shapes of " + path.str() +
            "'s, but its code differs: a constant the compiler folds into code (a scalar, "
            "an all-zero bias) has another value, or other compile flags were given";
  }
  error = "the model does not fit the code " + path.str() + " was written for (" + why +
          "); compile it with the same flags, or compile a new binary";
  return false;
}
