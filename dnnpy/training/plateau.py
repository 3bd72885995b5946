"""dnn_trainer's plateau detector (trainer.h): how many steps the loss has gone without
decreasing, and forgetting the oldest losses after the learning rate shrinks."""

from __future__ import annotations

from .statistics import count_steps_without_decrease, count_steps_without_decrease_robust

__all__ = ["steps_without_progress", "drop_oldest", "remember_loss", "forget_after_shrink"]


def steps_without_progress(losses, threshold):
    """dlib's plateau test: steps without a decreasing loss, rechecked ignoring the top 10% of
    the losses when it reaches ``threshold`` (a few bad mini-batches must not shrink the
    learning rate)."""
    steps = count_steps_without_decrease(losses)
    if steps >= threshold:
        steps = count_steps_without_decrease_robust(losses)
    return steps


def drop_oldest(losses, count):
    """Forget the ``count`` oldest losses (all when fewer), after a shrink."""
    for _ in range(min(count, len(losses))):
        losses.popleft()


def remember_loss(losses, loss, keep):
    """Append ``loss`` and keep the newest ``keep`` (dlib's previous_loss_values window)."""
    losses.append(loss)
    while len(losses) > keep:
        losses.popleft()


def forget_after_shrink(losses, dump_amount, threshold):
    """dlib's drop after a shrink: the oldest ``dump_amount + threshold // 10`` losses."""
    drop_oldest(losses, dump_amount + threshold // 10)
