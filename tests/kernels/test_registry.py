"""The backend registry: generator states saved and restored by device name."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.kernels import registry


@pytest.mark.parametrize("device", ["reference", "cpu"])
def test_rng_states_restore_the_same_numbers(device):
    ember.seed(3)
    ember.rand(4, device=device)
    saved = registry.rng_states()
    assert device in saved
    first = ember.rand(5, device=device).numpy()
    registry.set_rng_states(saved)
    np.testing.assert_array_equal(ember.rand(5, device=device).numpy(), first)


@pytest.mark.parametrize("name", ["bogus", "cpu:0", "cuda", "cuda:x", "reference:1"])
def test_set_rng_states_names_a_bad_device_name(name):
    with pytest.raises(ValueError, match=rf"set_rng_states: bad device name '{name}'"):
        registry.set_rng_states({name: {}})
