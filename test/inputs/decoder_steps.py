#!/usr/bin/env python3
"""Writes the steps of a token-by-token run of make_models.py's decoder_kv:
DIR/0 .. DIR/N-1, each with x.npy (a token), and DIR/0 also with the empty
cache past_k.npy and past_v.npy ([1, HEADS, 0, WIDTH/HEADS]).

usage: decoder_steps.py DIR N [--width 64] [--heads 4]"""
import argparse
import os

import numpy as np

ap = argparse.ArgumentParser()
ap.add_argument("out")
ap.add_argument("steps", type=int)
ap.add_argument("--width", type=int, default=64)
ap.add_argument("--heads", type=int, default=4)
args = ap.parse_args()
rng = np.random.default_rng(11)
for step in range(args.steps):
    d = os.path.join(args.out, str(step))
    os.makedirs(d, exist_ok=True)
    np.save(os.path.join(d, "x.npy"), rng.standard_normal((1, 1, args.width)).astype(np.float32))
    if step == 0:
        empty = np.zeros((1, args.heads, 0, args.width // args.heads), np.float32)
        for name in ("past_k", "past_v"):
            np.save(os.path.join(d, name + ".npy"), empty)
