"""The numpy twin of ``dnnpy.tensor_tools``: the same op names and signatures as the CUDA
twin (the list is ``tensor_tools._twins.TWIN_OPS``), grouped in the same concept modules.
Only the dispatchers call these; they have already checked the shapes."""

from .._twins import TWIN_OPS, join_modules

NAME = "cpu"

__all__ = join_modules(__name__, globals(), TWIN_OPS)
