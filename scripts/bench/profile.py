#!/usr/bin/env python3
"""What profiling costs: each model compiled with and without --profile,
timed in alternating rounds -> the profile section of docs/BENCHMARKS.md.

Per model and thread count, the plain build (`--bench N`) and the profiled
build recording every kernel (`--bench N --profile TRACE`) alternate for
--rounds rounds (A B, then B A); the table shows the median of each side's
round p50 and the overhead, profiled / plain - 1. The goal is under 3%.
Run it through scripts/bench.sh's set-up, or directly after a build.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from ab import model_args  # noqa: E402
from quant import write_section  # noqa: E402
from run import BENCH, KILN, fmt_ms, kiln_round, log  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BEGIN, END = "<!-- profile:begin -->", "<!-- profile:end -->"
MODELS = ["mlp", "resnet18", "bert2", "paddleocr-rec"]


def profiled_round(exe, runs, threads, trace):
    """A round of the profiled build with profiling on (a kiln_round with
    --profile)."""
    out = subprocess.run([exe, "--bench", str(runs), "--threads", str(threads), "--profile",
                          trace], check=True, capture_output=True, text=True).stdout
    return float(out.split("p50=", 1)[1].split()[0])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--seconds", type=float, default=0.5,
                        help="target time of one round of one build")
    parser.add_argument("--output", default=os.path.join(ROOT, "docs", "BENCHMARKS.md"))
    args = parser.parse_args()
    directory = os.path.join(BENCH, "profile")
    os.makedirs(directory, exist_ok=True)
    subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "bench", "models.py"),
                    os.path.join(BENCH, "models")], check=True)
    rows = []
    trace = os.path.join(tempfile.gettempdir(), "kiln-profile-overhead.json")
    for model in args.models.split(","):
        plain, profiled = (os.path.join(directory, model + suffix) for suffix in ("", "-profile"))
        log(f"compiling {model}")
        subprocess.run([KILN] + model_args(model) + ["-o", plain], check=True)
        subprocess.run([KILN] + model_args(model) + ["--profile", "-o", profiled], check=True)
        first = kiln_round(plain, 3, 1)[0]
        runs = max(5, min(2000, int(args.seconds * 1000 / max(first, 1e-3))))
        for threads in map(int, args.threads.split(",")):
            times = {"plain": [], "profiled": []}
            for r in range(args.rounds):
                for side in ("plain", "profiled") if r % 2 == 0 else ("profiled", "plain"):
                    times[side].append(kiln_round(plain, runs, threads)[0] if side == "plain"
                                       else profiled_round(profiled, runs, threads, trace))
            a, b = statistics.median(times["plain"]), statistics.median(times["profiled"])
            rows.append(f"| {model} | {threads} | {fmt_ms(a)} | {fmt_ms(b)} | {100 * (b / a - 1):+.1f}% |")
            log(rows[-1])
    if os.path.exists(trace):
        os.remove(trace)
    cpu = subprocess.run(["sh", "-c", "grep -m1 'model name' /proc/cpuinfo | cut -d: -f2"],
                         capture_output=True, text=True).stdout.strip()
    text = "\n".join([
        BEGIN, "## Profiling overhead", "",
        f"`scripts/bench/profile.py` on {cpu}: each model built with and without "
        f"`--profile`, the profiled build recording every kernel (`--profile TRACE`), "
        f"{args.rounds} alternating rounds; p50 is the median of the rounds' p50. "
        "Overhead = profiled / plain - 1 (goal: under 3%; this shared machine's round-to-round "
        "spread is a few percent).", "",
        "| model | threads | plain p50 | profiled p50 | overhead |", "|---|---:|---:|---:|---:|",
        *rows, "", END])
    write_section(text, args.output, BEGIN, END)
    print(text)


if __name__ == "__main__":
    main()
