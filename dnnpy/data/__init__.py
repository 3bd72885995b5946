"""dlib's data tools around the nets: ``randomize_samples`` (randomize.py), ``dlib_rand``
(rand.py, dlib::rand's exact stream), ``chinese_whispers`` (clustering.py)."""

from .clustering import chinese_whispers, chinese_whispers_clustering
from .rand import dlib_rand
from .randomize import randomize_samples

__all__ = ["randomize_samples", "dlib_rand", "chinese_whispers", "chinese_whispers_clustering"]
