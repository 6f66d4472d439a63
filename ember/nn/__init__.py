"""Neural-network building blocks modelled on Burn's ``burn-nn`` and ``burn-core::module``:
``Module``/``Param``/``ParamId``, layers and their ``...Config`` classes, losses, attention
masks, initializers, LoRA and module records.

    import ember
    from ember import nn

    layer = nn.LinearConfig(128, 4).init(device="cpu")
    y = layer(x)
"""
from ember.nn import init, loss, lora
from ember.nn.activation import (ActivationConfig, Gelu, LeakyRelu, LeakyReluConfig, Relu, SiLU, Sigmoid, Silu,
                                 Softmax, Tanh)
from ember.nn.attention import MhaInput, MhaOutput, MultiHeadAttention, MultiHeadAttentionConfig
from ember.nn.batch_norm import BatchNorm, BatchNorm1d, BatchNorm2d, BatchNormConfig
from ember.nn.container import Identity, Sequential
from ember.nn.conv import Conv1d, Conv1dConfig, Conv2d, Conv2dConfig
from ember.nn.dropout import Dropout, DropoutConfig
from ember.nn.embedding import Embedding, EmbeddingConfig
from ember.nn.embedding_bag import EmbeddingBag, EmbeddingBagConfig
from ember.nn.init import (Constant, Initializer, KaimingNormal, KaimingUniform, Normal, Ones, Uniform, XavierNormal,
                           XavierUniform, Zeros)
from ember.nn.linear import Linear, LinearConfig, LinearLayout
from ember.nn.lora import Lora, LoraAdapter, apply_lora, merge_lora
from ember.nn.loss import (BinaryCrossEntropyLoss, BinaryCrossEntropyLossConfig, CrossEntropyLoss,
                           CrossEntropyLossConfig, HuberLoss, HuberLossConfig, MseLoss, MSELoss, Reduction)
from ember.nn.mask import GeneratePaddingMask, SeqLength, generate_autoregressive_mask, generate_padding_mask
from ember.nn.module import Module
from ember.nn.module_record import DTypePolicy, ModuleRecord, RecordEntry
from ember.nn.norm import LayerNorm, LayerNormConfig, RmsNorm, RmsNormConfig
from ember.nn.padding import PaddingConfig1d, PaddingConfig2d
from ember.nn.param import Param, ParamId, RunningState
from ember.nn.param_group import ParamGroup, ParamGroupError
from ember.nn.pool import (AdaptiveAvgPool2d, AdaptiveAvgPool2dConfig, AvgPool2d, AvgPool2dConfig, MaxPool2d,
                           MaxPool2dConfig)
from ember.nn.pos_encoding import PositionalEncoding, PositionalEncodingConfig, generate_sinusoids
from ember.nn.transformer import (PositionWiseFeedForward, PositionWiseFeedForwardConfig, TransformerEncoder,
                                  TransformerEncoderConfig, TransformerEncoderInput, TransformerEncoderLayer)

__all__ = [
    "ActivationConfig", "AdaptiveAvgPool2d", "AdaptiveAvgPool2dConfig", "AvgPool2d", "AvgPool2dConfig", "BatchNorm",
    "BatchNorm1d", "BatchNorm2d", "BatchNormConfig", "BinaryCrossEntropyLoss", "BinaryCrossEntropyLossConfig",
    "Constant", "Conv1d", "Conv1dConfig", "Conv2d", "Conv2dConfig", "CrossEntropyLoss", "CrossEntropyLossConfig",
    "DTypePolicy", "Dropout", "DropoutConfig", "Embedding", "EmbeddingBag", "EmbeddingBagConfig", "EmbeddingConfig",
    "Gelu", "GeneratePaddingMask",
    "HuberLoss", "HuberLossConfig", "Identity", "Initializer", "KaimingNormal", "KaimingUniform", "LayerNorm",
    "LayerNormConfig", "LeakyRelu", "LeakyReluConfig", "Linear", "LinearConfig", "LinearLayout", "Lora",
    "LoraAdapter", "MSELoss", "MaxPool2d", "MaxPool2dConfig", "MhaInput", "MhaOutput", "Module", "ModuleRecord",
    "MseLoss", "MultiHeadAttention", "MultiHeadAttentionConfig", "Normal", "Ones", "PaddingConfig1d",
    "PaddingConfig2d", "Param", "ParamGroup", "ParamGroupError", "ParamId", "PositionWiseFeedForward",
    "PositionWiseFeedForwardConfig",
    "PositionalEncoding", "PositionalEncodingConfig", "RecordEntry", "Reduction", "Relu", "RmsNorm",
    "RmsNormConfig", "RunningState", "SeqLength", "Sequential", "SiLU", "Sigmoid", "Silu", "Softmax", "Tanh",
    "TransformerEncoder", "TransformerEncoderConfig", "TransformerEncoderInput", "TransformerEncoderLayer",
    "Uniform", "XavierNormal", "XavierUniform", "Zeros", "apply_lora", "generate_autoregressive_mask",
    "generate_padding_mask", "generate_sinusoids", "init", "lora", "loss", "merge_lora",
]
