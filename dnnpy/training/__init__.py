"""Training: ``dnn_trainer`` (trainer.py) with its sync-file state (sync.py), the divergence
guard (guard.py) and the console progress display and loss plot (progress.py)."""

from .trainer import dnn_trainer

__all__ = ["dnn_trainer"]
