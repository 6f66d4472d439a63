"""Element-wise chains written from primitives, ``chain(x, w)`` with ``w`` broadcast over ``x``'s
rows: the fusion tests run them on cpu and on cuda."""

from __future__ import annotations

import ember

CHAINS = {
    "tanh_gelu": lambda x, w: 0.5 * x * (1 + (0.7978845608 * (x + 0.044715 * x**3)).tanh()) * w,
    "swiglu_composed": lambda x, w: x * x.sigmoid() * w,
    "bias_scale": lambda x, w: (x + w) * 0.5 + 1.0,
    "masks": lambda x, w: ember.where(x > w, x.exp(), (-x).relu()) - (x == w).float() * w,
    "mixed_precision": lambda x, w: (x.to(ember.float64) * 3.0).sqrt().to(ember.float32) + w.abs(),
    "clamp_log": lambda x, w: (x.clamp(-2.0, 2.0) + 3.0).log() * w.sign() + x.maximum(w).minimum(x * 2),
}
