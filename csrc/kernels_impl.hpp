// GELU and layer-norm kernels, written once and compiled per instruction set.
//
// Included by isa_*.cpp inside `namespace ember_native::<isa>` after that file
// has set its target flags, so every function here (and the OpenMP regions
// outlined from them) is compiled for that ISA only. No include guard on purpose.
//
// Parallelism: OpenMP splits rows or fixed-size chunks statically over threads;
// each inner loop is contiguous and marked `omp simd` so it vectorises without
// -ffast-math (which would break NaN propagation). Small inputs run on one
// thread because waking the pool costs more than the work.

constexpr int64_t kChunk = 8192;          // elements per elementwise work item
constexpr int64_t kParallelMin = 32768;   // below this many elements: one thread

EMBER_INLINE int resolve_threads(int requested) {
#ifdef _OPENMP
    return requested > 0 ? requested : omp_get_max_threads();
#else
    (void)requested;
    return 1;
#endif
}

EMBER_INLINE int current_thread() {
#ifdef _OPENMP
    return omp_get_thread_num();
#else
    return 0;
#endif
}

EMBER_INLINE int team_size() {
#ifdef _OPENMP
    return omp_get_num_threads();
#else
    return 1;
#endif
}

// ---------------------------------------------------------------------------
// GELU pointwise formulas.
//
// exact:       y = x * Phi(x),        y' = Phi(x) + x * phi(x)
// approximate: y = x * sigmoid(v),    v = 2 sqrt(2/pi) (x + 0.044715 x^3)
//              y' = s + x * s (1 - s) * dv/dx
// (0.5 (1 + tanh(u)) == sigmoid(2u), which needs one exp and never overflows.)
// float32 uses the polynomial helpers of simd_math.hpp; float64 uses libm.

constexpr double kInvSqrt2 = 0.70710678118654752440;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;
constexpr double kTanhC1 = 1.5957691216057307117;          // 2 * sqrt(2 / pi)
constexpr double kTanhC2 = 1.5957691216057307117 * 0.044715;

EMBER_INLINE float gelu_value(float x, bool approximate) {
    if (approximate) {
        const float v = x * (float(kTanhC1) + float(kTanhC2) * x * x);
        float s, s1m;
        sigmoid_f32(v, &s, &s1m);
        return x * s;
    }
    return x * normal_cdf_f32(x);
}

// Beyond |x| = 1e4 every GELU derivative is exactly 0 or 1; clamping there keeps
// x^2 and x^3 finite so +-inf and huge inputs give that limit instead of
// inf * 0 = NaN. NaN fails both comparisons and still propagates.
template <typename T>
EMBER_INLINE T clamp_grad_arg(T x) {
    const T bound = T(1e4);
    const T c = x > bound ? bound : x;
    return c < -bound ? -bound : c;
}

EMBER_INLINE float gelu_grad_value(float x_in, bool approximate) {
    const float x = clamp_grad_arg(x_in);
    if (approximate) {
        const float x2 = x * x;
        const float v = x * (float(kTanhC1) + float(kTanhC2) * x2);
        const float dv = float(kTanhC1) + 3.0f * float(kTanhC2) * x2;
        float s, s1m;
        sigmoid_f32(v, &s, &s1m);
        return s + s1m * (x * dv);
    }
    return normal_cdf_f32(x) + x * float(kInvSqrt2Pi) * gauss_f32(x);
}

EMBER_INLINE double sigmoid_f64(double v, double* s1m) {
    const double e = std::exp(-std::fabs(v));
    const double q = 1.0 / (1.0 + e);
    *s1m = e * q * q;
    return v < 0.0 ? e * q : q;
}

EMBER_INLINE double gelu_value(double x, bool approximate) {
    if (approximate) {
        double s1m;
        return x * sigmoid_f64(x * (kTanhC1 + kTanhC2 * x * x), &s1m);
    }
    return x * 0.5 * std::erfc(-x * kInvSqrt2);
}

EMBER_INLINE double gelu_grad_value(double x_in, bool approximate) {
    const double x = clamp_grad_arg(x_in);
    if (approximate) {
        const double x2 = x * x;
        double s1m;
        const double s = sigmoid_f64(x * (kTanhC1 + kTanhC2 * x2), &s1m);
        return s + s1m * (x * (kTanhC1 + 3.0 * kTanhC2 * x2));
    }
    return 0.5 * std::erfc(-x * kInvSqrt2) + x * kInvSqrt2Pi * std::exp(-0.5 * x * x);
}

// Runs body(begin, end) over [0, n) in pieces of kChunk elements, statically spread over
// `threads` threads (one thread below kParallelMin elements); body holds the `omp simd` loop.
template <typename Body>
void for_each_chunk(int64_t n, int threads, const Body& body) {
    const int64_t chunks = (n + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(static) num_threads(threads) if (n >= kParallelMin)
    for (int64_t c = 0; c < chunks; ++c) {
        const int64_t begin = c * kChunk;
        body(begin, begin + kChunk < n ? begin + kChunk : n);
    }
}

// Calls f(std::true_type) or f(std::false_type): `approximate` as a compile-time constant,
// so the select disappears from the loops f runs.
template <typename F>
void with_approximate(bool approximate, const F& f) {
    if (approximate) {
        f(std::true_type{});
    } else {
        f(std::false_type{});
    }
}

template <typename T>
void gelu(const T* x, T* y, int64_t n, bool approximate, int threads) {
    with_approximate(approximate, [=](auto approx) {
        for_each_chunk(n, resolve_threads(threads), [=](int64_t begin, int64_t end) {
#pragma omp simd
            for (int64_t i = begin; i < end; ++i) y[i] = gelu_value(x[i], decltype(approx)::value);
        });
    });
}

template <typename T>
void gelu_backward(const T* x, const T* dy, T* dx, int64_t n, bool approximate, int threads) {
    with_approximate(approximate, [=](auto approx) {
        for_each_chunk(n, resolve_threads(threads), [=](int64_t begin, int64_t end) {
#pragma omp simd
            for (int64_t i = begin; i < end; ++i) {
                dx[i] = dy[i] * gelu_grad_value(x[i], decltype(approx)::value);
            }
        });
    });
}

// ---------------------------------------------------------------------------
// Row reductions. One accumulator per sum would make each add wait for the
// previous one (a latency chain of dim / vector-width adds); kLanes independent
// partial sums let the adds pipeline. Partials are kept in T for at most
// kBlock elements, then folded pairwise and added to a double total, so float32
// rows of any length keep about double-rounding accuracy per block.

constexpr int kLanes = 32;
constexpr int64_t kBlock = 1024;  // a multiple of kLanes

// Adds the upper half of acc[0, 2 * Width) onto the lower half, then recurses;
// constant trip counts let each step become one or two vector adds.
template <int Width, typename T>
EMBER_INLINE T fold_lanes(T* acc) {
#pragma omp simd
    for (int l = 0; l < Width; ++l) acc[l] += acc[l + Width];
    if constexpr (Width == 1) {
        return acc[0];
    } else {
        return fold_lanes<Width / 2>(acc);
    }
}

template <typename T>
EMBER_INLINE T fold_lanes(T* acc) {
    return fold_lanes<kLanes / 2>(acc);
}

// The sums over j in [0, n) of K terms, terms(j, t) writing the K terms at j into t[0, K):
// kLanes partial sums per term, kept in T for at most kBlock elements, then folded and added
// into a double total (see above).
template <int K, typename T, typename Terms>
EMBER_INLINE void blocked_sums(int64_t n, const Terms& terms, double (&sums)[K]) {
    double total[K] = {};
    int64_t j = 0;
    const int64_t full = n / kLanes * kLanes;
    while (j < full) {
        const int64_t stop = full - j < kBlock ? full : j + kBlock;
        T acc[K][kLanes] = {};
        for (; j < stop; j += kLanes) {
#pragma omp simd
            for (int l = 0; l < kLanes; ++l) {
                T t[K];
                terms(j + l, t);
                for (int k = 0; k < K; ++k) acc[k][l] += t[k];
            }
        }
        for (int k = 0; k < K; ++k) total[k] += double(fold_lanes(acc[k]));
    }
    T tail[K] = {};
    for (; j < n; ++j) {
        T t[K];
        terms(j, t);
        for (int k = 0; k < K; ++k) tail[k] += t[k];
    }
    for (int k = 0; k < K; ++k) sums[k] = total[k] + double(tail[k]);
}

// Sum of x[j] (Squares = false) or of (x[j] - m)^2 (Squares = true) over [0, n).
template <typename T, bool Squares>
EMBER_INLINE double row_sum(const T* __restrict x, int64_t n, T m) {
    double sum[1];
    blocked_sums<1, T>(n, [=](int64_t j, T* t) {
        const T v = Squares ? (x[j] - m) : x[j];
        t[0] = Squares ? v * v : v;
    }, sum);
    return sum[0];
}

// sum(g) and sum(g * xhat) for one row of the layer-norm backward pass, with
// g = dy * gamma (or dy) and xhat = (x - m) * s.
template <typename T, bool HasGamma>
EMBER_INLINE void row_grad_sums(const T* __restrict dy, const T* __restrict x,
                                const T* __restrict gamma, T m, T s, int64_t n,
                                double* sum_g, double* sum_gx) {
    double sums[2];
    blocked_sums<2, T>(n, [=](int64_t j, T* t) {
        const T g = HasGamma ? dy[j] * gamma[j] : dy[j];
        t[0] = g;
        t[1] = g * ((x[j] - m) * s);
    }, sums);
    *sum_g = sums[0];
    *sum_gx = sums[1];
}

// ---------------------------------------------------------------------------
// Layer norm over the last axis: two-pass statistics (mean, then the mean of
// squared deviations, which never cancels catastrophically), then one
// normalising pass. rstd = 1 / sqrt(biased_var + eps).

template <typename T, bool HasGamma, bool HasBeta>
void layer_norm_rows(const T* __restrict x, const T* __restrict gamma,
                     const T* __restrict beta, T* __restrict y, T* __restrict mean,
                     T* __restrict rstd, int64_t rows, int64_t dim, double eps, int threads) {
    const double inv_dim = 1.0 / double(dim);
#pragma omp parallel for schedule(static) num_threads(threads) if (rows * dim >= kParallelMin)
    for (int64_t r = 0; r < rows; ++r) {
        const T* __restrict xr = x + r * dim;
        T* __restrict yr = y + r * dim;
        const T m = T(row_sum<T, false>(xr, dim, T(0)) * inv_dim);
        const double squares = row_sum<T, true>(xr, dim, m);
        // squares past T's range (a row with 1e20 in float): NaN, as the reference, not
        // rstd = 0 and a row of zeros that looks healthy
        const T s = std::isinf(T(squares)) ? std::numeric_limits<T>::quiet_NaN()
                                            : T(1.0 / std::sqrt(squares * inv_dim + eps));
        mean[r] = m;
        rstd[r] = s;
#pragma omp simd
        for (int64_t j = 0; j < dim; ++j) {
            T v = (xr[j] - m) * s;
            if (HasGamma) v = v * gamma[j];
            if (HasBeta) v = v + beta[j];
            yr[j] = v;
        }
    }
}

template <typename T>
void layer_norm(const T* x, const T* gamma, const T* beta, T* y, T* mean, T* rstd,
                int64_t rows, int64_t dim, double eps, int threads) {
    threads = resolve_threads(threads);
    if (gamma && beta) {
        layer_norm_rows<T, true, true>(x, gamma, beta, y, mean, rstd, rows, dim, eps, threads);
    } else if (gamma) {
        layer_norm_rows<T, true, false>(x, gamma, beta, y, mean, rstd, rows, dim, eps, threads);
    } else if (beta) {
        layer_norm_rows<T, false, true>(x, gamma, beta, y, mean, rstd, rows, dim, eps, threads);
    } else {
        layer_norm_rows<T, false, false>(x, gamma, beta, y, mean, rstd, rows, dim, eps, threads);
    }
}

// dx = rstd * (g - mean(g) - xhat * mean(g * xhat)) with g = dy * gamma and
// xhat = (x - mean) * rstd. dgamma = sum_rows dy * xhat, dbeta = sum_rows dy:
// each thread sums its own rows into a private double buffer, and the buffers
// are added in thread order afterwards, so results are deterministic for a
// given thread count.
template <typename T, bool HasGamma>
void layer_norm_backward_rows(const T* __restrict dy, const T* __restrict x,
                              const T* __restrict mean, const T* __restrict rstd,
                              const T* __restrict gamma, T* __restrict dx,
                              double* __restrict partials, int64_t rows, int64_t dim,
                              int threads) {
    const double inv_dim = 1.0 / double(dim);
#pragma omp parallel num_threads(threads) if (rows * dim >= kParallelMin)
    {
        const int tid = current_thread();
        const int team = team_size();
        const int64_t per = rows / team;
        const int64_t extra = rows % team;
        const int64_t r0 = tid * per + (tid < extra ? tid : extra);
        const int64_t r1 = r0 + per + (tid < extra ? 1 : 0);
        // Without gamma there are no partials (and no pointer arithmetic on null).
        double* __restrict dg = HasGamma ? partials + int64_t(tid) * 2 * dim : nullptr;
        double* __restrict db = HasGamma ? dg + dim : nullptr;
        for (int64_t r = r0; r < r1; ++r) {
            const T* __restrict dyr = dy + r * dim;
            const T* __restrict xr = x + r * dim;
            T* __restrict dxr = dx + r * dim;
            const T m = mean[r];
            const T s = rstd[r];
            double sum_g;
            double sum_gx;
            row_grad_sums<T, HasGamma>(dyr, xr, gamma, m, s, dim, &sum_g, &sum_gx);
            const T a = T(sum_g * inv_dim);
            const T b = T(sum_gx * inv_dim);
#pragma omp simd
            for (int64_t j = 0; j < dim; ++j) {
                const T xh = (xr[j] - m) * s;
                const T g = HasGamma ? dyr[j] * gamma[j] : dyr[j];
                dxr[j] = s * (g - a - xh * b);
                if (HasGamma) {
                    dg[j] += double(dyr[j] * xh);
                    db[j] += double(dyr[j]);
                }
            }
        }
    }
}

template <typename T>
void layer_norm_backward(const T* dy, const T* x, const T* mean, const T* rstd, const T* gamma,
                         T* dx, T* dgamma, T* dbeta, int64_t rows, int64_t dim, int threads) {
    threads = resolve_threads(threads);
    if (!gamma) {
        layer_norm_backward_rows<T, false>(dy, x, mean, rstd, gamma, dx, nullptr, rows, dim,
                                           threads);
        return;
    }
    // Plain new[] rather than std::vector: no standard-library template gets
    // instantiated with this file's ISA flags (see isa_avx2.cpp).
    double* partials = new double[size_t(threads) * 2 * size_t(dim)]();
    layer_norm_backward_rows<T, true>(dy, x, mean, rstd, gamma, dx, partials, rows, dim,
                                      threads);
    // Threads that got no rows left their buffers at zero, so summing all is safe.
    for (int64_t j = 0; j < dim; ++j) {
        double g = 0.0;
        double b = 0.0;
        for (int t = 0; t < threads; ++t) {
            g += partials[size_t(t) * 2 * dim + j];
            b += partials[size_t(t) * 2 * dim + dim + j];
        }
        dgamma[j] = T(g);
        dbeta[j] = T(b);
    }
    delete[] partials;
}

inline KernelTable make_table(const char* isa) {
    KernelTable table;
    table.isa = isa;
    table.f32 = {&gelu<float>, &gelu_backward<float>, &layer_norm<float>,
                 &layer_norm_backward<float>};
    table.f64 = {&gelu<double>, &gelu_backward<double>, &layer_norm<double>,
                 &layer_norm_backward<double>};
    return table;
}
