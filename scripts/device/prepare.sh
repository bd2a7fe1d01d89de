#!/usr/bin/env bash
# Prepares the GPU checks that scripts/device/run.py runs on a machine with
# an NVIDIA GPU, which has no LLVM/MLIR to build kiln: everything is
# compiled here, into build/device/<model>/ (carry `build/device` to the
# machine; under 64 MiB):
#   model.onnx, input_N.npy        the model and its inputs
#   expected/                      the reference outputs: onnxruntime's, or
#                                  for a model of 16-bit or int8 arithmetic
#                                  (names ending in -bf16, -f16, -int8)
#                                  kiln's on this CPU with the same flags
#                                  (the same roundings, f32 or exact i32
#                                  sums)
#   cuda, vulkan                   kiln executables (--target=cuda,
#                                  --target=vulkan-nvidia)
#   cuda-split-k                   resnet18 and bert2 at batch 1 only:
#                                  --target=cuda --split-k, timed beside
#                                  cuda
#   cuda-wgmma                     matmul256-f16, matmul-wide-f16, fc-f16
#                                  and conv-bf16: --target=cuda-sm90a
#                                  --cuda-wgmma (numerics beside cuda's)
#   cuda-wgmma-serial              matmul256-f16 and conv-bf16: the same
#                                  with --cuda-wgmma-overlap=false
#   cuda-mma-sp                    the -2of4 models: --target=cuda
#                                  --cuda-mma-sp (2:4 weights by mma.sp;
#                                  numerics beside cuda's, which runs
#                                  the same weights dense)
#   cuda-sync                      conv-bf16 and transformer: --target=cuda
#                                  --gpu-synchronous-staging (numerics
#                                  beside cuda's)
#   cuda-unfused                   attention4096 only: --target=cuda
#                                  --gpu-attention=unfused, timed beside
#                                  cuda (one kernel)
#   bench                          present: benchmark it (inputs random)
# Models: the synthetic MLP, CNN and transformer layer, PaddleOCR's
# text-direction classifier, a 256^3 matmul (numerics) and a 4096^3 one
# (benchmark only: its reference would not fit); on the tensor cores
# (mma.sync): linear-bf16 and linear-f16, a layer of 128 rows with
# --precision=bf16 and f16 (ldmatrix fragments, cp.async chunks), a
# 256^3 f16 matmul, a 2048x256x1024 f16 one (128x64 tiles, warps of
# 32x64, the sums in the chunks' place), a dynamic batch of f16 ones
# (cp.async from flat buffers), an f16 Gemm with transB and a bias (a
# Linear as exporters write it), the 3x3 convolution with
# --precision=bf16 (conv-bf16: an implicit GEMM, its receptive fields
# staged from registers), a 256^3 f32 matmul and the convolution with
# --precision=tf32 (numerics; their expected outputs from operands rounded
# to tf32 as cvt.rna does, summed in f64: torch_graph.py run --tf32), the
# layer with --quantize=int8-dynamic (u8 x s8, numerics), and
# the layer, the convolution (--prune=0.5 --prune-pattern=2:4
# --prune-first-last --precision=bf16) and the f16 Gemm (pruned 2:4 in
# the file) with 2:4 weights (linear-2of4-bf16, conv-2of4-bf16,
# fc-2of4-f16: mma.sp, the weight the sparse operand as B, as A, and
# read transposed; gemm4096-bf16-2of4, benchmark only: a 4096^3 bf16
# GEMM of an input by a constant weight pruned 2:4, mma.sp against
# mma.sync on the same weights); 16-bit GEMMs of 4096^3 and 8192^3 in
# bf16 and f16 (benchmark only, against PyTorch's; bf16 also in 128x128
# tiles, -wide, by wgmma, -wgmma, and both, -wgmma-wide; without cp.async,
# -sync); attention over 4096
# tokens (attention4096, benchmark only: one kernel against
# --gpu-attention=unfused and PyTorch) and its one-kernel form on a banded
# mask (attention-rows, numerics), with --precision=f16 or bf16 on the
# tensor cores (attention4096-bf16, benchmark; attention-mma-f16,
# numerics against a reference from f16 operands, its own tolerance: P
# rounded to f16), and a half model's (attention.py --f16-model: no
# --precision, the kernel reading the f16 tensors; attention4096-f16model,
# benchmark; attention-mma-f16model, numerics); softmax, log-softmax and layer norms
# as one kernel of a workgroup per row (rows, numerics); resnet18 and bert2
# (scripts/bench/models.py) at batch 1 and 32, CUDA only, with torch.json
# and torch-weights.npz for PyTorch's run of the same graph
# (torch_graph.py), their weights drawn from 8 values so that xz packs the
# executables and weights (every file over 64 KB as FILE.xz; run.py
# unpacks them) into the 64 MiB
# the GPU machine takes; batch 1 with an input and onnxruntime's outputs.
#
#   scripts/device/prepare.sh [TARGET...]   # default: cuda vulkan-nvidia
#   scripts/device/prepare.sh conformance   # the ONNX conformance tests for
#       --target=cuda, their models linked into one program (run-models),
#       with their inputs and expected outputs, as
#       build/device-conformance/tests.tar.xz (carry build/device-conformance;
#       run there with scripts/device/conformance.py)
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ "${1:-}" = conformance ]; then
  out=build/device-conformance
  rm -rf "$out" && mkdir -p "$out"
  git describe --always --dirty > "$out/COMMIT"
  /usr/bin/python3 test/conformance/run.py --target cuda --prepare "$out/tests"
  tar -C "$out/tests" -cf - . | xz -T0 -6 > "$out/tests.tar.xz"
  rm -rf "$out/tests"
  du -sh "$out"
  exit 0
fi
targets=("${@:-cuda}")
[ $# -eq 0 ] && targets=(cuda vulkan-nvidia)
out=build/device
kiln=build/bin/kiln-compile
export NODE_PATH="$PWD/.cache/npm/node_modules"
rm -rf "$out" && mkdir -p "$out"
git describe --always --dirty > "$out/COMMIT"  # what was built, for the report

make_model() { # NAME GENERATOR
  /usr/bin/python3 test/inputs/make_models.py "$2" "$out/$1" >/dev/null
}
make_model mlp mlp
make_model cnn cnn
make_model transformer transformer
make_model matmul256 matmul_small
make_model matmul4096 matmul
make_model linear-bf16 linear
make_model linear-f16 linear
make_model matmul256-f16 matmul_f16
make_model matmul-wide-f16 matmul_f16_wide
make_model matmul-dyn-f16 matmul_f16_dynamic
make_model fc-f16 gemm_f16
make_model matmul256-tf32 matmul_small
make_model conv-tf32 conv_layer
make_model conv-bf16 conv_layer
make_model linear-int8 linear
make_model linear-2of4-bf16 linear
make_model conv-2of4-bf16 conv_layer
make_model fc-2of4-f16 gemm_f16_2of4
make_model gemm4096-bf16-2of4 gemm_bf16_2of4_4096 && touch "$out/gemm4096-bf16-2of4/bench"
make_model rows normalized_rows
for n in 4096 8192; do
  for t in bf16 f16; do
    make_model "gemm$n-$t" "gemm_${t}_$n" && touch "$out/gemm$n-$t/bench"
  done
  # The bf16 GEMM again in 128x128 tiles (--cuda-wide-tiles), to time
  # against the default's 128x64, by wgmma on sm_90a (--cuda-wgmma), in
  # both tiles, and with each chunk copied at once on cp.async's schedule
  # (--gpu-synchronous-staging: what cp.async gains).
  for variant in wide wgmma wgmma-wide sync; do
    make_model "gemm$n-bf16-$variant" "gemm_bf16_$n" && touch "$out/gemm$n-bf16-$variant/bench"
  done
done
rm "$out"/matmul4096/input_*.npy && touch "$out/matmul4096/bench"
mkdir -p "$out/text-direction"
cp examples/text-direction/ch_ppocr_mobile_v2.0_cls_infer.onnx "$out/text-direction/model.onnx"
/usr/bin/python3 -c "import numpy as np; np.save('$out/text-direction/input_0.npy', np.random.default_rng(0).random((1, 3, 48, 192), dtype=np.float32))"
touch "$out/text-direction/bench" "$out/transformer/bench"
# Attention over 4096 tokens (scores of 128 MiB): one kernel, a thread per
# query row (the default above 64 MiB), timed beside --gpu-attention=unfused
# (cuda-unfused) and PyTorch's run of the same graph (torch.json), on random
# inputs; the one-kernel form's numerics on the banded mask (whole rows of
# -inf scores first), against onnxruntime.
/usr/bin/python3 test/inputs/attention.py long-4096 "$out/attention4096" >/dev/null
rm -r "$out"/attention4096/*.npy "$out/attention4096/inputs.txt" "$out/attention4096/reference"
touch "$out/attention4096/bench"
cp -r "$out/attention4096" "$out/attention4096-bf16"
/usr/bin/python3 test/inputs/attention.py long-4096 "$out/attention4096-f16model" --f16-model >/dev/null
rm -r "$out"/attention4096-f16model/*.npy "$out/attention4096-f16model/inputs.txt" \
  "$out/attention4096-f16model/reference"
touch "$out/attention4096-f16model/bench"
/usr/bin/python3 test/inputs/attention.py banded "$out/attention-rows" >/dev/null
# The same as one kernel on the tensor cores (--precision=f16|bf16:
# kiln-cuda-attention-mma); its numerics against the float64 reference
# from Q, K and V rounded to f16, within P's rounding to f16 (3.1e-4 on
# lavapipe).
/usr/bin/python3 test/inputs/attention.py banded "$out/attention-mma-f16" --f16-operands >/dev/null
mv "$out/attention-mma-f16/reference" "$out/attention-mma-f16/expected"
echo "1e-3 1e-3" > "$out/attention-mma-f16/tolerance"
# A half model's (f16 in the file, no --precision): its reference rounded
# to f16 (1e-3 on lavapipe, test/e2e/tensor-core-emulation.test).
/usr/bin/python3 test/inputs/attention.py banded "$out/attention-mma-f16model" --f16-model >/dev/null
mv "$out/attention-mma-f16model/reference" "$out/attention-mma-f16model/expected"
echo "1e-3 1e-3" > "$out/attention-mma-f16model/tolerance"
for name in attention-rows attention-mma-f16 attention-mma-f16model; do
  for i in 0:q 1:k 2:v; do mv "$out/$name/${i#*:}.npy" "$out/$name/input_${i%%:*}.npy"; done
  rm -rf "$out/$name/inputs.txt" "$out/$name/reference"
done

for dir in "$out"/*/; do
  name=$(basename "$dir")
  flags=()
  [ "$name" = text-direction ] && flags=(--input-shape x=1x3x48x192)
  [[ "$name" = linear-bf16 || "$name" = conv-bf16 ]] && flags=(--precision=bf16)
  [ "$name" = linear-f16 ] && flags=(--precision=f16)
  [[ "$name" = *-tf32 ]] && flags=(--precision=tf32)
  [ "$name" = linear-int8 ] && flags=(--quantize=int8-dynamic)
  [[ "$name" = linear-2of4-bf16 || "$name" = conv-2of4-bf16 ]] &&
    flags=(--precision=bf16 --prune=0.5 --prune-pattern=2:4 --prune-first-last)
  # 2:4 weights by mma.sp, beside cuda (the same weights, dense mma.sync).
  [[ "$name" = *2of4* ]] && "$kiln" "$dir/model.onnx" "${flags[@]}" --target=cuda --cuda-mma-sp -o "$dir/cuda-mma-sp"
  [[ "$name" = *-wide ]] && flags+=(--cuda-wide-tiles)
  [[ "$name" = *-wgmma* ]] && flags+=(--cuda-wgmma)
  [[ "$name" = *-sync ]] && flags+=(--gpu-synchronous-staging)
  # cuda-sync (--gpu-synchronous-staging: cp.async's schedule, each chunk
  # copied at once) beside cuda for the layers whose matmuls stage an
  # operand computed on read through registers beside the other's cp.async
  # (receptive fields, a transpose read in place): if cuda's numerics are
  # wrong and these right, cp.async is.
  case $name in conv-bf16 | transformer)
    "$kiln" "$dir/model.onnx" "${flags[@]}" --target=cuda --gpu-synchronous-staging -o "$dir/cuda-sync" ;;
  esac
  # wgmma's numerics (cuda-wgmma: --target=cuda-sm90a --cuda-wgmma) beside
  # mma.sync's, on the same inputs: 64x32 tiles (one band of 64 rows),
  # 128x64 (two bands), a Gemm's bias and Relu in the epilogue, a
  # convolution's receptive fields stored from registers into two buffers.
  # cuda-wgmma-serial (--cuda-wgmma-overlap=false: each chunk's wgmma
  # waited for) beside it for the two forms of staging that overlap: if
  # one of the two is wrong, which.
  case $name in matmul256-f16 | matmul-wide-f16 | fc-f16 | conv-bf16)
    "$kiln" "$dir/model.onnx" "${flags[@]}" --target=cuda-sm90a --cuda-wgmma -o "$dir/cuda-wgmma" ;;
  esac
  case $name in matmul256-f16 | conv-bf16)
    "$kiln" "$dir/model.onnx" "${flags[@]}" --target=cuda-sm90a --cuda-wgmma \
      --cuda-wgmma-overlap=false -o "$dir/cuda-wgmma-serial" ;;
  esac
  [ "$name" = attention-rows ] && flags=(--gpu-attention=fused)
  [ "$name" = attention-mma-f16 ] && flags=(--gpu-attention=fused --precision=f16)
  [ "$name" = attention-mma-f16model ] && flags=(--gpu-attention=fused)
  [ "$name" = attention4096-bf16 ] && flags=(--precision=bf16)
  model_targets=("${targets[@]}")
  # The 16-bit GEMMs measure the tensor cores, tf32 is theirs: CUDA only.
  [[ "$name" = gemm* || "$name" = *-tf32 || "$name" = attention-mma-* ||
     "$name" = attention4096-bf16 || "$name" = attention4096-f16model ]] && model_targets=(cuda)
  # wgmma is sm_90a's (an H100 or H200); the executable is still `cuda`.
  [[ "$name" = *-wgmma* ]] && model_targets=(cuda-sm90a)
  for target in "${model_targets[@]}"; do
    exe=$dir${target%%-*}  # cuda, vulkan
    echo "device: $name for $target"
    "$kiln" "$dir/model.onnx" "${flags[@]}" --target="$target" -o "$exe"
  done
  if [ "$name" = attention4096 ]; then
    "$kiln" "$dir/model.onnx" --target=cuda --gpu-attention=unfused -o "$dir/cuda-unfused"
    /usr/bin/python3 scripts/device/torch_graph.py export "$dir/model.onnx" "$dir/torch.json"
  fi
  inputs=("$dir"/input_*.npy)
  [ -e "${inputs[0]}" ] || continue
  # A -wide model's expected outputs are its default twin's (after the loop:
  # "gemm4096-bf16-wide/" sorts before "gemm4096-bf16/").
  [[ "$name" = *-wide ]] && continue
  if [[ "$name" = *-tf32 ]]; then
    /usr/bin/python3 scripts/device/torch_graph.py export "$dir/model.onnx" "$dir/graph.json" --weights "$dir/graph.npz"
    /usr/bin/python3 scripts/device/torch_graph.py run --tf32 "$dir/graph.json" "${inputs[@]}" "$dir/expected"
    rm "$dir/graph.json" "$dir/graph.npz"
  elif [[ "$name" = attention-mma-* ]]; then
    :  # attention.py's reference, above
  elif [[ "$name" = *-bf16 || "$name" = *-f16 || "$name" = *-int8 ]]; then
    "$kiln" "$dir/model.onnx" "${flags[@]}" -o "$dir/host"
    "$dir/host" "${inputs[@]}" --output-dir "$dir/expected" >/dev/null
    rm "$dir/host"
  else
    node test/inputs/ort_run.js "$dir/model.onnx" "$dir/expected" "${inputs[@]}"
  fi
done
for dir in "$out"/*-wide/; do
  # Same generator, same inputs: the default-tiled model's expected outputs
  # (none for the benchmark-only GEMMs).
  name=$(basename "$dir")
  if [ -d "$out/${name%-wide}/expected" ]; then
    cp -r "$out/${name%-wide}/expected" "$dir/expected"
  fi
done
# PyTorch's baselines.
onnx_dir=$(mktemp -d)
for b in 1 32; do
  /usr/bin/python3 scripts/bench/models.py "$onnx_dir" --batch $b --few-values resnet18 bert2
done
for m in resnet18 bert2; do
  for b in 1 32; do
    dir=$out/$m-b$b
    mkdir -p "$dir" && touch "$dir/bench"
    echo "device: $m at batch $b for cuda"
    "$kiln" "$onnx_dir/$m-b$b.onnx" --target=cuda -o "$dir/cuda"
    # At batch 1 their convolutions and matmuls have few workgroups.
    [ $b = 1 ] && "$kiln" "$onnx_dir/$m-b$b.onnx" --target=cuda --split-k -o "$dir/cuda-split-k"
    weights=(--shared-weights "$out/$m-b1/torch-weights.npz")
    [ $b = 1 ] && weights=(--weights "$dir/torch-weights.npz")
    /usr/bin/python3 scripts/device/torch_graph.py export "$onnx_dir/$m-b$b.onnx" "$dir/torch.json" "${weights[@]}"
  done
  dir=$out/$m-b1
  /usr/bin/python3 -c "
import json, numpy as np
shape = json.load(open('$dir/torch.json'))['inputs'][0]['shape']
np.save('$dir/input_0.npy', np.random.default_rng(0).standard_normal(shape).astype(np.float32))"
  node test/inputs/ort_run.js "$onnx_dir/$m-b1.onnx" "$dir/expected" "$dir/input_0.npy"
  /usr/bin/python3 scripts/device/torch_graph.py check "$dir/torch.json" "$dir/input_0.npy" "$dir/expected" >/dev/null
done
rm -rf "$onnx_dir"
# Every file over 64 KB packed: about 60 MB, under the 64 MiB one call to
# the GPU machine takes; the conformance tests (13 MB) go in a call of
# their own.
echo "device: packing the files over 64 KB with xz"
find "$out" -type f -size +64k ! -name '*.xz' -print0 | xargs -0 -r xz -T0 -6
du -sh "$out"
