#!/usr/bin/env python3
"""A page with text for the PaddleOCR detector: three copies of the
committed line of text (examples/text-direction/text_upright.npy) on a white
320x320 page, normalized as PaddleOCR's detector expects (ImageNet mean and
std). On random inputs the detector finds no text and its whole output is
below 1e-4, which no tolerance could tell from wrong.
usage: text_page.py text_upright.npy out.npy"""
import sys

import numpy as np

line = np.load(sys.argv[1])[0] * 0.5 + 0.5  # back to pixel / 255
page = np.ones((1, 3, 320, 320), dtype=np.float32)
for y, x in ((20, 10), (120, 100), (230, 60)):
    page[0, :, y:y + line.shape[1], x:x + line.shape[2]] = line
mean = np.array([0.485, 0.456, 0.406], dtype=np.float32)[:, None, None]
std = np.array([0.229, 0.224, 0.225], dtype=np.float32)[:, None, None]
np.save(sys.argv[2], ((page - mean) / std).astype(np.float32))
