#!/usr/bin/env python3
"""Renders the demo's input: one line of text as the PaddleOCR direction
classifier expects it (1x3x48x192, (pixel/255 - 0.5) / 0.5), upright and
rotated by 180 degrees. Needs python3-pil; the .npy files are committed."""
import numpy as np
from PIL import Image, ImageDraw, ImageFont

TEXT = "kiln compiles ONNX"
font = ImageFont.truetype("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", 30)
img = Image.new("RGB", (192, 48), "white")
ImageDraw.Draw(img).text((4, 6), TEXT, fill="black", font=font)

def to_tensor(image):
    a = np.asarray(image, dtype=np.float32) / 255.0
    a = (a - 0.5) / 0.5
    return a.transpose(2, 0, 1)[None].copy()

np.save("text_upright.npy", to_tensor(img))
np.save("text_rotated.npy", to_tensor(img.rotate(180)))
img.save("text_upright.png")
