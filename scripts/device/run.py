#!/usr/bin/env python3
"""Runs the GPU checks that scripts/device/prepare.sh compiled, on the
machine with the GPU (numpy there; PyTorch for the baseline if present).

For each model of DIR (default build/device) and each kiln executable of
it (cuda, vulkan):
  - numerics: the executable on the model's inputs against the expected
    outputs (onnxruntime's; for --precision=bf16 models kiln's on the CPU
    with the same roundings), within --rtol/--atol;
  - speed, for the models marked `bench`: kiln's median latency
    (`./exe --bench N`, the whole run: inputs in, kernels, outputs out),
    for CUDA also with KILN_CUDA_GRAPHS=0 (kernels launched one by one);
    for the matmuls (matmul4096: f32; gemmN-bf16, gemmN-f16: 16-bit
    operands, tensor cores) also PyTorch's on the same GPU (cuBLAS through
    torch.matmul in the same type, TF32 off for f32): the matmul alone,
    and with the inputs copied from the host and the result back, as
    kiln's run does; TFLOP/s for both;
  - for the models with a torch.json (resnet18, bert2 at batch 1 and 32):
    PyTorch running the same graph (torch_graph.py) eagerly and through
    torch.compile, alone and with the copies, and its numerics at batch 1.
Files packed by prepare.sh (FILE.xz) are unpacked first.
Prints a table (and writes it as JSON with --json); exits 1 if a check
failed. An executable that cannot run (no driver) is reported and skipped.

  python3 scripts/device/run.py [DIR] [--runs N] [--json FILE] [--models REGEX]
"""
import argparse
import datetime
import json
import lzma
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np

TARGETS = ["cuda", "vulkan"]


def run(cmd, timeout=600, env=None):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                       env=None if env is None else dict(os.environ, **env))
    return p.returncode, p.stdout + p.stderr


def check_numerics(model_dir, exe, rtol, atol):
    """None if it matches onnxruntime, else why not."""
    inputs = sorted(f for f in os.listdir(model_dir) if re.fullmatch(r"input_\d+\.npy", f))
    with tempfile.TemporaryDirectory() as out:
        rc, text = run([exe] + [os.path.join(model_dir, f) for f in inputs] + ["--output-dir", out])
        if rc != 0:
            return "exit %d: %s" % (rc, text.strip().splitlines()[-1] if text.strip() else "")
        worst = 0.0
        for name in sorted(os.listdir(os.path.join(model_dir, "expected"))):
            want = np.load(os.path.join(model_dir, "expected", name))
            got = np.load(os.path.join(out, name))
            if got.shape != want.shape:
                return "%s: shape %s, expected %s" % (name, got.shape, want.shape)
            err = np.abs(got.astype(np.float64) - want.astype(np.float64))
            # Sums in another order may round a 16-bit result one ulp away.
            tol = max(rtol, 2.0 ** -9) if want.dtype == np.float16 else rtol
            bound = atol + tol * np.abs(want.astype(np.float64))
            if not np.all(err <= bound):
                return "%s: max abs error %.3g beyond rtol %g atol %g" % (name, err.max(), tol, atol)
            worst = max(worst, float(err.max()) if err.size else 0.0)
    return None


def kiln_p50_ms(exe, runs, env=None):
    rc, text = run([exe, "--bench", str(runs)], env=env)
    found = re.search(r"p50=([0-9.]+)", text)
    if rc != 0 or not found:
        raise RuntimeError(text.strip().splitlines()[-1] if text.strip() else "exit %d" % rc)
    device = re.search(r"^device: (.*)$", text, re.M)
    return float(found.group(1)), device.group(1) if device else ""


def matmul_size(model):
    """(n, torch dtype name) of an n^3 matmul model, else None."""
    found = re.fullmatch(r"(?:matmul|gemm)(\d+)(?:-(bf16|f16))?", model)
    if not found:
        return None
    return int(found.group(1)), {None: "float32", "bf16": "bfloat16", "f16": "float16"}[found.group(2)]


def cuda_torch():
    """torch with its GPU, TF32 off (kiln sums f32 products in f32), or None."""
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    return torch


def median_ms(torch, step, runs):
    """The median of `runs` timings of `step` on the GPU (CUDA events), after 3."""
    for _ in range(3):
        step()
    torch.cuda.synchronize()
    times = []
    for _ in range(runs):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        step()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return float(np.median(times))


def torch_matmul_ms(n, dtype, runs):
    """(matmul alone, with host copies) medians in ms, or None without torch."""
    torch = cuda_torch()
    if torch is None:
        return None
    dtype = getattr(torch, dtype)
    a_host, b_host = torch.randn(n, n, dtype=dtype), torch.randn(n, n, dtype=dtype)
    a, b = a_host.cuda(), b_host.cuda()
    alone = median_ms(torch, lambda: torch.matmul(a, b), runs)
    copies = median_ms(torch, lambda: torch.matmul(a_host.cuda(), b_host.cuda()).cpu(), runs)
    return alone, copies


def torch_model_rows(model, model_dir, runs):
    """PyTorch running the model of `model_dir`/torch.json (torch_graph.py)
    on the GPU, eager and torch.compile'd: a row each, with the median alone
    (inputs on the GPU) and with the inputs copied in and the outputs out,
    as kiln's run does; numerics against expected/ (loose: cuDNN may pick
    other algorithms). No rows without torch."""
    torch = cuda_torch()
    if torch is None:
        return []
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import torch_graph
    graph, values = torch_graph.load(os.path.join(model_dir, "torch.json"))
    forward, _ = torch_graph.build(graph, values, torch_graph.TorchOps("cuda", torch.float32))
    files = sorted(f for f in os.listdir(model_dir) if re.fullmatch(r"input_\d+\.npy", f))
    host = ([torch.from_numpy(np.load(os.path.join(model_dir, f))) for f in files] if files else
            [torch.randn(*i["shape"]) for i in graph["inputs"]])
    rows = []
    with torch.no_grad():
        for target, fn in [("torch eager", forward), ("torch.compile", torch.compile(forward))]:
            row = {"model": model, "target": target}
            try:
                device = [t.cuda() for t in host]
                expected = os.path.join(model_dir, "expected")
                if files and os.path.isdir(expected):
                    got = fn(*device)[0].cpu().numpy()
                    want = np.load(os.path.join(expected, graph["outputs"][0] + ".npy"))
                    row["numerics"] = "ok" if np.allclose(got, want, rtol=1e-2, atol=1e-3) else \
                        "max abs error %.3g" % np.abs(got - want).max()
                row["alone_ms"] = median_ms(torch, lambda: fn(*device), runs)
                row["with_copies_ms"] = median_ms(
                    torch, lambda: [o.cpu() for o in fn(*[t.cuda() for t in host])], runs)
            except Exception as e:  # torch.compile needs a compiler and Triton there
                row["bench"] = "did not run: %s" % str(e).strip().splitlines()[0][:200]
            rows.append(row)
            print(json.dumps(row), flush=True)
    return rows


def unpack(root):
    """Decompresses each FILE.xz under `root` (prepare.sh packs the big
    models' executables and weights) to FILE, once; executables stay so.
    Returns the folder to run from: `root`, or a writable copy of it."""
    if not os.access(root, os.W_OK):
        copy = os.path.join(tempfile.mkdtemp(), os.path.basename(os.path.abspath(root)))
        shutil.copytree(root, copy)
        root = copy
    for parent, _, names in os.walk(root):
        for name in names:
            packed, path = os.path.join(parent, name), os.path.join(parent, name[:-3])
            if name.endswith(".xz") and not os.path.exists(path):
                with lzma.open(packed) as src, open(path + ".part", "wb") as dst:
                    shutil.copyfileobj(src, dst, 1 << 20)
                os.chmod(path + ".part", os.stat(packed).st_mode | 0o200)
                os.rename(path + ".part", path)
    return root


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dir", nargs="?", default="build/device")
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--rtol", type=float, default=1e-3)
    ap.add_argument("--atol", type=float, default=1e-4)
    ap.add_argument("--json")
    ap.add_argument("--models", default="", help="only the models whose name this regex finds")
    args = ap.parse_args()

    args.dir = unpack(args.dir)
    results, failed = [], False
    for model in sorted(os.listdir(args.dir)):
        model_dir = os.path.join(args.dir, model)
        if not re.search(args.models, model):
            continue
        for target in TARGETS:
            exe = os.path.join(model_dir, target)
            if not os.access(exe, os.X_OK):
                continue
            row = {"model": model, "target": target}
            if os.path.isdir(os.path.join(model_dir, "expected")):
                why = check_numerics(model_dir, exe, args.rtol, args.atol)
                row["numerics"] = "ok" if why is None else why
                failed |= why is not None
            if os.path.exists(os.path.join(model_dir, "bench")):
                try:
                    row["kiln_ms"], row["device"] = kiln_p50_ms(exe, args.runs)
                    if target == "cuda":  # the same without CUDA graphs
                        row["no_graphs_ms"], _ = kiln_p50_ms(exe, args.runs,
                                                             {"KILN_CUDA_GRAPHS": "0"})
                except (RuntimeError, subprocess.TimeoutExpired) as e:
                    row["bench"] = "did not run: %s" % e
                    failed = True
            results.append(row)
            print(json.dumps(row), flush=True)
        size = matmul_size(model)
        if size and os.path.exists(os.path.join(model_dir, "bench")):
            n, dtype = size
            flop = 2 * n ** 3
            for r in results:
                if r["model"] == model and "kiln_ms" in r:
                    r["tflops"] = flop / r["kiln_ms"] / 1e9
            torch_ms = torch_matmul_ms(n, dtype, args.runs)
            if torch_ms:
                results.append({"model": model, "target": "torch.matmul (cuBLAS, %s%s)" % (
                                    dtype, ", no TF32" if dtype == "float32" else ""),
                                 "alone_ms": torch_ms[0], "with_copies_ms": torch_ms[1],
                                 "tflops": flop / torch_ms[0] / 1e9})
                print(json.dumps(results[-1]), flush=True)
        if os.path.exists(os.path.join(model_dir, "torch.json")):
            rows = torch_model_rows(model, model_dir, args.runs)
            failed |= any(r.get("numerics", "ok") != "ok" for r in rows)
            results += rows

    print("\n| model | target | numerics | p50 ms (with copies) | p50 ms without CUDA graphs "
          "| PyTorch alone ms | TFLOP/s |")
    print("|---|---|---|---|---|---|---|")
    for r in results:
        ms = r.get("kiln_ms", r.get("with_copies_ms", ""))
        print("| %s | %s | %s | %s | %s | %s | %s |" % (
            r["model"], r["target"], r.get("numerics", ""),
            "%.3f" % ms if ms != "" else r.get("bench", ""),
            "%.3f" % r["no_graphs_ms"] if "no_graphs_ms" in r else "",
            "%.3f" % r["alone_ms"] if "alone_ms" in r else "",
            "%.1f" % r["tflops"] if "tflops" in r else ""))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"date": datetime.date.today().isoformat(), "results": results}, f, indent=1)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
