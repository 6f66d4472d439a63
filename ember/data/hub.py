"""Reaching the Hugging Face Hub: offline settings, a fast reachability probe, and running
`datasets` with offline mode forced on or off.

`datasets` retries an unreachable Hub for about half a minute before giving up. The loader
instead asks the Hub once, with a short timeout, and when that fails goes straight to the
local cache in offline mode, so a machine without network fails (or succeeds from cache) in
seconds.
"""

from __future__ import annotations

import contextlib
import http.client
import os
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from typing import Any

__all__ = ["DEFAULT_ENDPOINT", "hub_endpoint", "hub_mode", "offline_variable", "probe_hub"]

DEFAULT_ENDPOINT = "https://huggingface.co"
_TRUE = {"1", "ON", "YES", "TRUE"}


def offline_variable() -> str | None:
    """The environment variable that turns offline mode on right now, or `None`.

    Same precedence as `datasets`: `HF_DATASETS_OFFLINE`, when set at all, decides; otherwise
    `HF_HUB_OFFLINE` (or the older `TRANSFORMERS_OFFLINE`).
    """
    datasets_flag = os.environ.get("HF_DATASETS_OFFLINE")
    if datasets_flag is not None:
        return "HF_DATASETS_OFFLINE" if datasets_flag.strip().upper() in _TRUE else None
    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        if os.environ.get(name, "").strip().upper() in _TRUE:
            return name
    return None


def hub_endpoint() -> str:
    """The Hub URL: `HF_ENDPOINT` as set now, else what `datasets` uses, else the default."""
    endpoint = os.environ.get("HF_ENDPOINT")
    if not endpoint:
        config = sys.modules.get("datasets.config")
        endpoint = getattr(config, "HF_ENDPOINT", None) or DEFAULT_ENDPOINT
    return endpoint.rstrip("/")


def probe_hub(endpoint: str, name: str, timeout: float) -> str | None:
    """Ask the Hub about dataset `name` once, without retries.

    Args:
        endpoint: the Hub base URL.
        name: the dataset repository id, e.g. `"fancyzhx/ag_news"`.
        timeout: seconds for connecting and for the reply.

    Returns:
        `None` when the Hub answered (any HTTP status below 500: even "not found" or
        "unauthorized" means it is reachable), else a short description of the failure.
    """
    url = f"{endpoint}/api/datasets/{urllib.parse.quote(name, safe='/')}"
    request = urllib.request.Request(url, headers={"User-Agent": "ember-data"}, method="GET")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            response.read(0)
        return None
    except urllib.error.HTTPError as error:
        if error.code < 500:
            return None
        return f"HTTP {error.code} from {url}"
    except urllib.error.URLError as error:
        return f"{error.reason} ({url})"
    except (TimeoutError, OSError, http.client.HTTPException) as error:
        return f"{type(error).__name__}: {error} ({url})"


@contextlib.contextmanager
def hub_mode(offline: bool) -> Iterator[None]:
    """Run `datasets` / `huggingface_hub` with offline mode forced to `offline`.

    Both libraries read `HF_*_OFFLINE` once, when imported; setting their module flags for
    the duration of the call makes the variables as they are *now* (or the loader's decision
    after a failed probe) take effect.

    Args:
        offline: the value the flags take inside the block.
    """
    targets: list[tuple[Any, str]] = []
    for module_name, attributes in (
        ("datasets.config", ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")),
        ("huggingface_hub.constants", ("HF_HUB_OFFLINE",)),
    ):
        module = sys.modules.get(module_name)
        if module is None:
            continue
        targets.extend((module, attribute) for attribute in attributes if hasattr(module, attribute))
    saved = [(module, attribute, getattr(module, attribute)) for module, attribute in targets]
    try:
        for module, attribute in targets:
            setattr(module, attribute, offline)
        yield
    finally:
        for module, attribute, value in saved:
            setattr(module, attribute, value)
