"""The Burn book's basic workflow ("guide") written with ember.

- :mod:`guide.model`: the model and its config (Burn book, "Model").
- :mod:`guide.data`: items, the batcher and the two data sources (Burn book, "Data").
- :mod:`guide.training`: ``TrainingConfig`` and ``train`` with ``SupervisedTraining`` (Burn book, "Training").
- :mod:`guide.inference`: reload ``config.json`` + ``model.bpk`` and predict (Burn book, "Inference").
- :mod:`guide.main`: the command line (Burn book, "Backend").

Run ``python examples/guide/main.py --help``.
"""
