#!/usr/bin/env bash
# The whole GPU verification in one run: install ember, run every CUDA test (the conformance
# suite on `cuda` against `reference`, the gradient checks, the fused-kernel tests) and the CUDA
# benchmarks; every log and result lands in the output folder given as the only argument.
#
#   scripts/gpu_check.sh OUT_DIR
#
# Made for a GPU machine without a package registry that already has NumPy, Numba, CuPy,
# pybind11, pytest and PyTorch (hence --no-deps --no-build-isolation).
set -uo pipefail
out=${1:?usage: scripts/gpu_check.sh OUT_DIR}
mkdir -p "$out"
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1
status=0

{ nvidia-smi; python3 -c "import cupy, numpy, numba; print('cupy', cupy.__version__, 'numpy', numpy.__version__, 'numba', numba.__version__)"; } \
    >"$out/env.txt" 2>&1
cat "$out/env.txt"

python3 -m pip install --no-deps --no-build-isolation -e . >"$out/install.log" 2>&1 \
    || { echo "install failed (see install.log)"; tail -20 "$out/install.log"; exit 1; }

# 1. every test marked cuda: conformance suite + gradient checks + fused kernels
timeout 420 python3 -m pytest -m cuda tests -q -p no:cacheprovider -o addopts="" -ra \
    --junitxml="$out/pytest-cuda.xml" 2>&1 | tee "$out/pytest-cuda.log" | tail -40
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1

# 2. fused kernels vs CuPy-composed vs PyTorch CUDA (GB/s, TFLOP/s)
timeout 150 python3 bench/bench_cuda_kernels.py "$out/cuda-kernels.json" 2>&1 | tee "$out/cuda-kernels.log"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1

# 3. the AG News training step on cuda vs PyTorch CUDA
timeout 150 python3 bench/run.py bench/bench_train_step.py -k cuda --json "$out/train-step.json" 2>&1 \
    | tee "$out/train-step.log" | tail -15
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1

exit $status
