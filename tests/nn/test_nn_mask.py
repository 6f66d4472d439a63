import numpy as np
import pytest
from helpers.devices import DEV

import ember
from ember import nn
from ember.record.config import Config

SEQS = [[5, 6, 7], [1, 2, 3, 4, 8, 9], [4]]


def test_no_max_pads_to_longest():
    out = nn.generate_padding_mask(0, SEQS, nn.SeqLength.NoMax, DEV)
    assert out.tensor.dtype is ember.int64 and out.mask.dtype is ember.bool
    assert out.tensor.tolist() == [[5, 6, 7, 0, 0, 0], [1, 2, 3, 4, 8, 9], [4, 0, 0, 0, 0, 0]]
    assert out.mask.tolist() == [[False] * 3 + [True] * 3, [False] * 6, [False] + [True] * 5]
    assert nn.generate_padding_mask(0, SEQS, None, DEV).tensor.shape == (3, 6)


def test_max_truncates_to_first_tokens():
    out = nn.generate_padding_mask(0, SEQS, nn.SeqLength.Max(4), DEV)
    assert out.tensor.tolist() == [[5, 6, 7, 0], [1, 2, 3, 4], [4, 0, 0, 0]]
    assert nn.generate_padding_mask(0, SEQS, nn.SeqLength.Max(10), DEV).tensor.shape == (3, 6)
    assert nn.generate_padding_mask(0, SEQS, 2, DEV).tensor.tolist() == [[5, 6], [1, 2], [4, 0]]


def test_fixed_length_and_pad_token_equality():
    out = nn.generate_padding_mask(9, SEQS, nn.SeqLength.Fixed(8), DEV)
    assert out.tensor.shape == (3, 8)
    # as in Burn, a real token equal to the pad id is masked too
    assert out.mask.numpy()[1].tolist() == [False] * 5 + [True] * 3
    assert out.tensor.numpy()[2].tolist() == [4] + [9] * 7


def test_autoregressive_mask_hides_the_future():
    m = nn.generate_autoregressive_mask(2, 4, DEV).numpy()
    assert m.shape == (2, 4, 4)
    np.testing.assert_array_equal(m[1], np.triu(np.ones((4, 4), bool), 1))


def test_seq_length_in_configs():
    class BatchConfig(Config):
        seq_length: nn.SeqLength = nn.SeqLength.NoMax

    cfg = BatchConfig(nn.SeqLength.Fixed(256))
    assert '"Fixed"' in cfg.to_json()
    assert BatchConfig.from_json(cfg.to_json()) == cfg
    assert BatchConfig.from_json(BatchConfig().to_json()).seq_length == nn.SeqLength.NoMax
    with pytest.raises(TypeError):
        nn.generate_padding_mask(0, SEQS, "long", DEV)
    with pytest.raises(ValueError):
        nn.SeqLength.Fixed(-1)
