// Scaled dot-product attention with padding mask, quiet softmax and dropout on the
// pre-softmax scores (Burn's order), as tiled online-softmax kernels (FlashAttention-2
// style, on CUDA cores): [B, H, Sq, Sk] scores are never stored.
//
// Layout: q/out/dout [BH, Sq, Dh], k/v [BH, Sk, Dh] contiguous, mask [B, Sk] bytes
// (nonzero = padded key), delta [BH, Sq] in the accumulation type A, lse [BH, Sq] in double.
// Score (q_i, k_j) of head bh:
//   s = (q_i . k_j) * scale
//   dropout: s = keep(seed, ((bh * Sq + i) * Sk + j)) ? s * inv_keep : 0
//   padded key: s = -1e4
//   lse_i = log(sum_j exp(s_ij) [+ 1 when quiet]);  w_ij = exp(s_ij - lse_i);  out_i = sum_j w_ij v_j
// lse is kept in double and split into two A values (hi + lo) in the backward: a fully masked
// row has lse = -1e4 + log(Sk), which one float holds only to ~5e-4 -- the relative error its
// recomputed weights had (the forward normalises by the sum and is exact).
//
// Work split: DPAD = Dh rounded up to 32, 64 or 128; TPR = DPAD / 32 consecutive threads own
// one row (query row in attention_fwd / attention_bwd_dq, key row in attention_bwd_dkv), each
// holding 32 of its dims, interleaved (dim d = i * TPR + part) so that the shared-memory
// reads of one warp hit consecutive addresses. Dot products are summed over the TPR
// threads with shuffles. A block has ATT_THREADS threads = ATT_THREADS / TPR rows and
// streams the other operand through shared memory in tiles of ATT_TILE<A> rows.
// Launch: block (ATT_THREADS); grid (BH, ceil(rows / (ATT_THREADS / TPR))).
// Rows past the end still run every loop (they are zero) so that all threads reach each
// barrier and shuffle; they just never store.

#define ATT_THREADS 128
#define ATT_MASKED_SCORE -1.0e4

template <typename A> struct AttTile { static constexpr int rows = 32; };
template <> struct AttTile<double> { static constexpr int rows = 16; };

// Sum over the TPR threads that share a row (aligned groups of consecutive lanes).
template <int TPR, typename A> __device__ __forceinline__ A group_sum(A v) {
  if (TPR >= 2) v += __shfl_xor_sync(EMBER_FULL_MASK, v, 1);
  if (TPR >= 4) v += __shfl_xor_sync(EMBER_FULL_MASK, v, 2);
  return v;
}

// Load rows [r0, r0 + TILE) of a [rows, dh] matrix into a [TILE, DPAD] shared tile in the
// accumulation type, zero-filling past the end and beyond dh.
template <typename T, typename A, int TILE, int DPAD>
__device__ __forceinline__ void att_load_tile(A* __restrict__ dst, const T* __restrict__ src,
                                              int r0, int rows, int dh) {
  for (int e = threadIdx.x; e < TILE * DPAD; e += ATT_THREADS) {
    const int j = e / DPAD;
    const int d = e - j * DPAD;
    const int r = r0 + j;
    dst[e] = (r < rows && d < dh) ? to_acc(src[(long long)r * dh + d]) : (A)0;
  }
}

// Load this thread's 32 interleaved dims of row `r` (zeros when the row is invalid).
template <typename T, typename A, int TPR>
__device__ __forceinline__ void att_load_row(A (&dst)[32], const T* __restrict__ src, bool ok,
                                             long long r, int dh, int part) {
#pragma unroll
  for (int i = 0; i < 32; ++i) {
    const int d = i * TPR + part;
    dst[i] = (ok && d < dh) ? to_acc(src[r * dh + d]) : (A)0;
  }
}

// Store this thread's 32 interleaved dims of row `r`, times `factor` (the mirror of
// att_load_row; nothing past dh).
template <typename T, typename A, int TPR>
__device__ __forceinline__ void att_store_row(T* __restrict__ dst, const A (&src)[32], A factor,
                                              long long r, int dh, int part) {
#pragma unroll
  for (int i = 0; i < 32; ++i) {
    const int d = i * TPR + part;
    if (d < dh) dst[r * dh + d] = from_acc<T>(src[i] * factor);
  }
}

// This thread's row of a [BH, rows, Dh] operand: head bh (of batch b), index i within the head
// (ok: i < rows), flat row index bh * rows + i, and `part`, its place among the TPR threads
// that share the row.
struct AttRow {
  int bh, b, part, i;
  bool ok;
  long long flat;
};

template <int TPR> __device__ __forceinline__ AttRow att_row(int heads, int rows) {
  const int bh = blockIdx.x;
  const int i = blockIdx.y * (ATT_THREADS / TPR) + threadIdx.x / TPR;
  return {bh, bh / heads, (int)(threadIdx.x % TPR), i, i < rows, (long long)bh * rows + i};
}

// Key `key` of batch b: 0 attended to, 1 padded (mask nonzero), 2 past the end of the keys.
__device__ __forceinline__ int att_key_flag(int key, int sk, int has_mask,
                                            const unsigned char* __restrict__ mask, int b) {
  return key >= sk ? 2 : ((has_mask && mask[(long long)b * sk + key]) ? 1 : 0);
}

// Stage keys [k0, k0 + BK) of head bh in shared memory for the query-row kernels: their K and
// V rows and flags. The leading barrier waits until every thread has consumed the last tile.
template <typename T, typename A, int BK, int DPAD>
__device__ __forceinline__ void att_stage_keys(A* __restrict__ k_tile, A* __restrict__ v_tile,
                                               int* __restrict__ flags, const T* __restrict__ k,
                                               const T* __restrict__ v,
                                               const unsigned char* __restrict__ mask,
                                               int has_mask, int bh, int b, int k0, int sk, int dh) {
  __syncthreads();
  att_load_tile<T, A, BK, DPAD>(k_tile, k + (long long)bh * sk * dh, k0, sk, dh);
  att_load_tile<T, A, BK, DPAD>(v_tile, v + (long long)bh * sk * dh, k0, sk, dh);
  for (int j = threadIdx.x; j < BK; j += ATT_THREADS) flags[j] = att_key_flag(k0 + j, sk, has_mask, mask, b);
  __syncthreads();
}

// a . x over this thread's 32 dims, summed over the TPR threads of the row.
template <int TPR, typename A>
__device__ __forceinline__ A att_dot(const A (&a)[32], const A* __restrict__ x, int part) {
  A s = (A)0;
#pragma unroll
  for (int i = 0; i < 32; ++i) s += a[i] * x[i * TPR + part];
  return group_sum<TPR>(s);
}

// a . x and b . y at once (one pass over the dims), as att_dot.
template <int TPR, typename A>
__device__ __forceinline__ void att_dot2(const A (&a)[32], const A* __restrict__ x,
                                         const A (&b)[32], const A* __restrict__ y, int part,
                                         A& ax, A& by) {
  ax = (A)0;
  by = (A)0;
#pragma unroll
  for (int i = 0; i < 32; ++i) {
    ax += a[i] * x[i * TPR + part];
    by += b[i] * y[i * TPR + part];
  }
  ax = group_sum<TPR>(ax);
  by = group_sum<TPR>(by);
}

// The score transform shared by forward and backward. flag: 0 normal, 1 padded key,
// 2 key out of range. `kept` reports the dropout decision (true without dropout).
template <typename A>
__device__ __forceinline__ A att_transform(A dot, A scale, int flag, unsigned long long seed,
                                           unsigned long long flat, unsigned int threshold,
                                           A inv_keep, bool& kept) {
  A s = dot * scale;
  kept = true;
  if (threshold != 0u) {
    kept = ember_keep(seed, flat, threshold);
    s = kept ? s * inv_keep : (A)0;
  }
  if (flag == 1) s = (A)ATT_MASKED_SCORE;
  if (flag == 2) s = neg_inf<A>();
  return s;
}

template <typename T, int DPAD>
__global__ void __launch_bounds__(ATT_THREADS)
attention_fwd(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
              const unsigned char* __restrict__ mask, T* __restrict__ out,
              double* __restrict__ lse, int heads, int sq, int sk, int dh,
              typename AccType<T>::type scale, int quiet, int has_mask,
              unsigned long long seed, unsigned int threshold,
              typename AccType<T>::type inv_keep) {
  typedef typename AccType<T>::type A;
  constexpr int TPR = DPAD / 32;
  constexpr int BK = AttTile<A>::rows;
  __shared__ A sk_tile[BK * DPAD];
  __shared__ A sv_tile[BK * DPAD];
  __shared__ int sflag[BK];
  const auto [bh, b, part, qi, row_ok, qrow] = att_row<TPR>(heads, sq);

  A qr[32], o[32] = {};
  att_load_row<T, A, TPR>(qr, q, row_ok, qrow, dh, part);
  // Quiet softmax = softmax with one extra logit 0 that carries no value: start the running
  // max at 0 and the running sum at exp(0 - 0) = 1.
  A m = quiet ? (A)0 : neg_inf<A>();
  A l = quiet ? (A)1 : (A)0;
  const unsigned long long flat_row = (unsigned long long)qrow * (unsigned long long)sk;

  for (int k0 = 0; k0 < sk; k0 += BK) {
    att_stage_keys<T, A, BK, DPAD>(sk_tile, sv_tile, sflag, k, v, mask, has_mask, bh, b, k0, sk, dh);
    for (int j = 0; j < BK; ++j) {
      const A* vj = sv_tile + j * DPAD;
      const A dot = att_dot<TPR>(qr, sk_tile + j * DPAD, part);
      bool kept;
      const A s = att_transform<A>(dot, scale, sflag[j], seed,
                                   flat_row + (unsigned long long)(k0 + j), threshold, inv_keep,
                                   kept);
      // Online softmax, rescaling only when the running max grows. Key 0 is always in
      // range, so m is finite from the first key on (exp(-inf) = 0 clears l and o then).
      if (s > m) {
        const A corr = e_exp(m - s);
        l *= corr;
#pragma unroll
        for (int i = 0; i < 32; ++i) o[i] *= corr;
        m = s;
      }
      const A p = e_exp(s - m);
      l += p;
#pragma unroll
      for (int i = 0; i < 32; ++i) o[i] += p * vj[i * TPR + part];
    }
  }

  if (row_ok) {
    att_store_row<T, A, TPR>(out, o, (A)1 / l, qrow, dh, part);
    if (part == 0) lse[qrow] = (double)m + log((double)l);
  }
}

// delta[r] = sum_d dout[r, d] * out[r, d]  (rows = BH * Sq). Launch: block 128 (one warp
// per row), grid ceil(rows / 4).
template <typename T>
__global__ void __launch_bounds__(128)
attention_bwd_delta(const T* __restrict__ dout, const T* __restrict__ out,
                    typename AccType<T>::type* __restrict__ delta, long long rows, int dh) {
  typedef typename AccType<T>::type A;
  const long long row = (long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
  if (row >= rows) return;
  const int lane = threadIdx.x & 31;
  A s = (A)0;
  for (int d = lane; d < dh; d += 32) s += to_acc(dout[row * dh + d]) * to_acc(out[row * dh + d]);
  s = warp_sum(s);
  if (lane == 0) delta[row] = s;
}

// The double lse as hi + lo in A (lo = 0 when lse is not finite), for w = exp((s - hi) - lo):
// s - hi is exact where it matters (a fully masked row, Sterbenz), and lo then adds the digits
// hi lacks. (Compiled without fast math, the two subtractions are not reassociated.)
template <typename A>
__device__ __forceinline__ void att_split_lse(double lse, A& hi, A& lo) {
  hi = (A)lse;
  const double rest = lse - (double)hi;  // NaN for an infinite lse
  lo = rest == rest ? (A)rest : (A)0;
}

// Gradient of the score after dropout/mask -> gradient of the raw score (q . k) * scale:
// masked or dropped scores are constants (0 gradient); kept ones were scaled by inv_keep.
template <typename A>
__device__ __forceinline__ A att_ds(A w, A dw, A delta, int flag, bool kept,
                                    unsigned int threshold, A inv_keep) {
  A ds = w * (dw - delta);
  if (flag != 0 || !kept) ds = (A)0;
  else if (threshold != 0u) ds *= inv_keep;
  return ds;
}

// dq_i = scale * sum_j ds_ij k_j; rows are query rows.
template <typename T, int DPAD>
__global__ void __launch_bounds__(ATT_THREADS)
attention_bwd_dq(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
                 const unsigned char* __restrict__ mask, const T* __restrict__ dout,
                 const double* __restrict__ lse,
                 const typename AccType<T>::type* __restrict__ delta, T* __restrict__ dq,
                 int heads, int sq, int sk, int dh, typename AccType<T>::type scale,
                 int has_mask, unsigned long long seed, unsigned int threshold,
                 typename AccType<T>::type inv_keep) {
  typedef typename AccType<T>::type A;
  constexpr int TPR = DPAD / 32;
  constexpr int BK = AttTile<A>::rows;
  __shared__ A sk_tile[BK * DPAD];
  __shared__ A sv_tile[BK * DPAD];
  __shared__ int sflag[BK];
  const auto [bh, b, part, qi, row_ok, qrow] = att_row<TPR>(heads, sq);

  A qr[32], gr[32], acc[32] = {};
  att_load_row<T, A, TPR>(qr, q, row_ok, qrow, dh, part);
  att_load_row<T, A, TPR>(gr, dout, row_ok, qrow, dh, part);
  A lse_hi, lse_lo;
  att_split_lse<A>(row_ok ? lse[qrow] : 0.0, lse_hi, lse_lo);
  const A delta_i = row_ok ? delta[qrow] : (A)0;
  const unsigned long long flat_row = (unsigned long long)qrow * (unsigned long long)sk;

  for (int k0 = 0; k0 < sk; k0 += BK) {
    att_stage_keys<T, A, BK, DPAD>(sk_tile, sv_tile, sflag, k, v, mask, has_mask, bh, b, k0, sk, dh);
    for (int j = 0; j < BK; ++j) {
      const A* kj = sk_tile + j * DPAD;
      A dot, dw;
      att_dot2<TPR>(qr, kj, gr, sv_tile + j * DPAD, part, dot, dw);
      const int flag = sflag[j];
      bool kept;
      const A s = att_transform<A>(dot, scale, flag, seed, flat_row + (unsigned long long)(k0 + j),
                                   threshold, inv_keep, kept);
      const A w = flag == 2 ? (A)0 : e_exp((s - lse_hi) - lse_lo);
      const A ds = att_ds<A>(w, dw, delta_i, flag, kept, threshold, inv_keep);
#pragma unroll
      for (int i = 0; i < 32; ++i) acc[i] += ds * kj[i * TPR + part];
    }
  }

  if (row_ok) att_store_row<T, A, TPR>(dq, acc, scale, qrow, dh, part);
}

// dk_j = scale * sum_i ds_ij q_i and dv_j = sum_i w_ij dout_i; rows are key rows, query rows
// (with their lse and delta) stream through shared memory.
template <typename T, int DPAD>
__global__ void __launch_bounds__(ATT_THREADS)
attention_bwd_dkv(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
                  const unsigned char* __restrict__ mask, const T* __restrict__ dout,
                  const double* __restrict__ lse,
                  const typename AccType<T>::type* __restrict__ delta, T* __restrict__ dk,
                  T* __restrict__ dv, int heads, int sq, int sk, int dh,
                  typename AccType<T>::type scale, int has_mask, unsigned long long seed,
                  unsigned int threshold, typename AccType<T>::type inv_keep) {
  typedef typename AccType<T>::type A;
  constexpr int TPR = DPAD / 32;
  constexpr int BQ = AttTile<A>::rows;
  __shared__ A sq_tile[BQ * DPAD];
  __shared__ A sg_tile[BQ * DPAD];
  __shared__ A slse_hi[BQ];
  __shared__ A slse_lo[BQ];
  __shared__ A sdelta[BQ];
  __shared__ int sok[BQ];

  const auto [bh, b, part, kj, key_ok, krow] = att_row<TPR>(heads, sk);
  const T* qb = q + (long long)bh * sq * dh;
  const T* gb = dout + (long long)bh * sq * dh;
  const int flag = att_key_flag(kj, sk, has_mask, mask, b);

  A kr[32], vr[32], dka[32] = {}, dva[32] = {};
  att_load_row<T, A, TPR>(kr, k, key_ok, krow, dh, part);
  att_load_row<T, A, TPR>(vr, v, key_ok, krow, dh, part);

  for (int q0 = 0; q0 < sq; q0 += BQ) {
    __syncthreads();
    att_load_tile<T, A, BQ, DPAD>(sq_tile, qb, q0, sq, dh);
    att_load_tile<T, A, BQ, DPAD>(sg_tile, gb, q0, sq, dh);
    for (int r = threadIdx.x; r < BQ; r += ATT_THREADS) {
      const int qi = q0 + r;
      const bool ok = qi < sq;
      sok[r] = ok ? 1 : 0;
      att_split_lse<A>(ok ? lse[(long long)bh * sq + qi] : 0.0, slse_hi[r], slse_lo[r]);
      sdelta[r] = ok ? delta[(long long)bh * sq + qi] : (A)0;
    }
    __syncthreads();

    for (int r = 0; r < BQ; ++r) {
      const A* qi_row = sq_tile + r * DPAD;
      const A* gi_row = sg_tile + r * DPAD;
      A dot, dw;
      att_dot2<TPR>(kr, qi_row, vr, gi_row, part, dot, dw);
      const unsigned long long flat =
          ((unsigned long long)bh * (unsigned long long)sq + (unsigned long long)(q0 + r)) *
              (unsigned long long)sk + (unsigned long long)kj;
      bool kept;
      const A s = att_transform<A>(dot, scale, flag, seed, flat, threshold, inv_keep, kept);
      const bool live = sok[r] != 0 && flag != 2;
      const A w = live ? e_exp((s - slse_hi[r]) - slse_lo[r]) : (A)0;
      const A ds = att_ds<A>(w, dw, sdelta[r], flag, kept, threshold, inv_keep);
#pragma unroll
      for (int i = 0; i < 32; ++i) {
        dva[i] += w * gi_row[i * TPR + part];
        dka[i] += ds * qi_row[i * TPR + part];
      }
    }
  }

  if (key_ok) {
    att_store_row<T, A, TPR>(dk, dka, scale, krow, dh, part);
    att_store_row<T, A, TPR>(dv, dva, (A)1, krow, dh, part);
  }
}
