#!/usr/bin/env bash
# Installs what kiln needs on Debian 12 (only what is missing) and builds it
# into build/. Safe to rerun; later runs only rebuild what changed.
# KILN_BUILD_DIR and KILN_CMAKE_ARGS build another configuration elsewhere
# (scripts/sanitize.sh: build-asan/ with the sanitizers).
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools clang-22 lld-22
          libonnx-dev libprotobuf-dev protobuf-compiler ninja-build cmake
          ccache                     # a clean clone's build reuses earlier compiles
          python3-onnx python3-numpy libgtest-dev file libonnx-testdata qemu-user gcc-aarch64-linux-gnu libc6-dev-arm64-cross
          libopenblas0-pthread time  # OpenBLAS: the benchmark measures its sgemm as the peak; time: compile-time benchmark
          libclang-rt-22-dev         # ASan, UBSan and libFuzzer runtimes (scripts/sanitize.sh)
          libvulkan-dev spirv-tools  # --target=vulkan: the runtime's Vulkan headers; spirv-val
          libspirv-cross-c-shared-dev  # --target=metal: SPIR-V kernels to MSL
          mesa-vulkan-drivers vulkan-tools)  # lavapipe, the CPU Vulkan device the tests run on
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
command -v node >/dev/null || missing+=(nodejs)
command -v npm >/dev/null || missing+=(npm)
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}" ||
    { $SUDO apt-get update -q && $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"; }
fi

# onnxruntime-node is the reference the end-to-end tests compare against.
if [ ! -d .cache/npm/node_modules/onnxruntime-node ]; then
  echo "setup: installing onnxruntime-node@1.30.0 (reference runtime for tests)"
  mkdir -p .cache/npm
  (cd .cache/npm && npm install --silent --no-audit --no-fund --ignore-scripts \
      onnxruntime-node@1.30.0 >/dev/null)
fi

scripts/fetch-models.sh

BUILD_DIR=${KILN_BUILD_DIR:-build}
read -r -a EXTRA_ARGS <<< "${KILN_CMAKE_ARGS:-}"
if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  cmake -G Ninja -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release "${EXTRA_ARGS[@]}" \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    -DCMAKE_C_COMPILER=/usr/lib/llvm-22/bin/clang \
    -DCMAKE_CXX_COMPILER=/usr/lib/llvm-22/bin/clang++ \
    -DLLVM_USE_LINKER=lld -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit >/dev/null
fi
echo "setup: building kiln in $BUILD_DIR"
ninja -C "$BUILD_DIR"
