"""Training of the text classifier (Burn's ``src/training.rs``), generic over the dataset class.

:func:`train` builds the tokenizer, the batchers and the model, the two data loaders
(``SamplerDataset(train, 25_000)`` and ``SamplerDataset(test, 2_500)`` by default, seeded so a
resumed run sees the same batches), the optimizer and the learning-rate schedule (Burn's
``NoamLrSchedulerConfig::new(1e-2).with_warmup_steps(1000).with_model_size(d_model)`` by
default), registers Burn's metrics (train: iteration speed, loss, accuracy, learning rate;
valid: loss, accuracy; the CUDA memory text metric on both when training on a GPU), the default
checkpointers and the summary, trains with :class:`ember.train.SupervisedTraining` and saves
``config.json`` and ``model.bpk`` in the artifact directory::

    <artifact_dir>/config.json  model.bpk  experiment.log
    <artifact_dir>/checkpoint/{model,optim,scheduler}-<epoch>.bpk
    <artifact_dir>/train/epoch-<e>/{Iteration_Speed,Loss,Accuracy,Learning_Rate}.log
    <artifact_dir>/valid/epoch-<e>/{Loss,Accuracy}.log

:class:`ExperimentConfig` holds Burn's fields (``transformer``, ``optimizer``, ``seq_length``,
``batch_size``, ``num_epochs``) and, with Burn's values as defaults, the recipe options the
scripts' flags set (sample sizes, schedule, pooling, label smoothing, seed).

Under ``python -m ember.distributed.launch -n N`` (or mpiexec/srun) each of the N processes
trains as one rank of ``DistributedDataParallel``: ``--batch-size`` is the batch of one rank
(the global batch is N times it), and rank 0 alone writes the artifacts.

Import scheme of the example: ``examples/`` on ``sys.path``, then
``from text_classification.training import ExperimentConfig, train``.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import ember
from ember import nn
from ember.data import DataLoaderBuilder, SamplerDataset
from ember.distributed import env_rank, env_world_size, launched_distributed
from ember.optim import (
    AdamConfig,
    AdamWConfig,
    CosineAnnealingLrSchedulerConfig,
    LinearLrSchedulerConfig,
    NoamLrSchedulerConfig,
    SequentialLrSchedulerConfig,
)
from ember.train import DistributedDataParallel, Learner, SupervisedTraining
from ember.train.metric import (
    AccuracyMetric,
    CudaMetric,
    IterationSpeedMetric,
    LearningRateMetric,
    LossMetric,
)
from text_classification.batcher import TextClassificationBatcher
from text_classification.model import TextClassificationModelConfig
from text_classification.tokenizer import load_tokenizer

LR_SCHEDULES = ("noam", "cosine", "constant")


class ExperimentConfig(ember.Config):
    """The experiment's settings, saved as the run's ``config.json`` (Burn's ``ExperimentConfig``).

    The first five fields are Burn's; the others default to what Burn's example does.

    Args:
        transformer: the encoder's configuration.
        optimizer: ``AdamConfig`` (Burn) or ``AdamWConfig``.
        seq_length: the fixed sequence length S: texts are cut or padded to S tokens (256).
        batch_size: items per batch (32).
        num_epochs: passes over the sampled training set (5).
        train_samples: items drawn from the train split per epoch (25,000); 0 takes the split's size.
        valid_samples: items drawn from the test split per validation (2,500); 0 takes its size.
        sample_with_replacement: draw the items independently (Burn's ``SamplerDataset``) or
            in shuffled whole passes over the split.
        lr_schedule: ``"noam"`` (Burn), ``"cosine"`` (linear warm-up, then cosine to
            ``min_lr``) or ``"constant"`` (linear warm-up, then constant).
        lr: the Noam factor (1e-2), else the peak / constant rate.
        warmup_steps: warm-up iterations (1,000).
        min_lr: the rate the cosine ends at (0).
        pooling: ``"first"`` (Burn: the head reads token 0) or ``"mean"`` (the mean over the
            non-padding tokens).
        label_smoothing: label smoothing α of the training loss (0).
        token_dropout: the probability that a training text's word piece becomes ``[UNK]`` (0;
            see :class:`~text_classification.batcher.TextClassificationBatcher`).
        num_workers: data-loader worker processes (Burn: 1).
        seed: seeds the parameters, dropout and the samplers (so a resumed run draws the same
            batches).
        tokenizer: the tokenizer the run used (None: the shipped bert-base-cased vocabulary);
            inference uses the same one.
        recipe: the preset the run started from (informative).
        pretrained: a Hugging Face checkpoint (directory or Hub name) whose encoder and tokenizer
            the run fine-tunes instead of training the example's Transformer (None: none; see
            :mod:`text_classification.pretrained`); ``transformer`` then reports its sizes.
        lora_rank: with ``pretrained``: 0 trains every parameter, R > 0 only LoRA adapters of
            rank R on the frozen encoder and the head.
    """

    transformer: nn.TransformerEncoderConfig
    optimizer: AdamConfig | AdamWConfig
    seq_length: int = 256
    batch_size: int = 32
    num_epochs: int = 5
    train_samples: int = 25_000
    valid_samples: int = 2_500
    sample_with_replacement: bool = True
    lr_schedule: str = "noam"
    lr: float = 1e-2
    warmup_steps: int = 1000
    min_lr: float = 0.0
    pooling: str = "first"
    label_smoothing: float = 0.0
    token_dropout: float = 0.0
    num_workers: int = 1
    seed: int = 42
    tokenizer: str | None = None
    recipe: str = "burn"
    pretrained: str | None = None
    lora_rank: int = 0

    def validate(self) -> "ExperimentConfig":
        """Check the values; returns self (raises ``ValueError`` naming the field)."""
        for name in ("seq_length", "batch_size", "num_epochs"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"ExperimentConfig: {name} must be a positive int, got {value!r}")
        for name in ("train_samples", "valid_samples", "warmup_steps", "num_workers", "seed", "lora_rank"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"ExperimentConfig: {name} must be an int >= 0, got {value!r}")
        if self.lr_schedule not in LR_SCHEDULES:
            raise ValueError(
                f"ExperimentConfig: lr_schedule must be one of {', '.join(LR_SCHEDULES)}, "
                f"got {self.lr_schedule!r}"
            )
        if not (math.isfinite(self.lr) and self.lr > 0):
            raise ValueError(f"ExperimentConfig: lr must be a positive number, got {self.lr!r}")
        if self.lr_schedule != "noam" and self.lr > 1:
            raise ValueError(
                f"ExperimentConfig: lr {self.lr} is above 1, which the {self.lr_schedule} schedule "
                "refuses (only Noam's lr is a factor that may exceed 1)"
            )
        if not 0.0 <= self.token_dropout < 1.0:
            raise ValueError(f"ExperimentConfig: token_dropout must be in [0, 1), got {self.token_dropout!r}")
        if not 0 <= self.min_lr <= (self.lr if self.lr_schedule == "cosine" else math.inf):
            raise ValueError(f"ExperimentConfig: min_lr must be in [0, lr], got {self.min_lr!r}")
        return self


def create_artifact_dir(artifact_dir: str | os.PathLike) -> Path:
    """Create ``artifact_dir`` and remove a stale ``experiment.log`` (Burn's ``create_artifact_dir``)."""
    path = Path(artifact_dir)
    if env_rank() not in (None, 0):  # a distributed run: rank 0 owns the directory
        return path
    if path.exists() and not path.is_dir():
        raise NotADirectoryError(f"the artifact directory {path} is a file; pass --artifact-dir DIR")
    (path / "experiment.log").unlink(missing_ok=True)
    path.mkdir(parents=True, exist_ok=True)
    return path


def model_config(config: ExperimentConfig, n_classes: int, vocab_size: int) -> TextClassificationModelConfig:
    """The model configuration an experiment implies (Burn builds it the same way)."""
    return TextClassificationModelConfig(
        config.transformer,
        n_classes,
        vocab_size,
        config.seq_length,
        pooling=config.pooling,
        label_smoothing=config.label_smoothing,
    )


def _sampled(dataset, size: int, with_replacement: bool, seed: int):
    return SamplerDataset(
        dataset, size if size > 0 else len(dataset), with_replacement=with_replacement, seed=seed
    )


def build_dataloaders(dataset_train, dataset_test, config: ExperimentConfig, tokenizer, device) -> tuple:
    """The train and validation loaders: seeded ``SamplerDataset`` s of ``train_samples`` and
    ``valid_samples`` items, batches of ``batch_size`` on ``device``."""
    # token dropout augments the training batches only
    train_batcher = TextClassificationBatcher(
        tokenizer, config.seq_length, token_dropout=config.token_dropout, seed=config.seed
    )
    valid_batcher = TextClassificationBatcher(tokenizer, config.seq_length)
    loaders = []
    for dataset, size, seed, batcher in (
        (dataset_train, config.train_samples, config.seed, train_batcher),
        (dataset_test, config.valid_samples, config.seed + 1, valid_batcher),
    ):
        sampled = _sampled(dataset, size, config.sample_with_replacement, seed)
        loaders.append(
            DataLoaderBuilder(batcher)
            .batch_size(config.batch_size)
            .num_workers(config.num_workers)
            .set_device(device)
            .build(sampled)
        )
    return loaders[0], loaders[1]


def steps_per_epoch(dataloader) -> int:
    """Iterations (batches) per epoch of a loader (steps of all ranks together when distributed)."""
    if launched_distributed():
        return math.ceil(len(dataloader.dataset) / (dataloader.batch_size * env_world_size()))
    return len(dataloader)


def build_lr_scheduler(config: ExperimentConfig, total_steps: int):
    """The schedule of ``config`` over ``total_steps`` iterations.

    * ``noam``: ``NoamLrSchedulerConfig(lr).with_warmup_steps(warmup).with_model_size(d_model)`` (Burn);
    * ``cosine``: a linear warm-up, ``lr · k / warmup_steps`` at the k-th of the first
      ``warmup_steps`` iterations, then a cosine from ``lr`` to ``min_lr`` over the others;
    * ``constant``: the same warm-up, then ``lr``.
    """
    config.validate()
    if config.lr_schedule == "noam":
        return NoamLrSchedulerConfig(
            config.lr, warmup_steps=max(config.warmup_steps, 1), model_size=config.transformer.d_model
        )
    warmup = min(config.warmup_steps, max(total_steps - 1, 0))
    if config.lr_schedule == "cosine":
        main = CosineAnnealingLrSchedulerConfig(config.lr, max(total_steps - warmup, 1), min_lr=config.min_lr)
    else:
        main = config.lr
    if warmup < 2:  # a one-step warm-up is the rate itself
        return main
    # Linear from lr/w over w - 1 steps: call k (1..w) gets lr·k/w, the main schedule takes over at w + 1.
    ramp = LinearLrSchedulerConfig(config.lr / warmup, config.lr, warmup - 1)
    return SequentialLrSchedulerConfig([ramp, main], [warmup])


def register_metrics(training: SupervisedTraining, device) -> SupervisedTraining:
    """Burn's metrics: train IterationSpeed, Loss*, Accuracy*, LearningRate*; valid Loss*,
    Accuracy* (* numeric: plotted and summarised); Cuda (text) on both splits on a GPU."""
    if ember.Device(str(device)).kind == "cuda":
        training.metric_train(CudaMetric()).metric_valid(CudaMetric())
    return (
        training.metric_train(IterationSpeedMetric())
        .metric_train_numeric(LossMetric())
        .metric_valid_numeric(LossMetric())
        .metric_train_numeric(AccuracyMetric())
        .metric_valid_numeric(AccuracyMetric())
        .metric_train_numeric(LearningRateMetric())
    )


def _optimizer(config: ExperimentConfig):
    optimizer = config.optimizer
    if not isinstance(optimizer, (AdamConfig, AdamWConfig)):
        raise TypeError(
            f"ExperimentConfig.optimizer must be an AdamConfig or AdamWConfig, got {type(optimizer).__name__}"
        )
    return optimizer.init()


def train(
    artifact_dir: str | os.PathLike,
    dataset_train,
    dataset_test,
    config: ExperimentConfig,
    device="cpu",
    dataset_cls: Any = None,
    dtype=None,
    renderer=None,
    checkpoint: int | None = None,
    tokenizer=None,
    plots: bool = False,
):
    """Train a classifier for ``dataset_cls`` and save ``config.json`` and ``model.bpk``.

    Args:
        artifact_dir: where every artifact goes (created; a stale ``experiment.log`` removed).
        dataset_train: the training split (items ``TextClassificationItem``).
        dataset_test: the split used for validation.
        config: the experiment's settings.
        device: ``"cpu"``, ``"reference"`` or ``"cuda:N"``.
        dataset_cls: the dataset class giving ``num_classes()`` (default: ``type(dataset_train)``).
        dtype: the float dtype of the model (None: float32).
        renderer: the display (None: the dashboard on a terminal, plain lines otherwise).
        checkpoint: resume from the checkpoint of this epoch.
        tokenizer: a tokenizer object (default: ``load_tokenizer(config.tokenizer)``, or the
            checkpoint's with ``config.pretrained``).
        plots: draw ``plots/<Metric>.png`` after every epoch (needs matplotlib).

    Returns:
        The ``LearningResult`` (``result.model`` is the trained model in inference mode).
    """
    config.validate()
    dataset_cls = type(dataset_train) if dataset_cls is None else dataset_cls
    artifact_dir = create_artifact_dir(artifact_dir)
    ember.seed(config.seed)
    if config.pretrained is not None:
        from text_classification.pretrained import classifier_from_checkpoint

        model, checkpoint_tokenizer = classifier_from_checkpoint(
            config.pretrained, dataset_cls.num_classes(), artifact_dir, device, dtype, config.lora_rank
        )
        tokenizer = checkpoint_tokenizer if tokenizer is None else tokenizer
    else:
        tokenizer = load_tokenizer(config.tokenizer) if tokenizer is None else tokenizer
        model = model_config(config, dataset_cls.num_classes(), tokenizer.vocab_size()).init(device, dtype)
    return fit(
        artifact_dir,
        model,
        dataset_train,
        dataset_test,
        config,
        tokenizer,
        device,
        renderer,
        checkpoint,
        plots,
    )


def fit(
    artifact_dir: Path,
    model,
    dataset_train,
    dataset_test,
    config: ExperimentConfig,
    tokenizer,
    device,
    renderer=None,
    checkpoint: int | None = None,
    plots: bool = False,
):
    """Train ``model`` (built by the caller: :func:`train`, or LoRA fine-tuning) on the splits with
    ``config``'s loaders, schedule and optimizer; returns the ``LearningResult``."""
    dataloader_train, dataloader_test = build_dataloaders(
        dataset_train, dataset_test, config, tokenizer, device
    )
    lr_scheduler = build_lr_scheduler(config, config.num_epochs * steps_per_epoch(dataloader_train))
    return _launch(
        artifact_dir,
        model,
        dataloader_train,
        dataloader_test,
        config,
        _optimizer(config),
        lr_scheduler,
        device,
        renderer,
        checkpoint,
        plots,
    )


def _launch(
    artifact_dir: Path,
    model,
    dataloader_train,
    dataloader_test,
    config: ExperimentConfig,
    optimizer,
    lr_scheduler,
    device,
    renderer,
    checkpoint,
    plots,
):
    """Shared by training and fine-tuning: metrics, checkpointers, summary, launch, save."""
    training = register_metrics(SupervisedTraining(artifact_dir, dataloader_train, dataloader_test), device)
    training = training.with_default_checkpointers().num_epochs(config.num_epochs).summary().with_plots(plots)
    if renderer is not None:
        training = training.renderer(renderer)
    if checkpoint is not None:
        training = training.checkpoint(checkpoint)
    strategy = None
    if launched_distributed():  # one rank of several (ember.distributed.launch, mpiexec, srun)
        strategy = DistributedDataParallel(devices=(device,) if str(device).startswith("cuda") else ())
        training = training.with_training_strategy(strategy)
    result = training.launch(Learner(model, optimizer, lr_scheduler))
    if strategy is None or strategy.is_main:
        config.save(artifact_dir / "config.json")
        result.model.save_file(artifact_dir / "model.bpk")
    return result
