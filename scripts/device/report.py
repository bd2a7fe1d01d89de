#!/usr/bin/env python3
"""Writes the "NVIDIA GPU" section of docs/BENCHMARKS.md (between its
markers) from the JSON that scripts/device/run.py --json wrote on a machine
with the GPU. Given several, a later file's rows replace an earlier one's
of the same model and target (a rerun of some models with --models, or
without torch.compile).

  python3 scripts/device/report.py DEVICE_JSON... [--output docs/BENCHMARKS.md]
"""
import argparse
import json
import os
import re
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "scripts", "bench"))
from quant import write_section  # noqa: E402

BEGIN, END = "<!-- cuda:begin -->", "<!-- cuda:end -->"


def ms(row, key):
    return "%.3f" % row[key] if row and key in row else "-"


def ratio(numerator, denominator):
    return "%.2f" % (numerator / denominator) if numerator and denominator else "-"


def find(rows, model, target):
    """The timed row of `model` whose target is `target`, else one whose
    target begins with it and a space ("cuda" is kiln's run, "cuda kernels"
    its kernels alone, "torch.matmul" cuBLAS in some type)."""
    timed = [r for r in rows if r["model"] == model
             and ("kiln_ms" in r or "alone_ms" in r or "bench" in r)]
    return next((r for r in timed if r["target"] == target),
                next((r for r in timed if r["target"].startswith(target + " ")), None))


def numerics_lines(rows):
    """How many checks passed; those that failed; executables that did not
    start at all (no driver for their API), by target, apart."""
    checked = [r for r in rows if "numerics" in r]
    not_started = [r for r in checked if re.match(r"exit \d+: \S+: error: ", r["numerics"])]
    ran = [r for r in checked if r not in not_started]
    failed = [r for r in ran if r["numerics"] != "ok"]
    lines = ["Numerics: %d of %d checks within tolerance (each executable on the model's "
             "inputs against onnxruntime's outputs (PyTorch's too, for resnet18 and bert2), or "
             "for kiln's 16-bit, tf32 and int8 models "
             "against references with the same roundings; rtol 1e-3, atol 1e-4)."
             % (len(ran) - len(failed), len(ran))]
    for target in sorted({r["target"] for r in not_started}):
        mine = [r for r in not_started if r["target"] == target]
        why = re.sub(r"^exit \d+: \S+: error: ", "", mine[0]["numerics"])
        lines.append("The %s executables (%d) did not start: %s." % (target, len(mine), why))
    if failed:
        lines += ["", "| model | target | what was wrong |", "|---|---|---|"]
        lines += ["| %s | %s | %s |" % (r["model"], r["target"], r["numerics"].replace("|", "/"))
                  for r in failed]
    return lines


def gemm_lines(rows):
    lines = ["| matmul | kiln run ms | kiln kernels ms | kiln TFLOP/s | cuBLAS ms | "
             "cuBLAS TFLOP/s | kiln / cuBLAS | PyTorch run ms |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for model in sorted({r["model"] for r in rows if r["model"].startswith(("gemm", "matmul4096"))}):
        run, alone = find(rows, model, "cuda"), find(rows, model, "cuda kernels")
        cublas = find(rows, model, "torch.matmul")
        kernels = alone.get("alone_ms") if alone else None
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
            model, ms(run, "kiln_ms") if run and "kiln_ms" in run else (run or {}).get("bench", "-"),
            ms(alone, "alone_ms") if kernels else (alone or {}).get("bench", "-"),
            "%.1f" % alone["tflops"] if kernels else "-", ms(cublas, "alone_ms"),
            "%.1f" % cublas["tflops"] if cublas else "-",
            "%.0f%%" % (100 * cublas["alone_ms"] / kernels) if kernels and cublas else "-",
            ms(cublas, "with_copies_ms")))
    return lines


# Executables timed beside a model's `cuda` one, and how the tables name them.
VARIANTS = {"cuda-split-k": "--split-k", "cuda-unfused": "--gpu-attention=unfused"}


def model_lines(rows):
    lines = ["| model | kiln ms | no graphs | no prefetch | staged | pageable | kiln kernels ms | "
             "variant | variant ms | variant kernels ms | eager alone | eager run | "
             "torch.compile alone | torch.compile run | torch.compile run / kiln |",
             "|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|"]
    models = sorted({r["model"] for r in rows if "kiln_ms" in r and r["target"] == "cuda"
                     and not r["model"].startswith(("gemm", "matmul"))})
    for model in models:
        kiln, kernels = find(rows, model, "cuda"), find(rows, model, "cuda kernels")
        variant = next((v for v in VARIANTS if find(rows, model, v)), None)
        split = find(rows, model, variant) if variant else None
        split_kernels = find(rows, model, variant + " kernels") if variant else None
        eager, compiled = find(rows, model, "torch eager"), find(rows, model, "torch.compile")
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            model, ms(kiln, "kiln_ms"), ms(kiln, "no_graphs_ms"), ms(kiln, "no_prefetch_ms"),
            ms(kiln, "staged_ms"), ms(kiln, "pageable_ms"),
            ms(kernels, "alone_ms"), VARIANTS.get(variant, "-"), ms(split, "kiln_ms"),
            ms(split_kernels, "alone_ms"),
            ms(eager, "alone_ms"), ms(eager, "with_copies_ms"),
            ms(compiled, "alone_ms"), ms(compiled, "with_copies_ms"),
            ratio((compiled or {}).get("with_copies_ms"), kiln.get("kiln_ms"))))
    return lines


def kernel_lines(rows, top=5):
    """Per model with a kernel profile: its launches and slowest kernels."""
    lines = []
    for r in sorted((r for r in rows if (" kernels alone" in r["target"] or
                                         " kernel events" in r["target"]) and "kernels" in r),
                    key=lambda r: (r["model"], r["target"])):
        slowest = ", ".join("`%s` %.3f" % (name, t) for name, t in r["kernels"][:top])
        variant = r["target"].split(" ")[0]
        split = " (%s)" % VARIANTS[variant] if variant in VARIANTS else ""
        by = ", by CUDA events" if " kernel events" in r["target"] else ""
        lines.append("- %s%s%s: %d %s, %.3f ms; slowest: %s" % (
            r["model"], split, by, r["launches"],
            "kernels" if by else "launches", r["alone_ms"], slowest))
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("json", nargs="+")
    ap.add_argument("--output", default=os.path.join(ROOT, "docs", "BENCHMARKS.md"))
    args = ap.parse_args()
    merged = {}
    for path in args.json:
        data = json.load(open(path))
        for row in data["results"]:
            merged[(row["model"], row["target"], "numerics" in row and "alone_ms" not in row)] = row
    rows, machine = list(merged.values()), data.get("machine", {})
    kernels = kernel_lines(rows)
    text = "\n".join([
        BEGIN, "## NVIDIA GPU (CUDA)", "",
        "`scripts/device/prepare.sh` (here) and `scripts/device/run.py` (on the GPU's machine) "
        "on %s: %s, driver %s, PyTorch %s, kiln %s. kiln's figures are the whole run of "
        "`--target=cuda` executables (`--bench N`: inputs copied in, kernels, outputs "
        "copied out; managed memory prefetched to the GPU, a static model's kernels "
        "replayed as a CUDA graph), p50 in ms; \"no graphs\" launches the kernels one by "
        "one, \"no prefetch\" leaves the pages to the kernels' faults, \"staged\" copies "
        "the inputs and outputs through the host's buffers (KILN_GPU_DIRECT_COPIES=0), "
        "\"pageable\" holds them in pageable memory (KILN_CUDA_PINNED=0) instead of "
        "page-locked (from 2026-12-03; PyTorch's are page-locked too, before they were "
        "pageable on both sides). "
        "kiln kernels: the "
        "GPU time of one run's kernels by Nsight Compute (clocks not locked). PyTorch "
        "runs the same graph (scripts/device/torch_graph.py) in f32 with TF32 off, "
        "medians of CUDA-event timings: \"alone\" with the inputs on the GPU, \"run\" with "
        "them copied in and the outputs out, as kiln's run does; the 16-bit matmuls "
        "against torch.matmul (cuBLAS) in the same type. Rows: %s." % (
            data.get("date", "?"), machine.get("gpu", "?"), machine.get("driver", "?"),
            machine.get("torch", "?"), machine.get("kiln", "?"),
            ", ".join("`%s`" % os.path.relpath(os.path.abspath(p), ROOT) for p in args.json)), "",
        *numerics_lines(rows), "",
        "### Matmuls", "", *gemm_lines(rows), "",
        "### Models", "", *model_lines(rows), "",
        *(["### Where kiln's kernel time goes", "",
           "Nsight Compute's GPU time per kernel and run (ms: its median launch times its "
           "launches per run; \"by CUDA events\": the executable's own `--profile`, the "
           "kernels one by one, ms per run), the slowest by "
           "name (`k<i>_<node>`: the i-th launch, after the ONNX node whose result it "
           "writes):", "", *kernels, ""] if kernels else []),
        END])
    write_section(text, args.output, BEGIN, END)
    print(text)


if __name__ == "__main__":
    main()
