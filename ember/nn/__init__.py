"""Neural-network building blocks modelled on Burn's ``burn-nn`` and ``burn-core::module``:
``Module``/``Param``/``ParamId``, layers and their ``...Config`` classes (recurrent layers in
``nn.rnn``), activations (functional forms in ``nn.functional``), losses, attention masks,
initializers, LoRA and module records.

    import ember
    from ember import nn

    layer = nn.LinearConfig(128, 4).init(device="cpu")
    y = layer(x)
"""
from ember.nn import functional, init, loss, lora, rnn
from ember.nn.activation import (GLU, ActivationConfig, Celu, CeluConfig, Elu, EluConfig, Gelu, Glu, HardShrink,
                                 HardShrinkConfig, HardSigmoid, HardSigmoidConfig, HardSwish, Hardtanh,
                                 HardtanhConfig, LeakyRelu, LeakyReluConfig, LogSigmoid, Mish, PRelu, PReluConfig,
                                 Relu, Relu6, RRelu, RReluConfig, Selu, Shrink, ShrinkConfig, SiLU, Sigmoid, Silu,
                                 Softmax, Softplus, SoftplusConfig, Softsign, SoftShrink, SoftShrinkConfig, SwiGlu,
                                 SwiGluConfig, Tanh, Tanhshrink, Threshold, ThresholdConfig, ThresholdedRelu,
                                 ThresholdedReluConfig)
from ember.nn.attention import MhaInput, MhaOutput, MultiHeadAttention, MultiHeadAttentionConfig
from ember.nn.attention_cache import MhaCache
from ember.nn.batch_norm import BatchNorm, BatchNorm1d, BatchNorm2d, BatchNormConfig
from ember.nn.container import Identity, Sequential
from ember.nn.conv import Conv1d, Conv1dConfig, Conv2d, Conv2dConfig
from ember.nn.cross_attention import CrossAttention, CrossAttentionCache, CrossAttentionConfig
from ember.nn.distance import CosineSimilarity, CosineSimilarityConfig, PairwiseDistance, PairwiseDistanceConfig
from ember.nn.dropout import Dropout, DropoutConfig
from ember.nn.embedding import Embedding, EmbeddingConfig
from ember.nn.embedding_bag import EmbeddingBag, EmbeddingBagConfig
from ember.nn.init import (Constant, Initializer, KaimingNormal, KaimingUniform, Normal, Ones, Uniform, XavierNormal,
                           XavierUniform, Zeros)
from ember.nn.interpolate import (Interpolate1d, Interpolate1dConfig, Interpolate2d, Interpolate2dConfig,
                                  InterpolateMode)
from ember.nn.linear import Linear, LinearConfig, LinearLayout
from ember.nn.lora import Lora, LoraAdapter, apply_lora, merge_lora
from ember.nn.loss import (BinaryCrossEntropyLoss, BinaryCrossEntropyLossConfig, CosineEmbeddingLoss,
                           CosineEmbeddingLossConfig, CrossEntropyLoss, CrossEntropyLossConfig, CTCLoss, CTCLossConfig,
                           GaussianNLLLoss, GaussianNLLLossConfig, HingeEmbeddingLoss, HingeEmbeddingLossConfig,
                           HuberLoss, HuberLossConfig, KLDivLoss, KLDivLossConfig, LpLoss, LpLossConfig,
                           MarginRankingLoss, MarginRankingLossConfig, MseLoss, MSELoss, MultiMarginLoss,
                           MultiMarginLossConfig, PoissonNllLoss, PoissonNllLossConfig, Reduction, SmoothL1Loss,
                           SmoothL1LossConfig, SoftMarginLoss, TripletMarginLoss, TripletMarginLossConfig)
from ember.nn.mask import GeneratePaddingMask, SeqLength, generate_autoregressive_mask, generate_padding_mask
from ember.nn.module import Module
from ember.nn.module_record import DTypePolicy, ModuleRecord, RecordEntry
from ember.nn.norm import LayerNorm, LayerNormConfig, RmsNorm, RmsNormConfig
from ember.nn.norm_group import GroupNorm, GroupNormConfig
from ember.nn.norm_instance import InstanceNorm, InstanceNormConfig
from ember.nn.norm_local_response import LocalResponseNorm, LocalResponseNormConfig
from ember.nn.padding import PaddingConfig1d, PaddingConfig2d
from ember.nn.param import Param, ParamId, RunningState
from ember.nn.param_group import ParamGroup, ParamGroupError
from ember.nn.pixel_shuffle import PixelShuffle, PixelShuffleConfig, PixelUnshuffle, PixelUnshuffleConfig
from ember.nn.pool import (AdaptiveAvgPool2d, AdaptiveAvgPool2dConfig, AvgPool2d, AvgPool2dConfig, MaxPool2d,
                           MaxPool2dConfig)
from ember.nn.pool1d import (AdaptiveAvgPool1d, AdaptiveAvgPool1dConfig, AvgPool1d, AvgPool1dConfig, MaxPool1d,
                            MaxPool1dConfig)
from ember.nn.pos_encoding import PositionalEncoding, PositionalEncodingConfig, generate_sinusoids
from ember.nn.rotary import RotaryEncoding, RotaryEncodingConfig
from ember.nn.rnn import (BiGru, BiGruConfig, BiLstm, BiLstmConfig, BiRnn, BiRnnConfig, GateController, Gru,
                          GruConfig, Lstm, LstmConfig, LstmState, Rnn, RnnConfig, RnnState)
from ember.nn.transformer import (PositionWiseFeedForward, PositionWiseFeedForwardConfig, TransformerEncoder,
                                  TransformerEncoderConfig, TransformerEncoderInput, TransformerEncoderLayer)
from ember.nn.transformer import TransformerEncoderAutoregressiveCache, TransformerEncoderLayerAutoregressiveCache
from ember.nn.transformer_decoder import (TransformerDecoder, TransformerDecoderAutoregressiveCache,
                                          TransformerDecoderConfig, TransformerDecoderInput, TransformerDecoderLayer,
                                          TransformerDecoderLayerAutoregressiveCache)

__all__ = [
    "ActivationConfig", "AdaptiveAvgPool1d", "AdaptiveAvgPool1dConfig", "AdaptiveAvgPool2d",
    "AdaptiveAvgPool2dConfig", "AvgPool1d", "AvgPool1dConfig", "AvgPool2d", "AvgPool2dConfig", "BatchNorm",
    "BatchNorm1d", "BatchNorm2d", "BatchNormConfig", "BiGru", "BiGruConfig", "BiLstm", "BiLstmConfig", "BiRnn",
    "BiRnnConfig", "BinaryCrossEntropyLoss", "BinaryCrossEntropyLossConfig", "CTCLoss", "CTCLossConfig", "Celu",
    "CeluConfig", "Constant", "Conv1d", "Conv1dConfig", "Conv2d", "Conv2dConfig", "CosineEmbeddingLoss",
    "CosineEmbeddingLossConfig", "CosineSimilarity", "CosineSimilarityConfig", "CrossAttention",
    "CrossAttentionCache", "CrossAttentionConfig",
    "CrossEntropyLoss", "CrossEntropyLossConfig", "DTypePolicy", "Dropout", "DropoutConfig", "Elu", "EluConfig",
    "Embedding", "EmbeddingBag", "EmbeddingBagConfig", "EmbeddingConfig", "GLU", "GateController",
    "GaussianNLLLoss", "GaussianNLLLossConfig", "Gelu", "GeneratePaddingMask", "Glu", "GroupNorm", "GroupNormConfig",
    "Gru", "GruConfig",
    "HardShrink", "HardShrinkConfig", "HardSigmoid", "HardSigmoidConfig", "HardSwish", "Hardtanh", "HardtanhConfig",
    "HingeEmbeddingLoss", "HingeEmbeddingLossConfig", "HuberLoss", "HuberLossConfig", "Identity", "Initializer",
    "InstanceNorm", "InstanceNormConfig", "Interpolate1d", "Interpolate1dConfig", "Interpolate2d",
    "Interpolate2dConfig", "InterpolateMode",
    "KLDivLoss", "KLDivLossConfig", "KaimingNormal", "KaimingUniform", "LayerNorm", "LayerNormConfig", "LeakyRelu",
    "LeakyReluConfig", "Linear", "LinearConfig", "LinearLayout", "LocalResponseNorm", "LocalResponseNormConfig",
    "LogSigmoid", "Lora", "LoraAdapter", "LpLoss",
    "LpLossConfig", "Lstm", "LstmConfig", "LstmState", "MSELoss", "MarginRankingLoss", "MarginRankingLossConfig",
    "MaxPool1d", "MaxPool1dConfig",
    "MaxPool2d", "MaxPool2dConfig", "MhaCache", "MhaInput", "MhaOutput", "Mish", "Module", "ModuleRecord",
    "MseLoss", "MultiHeadAttention", "MultiHeadAttentionConfig", "MultiMarginLoss", "MultiMarginLossConfig",
    "Normal", "Ones", "PRelu", "PReluConfig", "PaddingConfig1d", "PaddingConfig2d", "PairwiseDistance",
    "PairwiseDistanceConfig", "Param", "ParamGroup",
    "ParamGroupError", "ParamId", "PixelShuffle", "PixelShuffleConfig", "PixelUnshuffle", "PixelUnshuffleConfig",
    "PoissonNllLoss", "PoissonNllLossConfig", "PositionWiseFeedForward",
    "PositionWiseFeedForwardConfig", "PositionalEncoding", "PositionalEncodingConfig", "RRelu", "RReluConfig",
    "RecordEntry", "Reduction", "Relu", "Relu6", "RmsNorm", "RmsNormConfig", "Rnn", "RnnConfig", "RnnState",
    "RotaryEncoding", "RotaryEncodingConfig", "RunningState", "Selu", "SeqLength", "Sequential", "Shrink",
    "ShrinkConfig", "SiLU", "Sigmoid", "Silu", "SmoothL1Loss", "SmoothL1LossConfig", "SoftMarginLoss", "SoftShrink",
    "SoftShrinkConfig", "Softmax", "Softplus", "SoftplusConfig", "Softsign", "SwiGlu", "SwiGluConfig", "Tanh",
    "Tanhshrink", "Threshold", "ThresholdConfig", "ThresholdedRelu", "ThresholdedReluConfig", "TransformerDecoder",
    "TransformerDecoderAutoregressiveCache", "TransformerDecoderConfig", "TransformerDecoderInput",
    "TransformerDecoderLayer", "TransformerDecoderLayerAutoregressiveCache", "TransformerEncoder",
    "TransformerEncoderAutoregressiveCache", "TransformerEncoderConfig", "TransformerEncoderInput",
    "TransformerEncoderLayer", "TransformerEncoderLayerAutoregressiveCache", "TripletMarginLoss",
    "TripletMarginLossConfig", "Uniform", "XavierNormal", "XavierUniform", "Zeros", "apply_lora", "functional",
    "generate_autoregressive_mask", "generate_padding_mask", "generate_sinusoids", "init", "lora", "loss",
    "merge_lora", "rnn"
]
