#!/usr/bin/env python3
"""Writes a calibration set for kiln-compile --quantize=int8: one
sub-directory per sample, each with one .npy of normal random float32
values per named input.

usage: calibration_set.py OUT_DIR SAMPLES NAME=DxDx... [NAME=DxDx...] [--seed S]"""
import os
import sys

import numpy as np

args = sys.argv[1:]
seed = 0
if "--seed" in args:
    i = args.index("--seed")
    seed = int(args[i + 1])
    del args[i:i + 2]
out, samples, specs = args[0], int(args[1]), args[2:]
rng = np.random.default_rng(seed)
for s in range(samples):
    directory = os.path.join(out, f"sample{s}")
    os.makedirs(directory, exist_ok=True)
    for spec in specs:
        name, dims = spec.split("=")
        shape = [int(d) for d in dims.split("x")]
        np.save(os.path.join(directory, f"{name}.npy"), rng.standard_normal(shape).astype(np.float32))
