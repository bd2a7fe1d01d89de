#!/usr/bin/env python3
"""Runs the GPU checks that scripts/device/prepare.sh compiled, on the
machine with the GPU (numpy there; PyTorch for the baseline if present).

For each model of DIR (default build/device) and each kiln executable of
it (cuda, cuda-split-k, cuda-unfused, cuda-wgmma, cuda-wgmma-serial,
cuda-mma-sp, cuda-sync, vulkan):
  - numerics: the executable on the model's inputs against the expected
    outputs (onnxruntime's; for --precision=bf16 models kiln's on the CPU
    with the same roundings), within --rtol/--atol, or the model's own
    (its file `tolerance`: "RTOL ATOL", where the GPU rounds what no
    reference does);
  - speed, for the models marked `bench`: kiln's median latency
    (`./exe --bench N`, the whole run: inputs in, kernels, outputs out),
    for CUDA also with KILN_CUDA_GRAPHS=0 (kernels launched one by one),
    with KILN_CUDA_PREFETCH=0 (pages moved by the kernels' faults) and
    with KILN_GPU_DIRECT_COPIES=0 (the inputs and outputs only kernels use
    staged through the host's buffers, as before 2026-12-02) and with
    KILN_CUDA_PINNED=0 (the executable's inputs and outputs in pageable
    memory, as before 2026-12-03; PyTorch's are page-locked, as kiln's);
    for the matmuls (matmul4096: f32; gemmN-bf16, gemmN-f16: 16-bit
    operands, tensor cores; gemmN-bf16-wide: the same in 128x128 tiles,
    --cuda-wide-tiles; gemmN-bf16-wgmma: by wgmma, --cuda-wgmma;
    gemmN-bf16-wgmma-wide: both; gemmN-bf16-sync: each chunk copied at
    once, --gpu-synchronous-staging; gemm4096-bf16-2of4: a constant weight
    pruned 2:4, by mma.sync and, cuda-mma-sp, by mma.sp) also the GPU time of kiln's kernels alone
    (Nsight Compute, where `ncu` is installed) and PyTorch's on the same
    GPU (cuBLAS through torch.matmul in the same type, TF32 off for f32):
    the matmul alone, and with the inputs copied from the host and the
    result back, as kiln's run does; TFLOP/s for each;
  - for the models with a torch.json (resnet18, bert2 at batch 1 and 32,
    attention4096): kiln's kernels by CUDA events (the executable's own
    `--profile`) and alone by Nsight Compute (cuda-split-k's
    and cuda-unfused's too, where the model has them), the slowest of them by name
    (k<i>_<node>); PyTorch running the same graph (torch_graph.py) eagerly
    and through torch.compile, alone and with the copies, and its numerics
    at batch 1.
The numerics of every model come first, then kiln's timings and kernel
profiles, then the baselines, torch.compile's last (its compiles take
minutes); --deadline
skips what would start after it. Files packed by prepare.sh (FILE.xz) are
unpacked first. Prints a table (and writes the rows as JSON with --json,
after each row); exits 1 if a check failed. An executable that cannot run
(no driver) is reported.

  python3 scripts/device/run.py [DIR] [--runs N] [--json FILE] [--models REGEX]
                                [--deadline SECONDS] [--no-compile]
"""
import argparse
import csv
import datetime
import glob
import io
import json
import lzma
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

# Executables by name: cuda-split-k is --target=cuda --split-k,
# cuda-unfused --target=cuda --gpu-attention=unfused, cuda-wgmma
# --target=cuda-sm90a --cuda-wgmma, cuda-wgmma-serial the same with
# --cuda-wgmma-overlap=false (numerics only: which of the two is wrong, if
# one is), cuda-mma-sp --target=cuda --cuda-mma-sp (2:4 weights by mma.sp),
# cuda-sync --target=cuda --gpu-synchronous-staging (numerics only: the
# chunk schedule of cp.async without it).
TARGETS = ["cuda", "cuda-split-k", "cuda-unfused", "cuda-wgmma", "cuda-wgmma-serial",
           "cuda-mma-sp", "cuda-sync", "vulkan"]


def run(cmd, timeout=120, env=None):
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
        expected = os.listdir(os.path.join(model_dir, "expected"))
        for name in sorted(f for f in expected if f.endswith(".npy")):
            want = np.load(os.path.join(model_dir, "expected", name))
            got = np.load(os.path.join(out, name))
            if got.shape != want.shape:
                return "%s: shape %s, expected %s" % (name, got.shape, want.shape)
            err = np.abs(got.astype(np.float64) - want.astype(np.float64))
            # Sums in another order may round a 16-bit result one ulp away.
            tol = max(rtol, 2.0 ** -9) if want.dtype == np.float16 else rtol
            bound = atol + tol * np.abs(want.astype(np.float64))
            wrong = ~(err <= bound)
            if wrong.any():
                first = np.unravel_index(np.argmax(wrong), want.shape)
                return "%s: %d of %d beyond rtol %g atol %g, max abs error %.3g; first at %s: " \
                    "%r, expected %r" % (name, wrong.sum(), want.size, tol, atol, err.max(),
                                         tuple(int(i) for i in first), got[first].item(),
                                         want[first].item())
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
    found = re.fullmatch(r"(?:matmul|gemm)(\d+)(?:-(bf16|f16))?(?:-wgmma)?(?:-wide)?(?:-2of4)?"
                         r"(?:-sync)?",
                         model)
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
    a_host, b_host, c_host = (torch.randn(n, n, dtype=dtype).pin_memory() for _ in range(3))
    a, b = a_host.cuda(), b_host.cuda()
    alone = median_ms(torch, lambda: torch.matmul(a, b), runs)
    copies = median_ms(torch, lambda: copy_back(
        [c_host], [torch.matmul(*to_gpu(torch, [a_host, b_host]))]), runs)
    return alone, copies


# The inputs and outputs of a run "with copies" are page-locked host memory,
# PyTorch's (pin_memory) as kiln's (its executable holds them in
# kiln_model_alloc_host's memory; KILN_CUDA_PINNED=0, the "pageable" column,
# in the C library's): from pageable memory the driver stages each copy.
def to_gpu(torch, host):
    return [t.cuda(non_blocking=True) for t in host]


def copy_back(host, device):
    """Queues the copies of `device` into `host` (median_ms's end event
    waits for them)."""
    for h, d in zip(host, device):
        h.copy_(d, non_blocking=True)


def torch_model_rows(model, model_dir, runs, compiled):
    """PyTorch running the model of `model_dir`/torch.json (torch_graph.py)
    on the GPU, eager or torch.compile'd: a row, with the median alone
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
        for target, fn in [("torch.compile", torch.compile(forward)) if compiled else
                           ("torch eager", forward)]:
            row = {"model": model, "target": target}
            try:
                host = [t.pin_memory() for t in host]
                device = [t.cuda() for t in host]
                expected = os.path.join(model_dir, "expected")
                if files and os.path.isdir(expected):
                    got = fn(*device)[0].cpu().numpy()
                    want = np.load(os.path.join(expected, graph["outputs"][0] + ".npy"))
                    row["numerics"] = "ok" if np.allclose(got, want, rtol=1e-2, atol=1e-3) else \
                        "max abs error %.3g" % np.abs(got - want).max()
                row["alone_ms"] = median_ms(torch, lambda: fn(*device), runs)
                outputs = [torch.empty_like(o, device="cpu").pin_memory() for o in fn(*device)]
                row["with_copies_ms"] = median_ms(
                    torch, lambda: copy_back(outputs, fn(*to_gpu(torch, host))), runs)
            except Exception as e:  # torch.compile needs a compiler and Triton there
                row["bench"] = "did not run: %s" % str(e).strip().splitlines()[0][:200]
            rows.append(row)
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


def machine(root):
    """The GPU, its driver, PyTorch's version and the kiln commit built
    (root/COMMIT), as far as they are known."""
    found = {}
    if os.path.exists(os.path.join(root, "COMMIT")):
        found["kiln"] = open(os.path.join(root, "COMMIT")).read().strip()
    try:
        rc, text = run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"])
        if rc == 0:
            found["gpu"], found["driver"] = [f.strip() for f in text.splitlines()[0].split(",")]
    except (OSError, subprocess.TimeoutExpired, ValueError):
        pass
    torch = cuda_torch()
    if torch is not None:
        found["torch"] = torch.__version__
    print("machine: %s" % json.dumps(found), flush=True)
    return found


class Plan:
    """The results so far, written to --json after each row, and the time
    left: work that would start after the deadline is skipped."""

    def __init__(self, root, json_path, deadline_s):
        self.results, self.failed = [], False
        self.machine = machine(root)
        self.json_path = json_path
        self.deadline = time.monotonic() + deadline_s if deadline_s else None

    def time_left(self):
        return self.deadline is None or time.monotonic() < self.deadline

    def add(self, row):
        self.results.append(row)
        print(json.dumps(row), flush=True)
        if self.json_path:
            with open(self.json_path, "w") as f:
                json.dump({"date": datetime.date.today().isoformat(), "machine": self.machine,
                           "results": self.results}, f, indent=1)


def executables(root, pattern):
    """(model, target, model_dir, exe) of each kiln executable, by model."""
    for model in sorted(os.listdir(root)):
        model_dir = os.path.join(root, model)
        if not re.search(pattern, model):
            continue
        for target in TARGETS:
            exe = os.path.join(model_dir, target)
            if os.access(exe, os.X_OK):
                yield model, target, model_dir, exe


def check_all_numerics(plan, root, pattern, rtol, atol):
    for model, target, model_dir, exe in executables(root, pattern):
        if not os.path.isdir(os.path.join(model_dir, "expected")) or not plan.time_left():
            continue
        tolerance = os.path.join(model_dir, "tolerance")
        own = open(tolerance).read().split() if os.path.exists(tolerance) else None
        try:
            why = check_numerics(model_dir, exe, *(map(float, own) if own else (rtol, atol)))
        except subprocess.TimeoutExpired:
            why = "timed out"
        plan.failed |= why is not None
        plan.add({"model": model, "target": target, "numerics": "ok" if why is None else why})


def bench_kiln(plan, root, pattern, runs):
    """kiln's whole runs; for CUDA also without graphs, without prefetch,
    without direct copies and from pageable memory."""
    variants = {"kiln_ms": None, "no_graphs_ms": {"KILN_CUDA_GRAPHS": "0"},
                "no_prefetch_ms": {"KILN_CUDA_PREFETCH": "0"},
                "staged_ms": {"KILN_GPU_DIRECT_COPIES": "0"},
                "pageable_ms": {"KILN_CUDA_PINNED": "0"}}
    for model, target, model_dir, exe in executables(root, pattern):
        if not os.path.exists(os.path.join(model_dir, "bench")) or not plan.time_left():
            continue
        row = {"model": model, "target": target}
        try:
            for key, env in variants.items():
                if env is None or target.startswith("cuda"):
                    row[key], row["device"] = kiln_p50_ms(exe, runs, env)
        except (RuntimeError, subprocess.TimeoutExpired) as e:
            row["bench"] = "did not run: %s" % e
            plan.failed = True
        size = matmul_size(model)
        if size and "kiln_ms" in row:
            row["tflops"] = 2 * size[0] ** 3 / row["kiln_ms"] / 1e9
        plan.add(row)


def find_ncu():
    found = shutil.which("ncu") or shutil.which("/usr/local/cuda/bin/ncu")
    return found or next(iter(sorted(glob.glob("/opt/nvidia/nsight-compute/*/ncu"))), None)


# `--bench 3` runs the model 4 times: a warm-up, then the 3 it times.
NCU_RUNS = 4


def ncu_kernel_times(ncu, exe):
    """Each kernel's GPU time in one run, by Nsight Compute (gpu__time_duration
    of each launch, clocks not locked, caches flushed): {kernel name: its
    median launch times its launches per run} (kiln names its kernels
    k<i>_<node>), and the launches per run."""
    rc, text = run([ncu, "--clock-control", "none", "--metrics", "gpu__time_duration.sum",
                    "--csv", "--print-units", "base", exe, "--bench", str(NCU_RUNS - 1)],
                   timeout=240)
    if rc != 0:
        raise RuntimeError("ncu exit %d: %s" % (rc, text.strip().splitlines()[-1:]))
    rows = list(csv.reader(io.StringIO(text[text.index('"ID"'):])))
    header = rows[0]
    rows = [r for r in rows[1:] if len(r) == len(header)]
    name, unit, value = (header.index(k) for k in ("Kernel Name", "Metric Unit", "Metric Value"))
    scale = {"nsecond": 1e-6, "ns": 1e-6, "usecond": 1e-3, "us": 1e-3, "msecond": 1.0,
             "ms": 1.0}
    times = {}
    for r in rows:
        times.setdefault(r[name], []).append(float(r[value].replace(",", "")) * scale[r[unit]])
    return ({k: float(np.median(t)) * len(t) / NCU_RUNS for k, t in times.items()},
            len(rows) // NCU_RUNS)


def ncu_kernel_ms(ncu, exe):
    """The GPU time of one run's kernels (ncu_kernel_times summed)."""
    times, launches = ncu_kernel_times(ncu, exe)
    return sum(times.values()), launches


def kiln_event_times(exe, runs):
    """Each kernel's GPU time per run by the executable's own `--profile`
    (CUDA events around each launch, the launches one by one, not as a
    graph): {kernel name: ms per run}, the kernels that ran."""
    with tempfile.TemporaryDirectory() as tmp:
        rc, text = run([exe, "--profile", os.path.join(tmp, "trace.json"), "--bench", str(runs)],
                       timeout=240)
    if rc != 0:
        raise RuntimeError(text.strip().splitlines()[-1] if text.strip() else "exit %d" % rc)
    times = {name: float(ms) for name, ms in re.findall(r"^  (k\d+_\S+)\s+([0-9.]+)\s", text, re.M)}
    return {name: ms for name, ms in times.items() if ms > 0}


def profile_models(plan, root, pattern, top=12):
    """For the models PyTorch runs too (resnet18, bert2, attention4096): kiln's kernels alone
    by Nsight Compute, with the `top` slowest kernels by name: where the
    time goes."""
    ncu = find_ncu()
    for model in sorted(os.listdir(root)):
        for target in ("cuda", "cuda-split-k", "cuda-unfused"):
            exe = os.path.join(root, model, target)
            if (not re.search(pattern, model) or not plan.time_left() or
                    not os.path.exists(os.path.join(root, model, "torch.json")) or
                    not os.access(exe, os.X_OK)):
                continue
            # By CUDA events (seconds), then by Nsight Compute (caches
            # flushed, each kernel alone; minutes) where it is installed.
            for how in ("kernel events (--profile)", "kernels alone (ncu)"):
                if how.endswith("(ncu)") and not ncu:
                    continue
                row = {"model": model, "target": target + " " + how}
                try:
                    if how.endswith("(ncu)"):
                        times, row["launches"] = ncu_kernel_times(ncu, exe)
                    else:
                        times = kiln_event_times(exe, 20)
                        row["launches"] = len(times)
                    row["alone_ms"] = sum(times.values())
                    row["kernels"] = sorted(([k, ms] for k, ms in times.items()),
                                            key=lambda kv: -kv[1])[:top]
                except (RuntimeError, ValueError, KeyError, subprocess.TimeoutExpired) as e:
                    row["bench"] = "did not run: %s" % e
                plan.add(row)


def bench_matmul_baselines(plan, root, pattern, runs):
    """For the n^3 matmuls: kiln's kernels alone (ncu) and cuBLAS's."""
    ncu = find_ncu()
    for model in sorted(os.listdir(root)):
        size = matmul_size(model)
        if not size or not re.search(pattern, model) or not plan.time_left():
            continue
        if not os.path.exists(os.path.join(root, model, "bench")):
            continue
        n, dtype = size
        flop = 2 * n ** 3
        # (a -2of4 GEMM's mma.sp beside mma.sync on the same weights)
        for target in ("cuda", "cuda-mma-sp"):
            exe = os.path.join(root, model, target)
            if not ncu or not os.access(exe, os.X_OK):
                continue
            row = {"model": model, "target": target + " kernels alone (ncu)"}
            try:
                row["alone_ms"], row["launches"] = ncu_kernel_ms(ncu, exe)
                row["tflops"] = flop / row["alone_ms"] / 1e9
            except (RuntimeError, ValueError, KeyError, subprocess.TimeoutExpired) as e:
                row["bench"] = "did not run: %s" % e
            plan.add(row)
        try:
            torch_ms = torch_matmul_ms(n, dtype, runs)
        except RuntimeError as e:  # PyTorch's errors (out of pinned memory...)
            plan.add({"model": model, "target": "torch.matmul (cuBLAS, %s)" % dtype,
                      "bench": "did not run: %s" % str(e).strip().splitlines()[0][:200]})
            torch_ms = None
        if torch_ms:
            plan.add({"model": model, "target": "torch.matmul (cuBLAS, %s%s)" % (
                          dtype, ", no TF32" if dtype == "float32" else ""),
                      "alone_ms": torch_ms[0], "with_copies_ms": torch_ms[1],
                      "tflops": flop / torch_ms[0] / 1e9})


def print_table(results):
    print("\n| model | target | numerics | p50 ms (with copies) | without CUDA graphs "
          "| without prefetch | staged copies | pageable | alone ms | TFLOP/s |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    cell = lambda r, k: "%.3f" % r[k] if k in r else ""
    for r in results:
        ms = cell(r, "kiln_ms") or cell(r, "with_copies_ms") or r.get("bench", "")
        print("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            r["model"], r["target"], r.get("numerics", ""), ms, cell(r, "no_graphs_ms"),
            cell(r, "no_prefetch_ms"), cell(r, "staged_ms"), cell(r, "pageable_ms"),
            cell(r, "alone_ms"), "%.1f" % r["tflops"] if "tflops" in r else ""))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dir", nargs="?", default="build/device")
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--rtol", type=float, default=1e-3)
    ap.add_argument("--atol", type=float, default=1e-4)
    ap.add_argument("--json")
    ap.add_argument("--models", default="", help="only the models whose name this regex finds")
    ap.add_argument("--deadline", type=float, help="start no new work after this many seconds")
    ap.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    args = ap.parse_args()

    args.dir = unpack(args.dir)
    plan = Plan(args.dir, args.json, args.deadline)
    # Cheapest and most telling first: numerics, then kiln's timings, then
    # the baselines (torch.compile's compiles last: they take minutes).
    check_all_numerics(plan, args.dir, args.models, args.rtol, args.atol)
    bench_kiln(plan, args.dir, args.models, args.runs)
    bench_matmul_baselines(plan, args.dir, args.models, args.runs)
    profile_models(plan, args.dir, args.models)
    for compiled in [False] if args.no_compile else [False, True]:
        for model in sorted(os.listdir(args.dir)):
            model_dir = os.path.join(args.dir, model)
            if (re.search(args.models, model) and plan.time_left() and
                    os.path.exists(os.path.join(model_dir, "torch.json"))):
                for row in torch_model_rows(model, model_dir, args.runs, compiled):
                    plan.failed |= row.get("numerics", "ok") != "ok"
                    plan.add(row)
    if not plan.time_left():
        print("run: the deadline passed; what was left is skipped", flush=True)
    print_table(plan.results)
    sys.exit(1 if plan.failed else 0)


if __name__ == "__main__":
    main()
