#!/usr/bin/env python3
"""The host side of CUDA models' runs, timed without a GPU.

Each model, compiled for --target=cuda, runs on the unit tests' fake driver
(build/test/unit/fake-cuda/libcuda.so.1) with KILN_FAKE_CUDA_ANY_KERNEL=1:
every kernel exists and does nothing, and copies to the GPU are memcpy.
`--bench` then times what the host does per run: the inputs copied into
their pinned buffers (and, by the fake, to the "GPU"), the model's host
code recording its launches, the segment matched to its CUDA graph, the
outputs copied out. Executables given in one call are timed in turns
(round-robin, --rounds), so two builds of a model compare on one machine;
each --env VAR=VALUE times every executable once more with that setting,
in the same turns (KILN_GPU_DIRECT_COPIES=0: inputs and outputs staged
through the host's buffers).

  python3 scripts/bench/cuda_host.py [--runs N] [--rounds R] [--flags "..."] [--kiln-compile EXE]
                                     [--env VAR=VALUE ...] MODEL.onnx|EXECUTABLE ...

Prints per model the median of the rounds' p50s, in microseconds.
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def executable(model, compiler, flags, workdir):
    """`model` itself if it is an executable, else compiled for CUDA."""
    if not model.endswith(".onnx"):
        return model
    out = os.path.join(workdir, os.path.basename(model)[:-len(".onnx")] + "-cuda")
    cmd = [compiler, model, "--target=cuda", "-o", out] + flags
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit("cuda_host: %s failed:\n%s" % (" ".join(cmd), done.stderr.strip()))
    return out


def p50_us(exe, runs, driver, setting):
    env = dict(os.environ, KILN_FAKE_CUDA_ANY_KERNEL="1",
               LD_LIBRARY_PATH=driver + os.pathsep + os.environ.get("LD_LIBRARY_PATH", ""),
               **setting)
    done = subprocess.run([exe, "--bench", str(runs)], capture_output=True, text=True, env=env)
    found = re.search(r"p50=([0-9.]+)", done.stdout)
    device = re.search(r"^device: (.*)$", done.stdout, re.M)
    if done.returncode != 0 or not found:
        sys.exit("cuda_host: %s --bench failed:\n%s" % (exe, (done.stdout + done.stderr).strip()))
    if not device or "Fake GPU" not in device.group(1):
        sys.exit("cuda_host: %s did not run on the fake driver (%s)" %
                 (exe, device.group(1) if device else "no device line"))
    return 1000 * float(found.group(1))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("models", nargs="+", help="ONNX files or CUDA executables")
    parser.add_argument("--runs", type=int, default=2000, help="runs a round (default 2000)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds (default 3)")
    parser.add_argument("--flags", default="", help="more kiln-compile flags for ONNX files")
    parser.add_argument("--fake-driver", default=os.path.join(ROOT, "build", "test", "unit",
                                                              "fake-cuda"),
                        help="the folder of the fake libcuda.so.1")
    # The same build's as the fake driver: a sanitized one's runtime links
    # the sanitizers, which its fake driver needs.
    parser.add_argument("--kiln-compile", default=shutil.which("kiln-compile") or
                        os.path.join(ROOT, "build", "bin", "kiln-compile"),
                        help="for ONNX files (default: the one on PATH, else build/bin's)")
    parser.add_argument("--env", action="append", default=[], metavar="VAR=VALUE",
                        help="also time each executable with this environment variable set")
    args = parser.parse_args()
    settings = [("", {})]
    for assignment in args.env:
        name, equals, value = assignment.partition("=")
        if not name or not equals:
            sys.exit("cuda_host: --env %s is not VAR=VALUE" % assignment)
        settings.append((" (%s)" % assignment, {name: value}))
    if not os.path.exists(os.path.join(args.fake_driver, "libcuda.so.1")):
        sys.exit("cuda_host: no fake driver in %s (build kiln first)" % args.fake_driver)
    with tempfile.TemporaryDirectory() as workdir:
        exes = [executable(m, args.kiln_compile, args.flags.split(), workdir)
                for m in args.models]
        rows = [(os.path.basename(model) + label, exe, setting)
                for model, exe in zip(args.models, exes) for label, setting in settings]
        times = {name: [] for name, _, _ in rows}
        for _ in range(args.rounds):
            for name, exe, setting in rows:
                times[name].append(p50_us(exe, args.runs, args.fake_driver, setting))
        print("| model | host us per run (p50) | rounds |")
        print("|---|---:|---|")
        for name, _, _ in rows:
            print("| %s | %.1f | %s |" % (name, statistics.median(times[name]),
                                          " ".join("%.1f" % t for t in times[name])))


if __name__ == "__main__":
    main()
