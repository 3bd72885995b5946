"""Runnable examples: ``python -m dnnpy.examples.NAME``."""
