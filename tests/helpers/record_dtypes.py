"""The NumPy dtypes that both record formats (burnpack and safetensors) store as they are,
for the round-trip tests of every dtype (bool, which each test draws its own way, apart)."""

NUMERIC_DTYPES = (
    "float64",
    "float32",
    "float16",
    "int64",
    "int32",
    "int16",
    "int8",
    "uint64",
    "uint32",
    "uint16",
    "uint8",
)
