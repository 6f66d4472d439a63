// Multi-tensor optimizer updates: one launch updates every tensor of a parameter group in
// place (the cpu backend's twin: ember/kernels/cpu/optim_updates.py).
//
// The host passes one table of 64-bit words, T = number of tensors, C = number of chunks
// (= gridDim.x):
//   sgd_multi : [params T | grads T | bufs T | sizes T | first T | chunk_tensor C | chunk_start C]
//   adam_multi: [params T | grads T | m T | v T | vmax T | sizes T | chunk_tensor C | chunk_start C]
// where pointer slots hold device addresses. Block c updates elements
// [chunk_start[c], min(chunk_start[c] + chunk_elems, sizes[t])) of tensor t = chunk_tensor[c].
// P is the parameter/gradient type, S the state type; arithmetic runs in the accumulation
// type A of P. Per-tensor hyper-parameters come in `per` (A, row-major [T, K]), derived on the
// host from the update's args object (ember/kernels/families/optimizer_args.py: SgdArgs,
// AdamArgs.per_tensor), as for the cpu kernels; the formulas are written once in code in the
// composed defaults (ember/kernels/families/optimizer.py), which the tests compare these with.
// Launch: block 256, grid C.

// What block blockIdx.x updates: elements [start, end) of tensor t, whose parameter and
// gradient are p and g (table slots 0 and 1). `chunks_at` is the slot of chunk_tensor
// (chunk_start follows it) and `sizes_at` the slot of sizes in the kernel's table.
template <typename P> struct MultiChunk {
  long long t, start, end;
  P* p;
  const P* g;
};

template <typename P>
__device__ __forceinline__ MultiChunk<P> multi_chunk(const unsigned long long* __restrict__ table,
                                                     long long T, int chunks_at, int sizes_at,
                                                     long long chunk_elems) {
  const long long C = gridDim.x;
  const long long t = (long long)table[chunks_at * T + blockIdx.x];
  const long long start = (long long)table[chunks_at * T + C + blockIdx.x];
  const long long end = ll_min(start + chunk_elems, (long long)table[sizes_at * T + t]);
  return {t, start, end, reinterpret_cast<P*>(table[t]), reinterpret_cast<const P*>(table[T + t])};
}

// Update rule: the docstring in ember/optim/sgd.py (Sgd). per[t] = {lr}.
template <typename P, typename S>
__global__ void __launch_bounds__(256)
sgd_multi(const unsigned long long* __restrict__ table, int ntensors, long long chunk_elems,
          const typename AccType<P>::type* __restrict__ per, typename AccType<P>::type weight_decay,
          typename AccType<P>::type momentum, typename AccType<P>::type one_minus_dampening,
          int has_momentum, int nesterov) {
  typedef typename AccType<P>::type A;
  const long long T = ntensors;
  const auto [t, start, end, p, g] = multi_chunk<P>(table, T, 5, 3, chunk_elems);
  S* buf = reinterpret_cast<S*>(table[2 * T + t]);
  const bool first = table[4 * T + t] != 0ull;
  const A lr = per[t];
  for (long long i = start + threadIdx.x; i < end; i += blockDim.x) {
    const A pv = to_acc(p[i]);
    A d = to_acc(g[i]) + weight_decay * pv;
    if (has_momentum) {
      const A b = first ? d : momentum * to_acc(buf[i]) + one_minus_dampening * d;
      buf[i] = from_acc<S>(b);
      d = nesterov ? d + momentum * b : b;
    }
    p[i] = from_acc<P>(pv - lr * d);
  }
}

// Update rule: the docstrings in ember/optim/adam.py (Adam) and adamw.py (AdamW).
// per[t] = {lr, corr, eps_eff, l2, keep, decay} with corr = sqrt(1 - beta2^t) / (1 - beta1^t),
// eps_eff = eps * sqrt(1 - beta2^t), l2 = wd (Adam) or 0, keep = 1 - lr * wd (AdamW) or 1,
// decay = lr * wd (AdamW) or 0; mode 0 Adam, 1 AdamW, 2 AdamW with cautious decay.
template <typename P, typename S>
__global__ void __launch_bounds__(256)
adam_multi(const unsigned long long* __restrict__ table, int ntensors, long long chunk_elems,
           const typename AccType<P>::type* __restrict__ per, typename AccType<P>::type beta1,
           typename AccType<P>::type one_minus_beta1, typename AccType<P>::type beta2,
           typename AccType<P>::type one_minus_beta2, int amsgrad, int mode) {
  typedef typename AccType<P>::type A;
  const long long T = ntensors;
  const auto [t, start, end, p, g] = multi_chunk<P>(table, T, 6, 5, chunk_elems);
  S* m = reinterpret_cast<S*>(table[2 * T + t]);
  S* v = reinterpret_cast<S*>(table[3 * T + t]);
  S* vmax = reinterpret_cast<S*>(table[4 * T + t]);
  const A* h = per + 6 * t;
  const A lr = h[0], corr = h[1], eps = h[2], l2 = h[3], keep = h[4], decay = h[5];
  for (long long i = start + threadIdx.x; i < end; i += blockDim.x) {
    A theta = to_acc(p[i]);
    const A grad = to_acc(g[i]) + l2 * theta;
    const A mj = beta1 * to_acc(m[i]) + one_minus_beta1 * grad;
    A vj = beta2 * to_acc(v[i]) + one_minus_beta2 * grad * grad;
    m[i] = from_acc<S>(mj);
    v[i] = from_acc<S>(vj);
    if (amsgrad) {
      vj = e_max(to_acc(vmax[i]), vj);
      vmax[i] = from_acc<S>(vj);
    }
    const A update = mj * corr / (e_sqrt(vj) + eps);
    if (mode == 1) {
      theta = theta * keep;
    } else if (mode == 2 && ((theta >= (A)0) == (mj >= (A)0))) {
      theta = theta - decay * theta;
    }
    p[i] = from_acc<P>(theta - lr * update);
  }
}
