"""The PyTorch twin of the text classifier the benchmarks train: (token + position embeddings)
/ 2, a pre-norm ``torch.nn.TransformerEncoder`` with GELU, a linear head on token 0."""

from __future__ import annotations


def torch_classifier(d_model: int, d_ff: int, heads: int, layers: int, classes: int, vocab: int, seq: int):
    """A new ``torch.nn.Module`` taking ``(tokens, padding mask)`` and giving the logits."""
    import torch  # optional: only the PyTorch rows need it

    class TorchClassifier(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.tok = torch.nn.Embedding(vocab, d_model)
            self.pos = torch.nn.Embedding(seq, d_model)
            layer = torch.nn.TransformerEncoderLayer(
                d_model, heads, d_ff, 0.1, activation="gelu", batch_first=True, norm_first=True
            )
            self.enc = torch.nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
            self.out = torch.nn.Linear(d_model, classes)

        def forward(self, tokens, mask):
            pos = torch.arange(tokens.shape[1], device=tokens.device)[None].expand_as(tokens)
            x = (self.pos(pos) + self.tok(tokens)) / 2
            return self.out(self.enc(x, src_key_padding_mask=mask)[:, 0])

    return TorchClassifier()
