#!/usr/bin/env python3
"""Writes a float32 .npy of normal random values with the given shape.

usage: random_npy.py OUT.npy DxDx... [SEED]"""
import sys

import numpy as np

out, shape = sys.argv[1], [int(d) for d in sys.argv[2].split("x")]
seed = int(sys.argv[3]) if len(sys.argv) > 3 else 0
np.save(out, np.random.default_rng(seed).standard_normal(shape).astype(np.float32))
