"""Training: dlib's ``dnn_trainer`` and the pieces it is made of.

Modules:

- ``batches.py``: how the trainer cuts data into mini-batches and checks them
- ``checks.py``: the trainer's argument checks, each naming the method
- ``data_parallel.py``: the data-parallel side: one replica of the net per process
- ``guard.py``: synchronization to disk and the divergence guard (``sync_guard``, owned by the
  trainer)
- ``plateau.py``: the plateau detector: how many steps the loss has gone without decreasing
- ``progress.py``: the console progress display and loss plot
- ``statistics.py``: dlib's running statistics the trainer uses (``running_gradient``, ...)
- ``sync.py``: the trainer's state file and the handling of its sync files
- ``trainer.py``: ``dnn_trainer``: mini-batch training with learning-rate shrinking
"""

from .trainer import (STOP_MAX_EPOCHS, STOP_MIN_LEARNING_RATE, STOP_NONFINITE, STOP_SCHEDULE_DONE,
                      TrainingDivergedError, dnn_trainer)

__all__ = ["dnn_trainer", "TrainingDivergedError", "STOP_MAX_EPOCHS", "STOP_MIN_LEARNING_RATE",
           "STOP_SCHEDULE_DONE", "STOP_NONFINITE"]
