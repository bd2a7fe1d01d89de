#!/usr/bin/env bash
# The demo: compiles PaddleOCR's text-direction classifier (bundled in
# examples/text-direction) to a native executable and classifies one line of
# text, upright and upside down, then reports the latency.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
dir=examples/text-direction
out=build/demo
mkdir -p $out
echo "demo: kiln-compile $dir/ch_ppocr_mobile_v2.0_cls_infer.onnx --input-shape x=1x3x48x192"
start=$(date +%s%N)
build/bin/kiln-compile $dir/ch_ppocr_mobile_v2.0_cls_infer.onnx --input-shape x=1x3x48x192 \
  -o $out/text-direction
echo "demo: compiled in $(( ($(date +%s%N) - start) / 1000000 )) ms -> $out/text-direction"
for image in text_upright text_rotated; do
  $out/text-direction --input x=$dir/$image.npy --output-dir $out/$image 2>$out/$image.log
  /usr/bin/python3 - "$out/$image/softmax_0.tmp_0.npy" "$image" "$(cat $out/$image.log)" <<'PY'
import sys, numpy as np
p = np.load(sys.argv[1])[0]
label = ["0 degrees (upright)", "180 degrees (upside down)"][int(p.argmax())]
print(f"demo: {sys.argv[2]}.npy -> text is {label}, p={p.max():.4f}   [{sys.argv[3]}]")
PY
done
$out/text-direction --bench 200
