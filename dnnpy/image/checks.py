"""The images dlib's Python API takes, checked once for every reader of them (the shape
predictor, the HOG detectors): 8-bit grey (H x W) or RGB (H x W x 3)."""

from __future__ import annotations

import numpy as np

__all__ = ["uint8_grey_or_rgb"]


def uint8_grey_or_rgb(img, op) -> np.ndarray:
    """``img`` as a C-contiguous uint8 H x W or H x W x 3 array (copied only when it is not
    one already), as dlib's Python API takes images; otherwise a ``TypeError`` (not uint8) or
    ``ValueError`` (RGBA, or another shape) naming ``op`` and the fix."""
    a = np.asarray(img)
    if a.dtype != np.uint8:
        raise TypeError(f"{op}: the image must be uint8 (dlib's 8-bit grey or RGB), got {a.dtype}: "
                        f"convert it first, e.g. np.clip(img, 0, 255).astype(np.uint8)")
    if a.ndim == 2 or (a.ndim == 3 and a.shape[2] == 3):
        return np.ascontiguousarray(a)      # pixels are read by flat index
    if a.ndim == 3 and a.shape[2] == 4:
        raise ValueError(f"{op}: an RGBA image: pass its RGB part, img[:, :, :3] (dlib's Python API "
                         f"takes 8-bit grey or RGB only)")
    raise ValueError(f"{op}: expected an H x W grey or H x W x 3 RGB image, got shape {a.shape}")
