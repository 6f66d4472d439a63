// Softmax and log-softmax over the last axis, forward and backward.
// Rows are processed by one warp (WARP=true) or one block (WARP=false); see row_lane in
// common.cuh. x/y/dy/dx are [rows, cols] contiguous.

template <typename T, bool WARP, bool LOG>
__global__ void __launch_bounds__(512)
softmax_fwd(const T* __restrict__ x, T* __restrict__ y, long long rows, int cols) {
  typedef typename AccType<T>::type A;
  const auto [row, lane, width] = row_lane<WARP>();
  if (row >= rows) return;
  const T* xr = x + row * cols;
  T* yr = y + row * cols;

  A m, s;
  row_max_sum_exp<WARP>(xr, cols, lane, width, m, s);
  if (LOG) {
    // (x - m) - log(s), not x - (m + log(s)): beside m ~ 3e38 that sum rounds log(s) away.
    // A row with +inf, or of -inf only, is NaN (inf - inf), as in softmax and the reference.
    const A log_s = e_log(s);
    for (int c = lane; c < cols; c += width) yr[c] = from_acc<T>((to_acc(xr[c]) - m) - log_s);
  } else {
    for (int c = lane; c < cols; c += width) yr[c] = from_acc<T>(e_exp(to_acc(xr[c]) - m) / s);
  }
}

// softmax:     dx = y * (dy - sum(dy * y))
// log_softmax: dx = dy - exp(y) * sum(dy)
template <typename T, bool WARP, bool LOG>
__global__ void __launch_bounds__(512)
softmax_bwd(const T* __restrict__ y, const T* __restrict__ dy, T* __restrict__ dx,
            long long rows, int cols) {
  typedef typename AccType<T>::type A;
  const auto [row, lane, width] = row_lane<WARP>();
  if (row >= rows) return;
  const long long base = row * cols;

  A s = 0;
  if (LOG) {
    for (int c = lane; c < cols; c += width) s += to_acc(dy[base + c]);
  } else {
    for (int c = lane; c < cols; c += width) s += to_acc(dy[base + c]) * to_acc(y[base + c]);
  }
  s = row_sum<WARP>(s);
  for (int c = lane; c < cols; c += width) {
    const A yv = to_acc(y[base + c]);
    const A g = to_acc(dy[base + c]);
    dx[base + c] = from_acc<T>(LOG ? g - e_exp(yv) * s : yv * (g - s));
  }
}
