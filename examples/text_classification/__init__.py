"""ember's text-classification example (AG News and DbPedia), after Burn's
``examples/text-classification``.

Import scheme: this directory is the package ``text_classification``; it is not installed.
Put ``examples/`` on ``sys.path`` and import with absolute imports::

    import sys; sys.path.insert(0, "examples")
    from text_classification.dataset import DbPediaDataset

The example's scripts (``db_pedia_train.py`` and the others, in this directory) insert their
parent directory (``examples/``) into ``sys.path`` themselves, so they run from anywhere,
including from this directory (``python db_pedia_train.py``).

Where things live:

* entry points (each a short ``main``): ``*_train.py``, ``*_infer.py``, ``ag_news_finetune.py``,
  ``demo.py``; their shared bodies ``cli`` (``train_main``, ``infer_main``, ``launch``,
  ``run_script``; it also re-exports the names below that used to live in it);
* flags and checks: ``flags`` (argument parsing, ``--backend``/``--dtype``, per-model flags),
  ``run_dir`` (``--artifact-dir``/``--resume`` checks), ``from_flags`` (the run's config and
  datasets from the flags), ``pretrained_cli`` (``--pretrained``), ``finetune_cli`` (the
  fine-tuning script's flags);
* presets: ``recipes`` (Burn's, ember's, the fine-tuning ones, fastText's);
* the Transformer: ``dataset`` (datasets and sources; ``synthetic``, the generated corpus),
  ``tokenizer`` (``BertCasedTokenizer``),
  ``batcher`` (training and inference batches), ``model`` (the classifier; ``classifier``, the
  loss and steps it shares with the fastText-style model), ``training``,
  ``inference``, ``finetune`` (LoRA), ``pretrained`` (Hugging Face encoders);
* the fastText-style model: ``fasttext_model`` (config, model, batches), ``fasttext_data``
  (tokenized datasets, batchers), ``ngrams`` (hashed n-grams), ``fasttext`` (the run).

``data/`` holds the shipped DbPedia sample and the bert-base-cased vocabulary, each with its
licence (``data/README.md``).
"""

from text_classification.batcher import (
    TextClassificationBatcher,
    TextClassificationInferenceBatch,
    TextClassificationInferenceBatcher,
    TextClassificationTrainingBatch,
)
from text_classification.dataset import (
    SOURCES,
    AgNewsDataset,
    DbPediaDataset,
    TextClassificationDataset,
    TextClassificationItem,
)
from text_classification.model import TextClassificationModel, TextClassificationModelConfig
from text_classification.tokenizer import BertCasedTokenizer, TokenizerUnavailableError, load_tokenizer

__all__ = [
    "SOURCES",
    "AgNewsDataset",
    "BertCasedTokenizer",
    "DbPediaDataset",
    "TextClassificationBatcher",
    "TextClassificationDataset",
    "TextClassificationInferenceBatch",
    "TextClassificationInferenceBatcher",
    "TextClassificationItem",
    "TextClassificationModel",
    "TextClassificationModelConfig",
    "TextClassificationTrainingBatch",
    "TokenizerUnavailableError",
    "load_tokenizer",
]
