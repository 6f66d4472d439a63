// Cross-entropy with label smoothing over logits [rows, cols] and targets [rows].
// Targets must have been validated with index_check (common.cuh) before these run.
//   logp_i = log_softmax(logits_i) = (logits_i - max_i) - log(sum_j exp(logits_ij - max_i))
//   lse_i  = logsumexp(logits_i) = max_i + log(sum_j exp(logits_ij - max_i))
//   loss_i = -(1 - s) * logp[i, t_i] - (s / C) * sum_j logp[i, j]   (as PyTorch; NaN for a
//            row with +inf or of -inf only)
//   dlogits_ij = dloss_i * (softmax_ij - (1 - s) * [j == t_i] - s / C), softmax_ij rebuilt
//                as exp(logits_ij - lse_i) over its row sum

template <typename T, typename I, bool WARP>
__global__ void __launch_bounds__(512)
cross_entropy_fwd(const T* __restrict__ logits, const I* __restrict__ targets,
                  T* __restrict__ loss, typename AccType<T>::type* __restrict__ lse_out,
                  long long rows, int cols, typename AccType<T>::type smoothing) {
  typedef typename AccType<T>::type A;
  const auto [row, lane, width] = row_lane<WARP>();
  if (row >= rows) return;
  const T* xr = logits + row * cols;

  A m, se;
  row_max_sum_exp<WARP>(xr, cols, lane, width, m, se);
  const A log_total = e_log(se);
  // log-probabilities (x - m) - log_total, never x - lse: no cancellation at |x| ~ 3e38
  A sl = 0;
  if (smoothing != (A)0) {  // the same for every thread of the row (row_sum synchronises)
    for (int c = lane; c < cols; c += width) sl += (to_acc(xr[c]) - m) - log_total;
    sl = row_sum<WARP>(sl);
  }
  if (lane == 0) {
    const A picked = to_acc(xr[(long long)targets[row]]);
    lse_out[row] = m + log_total;
    // terms of weight 0 are left out, not multiplied: 0 * -inf (a masked logit) is NaN
    A value = 0;
    if (smoothing != (A)1) value -= ((A)1 - smoothing) * ((picked - m) - log_total);
    if (smoothing != (A)0) value -= (smoothing / (A)cols) * sl;
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
  const auto [row, lane, width] = row_lane<WARP>();
  if (row >= rows) return;
  const long long base = row * cols;
  const A l = lse[row];
  const A d = to_acc(dloss[row]);
  const long long t = (long long)targets[row];
  const A off = smoothing / (A)cols;
  // exp(x - lse) normalised by its own row sum: lse = max + log(sum) rounds log(sum) away at
  // large |max| (the softmax of [1e20, 1e20] came out [1, 1]); the shift's error cancels
  A se = 0;
  for (int c = lane; c < cols; c += width) se += e_exp(to_acc(logits[base + c]) - l);
  const A inv = (A)1 / row_sum<WARP>(se);
  for (int c = lane; c < cols; c += width) {
    A g = e_exp(to_acc(logits[base + c]) - l) * inv - off;
    if (c == t) g -= (A)1 - smoothing;
    dlogits[base + c] = from_acc<T>(d * g);
  }
}
