"""dlib's data tools around the nets. For now: ``randomize_samples`` (randomize.py)."""

from .randomize import randomize_samples

__all__ = ["randomize_samples"]
