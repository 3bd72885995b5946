"""Training: ``dnn_trainer`` (trainer.py) with its sync-file state (sync.py), the sync and
divergence-guard object it owns (guard.py), its mini-batch checks (batches.py) and the console
progress display and loss plot (progress.py)."""

from .trainer import (STOP_MAX_EPOCHS, STOP_MIN_LEARNING_RATE, STOP_NONFINITE, STOP_SCHEDULE_DONE,
                      TrainingDivergedError, dnn_trainer)

__all__ = ["dnn_trainer", "TrainingDivergedError", "STOP_MAX_EPOCHS", "STOP_MIN_LEARNING_RATE",
           "STOP_SCHEDULE_DONE", "STOP_NONFINITE"]
