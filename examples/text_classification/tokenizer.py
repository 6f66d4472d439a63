"""``BertCasedTokenizer``: the ``bert-base-cased`` WordPiece tokenizer of Burn's example
(``src/data/tokenizer.rs``), on the Hugging Face ``tokenizers`` library.

Where it comes from:

* :meth:`BertCasedTokenizer.shipped` — the ``vocab.txt`` shipped in ``data/bert-base-cased/``
  (no network needed; the default of :func:`load_tokenizer`);
* :meth:`BertCasedTokenizer.from_file` — a local ``tokenizer.json`` or ``vocab.txt``;
* :meth:`BertCasedTokenizer.from_pretrained` — ``bert-base-cased`` from the Hugging Face cache,
  else from the Hub (fails within seconds, with the remedies, when neither is available).

A ``vocab.txt`` is built into the same tokenizer as the Hub's ``tokenizer.json``: BERT
normaliser without lowercasing or accent stripping, BERT pre-tokenizer, WordPiece (``##``
continuations, ``[UNK]``), and ``[CLS] ... [SEP]`` around every encoding. Encodings are never
truncated or padded here; the batcher cuts and pads them as Burn's ``generate_padding_mask``.

Import scheme of the example: ``examples/`` on ``sys.path``, then
``from text_classification.tokenizer import BertCasedTokenizer`` (the example's scripts add
``examples/`` themselves, so they also run from their own directory).
"""

from __future__ import annotations

import os
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path

SHIPPED_VOCAB = Path(__file__).resolve().parent / "data" / "bert-base-cased" / "vocab.txt"
PRETRAINED_NAME = "bert-base-cased"
_SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


class TokenizerUnavailableError(RuntimeError):
    """A tokenizer could not be loaded (offline and not cached, or a bad file); the message
    says what to do."""


def _tokenizers():
    try:
        import tokenizers
    except ImportError as error:  # pragma: no cover - tokenizers is in the `text` extra
        raise ImportError(
            "BertCasedTokenizer needs the `tokenizers` package: "
            "pip install tokenizers (or pip install -e '.[text]')"
        ) from error
    return tokenizers


def _from_vocab(path: Path):
    """A cased BERT WordPiece tokenizer built from a ``vocab.txt`` (one token per line)."""
    tk = _tokenizers()
    from tokenizers import decoders, models, normalizers, pre_tokenizers, processors

    vocab = _read("the vocabulary", path, models.WordPiece.read_file)
    missing = [t for t in ("[UNK]", "[CLS]", "[SEP]", "[PAD]") if t not in vocab]
    if missing:
        raise TokenizerUnavailableError(
            f"BertCasedTokenizer: vocabulary {path} lacks the special tokens {missing}; "
            "a BERT vocab.txt has [PAD], [UNK], [CLS] and [SEP]"
        )
    tokenizer = tk.Tokenizer(models.WordPiece(vocab, unk_token="[UNK]", max_input_chars_per_word=100))
    tokenizer.normalizer = normalizers.BertNormalizer(
        clean_text=True, handle_chinese_chars=True, strip_accents=False, lowercase=False
    )
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.post_processor = processors.BertProcessing(("[SEP]", vocab["[SEP]"]), ("[CLS]", vocab["[CLS]"]))
    tokenizer.decoder = decoders.WordPiece(prefix="##")
    tokenizer.add_special_tokens([t for t in _SPECIAL_TOKENS if t in vocab])
    return tokenizer


def _from_json(path: Path):
    return _read("the tokenizer file", path, _tokenizers().Tokenizer.from_file)


def _read(what: str, path: Path, reader):
    """``reader(str(path))``; any failure re-raised as :class:`TokenizerUnavailableError` naming
    ``what`` and the file."""
    try:
        return reader(str(path))
    except Exception as error:
        raise TokenizerUnavailableError(f"BertCasedTokenizer: cannot read {what} {path}: {error}") from error


class BertCasedTokenizer:
    """The ``bert-base-cased`` tokenizer: ``encode`` adds ``[CLS]``/``[SEP]``, never truncates.

    Build it with :meth:`shipped`, :meth:`from_file` or :meth:`from_pretrained`. Instances are
    picklable (the data loader pickles the batcher into its workers): the pickle holds the
    tokenizer's JSON, and the tokenizer is rebuilt on first use after unpickling.

    Args:
        tokenizer: a ``tokenizers.Tokenizer``.
        source: where it came from, for messages and ``repr``.
    """

    def __init__(self, tokenizer, source: str = ""):
        self._tokenizer = tokenizer
        self._json: str | None = None
        self.source = source
        # Burn's example encodes without truncation or padding; the batcher does both.
        tokenizer.no_truncation()
        tokenizer.no_padding()
        pad = tokenizer.token_to_id("[PAD]")
        if pad is None:
            raise TokenizerUnavailableError(
                f"BertCasedTokenizer: the tokenizer from {source or 'its source'} has no [PAD] token"
            )
        self._pad = int(pad)

    # ---- construction -------------------------------------------------------------------------
    @classmethod
    def shipped(cls) -> "BertCasedTokenizer":
        """The tokenizer built from the example's shipped ``data/bert-base-cased/vocab.txt``."""
        if not SHIPPED_VOCAB.is_file():
            raise TokenizerUnavailableError(
                f"BertCasedTokenizer.shipped: {SHIPPED_VOCAB} is missing; restore it from "
                "the repository or pass --tokenizer PATH (a tokenizer.json or vocab.txt)"
            )
        return cls(_from_vocab(SHIPPED_VOCAB), source=str(SHIPPED_VOCAB))

    @classmethod
    def from_file(cls, path: str | os.PathLike) -> "BertCasedTokenizer":
        """Load a ``tokenizer.json`` (any ``.json``), or build from a ``vocab.txt`` (any other file).

        Args:
            path: the file, or a directory holding ``tokenizer.json`` or ``vocab.txt``.
        """
        path = Path(path).expanduser()
        if path.is_dir():
            for name in ("tokenizer.json", "vocab.txt"):
                if (path / name).is_file():
                    path = path / name
                    break
            else:
                raise TokenizerUnavailableError(
                    f"BertCasedTokenizer.from_file: directory {path} holds neither "
                    "tokenizer.json nor vocab.txt"
                )
        if not path.is_file():
            raise TokenizerUnavailableError(
                f"BertCasedTokenizer.from_file: {path} does not exist; expected a "
                "tokenizer.json or a BERT vocab.txt (one token per line)"
            )
        tokenizer = _from_json(path) if path.suffix.lower() == ".json" else _from_vocab(path)
        return cls(tokenizer, source=str(path))

    @classmethod
    def from_pretrained(
        cls, name: str = PRETRAINED_NAME, cache_dir: str | os.PathLike | None = None, timeout: float = 5.0
    ) -> "BertCasedTokenizer":
        """``bert-base-cased`` (or ``name``) from the Hugging Face cache, else from the Hub.

        Fails fast offline: with ``HF_HUB_OFFLINE``/``HF_DATASETS_OFFLINE`` set, or when the Hub
        does not answer within ``timeout`` seconds, and the file is not cached, it raises
        :class:`TokenizerUnavailableError` saying what to do.

        Args:
            name: the Hub model id.
            cache_dir: the Hugging Face hub cache (default: huggingface_hub's, under ``HF_HOME``).
            timeout: seconds allowed for the Hub's reachability check.
        """
        try:
            import huggingface_hub
        except ImportError as error:
            raise TokenizerUnavailableError(cls._remedy(name, "huggingface_hub is not installed")) from error
        cache = os.fspath(cache_dir) if cache_dir is not None else None
        cached = huggingface_hub.try_to_load_from_cache(name, "tokenizer.json", cache_dir=cache)
        if isinstance(cached, str) and os.path.isfile(cached):
            return cls(_from_json(Path(cached)), source=f"{name} (cache: {cached})")
        from ember.data.hub import hub_endpoint, offline_variable

        variable = offline_variable()
        if variable is not None:
            raise TokenizerUnavailableError(
                cls._remedy(
                    name,
                    f"offline mode is on ({variable}={os.environ[variable]}) and {name} is not in the Hugging Face "
                    f"cache ({cache or _hub_cache_dir()})",
                )
            )
        endpoint = hub_endpoint()
        problem = _probe(f"{endpoint}/api/models/{name}", timeout)
        if problem is not None:
            raise TokenizerUnavailableError(
                cls._remedy(
                    name,
                    f"the Hugging Face Hub at {endpoint} is unreachable ({problem}) and {name} is not cached",
                )
            )
        try:
            path = huggingface_hub.hf_hub_download(name, "tokenizer.json", cache_dir=cache)
        except Exception as error:  # re-raised with the remedies
            raise TokenizerUnavailableError(
                cls._remedy(name, f"download failed: {type(error).__name__}: {error}")
            ) from error
        return cls(_from_json(Path(path)), source=f"{name} ({path})")

    @staticmethod
    def _remedy(name: str, problem: str) -> str:
        return (
            f"BertCasedTokenizer.from_pretrained: cannot load {name!r}: {problem}.\n"
            f"To fix this: use the shipped vocabulary (BertCasedTokenizer.shipped(), the example's default), "
            f"pass a local file (--tokenizer PATH to a tokenizer.json or vocab.txt), or restore access to the "
            f"Hub and unset HF_HUB_OFFLINE / HF_DATASETS_OFFLINE."
        )

    # ---- encoding -----------------------------------------------------------------------------
    @property
    def tokenizer(self):
        """The underlying ``tokenizers.Tokenizer`` (rebuilt here after unpickling)."""
        if self._tokenizer is None:
            tokenizer = _tokenizers().Tokenizer.from_str(self._json)
            tokenizer.no_truncation()
            tokenizer.no_padding()
            self._tokenizer, self._json = tokenizer, None
        return self._tokenizer

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` with ``[CLS]`` first and ``[SEP]`` last (Burn: ``add_special_tokens=true``).

        Args:
            text: one string.
        """
        if not isinstance(text, str):
            raise TypeError(f"BertCasedTokenizer.encode: expected a str, got {type(text).__name__}")
        return self.tokenizer.encode(text).ids

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        """:meth:`encode` of every text, in parallel in the Rust library.

        Args:
            texts: the strings.
        """
        texts = list(texts)
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                raise TypeError(
                    f"BertCasedTokenizer.encode_batch: item {i} is {type(text).__name__}, expected str"
                )
        return [encoding.ids for encoding in self.tokenizer.encode_batch(texts)]

    def decode(self, ids: Sequence[int], skip_special_tokens: bool = True) -> str:
        """The text of ``ids``.

        Args:
            ids: token ids.
            skip_special_tokens: drop ``[CLS]``, ``[SEP]``, ``[PAD]``.
        """
        return self.tokenizer.decode(list(ids), skip_special_tokens=skip_special_tokens)

    def vocab_size(self) -> int:
        """Number of token ids, added tokens included (Burn: ``get_vocab_size(true)``)."""
        return self.tokenizer.get_vocab_size(with_added_tokens=True)

    def pad_token(self) -> int:
        """The id of ``[PAD]``."""
        return self._pad

    def token_to_id(self, token: str) -> int | None:
        """The id of ``token``, or None.

        Args:
            token: a vocabulary entry such as ``"[CLS]"``.
        """
        return self.tokenizer.token_to_id(token)

    # ---- pickling -----------------------------------------------------------------------------
    def __getstate__(self) -> dict:
        json = self._json if self._tokenizer is None else self._tokenizer.to_str()
        return {"json": json, "source": self.source, "pad": self._pad}

    def __setstate__(self, state: dict) -> None:
        self._tokenizer = None
        self._json = state["json"]
        self.source = state["source"]
        self._pad = state["pad"]

    def __repr__(self) -> str:
        return f"BertCasedTokenizer(source={self.source!r})"


def _hub_cache_dir() -> str:
    try:
        from huggingface_hub import constants

        return str(constants.HF_HUB_CACHE)
    except (ImportError, AttributeError):  # pragma: no cover - other huggingface_hub layouts
        return "the default Hugging Face cache"


def _probe(url: str, timeout: float) -> str | None:
    """None when ``url`` answers with any status below 500, else why not."""
    request = urllib.request.Request(url, headers={"User-Agent": "ember-text-classification"}, method="HEAD")
    try:
        with urllib.request.urlopen(request, timeout=timeout):  # https Hub URL
            return None
    except urllib.error.HTTPError as error:
        return None if error.code < 500 else f"HTTP {error.code}"
    except Exception as error:  # any failure means unreachable
        return f"{type(error).__name__}: {error}"


def load_tokenizer(path: str | os.PathLike | None = None) -> BertCasedTokenizer:
    """The tokenizer the example's ``--tokenizer`` option names.

    Args:
        path: None for the shipped vocabulary; ``"bert-base-cased"`` (or ``"hub"``) for
            :meth:`BertCasedTokenizer.from_pretrained`; otherwise a ``tokenizer.json`` /
            ``vocab.txt`` file or a directory holding one.
    """
    if path is None:
        return BertCasedTokenizer.shipped()
    text = os.fspath(path)
    if text in (PRETRAINED_NAME, "hub") and not Path(text).exists():
        return BertCasedTokenizer.from_pretrained()
    return BertCasedTokenizer.from_file(text)
