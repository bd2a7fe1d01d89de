#!/usr/bin/env python3
"""Writes a "fine-tuned" copy of a model: the same graph, every float
initializer of two or more elements moved by a few percent, deterministically
(scalars such as epsilons and scales stay: fine-tuning does not change them).

usage: fine_tune.py IN.onnx OUT.onnx [--change F]   (default F = 0.2)"""
import argparse

import numpy as np
import onnx
from onnx import numpy_helper

ap = argparse.ArgumentParser()
ap.add_argument("model")
ap.add_argument("out")
ap.add_argument("--change", type=float, default=0.2)
args = ap.parse_args()
rng = np.random.default_rng(7)
m = onnx.load(args.model)
changed = 0
for i, init in enumerate(m.graph.initializer):
    w = numpy_helper.to_array(init)
    if w.dtype != np.float32 or w.size < 2:
        continue
    noise = rng.standard_normal(w.shape).astype(np.float32)
    tuned = w * (1 + args.change * noise) + 0.1 * args.change * noise * (np.abs(w).mean() + 1e-3)
    m.graph.initializer[i].CopyFrom(numpy_helper.from_array(tuned.astype(np.float32), init.name))
    changed += 1
onnx.save(m, args.out)
print(f"fine_tune: changed {changed} initializers")
