"""Checkpoints of model, optimizer and scheduler, and the strategies deciding which to keep."""

from ember.train.checkpoint.async_checkpointer import AsyncCheckpointer, CheckpointerError
from ember.train.checkpoint.file_checkpointer import Checkpointer, FileCheckpointer
from ember.train.checkpoint.learning_checkpointer import LearningCheckpointer, TrainingState
from ember.train.checkpoint.strategy import (
    CheckpointingAction,
    CheckpointingStrategy,
    ComposedCheckpointingStrategy,
    KeepLastNCheckpoints,
    MetricCheckpointingStrategy,
)

__all__ = [
    "AsyncCheckpointer",
    "Checkpointer",
    "CheckpointerError",
    "CheckpointingAction",
    "CheckpointingStrategy",
    "ComposedCheckpointingStrategy",
    "FileCheckpointer",
    "KeepLastNCheckpoints",
    "LearningCheckpointer",
    "MetricCheckpointingStrategy",
    "TrainingState",
]
