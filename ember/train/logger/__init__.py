"""Where training writes what it measured: metric log files, TensorBoard event files and
``experiment.log``."""

from ember.train.logger.application_logger import FileApplicationLoggerInstaller
from ember.train.logger.metric_logger import FileMetricLogger, MetricLogger, read_aggregate
from ember.train.logger.tensorboard import TensorBoardLogger

__all__ = [
    "FileApplicationLoggerInstaller",
    "FileMetricLogger",
    "MetricLogger",
    "TensorBoardLogger",
    "read_aggregate",
]
