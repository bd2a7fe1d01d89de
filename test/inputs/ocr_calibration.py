#!/usr/bin/env python3
"""Calibration sets for pruning the PaddleOCR models: the sample image and
shifted, contrast-changed and noisy copies of it (seeded), one
sub-directory per sample with x.npy.

  ocr_calibration.py rec LINE.npy OUT_DIR TEST.npy
      LINE is a normalized 1x3x48xW text line; each sample, and TEST (the
      line itself), is padded with zeros to 48x320 as PaddleOCR's
      recognizer preprocessing does.
  ocr_calibration.py det PAGE.npy OUT_DIR
      PAGE is a normalized detector input (test/inputs/text_page.py)."""
import os
import sys

import numpy as np

COPIES = {"rec": 15, "det": 6}


def pad_line(x):
    y = np.zeros((1, 3, 48, 320), np.float32)
    y[..., :x.shape[3]] = x
    return y


def augmented(x, rng):
    y = np.roll(x, rng.integers(-12, 13), axis=3)
    y = y * rng.uniform(0.8, 1.2) + rng.uniform(-0.15, 0.15)
    return (y + rng.normal(0, 0.03, y.shape)).astype(np.float32)


mode, source, out = sys.argv[1], np.load(sys.argv[2]), sys.argv[3]
rng = np.random.default_rng(0)
samples = [source] + [augmented(source, rng) for _ in range(COPIES[mode])]
if mode == "rec":
    samples = [pad_line(s) for s in samples]
    np.save(sys.argv[4], samples[0])
for i, sample in enumerate(samples):
    directory = os.path.join(out, f"sample{i:02d}")
    os.makedirs(directory, exist_ok=True)
    np.save(os.path.join(directory, "x.npy"), sample)
