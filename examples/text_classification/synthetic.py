"""The generated corpus of ``--source synthetic`` (for tests): each text mixes filler words with
words of its class, so a model can learn it in seconds.

Import scheme of the example: ``examples/`` on ``sys.path``, then
``from text_classification.synthetic import synthetic_rows``.
"""

from __future__ import annotations

import random


def synthetic_rows(name: str, split: str, n: int, seed: int, num_classes: int) -> tuple[list[str], list[int]]:
    """``(texts, labels)`` of ``n`` generated rows: deterministic for a given (name, split, n,
    seed), labels balanced over ``num_classes`` and shuffled.

    Args:
        name: the dataset class's name (part of the seed, so each dataset draws its own rows).
        split: ``"train"`` or ``"test"`` (different draws).
        n: number of rows.
        seed: base seed.
        num_classes: the dataset's class count.
    """
    rng = random.Random(f"{name}/{split}/{seed}")
    labels = [i % num_classes for i in range(n)]
    rng.shuffle(labels)
    per_class = len(KEYWORDS) // num_classes
    texts = []
    for label in labels:
        own = KEYWORDS[label * per_class : (label + 1) * per_class]
        words = [rng.choice(FILLER) for _ in range(rng.randint(6, 14))]
        for _ in range(rng.randint(2, 4)):
            words.insert(rng.randrange(len(words) + 1), rng.choice(own))
        texts.append(" ".join(words).capitalize() + ".")
    return texts, labels


# Words of the synthetic corpus (all whole tokens of bert-base-cased). 14 classes x 3 keywords.
KEYWORDS = (
    "river",
    "mountain",
    "forest",
    "guitar",
    "piano",
    "violin",
    "football",
    "tennis",
    "hockey",
    "bank",
    "market",
    "profit",
    "computer",
    "software",
    "internet",
    "school",
    "college",
    "student",
    "ship",
    "train",
    "aircraft",
    "church",
    "tower",
    "castle",
    "village",
    "farm",
    "valley",
    "bird",
    "fish",
    "insect",
    "flower",
    "tree",
    "grass",
    "album",
    "song",
    "band",
    "film",
    "actor",
    "director",
    "novel",
    "poem",
    "author",
)
FILLER = (
    "the",
    "a",
    "of",
    "and",
    "in",
    "is",
    "was",
    "with",
    "for",
    "on",
    "by",
    "this",
    "that",
    "it",
    "from",
    "at",
    "as",
    "which",
    "new",
    "first",
    "known",
    "also",
    "one",
    "two",
    "its",
    "has",
)
