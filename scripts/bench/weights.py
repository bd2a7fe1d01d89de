#!/usr/bin/env python3
"""What weights outside the code cost: switching a 50 MB model's weights
(scripts/bench/swap_weights.c), and the latency of models built with
--weights=external against the same models with embedded weights -> the
weights section of docs/BENCHMARKS.md.

The swap model is four 1792x1792 f32 Gemms (49 MiB of weights) and a
"fine-tuned" copy of it (test/inputs/fine_tune.py) packed with
--pack-weights for the same binary. Latency: each model built both ways,
timed in alternating rounds (A B, then B A); p50 is the median of the
rounds' p50. Run it through scripts/bench.sh's set-up, or after a build.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(__file__))
from ab import model_args  # noqa: E402
from quant import write_section  # noqa: E402
from run import BENCH, KILN, ROOT, cpu_name, fmt_ms, kiln_round, log  # noqa: E402

BEGIN, END = "<!-- weights:begin -->", "<!-- weights:end -->"
MODELS = ["resnet18", "bert2"]


def swap_model(path, width=1792, layers=4):
    """An MLP of `layers` width x width Gemms: 4 x 12.25 MiB of f32 weights."""
    rng = np.random.default_rng(3)
    nodes, inits, x = [], [], "x"
    for i in range(layers):
        inits += [numpy_helper.from_array((rng.standard_normal((width, width)) / np.sqrt(width))
                                          .astype(np.float32), f"w{i}"),
                  numpy_helper.from_array(rng.standard_normal(width).astype(np.float32) * 0.1,
                                          f"b{i}")]
        nodes.append(helper.make_node("Gemm", [x, f"w{i}", f"b{i}"], [f"h{i}"], name=f"fc{i}"))
        x = f"h{i}"
        if i + 1 < layers:
            nodes.append(helper.make_node("Relu", [x], [f"a{i}"], name=f"relu{i}"))
            x = f"a{i}"
    graph = helper.make_graph(nodes, "swap", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, [1, width])], [helper.make_tensor_value_info(
        x, TensorProto.FLOAT, [1, width])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


def measure_swap(directory, switches):
    model, tuned = (os.path.join(directory, f) for f in ("swap.onnx", "tuned.onnx"))
    swap_model(model)
    subprocess.run([sys.executable, os.path.join(ROOT, "test", "inputs", "fine_tune.py"), model,
                    tuned], check=True, capture_output=True)
    library = os.path.join(directory, "libswap.a")
    subprocess.run([KILN, model, "--weights=external", "--emit=static-lib", "-o", library],
                   check=True)
    subprocess.run([KILN, tuned, "--pack-weights", "--for", os.path.join(directory, "swap.kw"),
                    "-o", os.path.join(directory, "tuned.kw")], check=True)
    exe = os.path.join(directory, "swap_weights")
    subprocess.run(["/usr/lib/llvm-22/bin/clang", "-O2", "-std=c11",
                    "-I", os.path.join(ROOT, "runtime", "include"),
                    os.path.join(ROOT, "scripts", "bench", "swap_weights.c"), library,
                    "-lm", "-lpthread", "-ldl", "-o", exe], check=True)
    out = subprocess.run([exe, os.path.join(directory, "swap.kw"),
                          os.path.join(directory, "tuned.kw"), str(switches)],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--switches", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--seconds", type=float, default=0.5,
                        help="target time of one round of one build")
    parser.add_argument("--output", default=os.path.join(ROOT, "docs", "BENCHMARKS.md"))
    args = parser.parse_args()
    directory = os.path.join(BENCH, "weights")
    os.makedirs(directory, exist_ok=True)
    log("switching the weights of a 50 MB model")
    swap = measure_swap(directory, args.switches)
    log(json.dumps(swap))

    subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "bench", "models.py"),
                    os.path.join(BENCH, "models")], check=True)
    rows = []
    for model in args.models.split(","):
        embedded, external = (os.path.join(directory, model + s) for s in ("", "-external"))
        log(f"compiling {model}")
        subprocess.run([KILN] + model_args(model) + ["-o", embedded], check=True)
        subprocess.run([KILN] + model_args(model) + ["--weights=external", "-o", external],
                       check=True)
        first = kiln_round(embedded, 3, 1)[0]
        runs = max(5, min(2000, int(args.seconds * 1000 / max(first, 1e-3))))
        times = {embedded: [], external: []}
        for r in range(args.rounds):
            for exe in (embedded, external) if r % 2 == 0 else (external, embedded):
                times[exe].append(kiln_round(exe, runs, 1)[0])
        a, b = statistics.median(times[embedded]), statistics.median(times[external])
        rows.append(f"| {model} | {fmt_ms(a)} | {fmt_ms(b)} | {100 * (b / a - 1):+.1f}% |")
        log(rows[-1])

    mib = swap["weights_bytes"] / 2**20
    text = "\n".join([
        BEGIN, "## Weights outside the code", "",
        f"`scripts/bench/weights.py` on {cpu_name()}, {swap['switches']} switches of a "
        f"{mib:.0f} MiB model (four 1792x1792 f32 Gemms) between its weights and a fine-tuned "
        "set packed with `--pack-weights`; medians, files in the page cache.", "",
        "| what | time |", "|---|---:|",
        f"| `kiln_weights_open`: map a file, verify its checksums | {swap['open_ms']:.2f} ms |",
        f"| `kiln_model_swap_weights(path)` to a file no instance maps | "
        f"{swap['swap_path_ms']:.2f} ms |",
        f"| `kiln_model_use_weights` to weights opened ahead | {1000 * swap['use_ms']:.1f} us |",
        f"| first run after that switch | {swap['first_run_ms']:.2f} ms |",
        f"| a run in the steady state | {swap['run_ms']:.2f} ms |", "",
        "The outputs of the two sets differ, as they must: "
        f"{'yes' if swap['outputs_differ'] else 'NO'}.", "",
        f"Latency, 1 thread, {args.rounds} alternating rounds, p50 = the median of the rounds' "
        "p50:", "",
        "| model | embedded p50 | external p50 | difference |", "|---|---:|---:|---:|",
        *rows, "", END])
    write_section(text, args.output, BEGIN, END)
    print(text)


if __name__ == "__main__":
    main()
