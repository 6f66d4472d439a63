"""ember's split GEMM: NumPy's results for every shape, layout and dtype, BLAS's thread setting
left as it was, errors raised in the caller."""

from __future__ import annotations

import multiprocessing
import os
import threading

import numpy as np
import pytest

from ember.kernels.cpu import gemm

SHAPES = [(600, 300, 200), (17, 4000, 33), (2, 3, 4), (0, 5, 6), (300, 0, 40), (1024, 64, 1)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int64], ids=str)
@pytest.mark.parametrize("m,k,n", SHAPES)
def test_products_equal_numpy(m, k, n, dtype):
    rng = np.random.default_rng(0)
    a = (rng.standard_normal((m, k)) * 3).astype(dtype)
    b = (rng.standard_normal((k, n)) * 3).astype(dtype)
    want = np.matmul(a, b)
    got = gemm.matmul(a, b)
    assert got.dtype == want.dtype and got.shape == want.shape
    tol = {np.float16: 2e-2, np.float32: 1e-4}.get(dtype, 1e-12)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * max(1, k))


def test_transposed_and_strided_operands():
    # the weight gradient x^T @ dout multiplies a transposed view; slices have row strides
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3000, 128)).astype(np.float32)
    dout = rng.standard_normal((3000, 512)).astype(np.float32)
    np.testing.assert_allclose(gemm.matmul(x.T, dout), x.T @ dout, rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(
        gemm.matmul(dout[:, ::2], x[:512:2]), dout[:, ::2] @ x[:512:2], rtol=1e-4, atol=1e-3
    )


def test_batched_and_broadcast_products():
    rng = np.random.default_rng(2)
    a = rng.standard_normal((6, 200, 64))
    b = rng.standard_normal((6, 64, 100))
    np.testing.assert_allclose(gemm.matmul(a, b), a @ b, rtol=1e-12, atol=1e-10)
    c = rng.standard_normal((64, 100))
    np.testing.assert_allclose(gemm.matmul(a, c), a @ c, rtol=1e-12, atol=1e-10)
    d = rng.standard_normal((2, 1, 200, 64))
    np.testing.assert_allclose(gemm.matmul(d, b), d @ b, rtol=1e-12, atol=1e-10)


def test_blas_threads_are_restored():
    threadpoolctl = pytest.importorskip("threadpoolctl")
    before = [
        c.num_threads for c in threadpoolctl.ThreadpoolController().select(user_api="blas").lib_controllers
    ]
    gemm.matmul(np.ones((600, 600)), np.ones((600, 600)))
    after = [
        c.num_threads for c in threadpoolctl.ThreadpoolController().select(user_api="blas").lib_controllers
    ]
    assert after == before


def test_shape_errors_are_numpys_and_leave_the_pool_usable():
    with pytest.raises(ValueError, match="matmul"):
        gemm.matmul(np.ones((600, 600)), np.ones((500, 600)))
    np.testing.assert_array_equal(
        gemm.matmul(np.ones((600, 600)), np.ones((600, 2))), np.full((600, 2), 600.0)
    )


def test_concurrent_callers_get_their_own_results():
    rng = np.random.default_rng(3)
    pairs = [(rng.standard_normal((400, 300)), rng.standard_normal((300, 200))) for _ in range(4)]
    results = [None] * len(pairs)

    def work(i):
        for _ in range(5):
            results[i] = gemm.matmul(*pairs[i])

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(pairs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for (a, b), got in zip(pairs, results):
        np.testing.assert_allclose(got, a @ b, rtol=1e-12, atol=1e-10)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_gets_its_own_threads():
    # a DataLoader worker started with fork has none of the parent's pool threads: without
    # a fresh pool its first split product would wait forever
    a = np.ones((600, 600))
    gemm.matmul(a, a)  # the parent's pool exists now
    ctx = multiprocessing.get_context("fork")
    done = ctx.Queue()
    child = ctx.Process(target=_product_in_child, args=(done,))
    child.start()
    child.join(60)
    if child.is_alive():
        child.kill()
    assert child.exitcode == 0, "the forked child's product did not finish"
    assert done.get(timeout=5) == 600.0 * 600


def _product_in_child(done):
    a = np.ones((600, 600))
    done.put(float(gemm.matmul(a, a).sum() / 600))


def test_every_openblas_runs_one_thread_during_a_product():
    # SciPy (which Numba imports) loads an OpenBLAS of its own; when it was listed first, only it
    # was limited and NumPy's products ran two BLAS threads each inside ember's split
    threadpoolctl = pytest.importorskip("threadpoolctl")
    pytest.importorskip("scipy.linalg")
    controllers = threadpoolctl.ThreadpoolController().select(internal_api="openblas").lib_controllers
    numpy_blas = [c for c in controllers if "numpy" in c.filepath and c.threading_layer != "openmp"]
    if not numpy_blas or all(c.num_threads == 1 for c in numpy_blas):
        pytest.skip("NumPy's BLAS is not a multi-threaded OpenBLAS here")
    limiter = gemm._OpenBlasThreads()
    with limiter:
        during = [
            c.num_threads
            for c in threadpoolctl.ThreadpoolController().select(internal_api="openblas").lib_controllers
        ]
    assert during == [1] * len(during)
    assert [c.num_threads for c in numpy_blas] == [
        c.num_threads
        for c in threadpoolctl.ThreadpoolController().select(internal_api="openblas").lib_controllers
        if "numpy" in c.filepath and c.threading_layer != "openmp"
    ]
