"""Numba kernels (the ``jit`` extra) for the loops of the image code that numpy runs slowly:
each module is the compiled twin of numpy code elsewhere in dnnpy, computing the same
results. Imported only through ``dnnpy.jit`` (never at ``import dnnpy``),
which decides whether they run and falls back to numpy when they cannot.

- ``fhog.py``: fHOG's orientation histograms and features (``dnnpy/image/fhog.py``)
- ``hog.py``: a HOG detector's window scores by separable filters (``dnnpy/object_detector.py``)
- ``landmarks.py``: the shape predictor's cascade, box by box (``dnnpy/landmarks.py``)
- ``packed.py``: dlib's packed integers, decoded in one pass (``dnnpy/serialization/packed.py``)
- ``resize.py``: dlib's bilinear resize of uint8 images (``dnnpy/image/resize.py``)
"""
