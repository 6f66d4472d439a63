"""Where training writes what it measured: metric log files and ``experiment.log``."""

from ember.train.logger.application_logger import FileApplicationLoggerInstaller
from ember.train.logger.metric_logger import FileMetricLogger, MetricLogger, read_aggregate

__all__ = ["FileApplicationLoggerInstaller", "FileMetricLogger", "MetricLogger", "read_aggregate"]
