"""`import ember` stays light: no Numba, CuPy or PyTorch until a backend or feature needs them."""

import subprocess
import sys


def test_import_ember_loads_no_heavy_dependency():
    code = (
        "import sys, ember; heavy = [m for m in ('numba', 'cupy', 'torch', 'datasets', 'tokenizers', "
        "'onnx', 'onnxruntime', 'transformers', 'tensorboardX') "
        "if m in sys.modules]; print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"import ember imported {out.stdout.strip()}"


def test_cpu_backend_loads_numba_on_first_use():
    code = "import sys, ember; ember.zeros(2) + 1; print('numba' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"


def test_interop_subpackages_load_on_first_attribute_access():
    # `ember.onnx.load(...)` and `ember.pretrained.from_pretrained(...)` work after a plain
    # `import ember`, without importing onnx or transformers until a file is read.
    code = (
        "import sys, ember; print(callable(ember.onnx.load), callable(ember.onnx.export), "
        "callable(ember.pretrained.from_pretrained), 'onnx' in sys.modules, 'transformers' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "True", "True", "False", "False"]
