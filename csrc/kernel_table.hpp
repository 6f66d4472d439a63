// Table of native kernels compiled for one instruction set.
//
// Each ISA translation unit (isa_*.cpp) compiles kernels_impl.hpp with its own
// target flags into its own namespace and returns one KernelTable; dispatch.cpp
// picks the best table the running CPU supports. Keeping ISA variants behind
// plain function pointers means no symbol compiled for AVX2/AVX-512 can ever be
// shared with (and run by) the baseline path.
#pragma once

#include <cstdint>

namespace ember_native {

template <typename T>
struct TypedKernels {
    // y = gelu(x) over n contiguous elements.
    void (*gelu)(const T* x, T* y, int64_t n, bool approximate, int threads);
    // dx = dy * gelu'(x) over n contiguous elements.
    void (*gelu_backward)(const T* x, const T* dy, T* dx, int64_t n, bool approximate,
                          int threads);
    // Row-wise layer norm over `rows` rows of length `dim`; gamma/beta may be null.
    void (*layer_norm)(const T* x, const T* gamma, const T* beta, T* y, T* mean, T* rstd,
                       int64_t rows, int64_t dim, double eps, int threads);
    // dx for every row; dgamma/dbeta (summed over rows) only when gamma is non-null.
    void (*layer_norm_backward)(const T* dy, const T* x, const T* mean, const T* rstd,
                                const T* gamma, T* dx, T* dgamma, T* dbeta, int64_t rows,
                                int64_t dim, int threads);
};

struct KernelTable {
    const char* isa;  // "baseline", "avx2", "avx512"
    TypedKernels<float> f32;
    TypedKernels<double> f64;
};

// One getter per ISA translation unit. The AVX variants return a table whose
// `isa` is nullptr when they were not compiled (non-GCC compiler or non-x86).
KernelTable baseline_kernels();
KernelTable avx2_kernels();
KernelTable avx512_kernels();

}  // namespace ember_native
