#!/usr/bin/env python3
"""Runs a Silero VAD executable compiled with no flags and onnxruntime on
the same inputs for each (batch, frame length, sample rate) given, and
compares the outputs (rtol 1e-3, atol 1e-4).

  vad_check.py MODEL.onnx EXE WORKDIR B:N:SR [B:N:SR ...]

A sample rate of 0 means the model has no `sr` input. Prints one line per
case: "OK b=B n=N sr=SR: <output shapes>" or "MISMATCH ..."; exits 1 on a
mismatch.
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx

HERE = os.path.dirname(os.path.abspath(__file__))


def inputs(model, d, batch, length, sr):
    rng = np.random.default_rng(batch * 100003 + length)
    t = np.arange(length) / (sr or 16000)
    feeds = {}
    for vi in model.graph.input:
        if vi.name == "input":
            feeds[vi.name] = (0.3 * np.sin(2 * np.pi * 440 * t)[None] +
                              0.05 * rng.standard_normal((batch, length))).astype(np.float32)
        elif vi.name == "sr":
            feeds[vi.name] = np.array(sr, np.int64)
        else:  # state [2, batch, 128], or h and c [2, batch, 64]
            width = vi.type.tensor_type.shape.dim[2].dim_value
            feeds[vi.name] = (0.1 * rng.standard_normal((2, batch, width))).astype(np.float32)
    paths = []
    for name, array in feeds.items():
        paths.append(os.path.join(d, name + ".npy"))
        np.save(paths[-1], array)
    return list(feeds), paths


def main(model_path, exe, root, *cases):
    model = onnx.load(model_path)
    runs, jobs = [], []
    for case in cases:
        batch, length, sr = map(int, case.split(":"))
        d = os.path.join(root, case.replace(":", "_"))
        os.makedirs(d, exist_ok=True)
        names, paths = inputs(model, d, batch, length, sr)
        args = [exe] + [a for n, p in zip(names, paths) for a in ("--input", f"{n}={p}")]
        subprocess.run(args + ["--output-dir", os.path.join(d, "kiln")], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        jobs.append([model_path, os.path.join(d, "ort")] + paths)
        runs.append((f"b={batch} n={length} sr={sr}", d))
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(jobs, f)
    ran = subprocess.run(["node", os.path.join(HERE, "ort_run.js"), "--batch", f.name],
                         capture_output=True, text=True)
    os.unlink(f.name)
    if ran.returncode != 0 or json.loads(ran.stdout):
        sys.exit(f"onnxruntime-node failed: {ran.stderr.strip() or ran.stdout.strip()}")
    ok = True
    for label, d in runs:
        shapes, same = [], True
        for o in model.graph.output:
            name = o.name.replace("/", "_")
            got = np.load(os.path.join(d, "kiln", name + ".npy"))
            want = np.load(os.path.join(d, "ort", name + ".npy"))
            shapes.append("x".join(map(str, got.shape)))
            same &= got.shape == want.shape and np.allclose(got, want, rtol=1e-3, atol=1e-4)
        ok &= same
        print(f"{'OK' if same else 'MISMATCH'} {label}: {' '.join(shapes)}")
    return 0 if ok else 1


if __name__ == "__main__":
    if len(sys.argv) < 5:
        sys.exit(__doc__)
    sys.exit(main(*sys.argv[1:]))
