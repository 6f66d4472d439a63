"""Neural-network building blocks modelled on Burn's ``burn-nn`` and ``burn-core::module``:
``Module``/``Param``/``ParamId``, layers and their ``...Config`` classes (recurrent layers in
``nn.rnn``), activations (functional forms in ``nn.functional``), losses, attention masks,
initializers, LoRA and module records.

    import ember
    from ember import nn

    layer = nn.LinearConfig(128, 4).init(device="cpu")
    y = layer(x)
"""

# ruff: noqa: F403  (a module whose whole __all__ is re-exported is star-imported, so its
# public names are listed once, in its own __all__)

from ember._deprecation import renamed_globals, renames_of
from ember.nn import (
    activation,
    attention_cache,
    batch_norm,
    container,
    conv3d,
    cross_attention,
    dropout,
    embedding,
    embedding_bag,
    fold,
    functional,
    init,
    interpolate,
    linear,
    lora,
    loss,
    loss_rnnt,
    module,
    noise,
    norm,
    norm_instance,
    norm_local_response,
    param,
    param_group,
    pixel_shuffle,
    pool,
    pool1d,
    pos_encoding,
    qlora,
    quantize,
    rnn,
    rotary,
    transformer,
    transformer_decoder,
)
from ember.nn.activation import *
from ember.nn.attention import MhaInput, MhaOutput, MultiHeadAttention, MultiHeadAttentionConfig
from ember.nn.attention_cache import *
from ember.nn.batch_norm import *
from ember.nn.container import *
from ember.nn.conv import Conv1d, Conv1dConfig, Conv2d, Conv2dConfig
from ember.nn.conv3d import *
from ember.nn.conv_transpose import (
    ConvTranspose1d,
    ConvTranspose1dConfig,
    ConvTranspose2d,
    ConvTranspose2dConfig,
    ConvTranspose3d,
    ConvTranspose3dConfig,
)
from ember.nn.cross_attention import *
from ember.nn.deform_conv import DeformConv2d, DeformConv2dConfig
from ember.nn.distance import (
    CosineSimilarity,
    CosineSimilarityConfig,
    PairwiseDistance,
    PairwiseDistanceConfig,
)
from ember.nn.dropout import *
from ember.nn.embedding import *
from ember.nn.embedding_bag import *
from ember.nn.fold import *
from ember.nn.init import (
    Constant,
    Initializer,
    KaimingNormal,
    KaimingUniform,
    Normal,
    Ones,
    Uniform,
    XavierNormal,
    XavierUniform,
    Zeros,
)
from ember.nn.interpolate import *
from ember.nn.linear import *
from ember.nn.lora import *
from ember.nn.loss import *
from ember.nn.loss_rnnt import *
from ember.nn.mask import GeneratePaddingMask, SeqLength, generate_autoregressive_mask, generate_padding_mask
from ember.nn.module import *
from ember.nn.module_record import DTypePolicy, ModuleRecord, RecordEntry
from ember.nn.noise import *
from ember.nn.norm import *
from ember.nn.norm_group import GroupNorm, GroupNormConfig
from ember.nn.norm_instance import *
from ember.nn.norm_local_response import *
from ember.nn.padding import PaddingConfig1d, PaddingConfig2d, PaddingConfig3d
from ember.nn.param import *
from ember.nn.param_group import *
from ember.nn.pixel_shuffle import *
from ember.nn.pool import *
from ember.nn.pool1d import *
from ember.nn.pool_adaptive import AdaptiveAvgPool3d, AdaptiveAvgPool3dConfig
from ember.nn.pos_encoding import *
from ember.nn.qlora import *
from ember.nn.quantize import Calibration, QuantizedStorage, Quantizer, QuantScheme, QuantStore, QuantValue
from ember.nn.rnn import *
from ember.nn.rotary import *
from ember.nn.transformer import *
from ember.nn.transformer_decoder import *

__all__ = [
    *activation.__all__,
    *attention_cache.__all__,
    *batch_norm.__all__,
    *container.__all__,
    *conv3d.__all__,
    *cross_attention.__all__,
    *dropout.__all__,
    *embedding.__all__,
    *embedding_bag.__all__,
    *fold.__all__,
    *interpolate.__all__,
    *linear.__all__,
    *lora.__all__,
    *loss.__all__,
    *loss_rnnt.__all__,
    *module.__all__,
    *noise.__all__,
    *norm.__all__,
    *norm_instance.__all__,
    *norm_local_response.__all__,
    *param.__all__,
    *param_group.__all__,
    *pixel_shuffle.__all__,
    *pool.__all__,
    *pool1d.__all__,
    *pos_encoding.__all__,
    *qlora.__all__,
    *rnn.__all__,
    *rotary.__all__,
    *transformer.__all__,
    *transformer_decoder.__all__,
    "AdaptiveAvgPool3d",
    "AdaptiveAvgPool3dConfig",
    "Calibration",
    "Constant",
    "Conv1d",
    "Conv1dConfig",
    "Conv2d",
    "Conv2dConfig",
    "ConvTranspose1d",
    "ConvTranspose1dConfig",
    "ConvTranspose2d",
    "ConvTranspose2dConfig",
    "ConvTranspose3d",
    "ConvTranspose3dConfig",
    "CosineSimilarity",
    "CosineSimilarityConfig",
    "DTypePolicy",
    "DeformConv2d",
    "DeformConv2dConfig",
    "GeneratePaddingMask",
    "GroupNorm",
    "GroupNormConfig",
    "Initializer",
    "KaimingNormal",
    "KaimingUniform",
    "MhaInput",
    "MhaOutput",
    "ModuleRecord",
    "MultiHeadAttention",
    "MultiHeadAttentionConfig",
    "Normal",
    "Ones",
    "PaddingConfig1d",
    "PaddingConfig2d",
    "PaddingConfig3d",
    "PairwiseDistance",
    "PairwiseDistanceConfig",
    "QuantScheme",
    "QuantStore",
    "QuantValue",
    "QuantizedStorage",
    "Quantizer",
    "RecordEntry",
    "SeqLength",
    "Uniform",
    "XavierNormal",
    "XavierUniform",
    "Zeros",
    "functional",
    "generate_autoregressive_mask",
    "generate_padding_mask",
    "init",
    "lora",
    "loss",
    "qlora",
    "quantize",
    "rnn",
]

# The names before the acronym rule (README, "Names"), kept one release: each use warns.
__getattr__ = renamed_globals(__name__, renames_of(activation, loss, loss_rnnt))
