#!/usr/bin/env python3
"""Writes the steps of a token-by-token run of make_models.py's decoder_kv:
DIR/0 .. DIR/N-1, each with x.npy (a token), and DIR/0 also with the empty
cache past_k.npy and past_v.npy ([1, 4, 0, 16]).

usage: decoder_steps.py DIR N"""
import os
import sys

import numpy as np

out, steps = sys.argv[1], int(sys.argv[2])
rng = np.random.default_rng(11)
for step in range(steps):
    d = os.path.join(out, str(step))
    os.makedirs(d, exist_ok=True)
    np.save(os.path.join(d, "x.npy"), rng.standard_normal((1, 1, 64)).astype(np.float32))
    if step == 0:
        for name in ("past_k", "past_v"):
            np.save(os.path.join(d, name + ".npy"), np.zeros((1, 4, 0, 16), np.float32))
