#!/usr/bin/env python3
"""What a portable binary costs: each model compiled for this host's CPU and
with --mcpu=portable (x86-64, x86-64-v3, x86-64-v4 in one binary), each
variant of the portable binary forced with KILN_CPU_VARIANT and timed in
alternating rounds against the host build -> the portable section of
docs/BENCHMARKS.md, with the binaries' sizes and compile times.

p50 is the median of the rounds' p50 (1 thread); the ratio is the
variant's p50 over the host build's. Run it after a build.
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from ab import model_args  # noqa: E402
from quant import write_section  # noqa: E402
from run import BENCH, KILN, ROOT, cpu_name, fmt_ms, kiln_round, log  # noqa: E402

BEGIN, END = "<!-- portable:begin -->", "<!-- portable:end -->"
MODELS = ["mlp", "resnet18", "bert2"]
VARIANTS = ["x86-64", "x86-64-v3", "x86-64-v4"]


def variant_round(exe, runs, variant):
    """A round of `exe` running `variant` (None: the one it picks)."""
    if variant:
        os.environ["KILN_CPU_VARIANT"] = variant
    else:
        os.environ.pop("KILN_CPU_VARIANT", None)
    return kiln_round(exe, runs, 1)[0]


def compile_timed(args):
    start = time.monotonic()
    subprocess.run([KILN] + args, check=True)
    return time.monotonic() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=0.5,
                        help="target time of one round of one build")
    parser.add_argument("--output", default=os.path.join(ROOT, "docs", "BENCHMARKS.md"))
    args = parser.parse_args()
    directory = os.path.join(BENCH, "portable")
    os.makedirs(directory, exist_ok=True)
    subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "bench", "models.py"),
                    os.path.join(BENCH, "models")], check=True)
    rows = []
    for model in args.models.split(","):
        host, portable = (os.path.join(directory, model + s) for s in ("", "-portable"))
        log(f"compiling {model}")
        host_s = compile_timed(model_args(model) + ["-o", host])
        portable_s = compile_timed(model_args(model) + ["--mcpu=portable", "-o", portable])
        first = kiln_round(host, 3, 1)[0]
        runs = max(5, min(2000, int(args.seconds * 1000 / max(first, 1e-3))))
        sides = [(host, None)] + [(portable, v) for v in VARIANTS]
        times = {side: [] for side in sides}
        for r in range(args.rounds):
            for side in sides if r % 2 == 0 else reversed(sides):
                times[side].append(variant_round(side[0], runs, side[1]))
        base = statistics.median(times[sides[0]])
        cells = [f"{fmt_ms(statistics.median(times[s]))} ({statistics.median(times[s]) / base:.2f}x)"
                 for s in sides[1:]]
        size = lambda p: f"{os.path.getsize(p) / 2**20:.1f} MiB"  # noqa: E731
        rows.append(f"| {model} | {fmt_ms(base)} | " + " | ".join(cells) +
                    f" | {size(host)} / {size(portable)} | {host_s:.1f} / {portable_s:.1f} s |")
        log(rows[-1])
    text = "\n".join([
        BEGIN, "## Portable binaries", "",
        f"`scripts/bench/portable.py` on {cpu_name()}: each model compiled for this CPU "
        "(`-mcpu` of the host, the default) and with `--mcpu=portable`, each variant of the "
        "portable binary forced with `KILN_CPU_VARIANT`; 1 thread, "
        f"{args.rounds} alternating rounds, p50 = the median of the rounds' p50 (ms), "
        "ratio = variant / host build. Without KILN_CPU_VARIANT the portable binary runs "
        "x86-64-v4 on this CPU.", "",
        "| model | host CPU | x86-64 | x86-64-v3 | x86-64-v4 | size host / portable | "
        "compile host / portable |",
        "|---|---:|---:|---:|---:|---:|---:|", *rows, "", END])
    write_section(text, args.output, BEGIN, END)
    print(text)


if __name__ == "__main__":
    main()
