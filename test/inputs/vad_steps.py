#!/usr/bin/env python3
"""Writes the steps of a streaming run of Silero VAD v4/v5: DIR/0 ..
DIR/N-1, each with a 512-sample frame input.npy ([1, 512], 16 kHz: silence,
then a voiced-like tone, then silence) and sr.npy (16000), and DIR/0 also
with the initial state.npy (zeros, [2, 1, 128]).

usage: vad_steps.py DIR N"""
import os
import sys

import numpy as np

out, steps = sys.argv[1], int(sys.argv[2])
rng = np.random.default_rng(5)
t = np.arange(steps * 512) / 16000
voice = (0.4 * np.sin(2 * np.pi * 180 * t) + 0.2 * np.sin(2 * np.pi * 360 * t)) * (
    np.abs(t - t[-1] / 2) < t[-1] / 4)
signal = (voice + 0.01 * rng.standard_normal(t.shape)).astype(np.float32)
for step in range(steps):
    d = os.path.join(out, str(step))
    os.makedirs(d, exist_ok=True)
    np.save(os.path.join(d, "input.npy"), signal[None, step * 512:(step + 1) * 512])
    np.save(os.path.join(d, "sr.npy"), np.array(16000, np.int64))
    if step == 0:
        np.save(os.path.join(d, "state.npy"), np.zeros((2, 1, 128), np.float32))
