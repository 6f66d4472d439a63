"""ember.train: Burn's training layer — ``SupervisedTraining`` and ``Learner`` with metrics,
Burn's artifact layout and log format, a live dashboard, atomic background checkpoints,
exact resume, early stopping and a summary.

    training = (SupervisedTraining(artifact_dir, dataloader_train, dataloader_valid)
                .metrics(AccuracyMetric(), LossMetric())
                .with_default_checkpointers()
                .num_epochs(5)
                .summary())
    result = training.launch(Learner(model, AdamConfig().init(), 1e-3))
    result.model.save_file(f"{artifact_dir}/model")
"""

from ember.train.checkpoint import (
    AsyncCheckpointer,
    CheckpointingAction,
    CheckpointingStrategy,
    ComposedCheckpointingStrategy,
    FileCheckpointer,
    KeepLastNCheckpoints,
    LearningCheckpointer,
    MetricCheckpointingStrategy,
    TrainingState,
)
from ember.train.early_stopping import EarlyStoppingStrategy, MetricEarlyStoppingStrategy, StoppingCondition
from ember.train.interrupter import Interrupter
from ember.train.learner import Learner
from ember.train.logger import FileApplicationLoggerInstaller, FileMetricLogger, TensorBoardLogger
from ember.train.output import (
    ClassificationOutput,
    MultiLabelClassificationOutput,
    RegressionOutput,
    SequenceOutput,
)
from ember.train.steps import InferenceStep, TrainOutput, TrainStep, TrainStepMixin
from ember.train.store import Aggregate, Direction, MetricsStore, Split
from ember.train.strategy import DistributedDataParallel, MultiDevice, SingleDevice, TrainingStrategy
from ember.train.summary import LearnerSummary
from ember.train.supervised import LearningResult, NonFiniteLossError, SupervisedTraining

__all__ = [
    "Aggregate",
    "AsyncCheckpointer",
    "CheckpointingAction",
    "CheckpointingStrategy",
    "ClassificationOutput",
    "ComposedCheckpointingStrategy",
    "Direction",
    "DistributedDataParallel",
    "EarlyStoppingStrategy",
    "FileApplicationLoggerInstaller",
    "FileCheckpointer",
    "FileMetricLogger",
    "InferenceStep",
    "Interrupter",
    "KeepLastNCheckpoints",
    "Learner",
    "LearnerSummary",
    "LearningCheckpointer",
    "LearningResult",
    "MetricCheckpointingStrategy",
    "MetricEarlyStoppingStrategy",
    "MetricsStore",
    "MultiDevice",
    "MultiLabelClassificationOutput",
    "NonFiniteLossError",
    "RegressionOutput",
    "SequenceOutput",
    "SingleDevice",
    "Split",
    "StoppingCondition",
    "SupervisedTraining",
    "TensorBoardLogger",
    "TrainOutput",
    "TrainStep",
    "TrainStepMixin",
    "TrainingState",
    "TrainingStrategy",
]
