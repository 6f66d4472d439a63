"""Learning-rate schedulers vs their closed formulas (burn-reference §2), Burn's own test
sequences, argument validation, and exact resume from a saved state."""

from __future__ import annotations

import dataclasses
import logging
import math

import pytest

from ember.optim.lr_scheduler import (
    ComposedLrSchedulerConfig,
    ConstantLr,
    CosineAnnealingLrSchedulerConfig,
    ExponentialLrSchedulerConfig,
    LinearLrSchedulerConfig,
    LrScheduler,
    ModuleLearningRate,
    ModuleLrScheduler,
    ModuleLrSchedulerConfig,
    NoamLrSchedulerConfig,
    SchedulerReduction,
    SequentialLrSchedulerConfig,
    StepLrSchedulerConfig,
    as_module_scheduler,
    as_scheduler,
)

K = 1000


def run(scheduler: LrScheduler, n: int = K) -> list[float]:
    return [scheduler.step() for _ in range(n)]


def assert_sequence(got, expected, rel=1e-12, abs_=1e-15):
    assert len(got) == len(expected)
    for k, (g, e) in enumerate(zip(got, expected), start=1):
        assert g == pytest.approx(e, rel=rel, abs=abs_), f"call {k}: {g} != {e}"


# --- closed formulas over the first 1000 calls ----------------------------------------------


def linear(k, initial, final, n):
    return final - (final - initial) / n * max(n + 1 - k, 0)


def cosine(k, initial, n, min_lr):
    return min_lr + 0.5 * (initial - min_lr) * (1 + math.cos(math.pi * (k - 1) / n))


def noam(k, factor, warmup, d):
    return factor * d**-0.5 * min(k**-0.5, k * warmup**-1.5)


@pytest.mark.parametrize("initial,final,n", [(0.9, 0.1, 300), (0.01, 0.04, 7), (0.3, 0.3, 2)])
def test_linear_formula(initial, final, n):
    got = run(LinearLrSchedulerConfig(initial, final, n).init())
    assert_sequence(got, [linear(k, initial, final, n) for k in range(1, K + 1)])
    assert got[0] == pytest.approx(initial, rel=1e-15) and got[-1] == final


def test_cosine_formula_continues_past_num_iters():
    got = run(CosineAnnealingLrSchedulerConfig(0.5, 400, min_lr=0.05).init())
    assert_sequence(got, [cosine(k, 0.5, 400, 0.05) for k in range(1, K + 1)])
    assert got[400] == pytest.approx(0.05)  # call 401 = bottom of the cosine
    assert got[800] == pytest.approx(0.5)  # no restart: it climbs back to the top


def test_exponential_formula():
    got = run(ExponentialLrSchedulerConfig(0.8, 0.99).init())
    # repeated multiplication drifts by ~1 ulp per call from the power formula
    assert_sequence(got, [0.8 * 0.99 ** (k - 1) for k in range(1, K + 1)], rel=1e-12 * K)


def test_noam_formula_and_peak():
    got = run(NoamLrSchedulerConfig(2.0, warmup_steps=100, model_size=64).init())
    assert_sequence(got, [noam(k, 2.0, 100, 64) for k in range(1, K + 1)])
    peak = max(range(K), key=got.__getitem__)
    assert peak + 1 == 100
    assert got[peak] == pytest.approx(2.0 / math.sqrt(64 * 100))
    assert all(a < b for a, b in zip(got[:99], got[1:100]))
    assert all(a > b for a, b in zip(got[99:], got[100:]))


def test_noam_defaults():
    config = NoamLrSchedulerConfig(1.0)
    assert (config.warmup_steps, config.model_size) == (4000, 512)
    assert_sequence(run(config.init()), [noam(k, 1.0, 4000, 512) for k in range(1, K + 1)])


def test_step_formula():
    got = run(StepLrSchedulerConfig(0.5, 30, gamma=0.5).init())
    assert_sequence(got, [0.5 * 0.5 ** ((k - 1) // 30) for k in range(1, K + 1)])
    assert StepLrSchedulerConfig(0.5, 3).gamma == 0.1


def test_constant_and_plain_float():
    assert run(ConstantLr(0.003), 5) == [0.003] * 5
    assert run(as_scheduler(0.01), 3) == [0.01] * 3
    assert run(as_scheduler(1), 2) == [1.0, 1.0]


@pytest.mark.parametrize("reduction", ["Prod", "Avg", "Sum"])
def test_composed_reductions(reduction):
    config = ComposedLrSchedulerConfig(
        [LinearLrSchedulerConfig(0.9, 0.1, 300), CosineAnnealingLrSchedulerConfig(0.5, 400), 0.25],
        reduction=reduction,
    )
    got = run(config.init())
    parts = [(linear(k, 0.9, 0.1, 300), cosine(k, 0.5, 400, 0.0), 0.25) for k in range(1, K + 1)]
    combine = {"Prod": math.prod, "Sum": sum, "Avg": lambda xs: sum(xs) / 3}[reduction]
    assert_sequence(got, [combine(p) for p in parts], abs_=1e-15)


def test_sequential_warmup_then_cosine():
    config = SequentialLrSchedulerConfig(
        [LinearLrSchedulerConfig(1e-5, 1e-2, 100), CosineAnnealingLrSchedulerConfig(1e-2, 900)],
        milestones=[100],
    )
    got = run(config.init())
    expected = [
        linear(k, 1e-5, 1e-2, 100) if k <= 100 else cosine(k - 100, 1e-2, 900, 0.0) for k in range(1, K + 1)
    ]
    assert_sequence(got, expected)


def test_sequential_three_stages_matches_burn():
    config = SequentialLrSchedulerConfig(
        [
            LinearLrSchedulerConfig(0.1, 0.3, 2),
            ExponentialLrSchedulerConfig(0.5, 0.5),
            CosineAnnealingLrSchedulerConfig(0.8, 2),
        ],
        milestones=[2, 5],
    )
    assert_sequence(run(config.init(), 8), [0.1, 0.2, 0.5, 0.25, 0.125, 0.8, 0.4, 0.0], abs_=1e-10)


# --- Burn's own unit-test sequences ----------------------------------------------------------


@pytest.mark.parametrize(
    "config,expected",
    [
        (LinearLrSchedulerConfig(0.9, 0.5, 4), [0.9, 0.8, 0.7, 0.6, 0.5, 0.5]),
        (LinearLrSchedulerConfig(0.01, 0.04, 3), [0.01, 0.02, 0.03, 0.04, 0.04]),
        (CosineAnnealingLrSchedulerConfig(0.5, 2, min_lr=0.1), [0.5, 0.3, 0.1, 0.3, 0.5]),
        (ExponentialLrSchedulerConfig(0.8, 0.1), [0.8, 0.08, 0.008, 0.0008, 0.00008]),
        (StepLrSchedulerConfig(0.5, 3, gamma=0.1), [0.5] * 3 + [0.05] * 3 + [0.005] * 3),
    ],
)
def test_burn_sequences(config, expected):
    assert_sequence(run(config.init(), len(expected)), expected, abs_=1e-10)


# --- validation ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "config,error,pattern",
    [
        (
            LinearLrSchedulerConfig(0.0, 0.5, 10),
            ValueError,
            r"LinearLrSchedulerConfig: `initial_lr` must be in \(0, 1\], got 0.0",
        ),
        (LinearLrSchedulerConfig(1.5, 0.5, 10), ValueError, r"`initial_lr` must be in \(0, 1\], got 1.5"),
        (LinearLrSchedulerConfig(0.5, -0.5, 10), ValueError, r"`final_lr` must be in \[0, 1\], got -0.5"),
        (LinearLrSchedulerConfig(0.5, 1.5, 10), ValueError, r"`final_lr` must be in \[0, 1\], got 1.5"),
        (LinearLrSchedulerConfig(0.9, 0.1, 0), ValueError, r"`num_iters` must be an integer >= 1, got 0"),
        (LinearLrSchedulerConfig(0.9, 0.1, 2.5), TypeError, r"`num_iters` must be an integer, got 2.5"),
        (LinearLrSchedulerConfig(float("nan"), 0.1, 3), ValueError, r"`initial_lr` must be finite"),
        (
            CosineAnnealingLrSchedulerConfig(0.0, 10),
            ValueError,
            r"CosineAnnealingLrSchedulerConfig: `initial_lr` must be in \(0, 1\], got 0.0",
        ),
        (
            CosineAnnealingLrSchedulerConfig(0.5, 10, min_lr=0.6),
            ValueError,
            r"`min_lr` must be in \[0, 0.5\], got 0.6",
        ),
        (CosineAnnealingLrSchedulerConfig(0.5, 10, min_lr=-0.1), ValueError, r"`min_lr` must be in"),
        (CosineAnnealingLrSchedulerConfig(0.5, 0), ValueError, r"`num_iters` must be an integer >= 1"),
        (
            ExponentialLrSchedulerConfig(0.5, 0.0),
            ValueError,
            r"ExponentialLrSchedulerConfig: `gamma` must be in \(0, 1\], got 0.0",
        ),
        (ExponentialLrSchedulerConfig(0.5, 1.5), ValueError, r"`gamma` must be in \(0, 1\], got 1.5"),
        (ExponentialLrSchedulerConfig(2.0, 0.5), ValueError, r"`initial_lr` must be in \(0, 1\]"),
        (
            NoamLrSchedulerConfig(1.0, warmup_steps=0),
            ValueError,
            r"NoamLrSchedulerConfig: `warmup_steps` must be an integer >= 1, got 0",
        ),
        (NoamLrSchedulerConfig(1.0, model_size=0), ValueError, r"`model_size` must be an integer >= 1"),
        (NoamLrSchedulerConfig("1.0"), TypeError, r"`factor` must be a real number, got '1.0'"),
        (
            StepLrSchedulerConfig(1.0, 0),
            ValueError,
            r"StepLrSchedulerConfig: `step_size` must be an integer >= 1, got 0",
        ),
        (StepLrSchedulerConfig(1.0, True), TypeError, r"`step_size` must be an integer, got True"),
        (ComposedLrSchedulerConfig([]), ValueError, r"at least one scheduler"),
        (
            ComposedLrSchedulerConfig([0.1], reduction="max"),
            ValueError,
            r"`reduction` must be one of \['Avg', 'Sum', 'Prod'\], got 'max'",
        ),
        (
            ComposedLrSchedulerConfig([LinearLrSchedulerConfig(0.1, 0.2, 0)]),
            ValueError,
            r"LinearLrSchedulerConfig: `num_iters`",
        ),
        (ComposedLrSchedulerConfig(["fast"]), TypeError, r"as_scheduler: expected a learning rate"),
        (SequentialLrSchedulerConfig([], []), ValueError, r"at least one scheduler"),
        (
            SequentialLrSchedulerConfig([0.1, 0.2, 0.3], [2]),
            ValueError,
            r"`milestones` must hold one less entry than `schedulers` \(2\), got 1",
        ),
        (
            SequentialLrSchedulerConfig([0.1, 0.2, 0.3], [0, 2]),
            ValueError,
            r"`milestones` must be > 0 and strictly increasing, got \[0, 2\]",
        ),
        (SequentialLrSchedulerConfig([0.1, 0.2, 0.3], [2, 2]), ValueError, r"strictly increasing"),
        (SequentialLrSchedulerConfig([0.1, 0.2, 0.3], [3, 2]), ValueError, r"strictly increasing"),
        (SequentialLrSchedulerConfig([0.1, 0.2], [1.5]), TypeError, r"`milestones\[0\]` must be an integer"),
        (
            SequentialLrSchedulerConfig([LinearLrSchedulerConfig(0.1, 0.2, 0)], []),
            ValueError,
            r"`num_iters` must be an integer >= 1",
        ),
    ],
)
def test_invalid_arguments(config, error, pattern):
    with pytest.raises(error, match=pattern):
        config.init()


def test_constant_rejects_non_finite():
    with pytest.raises(ValueError, match=r"ConstantLr: `lr` must be finite, got inf"):
        ConstantLr(float("inf"))
    with pytest.raises(TypeError, match="as_scheduler: expected a learning rate"):
        as_scheduler(None)


def test_step_warns_on_unusual_values(caplog):
    with caplog.at_level(logging.WARNING):
        StepLrSchedulerConfig(-1.0, 2, gamma=1.5).init()
    messages = " ".join(r.getMessage() for r in caplog.records)
    assert "initial_lr=-1.0 is not positive" in messages
    assert "gamma=1.5 is outside (0, 1)" in messages


# --- state: exact resume ---------------------------------------------------------------------


class Group:
    """Stand-in for ember.nn.ParamGroup: match by path substring and/or ids."""

    def __init__(self, substring=None, ids=()):
        self.substring, self.ids = substring, set(ids)

    def matches(self, path, param_id):
        return param_id in self.ids or (
            self.substring is not None and path is not None and self.substring in path
        )


def configs():
    return {
        "constant": ConstantLr(0.01),
        "linear": LinearLrSchedulerConfig(1.0, 0.01, 6),
        "cosine": CosineAnnealingLrSchedulerConfig(1.0, 9, min_lr=0.1),
        "exponential": ExponentialLrSchedulerConfig(0.083, 0.3),
        "noam": NoamLrSchedulerConfig(3.0, warmup_steps=5, model_size=16),
        "step": StepLrSchedulerConfig(0.4, 2),
        "composed": ComposedLrSchedulerConfig(
            [LinearLrSchedulerConfig(0.5, 0.1, 5), NoamLrSchedulerConfig(1.0, warmup_steps=3), 0.5],
            reduction=SchedulerReduction.Avg,
        ),
        "sequential": SequentialLrSchedulerConfig(
            [
                LinearLrSchedulerConfig(0.1, 0.3, 2),
                ExponentialLrSchedulerConfig(0.5, 0.5),
                CosineAnnealingLrSchedulerConfig(0.8, 2),
            ],
            milestones=[2, 5],
        ),
        "nested": SequentialLrSchedulerConfig(
            [
                ComposedLrSchedulerConfig([StepLrSchedulerConfig(0.5, 2), 0.5]),
                CosineAnnealingLrSchedulerConfig(0.3, 4),
            ],
            milestones=[3],
        ),
    }


@pytest.mark.parametrize("name", list(configs()))
@pytest.mark.parametrize("save_at", [0, 1, 4, 7])
def test_save_load_continues_identically(name, save_at):
    config = configs()[name]
    original = config.init()
    run(original, save_at)
    saved = original.state()
    assert all(isinstance(v, (int, float, bool)) for v in saved.values())
    resumed = config.init()
    resumed.load_state(dict(saved))
    assert run(resumed, 30) == run(original, 30)


def test_state_keys_follow_burn_records():
    seq = configs()["sequential"].init()
    run(seq, 3)
    assert seq.state() == {
        "step": 3,
        "0.remaining_iters": 1,
        "1.previous_lr": 0.5,
        "2.current_iter": 2**64 - 1,
    }
    assert configs()["noam"].init().state() == {"step": 0.0}
    assert configs()["step"].init().state() == {"iter_idx": -1}
    assert set(configs()["composed"].init().state()) == {"0.remaining_iters", "1.step"}


def test_load_state_rejects_mismatches():
    linear = LinearLrSchedulerConfig(0.5, 0.1, 5).init()
    with pytest.raises(ValueError, match=r"missing \['remaining_iters'\], unexpected \['steps'\]"):
        linear.load_state({"steps": 3})
    with pytest.raises(ValueError, match="`remaining_iters` must be int, got 2.5"):
        linear.load_state({"remaining_iters": 2.5})
    with pytest.raises(ValueError, match=r"ConstantLr.load_state: .*unexpected \['x'\]"):
        ConstantLr(0.1).load_state({"x": 1})
    composed = configs()["composed"].init()
    with pytest.raises(ValueError, match=r"unexpected key '3.step' \(this scheduler has 3 children"):
        composed.load_state({"0.remaining_iters": 1, "1.step": 2.0, "3.step": 1.0})


def test_failed_composite_load_leaves_state_untouched():
    composed = configs()["composed"].init()
    run(composed, 2)
    before = composed.state()
    with pytest.raises(ValueError):
        composed.load_state({"0.remaining_iters": 0, "1.step": "bad"})
    assert composed.state() == before


def test_config_reuse_gives_independent_schedulers():
    linear = LinearLrSchedulerConfig(0.9, 0.5, 4).init()
    config = ComposedLrSchedulerConfig([linear, 1.0])  # a built scheduler as child is copied
    a, b = config.init(), config.init()
    run(a, 3)
    assert b.step() == pytest.approx(0.9)
    assert linear.step() == pytest.approx(0.9)


def test_config_builders_and_dataclass():
    cosine = CosineAnnealingLrSchedulerConfig(0.5, 10).with_min_lr(0.1)
    assert cosine == CosineAnnealingLrSchedulerConfig(0.5, 10, 0.1)
    assert dataclasses.is_dataclass(cosine)
    noam = NoamLrSchedulerConfig(1.0).with_warmup_steps(10).with_model_size(8)
    assert (noam.warmup_steps, noam.model_size) == (10, 8)
    assert StepLrSchedulerConfig(0.1, 2).with_gamma(0.5).gamma == 0.5
    composed = (
        ComposedLrSchedulerConfig()
        .linear(LinearLrSchedulerConfig(0.9, 0.5, 4))
        .constant(2.0)
        .with_reduction("sum")
    )
    assert run(composed.init(), 2) == pytest.approx([2.9, 2.8])


# --- per-group learning rates --------------------------------------------------------------


def test_module_scheduler_groups_last_match_wins():
    scheduler = (
        ModuleLrScheduler(LinearLrSchedulerConfig(0.001, 0.0001, 4))
        .with_group(Group("backbone"), 0.1)
        .with_group(Group("backbone.head"), LinearLrSchedulerConfig(0.5, 0.05, 4))
        .with_group(Group(ids=[7]), 0.3)
    )
    lrs = scheduler.step()
    assert isinstance(lrs, ModuleLearningRate)
    assert lrs.base() == 0.001
    assert lrs.lr_for("model.backbone.layer.weight") == 0.1
    assert lrs.lr_for("model.backbone.head.weight") == 0.5
    assert lrs.lr_for("model.neck.weight") == 0.001
    assert lrs.lr_for("model.backbone.head.weight", param_id=7) == 0.3  # id group is last
    assert lrs.lr_from_param(7) == 0.3

    class Param:
        path, id = "x.backbone.bias", 1

    assert lrs.lr_for(Param()) == 0.1
    assert lrs.lr_for(7) == 0.3
    lrs = scheduler.step()  # every group advanced
    assert lrs.rates == pytest.approx([linear(2, 0.001, 0.0001, 4), 0.1, linear(2, 0.5, 0.05, 4), 0.3])


def test_module_scheduler_state_roundtrip():
    def make():
        return (
            ModuleLrSchedulerConfig(LinearLrSchedulerConfig(0.01, 0.001, 9))
            .with_group(Group(ids=[1]), CosineAnnealingLrSchedulerConfig(0.1, 5))
            .init()
        )

    original = make()
    for _ in range(5):
        original.step()
    state = original.state()
    assert set(state) == {"0.remaining_iters", "1.current_iter"}
    resumed = make()
    resumed.load_state(state)
    for _ in range(6):
        assert resumed.step().rates == original.step().rates


def test_module_scheduler_rejects_bad_group_and_adapts_inputs():
    with pytest.raises(TypeError, match=r"needs a matches\(path, param_id\) method"):
        ModuleLrScheduler(0.1).with_group("backbone", 0.2)
    with pytest.raises(TypeError, match=r"`scheduler_groups\[0\]` must be a \(group, scheduler\)"):
        ModuleLrSchedulerConfig(0.1, scheduler_groups=[Group("x")]).init()
    module = ModuleLrScheduler(0.1)
    assert as_module_scheduler(module) is module
    assert as_module_scheduler(0.2).step().base() == 0.2
    assert as_module_scheduler(StepLrSchedulerConfig(0.4, 1)).step().base() == 0.4
    assert ModuleLearningRate.constant(0.5).lr_for("anything") == 0.5


def test_nested_config_json_roundtrip():
    config = SequentialLrSchedulerConfig(
        [
            LinearLrSchedulerConfig(1e-5, 1e-2, 100),
            ComposedLrSchedulerConfig([CosineAnnealingLrSchedulerConfig(1e-2, 900), 0.5], reduction="avg"),
        ],
        milestones=[100],
    )
    if not hasattr(config, "to_json"):
        pytest.skip("ember.record.config.Config is not available")
    text = config.to_json()
    assert '"LinearLrSchedulerConfig"' in text and '"reduction": "Avg"' in text
    loaded = SequentialLrSchedulerConfig.from_json(text)
    assert loaded == config
    assert run(loaded.init(), 150) == run(config.init(), 150)
