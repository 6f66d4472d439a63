"""`import ember` stays light: no Numba, CuPy or PyTorch until a backend or feature needs them."""

import subprocess
import sys


def test_import_ember_loads_no_heavy_dependency():
    code = (
        "import sys, ember; heavy = [m for m in ('numba', 'cupy', 'torch', 'datasets', 'tokenizers') "
        "if m in sys.modules]; print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"import ember imported {out.stdout.strip()}"


def test_cpu_backend_loads_numba_on_first_use():
    code = "import sys, ember; ember.zeros(2) + 1; print('numba' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"
