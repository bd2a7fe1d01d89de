#!/usr/bin/env python3
"""kiln against an earlier kiln, interleaved: did a change move CPU speed?

  ab.py --save DIR       compiles the cases with build/bin/kiln-compile into DIR
  ab.py --against DIR    compiles them again with today's build and times both,
                         rounds alternating (A B, then B A), 1 thread

Prints per case the median of the round medians of each build and the ratio
before/after (above 1: faster now). Run --save before a change and --against
after it; compile flags come from CASES, so both sides build the same thing.
"""
import argparse
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from run import BENCH, KILN, MODELS, REAL_MODELS, fmt_ms, kiln_round, log  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

# name -> (model, extra kiln-compile flags); models are run.py's synthetic
# ones (generated into build/bench/models) or its REAL_MODELS.
CASES = {
    "mlp": ("mlp", []),
    "resnet18": ("resnet18", []),
    "mobilenet": ("mobilenet", []),
    "bert2": ("bert2", []),
    "matmul1024": ("matmul1024", []),
    "attention4k": ("attention4k", []),
    "paddleocr-det": ("paddleocr-det", []),
    "paddleocr-rec": ("paddleocr-rec", []),
    "silero-vad-v5": ("silero-vad-v5", []),
    "bert2-int8-dynamic": ("bert2", ["--quantize=int8-dynamic"]),
}


def model_args(model):
    if model in REAL_MODELS:
        rel, shapes, values = REAL_MODELS[model]
        args = [os.path.join(MODELS, rel)]
        args += [f"--input-shape={k}=" + "x".join(map(str, v)) for k, v in shapes.items()]
        args += [f"--input-value={k}={v}" for k, v in values.items()]
        return args
    return [os.path.join(BENCH, "models", f"{model}.onnx")]


def compile_cases(cases, directory):
    os.makedirs(directory, exist_ok=True)
    subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "bench", "models.py"),
                    os.path.join(BENCH, "models")], check=True)
    for name in cases:
        model, flags = CASES[name]
        log(f"compiling {name}")
        subprocess.run([KILN] + model_args(model) + flags + ["-o", os.path.join(directory, name)],
                       check=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--save", metavar="DIR", help="compile the baseline into DIR")
    mode.add_argument("--against", metavar="DIR", help="time today's build against DIR")
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--seconds", type=float, default=0.5,
                        help="target time of one round of one build")
    args = parser.parse_args()
    cases = args.cases.split(",")
    unknown = [c for c in cases if c not in CASES]
    if unknown:
        parser.error(f"unknown case(s) {', '.join(unknown)}; known: {', '.join(CASES)}")
    if args.save:
        compile_cases(cases, args.save)
        return
    after_dir = os.path.join(BENCH, "ab-after")
    compile_cases(cases, after_dir)
    print("| case | before ms | after ms | before/after |")
    print("|---|---:|---:|---:|")
    for name in cases:
        before, after = os.path.join(args.against, name), os.path.join(after_dir, name)
        first = kiln_round(after, 3, 1)[0]
        runs = max(3, min(500, int(args.seconds * 1000 / max(first, 1e-3))))
        times = {before: [], after: []}
        for r in range(args.rounds):
            for exe in (before, after) if r % 2 == 0 else (after, before):
                times[exe].append(kiln_round(exe, runs, 1)[0])
        b, a = statistics.median(times[before]), statistics.median(times[after])
        print(f"| {name} | {fmt_ms(b)} | {fmt_ms(a)} | {b / a:.2f} |", flush=True)


if __name__ == "__main__":
    main()
