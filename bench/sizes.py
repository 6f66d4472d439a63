"""The AG News model's sizes, shared by the benchmarks."""

BATCH = 32
SEQ = 256
D_MODEL = 128
HEADS = 4
HEAD_DIM = D_MODEL // HEADS
D_FF = 512
VOCAB = 29_000
CLASSES = 4
