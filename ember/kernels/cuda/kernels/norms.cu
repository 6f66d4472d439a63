// Layer norm and RMS norm over the last axis, forward and backward.
// Row kernels use row_lane (common.cuh). Statistics (mean, rstd) are stored in the
// accumulation type. gamma/beta are optional: has_gamma/has_beta = 0 means "absent" and
// the pointer is then a dummy that is never read.

// The forward of one row, for both norms. RMS=false (layer norm): xhat = (x - mean) * rstd,
// rstd = 1 / sqrt(var + eps); RMS=true: mean is 0 (neither computed nor stored) and var is the
// mean square. y = xhat * gamma + beta (no beta under RMS).
template <typename T, bool WARP, bool RMS>
__device__ __forceinline__ void norm_fwd_row(const T* __restrict__ x, const T* __restrict__ gamma,
                                             const T* __restrict__ beta, T* __restrict__ y,
                                             typename AccType<T>::type* __restrict__ mean_out,
                                             typename AccType<T>::type* __restrict__ rstd_out,
                                             long long rows, int cols,
                                             typename AccType<T>::type eps, int has_gamma,
                                             int has_beta) {
  typedef typename AccType<T>::type A;
  const auto [row, lane, width] = row_lane<WARP>();
  if (row >= rows) return;
  const T* xr = x + row * cols;
  T* yr = y + row * cols;

  A mean = 0;
  if constexpr (!RMS) {
    A s = 0;
    for (int c = lane; c < cols; c += width) s += to_acc(xr[c]);
    mean = row_sum<WARP>(s) / (A)cols;
  }
  // Two-pass variance: the row is re-read (from cache) instead of using E[x^2]-E[x]^2.
  A q = 0;
  for (int c = lane; c < cols; c += width) {
    const A d = to_acc(xr[c]) - mean;
    q += d * d;
  }
  const A var = row_sum<WARP>(q) / (A)cols;
  // layer norm, squares past the accumulation type's range: NaN, as the reference, not
  // rstd = 0 (a row of zeros that looks healthy); RMS keeps rstd = 0 there, as PyTorch
  const A rstd = !RMS && isinf(var) ? quiet_nan<A>() : (A)1 / e_sqrt(var + eps);
  if (lane == 0) {
    if (!RMS) mean_out[row] = mean;
    rstd_out[row] = rstd;
  }
  for (int c = lane; c < cols; c += width) {
    A v = (to_acc(xr[c]) - mean) * rstd;
    if (has_gamma) v *= to_acc(gamma[c]);
    if (!RMS && has_beta) v += to_acc(beta[c]);
    yr[c] = from_acc<T>(v);
  }
}

// The backward of one row, for both norms (mean is not read under RMS):
//   layer norm: dx = rstd * (g - mean(g) - xhat * mean(g * xhat)), xhat = (x - mean) * rstd
//   RMS norm:   dx = rstd * (g - xhat * mean(g * xhat)),           xhat = x * rstd
// with g = dy * gamma.
template <typename T, bool WARP, bool RMS>
__device__ __forceinline__ void norm_bwd_row(const T* __restrict__ dy, const T* __restrict__ x,
                                             const typename AccType<T>::type* __restrict__ mean,
                                             const typename AccType<T>::type* __restrict__ rstd,
                                             const T* __restrict__ gamma, T* __restrict__ dx,
                                             long long rows, int cols, int has_gamma) {
  typedef typename AccType<T>::type A;
  const auto [row, lane, width] = row_lane<WARP>();
  if (row >= rows) return;
  const long long base = row * cols;
  const A mu = RMS ? (A)0 : mean[row];
  const A r = rstd[row];

  A sg = 0, sgx = 0;
  for (int c = lane; c < cols; c += width) {
    A g = to_acc(dy[base + c]);
    if (has_gamma) g *= to_acc(gamma[c]);
    sg += g;
    sgx += g * (to_acc(x[base + c]) - mu) * r;
  }
  A mg = 0;
  if constexpr (!RMS) mg = row_sum<WARP>(sg) / (A)cols;
  const A mgx = row_sum<WARP>(sgx) / (A)cols;
  for (int c = lane; c < cols; c += width) {
    A g = to_acc(dy[base + c]);
    if (has_gamma) g *= to_acc(gamma[c]);
    const A xhat = (to_acc(x[base + c]) - mu) * r;
    // RMS, rstd 0: the mean square overflowed; the forward's x * 0 is PyTorch's, the gradient
    // is NaN (as PyTorch's at 3e38), not a 0 that hides the overflow
    dx[base + c] = from_acc<T>(RMS && r == (A)0 ? quiet_nan<A>() : (g - mg - xhat * mgx) * r);
  }
}

template <typename T, bool WARP>
__global__ void __launch_bounds__(512)
layer_norm_fwd(const T* __restrict__ x, const T* __restrict__ gamma, const T* __restrict__ beta,
               T* __restrict__ y, typename AccType<T>::type* __restrict__ mean_out,
               typename AccType<T>::type* __restrict__ rstd_out, long long rows, int cols,
               typename AccType<T>::type eps, int has_gamma, int has_beta) {
  norm_fwd_row<T, WARP, false>(x, gamma, beta, y, mean_out, rstd_out, rows, cols, eps, has_gamma,
                               has_beta);
}

template <typename T, bool WARP>
__global__ void __launch_bounds__(512)
layer_norm_bwd(const T* __restrict__ dy, const T* __restrict__ x,
               const typename AccType<T>::type* __restrict__ mean,
               const typename AccType<T>::type* __restrict__ rstd, const T* __restrict__ gamma,
               T* __restrict__ dx, long long rows, int cols, int has_gamma) {
  norm_bwd_row<T, WARP, false>(dy, x, mean, rstd, gamma, dx, rows, cols, has_gamma);
}

// RMS norm: the pointers the layer norm has and it lacks (beta, mean) are passed as dummies
// that are never read or written.
template <typename T, bool WARP>
__global__ void __launch_bounds__(512)
rms_norm_fwd(const T* __restrict__ x, const T* __restrict__ gamma, T* __restrict__ y,
             typename AccType<T>::type* __restrict__ rstd_out, long long rows, int cols,
             typename AccType<T>::type eps, int has_gamma) {
  norm_fwd_row<T, WARP, true>(x, gamma, gamma, y, rstd_out, rstd_out, rows, cols, eps, has_gamma, 0);
}

template <typename T, bool WARP>
__global__ void __launch_bounds__(512)
rms_norm_bwd(const T* __restrict__ dy, const T* __restrict__ x,
             const typename AccType<T>::type* __restrict__ rstd, const T* __restrict__ gamma,
             T* __restrict__ dx, long long rows, int cols, int has_gamma) {
  norm_bwd_row<T, WARP, true>(dy, x, rstd, rstd, gamma, dx, rows, cols, has_gamma);
}

// Partial column sums for dgamma (= sum_rows dy * xhat) and dbeta (= sum_rows dy).
// Launch: block (32, 8); grid (ceil(cols / 32), chunks); chunk k covers rows
// [k * rows_per_chunk, min(rows, (k + 1) * rows_per_chunk)). Writes part_g[k, c] and,
// unless RMS, part_b[k, c]; sum_partials (common.cuh) then reduces over k.
// RMS=true: xhat = x * rstd (mean is a dummy); RMS=false: xhat = (x - mean) * rstd.
template <typename T, bool RMS>
__global__ void __launch_bounds__(256)
norm_param_grad(const T* __restrict__ dy, const T* __restrict__ x,
                const typename AccType<T>::type* __restrict__ mean,
                const typename AccType<T>::type* __restrict__ rstd, long long rows, int cols,
                long long rows_per_chunk, typename AccType<T>::type* __restrict__ part_g,
                typename AccType<T>::type* __restrict__ part_b) {
  typedef typename AccType<T>::type A;
  __shared__ A tg[8][33];
  __shared__ A tb[8][33];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int c = blockIdx.x * 32 + tx;
  const long long r0 = (long long)blockIdx.y * rows_per_chunk;
  const long long r1 = ll_min(rows, r0 + rows_per_chunk);
  A sg = 0, sb = 0;
  if (c < cols) {
    for (long long r = r0 + ty; r < r1; r += 8) {
      const long long i = r * cols + c;
      const A d = to_acc(dy[i]);
      const A xh = RMS ? to_acc(x[i]) * rstd[r] : (to_acc(x[i]) - mean[r]) * rstd[r];
      sg += d * xh;
      sb += d;
    }
  }
  tg[ty][tx] = sg;
  tb[ty][tx] = sb;
  __syncthreads();
  if (ty == 0 && c < cols) {
    A g = tg[0][tx], b = tb[0][tx];
#pragma unroll
    for (int k = 1; k < 8; ++k) {
      g += tg[k][tx];
      b += tb[k][tx];
    }
    const long long o = (long long)blockIdx.y * cols + c;
    part_g[o] = g;
    if (!RMS) part_b[o] = b;
  }
}
