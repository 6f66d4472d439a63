"""Compatibility with a file written by Burn itself.

``fixtures/burn_mnist_model_head.hex`` holds the first 1,408 bytes (the 10-byte header and
the CBOR metadata) of ``examples/mnist-inference-web/model.bpk`` in tracel-ai/burn at
commit 2c06be35 (a 1,044,776-byte file written by Burn's ``burn_pack::Writer``). The test
rebuilds a container with that exact head and synthetic tensor data, and checks that ember
reads every descriptor and writes the head back byte for byte.
"""

from pathlib import Path

import numpy as np

import ember.record as rec

HEAD = bytes.fromhex(
    (Path(__file__).parent / "fixtures" / "burn_mnist_model_head.hex").read_text().replace("\n", "")
)
FILE_SIZE = 1_044_776  # the original file's size
EXPECTED = {  # name -> (shape, param_id), as Burn wrote them
    "conv1.conv.weight": ((64, 1, 3, 3), 10777079075451239370),
    "conv1.norm.running_var": ((64,), 10589899029590977807),
    "conv2.conv.weight": ((64, 64, 3, 3), 11182327050026330461),
    "fc1.weight": ((1600, 128), 1730029982897944783),
    "fc3.bias": ((10,), 7846584638995852899),
}


def _burn_file() -> bytes:
    data_start = -(-len(HEAD) // 256) * 256
    rng = np.random.default_rng(0)
    body = rng.integers(0, 256, FILE_SIZE - data_start, dtype=np.uint8).tobytes()
    return HEAD + bytes(data_start - len(HEAD)) + body


def test_reads_every_descriptor_burn_wrote(tmp_path):
    path = tmp_path / "model.bpk"
    path.write_bytes(_burn_file())
    loaded = rec.load(tmp_path / "model")
    assert len(loaded) == 18 and loaded.metadata == {} and loaded.scalars == {}
    assert all(v.dtype_name == "float32" for v in loaded.values())
    for name, (shape, param_id) in EXPECTED.items():
        assert loaded[name].shape == shape
        assert loaded.param_ids[name] == param_id
    assert {"conv1.norm.gamma", "conv1.norm.beta", "fc2.weight"} <= set(loaded)


def test_saving_back_reproduces_burns_bytes_exactly():
    original = _burn_file()
    loaded = rec.from_bytes(original)
    assert rec.to_bytes(loaded.tensors, loaded.metadata, loaded.scalars) == original
    # And from plain arrays + param ids, in the file's order.
    arrays = {name: view.numpy() for name, view in loaded.items()}
    assert rec.to_bytes(arrays, param_ids=loaded.param_ids) == original
