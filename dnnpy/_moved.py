"""Old import paths of modules that moved: each old module re-exports its new home and, when
imported, warns once with a DeprecationWarning naming the new path."""

from __future__ import annotations

import warnings

__all__ = ["warn_moved"]


def warn_moved(old: str, new: str) -> None:
    """Warn that module ``old`` is now ``new`` (called from the old module's body)."""
    warnings.warn(f"{old} moved to {new}: import it from there (the old path will be removed)",
                  DeprecationWarning, stacklevel=3)
