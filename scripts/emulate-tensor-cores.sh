#!/usr/bin/env bash
# Checks CUDA's tensor-core kernels on whole models without an NVIDIA GPU:
# resnet18 and bert2 (batch 1) compiled for the targets that emulate each
# warp instruction on lavapipe (vulkan-lavapipe-sm80: cp.async, ldmatrix,
# mma.sync; vulkan-lavapipe-sm90a --cuda-wgmma: wgmma), with
# --precision=f16 (bf16 has no SPIR-V type; f16 runs the same fragments),
# against kiln's CPU build with the same flag. Too slow for the test
# command (minutes a model on lavapipe); test/e2e/tensor-core-emulation.test
# covers single layers there.
#
# usage: scripts/emulate-tensor-cores.sh [OUT_DIR] [MODEL...]   (default: build/emulate,
#                                                               resnet18 bert2)
# Prints one OK or MISMATCH line per model and target; exits 1 on a mismatch.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-build/emulate}
shift || true
models=("$@")
[ ${#models[@]} -gt 0 ] || models=(resnet18 bert2)
kiln=build/bin/kiln-compile
[ -x "$kiln" ] || { echo "emulate-tensor-cores: build kiln first (scripts/setup.sh)" >&2; exit 1; }
vulkaninfo --summary >/dev/null 2>&1 || {
  echo "emulate-tensor-cores: no Vulkan device (lavapipe: apt-get install mesa-vulkan-drivers)" >&2
  exit 1
}
mkdir -p "$out"
/usr/bin/python3 scripts/bench/models.py "$out" --batch 1 --few-values "${models[@]}" >/dev/null

failed=0
for model in "${models[@]}"; do
  dir=$out/$model
  mkdir -p "$dir"
  input=$dir/x.npy
  /usr/bin/python3 - "$out/$model-b1.onnx" "$input" <<'EOF'
import sys
import numpy as np
import onnx
graph = onnx.load(sys.argv[1], load_external_data=False).graph
shape = [d.dim_value for d in graph.input[0].type.tensor_type.shape.dim]
np.save(sys.argv[2], np.random.default_rng(7).random(shape, dtype=np.float32))
EOF
  "$kiln" "$out/$model-b1.onnx" --precision=f16 -o "$dir/host"
  "$dir/host" --input "x=$input" --output-dir "$dir/expected" >/dev/null
  for variant in sm80 sm90a-wgmma; do
    case $variant in
      sm80) flags=(--target=vulkan-lavapipe-sm80) ;;
      sm90a-wgmma) flags=(--target=vulkan-lavapipe-sm90a --cuda-wgmma) ;;
    esac
    "$kiln" "$out/$model-b1.onnx" --precision=f16 "${flags[@]}" --report=placement \
      -o "$dir/$variant" > "$dir/$variant.placement" 2>&1
    kernels=$(grep -c 'tensor cores' "$dir/$variant.placement" || true)
    start=$(date +%s)
    "$dir/$variant" --input "x=$input" --output-dir "$dir/out-$variant" >/dev/null
    printf '%s %s (%s matmuls on the tensor cores, %d s): ' "$model" "$variant" "$kernels" \
      $(($(date +%s) - start))
    /usr/bin/python3 test/inputs/compare.py "$dir/expected" "$dir/out-$variant" \
      --rtol 1e-2 --atol 2e-3 || failed=1
  done
done
exit $failed
