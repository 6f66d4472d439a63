"""The names replaced by one name per concept (issue #31): every old name still works for one
release, is the very object (or calls the very method) the new name is, and warns with a
``DeprecationWarning`` that names the replacement and points at the caller's line."""

from __future__ import annotations

import importlib
import warnings

import pytest

import ember
from ember import nn, optim
from ember._deprecation import renamed_globals, renamed_method, renamed_property
from ember.record.config import Config

# old module-level name -> new one, per module that exports it
RENAMED = {
    "ember.nn": {
        "SiLU": "Silu",
        "GLU": "Glu",
        "MSELoss": "MseLoss",
        "GaussianNLLLoss": "GaussianNllLoss",
        "GaussianNLLLossConfig": "GaussianNllLossConfig",
        "KLDivLoss": "KlDivLoss",
        "KLDivLossConfig": "KlDivLossConfig",
        "CTCLoss": "CtcLoss",
        "CTCLossConfig": "CtcLossConfig",
        "RNNTLoss": "RnntLoss",
        "RNNTLossConfig": "RnntLossConfig",
    },
    "ember.nn.activation": {"SiLU": "Silu", "GLU": "Glu"},
    "ember.nn.loss": {"MSELoss": "MseLoss", "KLDivLoss": "KlDivLoss", "CTCLossConfig": "CtcLossConfig"},
    "ember.nn.loss_likelihood": {"GaussianNLLLoss": "GaussianNllLoss", "KLDivLossConfig": "KlDivLossConfig"},
    "ember.nn.loss_ctc": {"CTCLoss": "CtcLoss"},
    "ember.nn.loss_rnnt": {"RNNTLossConfig": "RnntLossConfig"},
    "ember.optim": {"LBFGS": "Lbfgs", "LBFGSConfig": "LbfgsConfig", "LBFGSRecord": "LbfgsRecord"},
    "ember.optim.lbfgs": {"LBFGS": "Lbfgs", "LBFGSConfig": "LbfgsConfig", "LBFGSRecord": "LbfgsRecord"},
}
CASES = [(module, old, new) for module, names in RENAMED.items() for old, new in names.items()]


@pytest.mark.parametrize(("module", "old", "new"), CASES, ids=[f"{m}.{o}" for m, o, _ in CASES])
def test_old_module_names_are_the_new_objects_and_warn(module, old, new):
    mod = importlib.import_module(module)
    with pytest.warns(
        DeprecationWarning, match=rf"{module}\.{old} is deprecated .*: use {module}\.{new}$"
    ) as got:
        value = getattr(mod, old)
    assert value is getattr(mod, new)
    assert got[0].filename == __file__  # blamed on the line that used the old name
    assert old not in mod.__all__ and new in mod.__all__ and old not in dir(mod)


def test_from_import_of_an_old_name_warns_at_the_import():
    with pytest.warns(DeprecationWarning, match=r"ember\.nn\.MSELoss .*use ember\.nn\.MseLoss") as got:
        from ember.nn import MSELoss
    assert MSELoss is nn.MseLoss
    assert {w.filename for w in got} == {__file__}


def test_unknown_names_are_still_attribute_errors():
    with pytest.raises(AttributeError, match="module 'ember.nn' has no attribute 'MseLos'"):
        nn.MseLos  # noqa: B018


def test_configs_saved_under_their_old_names_still_load():
    class Holder(Config):
        loss: nn.GaussianNllLossConfig | nn.KlDivLossConfig | None = None

    old = '{"loss": {"GaussianNLLLossConfig": {"eps": 0.001, "full": true}}}'
    assert Holder.from_json(old) == Holder(nn.GaussianNllLossConfig(eps=0.001, full=True))
    old = '{"loss": {"KLDivLossConfig": {"log_target": true}}}'
    assert Holder.from_json(old) == Holder(nn.KlDivLossConfig(log_target=True))
    assert '"GaussianNllLossConfig"' in Holder(nn.GaussianNllLossConfig()).to_json()


def test_with_gradient_clipping_is_with_grad_clipping():
    clip = optim.GradientClippingConfig.Norm(1.0)
    for config in (optim.AdamConfig(), optim.SgdConfig(), optim.AdamWConfig()):
        with pytest.warns(
            DeprecationWarning, match=r"\.with_gradient_clipping is deprecated .*with_grad_clipping"
        ):
            old = config.with_gradient_clipping(clip)
        assert old == config.with_grad_clipping(clip) and old.clipping() == clip
    with (
        pytest.warns(DeprecationWarning, match="MuonConfig.with_gradient_clipping"),
        pytest.raises(TypeError, match="MuonConfig has no gradient clipping"),
    ):
        optim.MuonConfig().with_gradient_clipping(clip)


def test_param_require_grad_flag_is_is_require_grad():
    frozen = nn.Param(ember.zeros(2)).set_require_grad(False)
    trained = nn.Param(ember.zeros(2))
    for param, expected in ((frozen, False), (trained, True)):
        assert param.is_require_grad() is expected
        with pytest.warns(
            DeprecationWarning, match=r"Param\.require_grad is deprecated .*Param\.is_require_grad\(\)"
        ):
            assert param.require_grad is expected


def test_tensor_requires_grad_is_is_require_grad():
    t = ember.zeros(2)
    with pytest.warns(
        DeprecationWarning, match=r"Tensor\.requires_grad is deprecated .*Tensor\.is_require_grad\(\)"
    ):
        assert t.requires_grad is False
    t.require_grad()  # the method that marks a tensor stays
    with pytest.warns(DeprecationWarning, match="Tensor.requires_grad"):
        assert t.requires_grad is True


def test_the_helpers_blame_the_caller():
    class Thing:
        new_value = 3

        def new(self, x, *, y=1):
            return x + y

        old = renamed_method("old", "new")
        old_value = renamed_property("old_value", "new_value")

    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        assert Thing().old(1, y=2) == 3 and Thing().old_value == 3
    assert [str(w.message) for w in got] == [
        "Thing.old is deprecated and will be removed in the next release: use Thing.new",
        "Thing.old_value is deprecated and will be removed in the next release: use Thing.new_value",
    ]
    assert {w.filename for w in got} == {__file__}
    getattr_ = renamed_globals(__name__, {"OLD_CASES": "CASES"})
    with pytest.warns(DeprecationWarning, match=rf"{__name__}\.OLD_CASES .*use {__name__}\.CASES"):
        assert getattr_("OLD_CASES") is CASES


def test_burn_spelled_aliases_call_the_one_name():
    lora = nn.Lora(rank=2, alpha=4.0)
    group = nn.ParamGroup.all()
    with pytest.warns(DeprecationWarning, match=r"Lora\.set_param_group .*use Lora\.with_param_group"):
        assert lora.set_param_group(group) == lora.with_param_group(group)
    with pytest.warns(DeprecationWarning, match=r"Lora\.set_dtype .*use Lora\.with_dtype"):
        assert lora.set_dtype(ember.float16) == lora.with_dtype(ember.float16)
    quantizer = nn.Quantizer()
    with pytest.warns(
        DeprecationWarning, match=r"Quantizer\.set_param_group .*use Quantizer\.with_param_group"
    ):
        assert quantizer.set_param_group(group) == quantizer.with_param_group(group)
    model = nn.LinearConfig(2, 2).init()
    grads = optim.GradientsParams.from_grads(model(ember.ones(1, 2)).sum().backward(), model)
    module_optim = optim.AdamConfig().init()
    module_optim.step(1e-3, model, grads)
    lbfgs = optim.LbfgsConfig().init()
    for owner, value in (
        ("ModuleOptimizer", module_optim),
        ("Lbfgs", lbfgs),
        ("LbfgsRecord", lbfgs.to_record()),
    ):
        with pytest.warns(DeprecationWarning, match=rf"{owner}\.into_bytes .*use {owner}\.to_bytes"):
            assert value.into_bytes() == value.to_bytes()
    record = module_optim.to_record()
    with pytest.warns(
        DeprecationWarning, match=r"OptimizerRecord\.into_bytes .*use OptimizerRecord\.to_bytes"
    ):
        assert record.into_bytes() == record.to_bytes()


def test_clipping_set_in_both_places_warns_and_the_argument_still_wins():
    in_config = optim.GradientClippingConfig.Norm(1.0)
    argument = optim.GradientClippingConfig.Value(0.5)
    with pytest.warns(DeprecationWarning, match=r"ModuleOptimizer: gradient clipping given twice") as got:
        module_optim = optim.ModuleOptimizer(optim.AdamConfig(grad_clipping=in_config), argument)
    assert got[0].filename == __file__
    assert module_optim.grad_clipping() == argument.init()
    with pytest.warns(
        DeprecationWarning, match=r"ModuleOptimizer\.with_group: gradient clipping given twice"
    ):
        module_optim.with_group(nn.ParamGroup.all(), optim.SgdConfig(gradient_clipping=in_config), argument)
    assert module_optim.groups[-1][2] == argument.init()
    with warnings.catch_warnings():  # one place each: no warning
        warnings.simplefilter("error", DeprecationWarning)
        module_optim.with_group(nn.ParamGroup.all(), optim.MuonConfig(), argument)
        module_optim.with_group(nn.ParamGroup.all(), optim.AdamConfig(grad_clipping=in_config))
        module_optim.with_group(nn.ParamGroup.all(), optim.AdamConfig().build(), argument)
    assert [g[2] for g in module_optim.groups[-3:]] == [argument.init(), in_config.init(), argument.init()]


def test_module_no_grad_is_freeze():
    model = nn.LinearConfig(2, 2).init()
    with pytest.warns(DeprecationWarning, match=r"Linear\.no_grad is deprecated .*use Linear\.freeze"):
        assert model.no_grad() is model
    assert not any(p.is_require_grad() for p in model.parameters())


def test_scheduler_config_build_is_init():
    config = optim.LinearLrSchedulerConfig(1e-6, 1e-3, 10)
    with pytest.warns(
        DeprecationWarning, match=r"LinearLrSchedulerConfig\.build .*use LinearLrSchedulerConfig\.init"
    ):
        built = config.build()
    assert type(built) is type(config.init()) and built.step() == config.init().step()
