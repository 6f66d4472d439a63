// Cross-entropy with label smoothing over logits [rows, cols] and targets [rows].
// Targets must have been validated with index_check (common.cuh) before these run.
//   lse_i  = logsumexp(logits_i)
//   loss_i = lse_i - (1 - s) * logits[i, t_i] - (s / C) * sum_j logits[i, j]
//   dlogits_ij = dloss_i * (softmax_ij - (1 - s) * [j == t_i] - s / C)

template <typename T, typename I, bool WARP>
__global__ void __launch_bounds__(512)
cross_entropy_fwd(const T* __restrict__ logits, const I* __restrict__ targets,
                  T* __restrict__ loss, typename AccType<T>::type* __restrict__ lse_out,
                  long long rows, int cols, typename AccType<T>::type smoothing) {
  typedef typename AccType<T>::type A;
  __shared__ A scratch[32];
  long long row;
  int lane, width;
  if (!row_setup<WARP>(rows, row, lane, width)) return;
  const T* xr = logits + row * cols;

  A m = neg_inf<A>();
  for (int c = lane; c < cols; c += width) m = e_max(m, to_acc(xr[c]));
  m = row_max<WARP>(m, scratch);
  A se = 0, sx = 0;
  for (int c = lane; c < cols; c += width) {
    const A v = to_acc(xr[c]);
    se += e_exp(v - m);
    sx += v;
  }
  se = row_sum<WARP>(se, scratch);
  sx = row_sum<WARP>(sx, scratch);
  if (lane == 0) {
    const A lse = m + e_log(se);
    const A picked = to_acc(xr[(long long)targets[row]]);
    lse_out[row] = lse;
    // terms of weight 0 are left out, not multiplied: 0 * -inf (a masked logit) is NaN
    A value = lse;
    if (smoothing != (A)1) value -= ((A)1 - smoothing) * picked;
    if (smoothing != (A)0) value -= (smoothing / (A)cols) * sx;
    loss[row] = from_acc<T>(value);
  }
}

template <typename T, typename I, bool WARP>
__global__ void __launch_bounds__(512)
cross_entropy_bwd(const T* __restrict__ logits, const I* __restrict__ targets,
                  const typename AccType<T>::type* __restrict__ lse, const T* __restrict__ dloss,
                  T* __restrict__ dlogits, long long rows, int cols,
                  typename AccType<T>::type smoothing) {
  typedef typename AccType<T>::type A;
  long long row;
  int lane, width;
  if (!row_setup<WARP>(rows, row, lane, width)) return;
  const long long base = row * cols;
  const A l = lse[row];
  const A d = to_acc(dloss[row]);
  const long long t = (long long)targets[row];
  const A off = smoothing / (A)cols;
  for (int c = lane; c < cols; c += width) {
    A g = e_exp(to_acc(logits[base + c]) - l) - off;
    if (c == t) g -= (A)1 - smoothing;
    dlogits[base + c] = from_acc<T>(d * g);
  }
}
