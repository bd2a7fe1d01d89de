#!/usr/bin/env python3
"""Per-token latency of a transformer decoder step with a KV cache, run
token by token: the kiln executable (--stream with --bind-state, the cache
fed in place) against onnxruntime-node feeding the cache the same way
(test/inputs/ort_stream.js --time), 1 thread, alternating rounds -> the
decoder section of docs/BENCHMARKS.md.

The model is make_models.py's decoder_kv at width 768 and 12 heads (one
attention layer: q/k/v/o projections, the cache appended, softmax over
every cached token). Each position's time is the median over the rounds.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys

import onnx

sys.path.insert(0, os.path.dirname(__file__))
from quant import write_section  # noqa: E402
from run import BENCH, KILN, ROOT, cpu_name, log  # noqa: E402

sys.path.insert(0, os.path.join(ROOT, "test", "inputs"))
from make_models import decoder_kv  # noqa: E402

BEGIN, END = "<!-- decoder:begin -->", "<!-- decoder:end -->"
BINDINGS = ["present_k=past_k", "present_v=past_v"]
STEP = re.compile(r"^step (\d+): ([0-9.]+) ms$", re.M)


def step_times(output):
    return [float(ms) for _, ms in STEP.findall(output)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=256)
    parser.add_argument("--width", type=int, default=768)
    parser.add_argument("--heads", type=int, default=12)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--output", default=os.path.join(ROOT, "docs", "BENCHMARKS.md"))
    args = parser.parse_args()
    directory = os.path.join(BENCH, "decoder")
    os.makedirs(directory, exist_ok=True)
    model, steps, exe = (os.path.join(directory, f) for f in ("decoder.onnx", "steps", "decoder"))
    onnx.save(decoder_kv(args.width, args.heads)[0], model)
    subprocess.run([sys.executable, os.path.join(ROOT, "test", "inputs", "decoder_steps.py"),
                    steps, str(args.tokens), "--width", str(args.width), "--heads",
                    str(args.heads)], check=True)
    log("compiling the decoder")
    subprocess.run([KILN, model, "-o", exe], check=True)
    kiln_cmd = [exe, "--stream", steps, "--threads", "1"] + sum(
        (["--bind-state", b] for b in BINDINGS), [])
    ort_cmd = ["node", os.path.join(ROOT, "test", "inputs", "ort_stream.js"), "--time", model,
               steps, "-"] + BINDINGS
    env = dict(os.environ, NODE_PATH=os.path.join(ROOT, ".cache", "npm", "node_modules"))
    runs = {"kiln": [], "ort": []}
    for r in range(args.rounds):
        for side in ("kiln", "ort") if r % 2 == 0 else ("ort", "kiln"):
            out = subprocess.run(kiln_cmd if side == "kiln" else ort_cmd, check=True,
                                 capture_output=True, text=True, env=env).stdout
            runs[side].append(step_times(out))
            log(f"round {r} {side}: {len(runs[side][-1])} tokens")
    per = {side: [statistics.median(times[t] for times in runs[side])
                  for t in range(args.tokens)] for side in runs}
    positions = sorted({1, 16, 64, args.tokens // 2, args.tokens} & set(range(1, args.tokens + 1)))
    rows = [f"| {t} | {per['kiln'][t - 1]:.3f} | {per['ort'][t - 1]:.3f} | "
            f"{per['ort'][t - 1] / per['kiln'][t - 1]:.2f}x |" for t in positions]
    steady = {side: statistics.median(per[side][1:]) for side in per}
    rows.append(f"| p50 of tokens 2-{args.tokens} | {steady['kiln']:.3f} | {steady['ort']:.3f} | "
                f"{steady['ort'] / steady['kiln']:.2f}x |")
    text = "\n".join([
        BEGIN, "## Decoding with a KV cache", "",
        f"`scripts/bench/decoder.py` on {cpu_name()}: one decoder attention layer (width "
        f"{args.width}, {args.heads} heads; `decoder_kv` of test/inputs/make_models.py) run for "
        f"{args.tokens} tokens, the cache growing by one token per step: kiln with `--stream` "
        "and `--bind-state present_k=past_k --bind-state present_v=past_v` (the cache fed "
        "in place), onnxruntime-node feeding the cache the same way; 1 thread, "
        f"{args.rounds} alternating rounds, each token's time the median over the rounds (ms).",
        "", "| token | kiln | onnxruntime | onnxruntime / kiln |", "|---|---:|---:|---:|",
        *rows, "", END])
    write_section(text, args.output, BEGIN, END)
    print(text)


if __name__ == "__main__":
    main()
