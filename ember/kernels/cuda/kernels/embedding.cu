// Embedding lookup and its scatter-add backward. ids must have been validated with
// index_check (common.cuh). 1-D grid-stride launches over n_ids * dim elements.

template <typename T, typename I>
__global__ void __launch_bounds__(256)
embedding_fwd(const T* __restrict__ weight, const I* __restrict__ ids, T* __restrict__ out,
              long long n_ids, int dim) {
  const long long n = n_ids * dim;
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    const long long r = i / dim;
    const long long c = i - r * dim;
    out[i] = weight[(long long)ids[r] * dim + c];
  }
}

// dweight[ids[r], c] += dout[r, c], accumulated with atomics in the accumulation type
// (float for float16/float32, double for float64) into a zeroed buffer. Repeated ids
// accumulate; the summation order is not deterministic.
template <typename T, typename I>
__global__ void __launch_bounds__(256)
embedding_bwd(const T* __restrict__ dout, const I* __restrict__ ids,
              typename AccType<T>::type* __restrict__ dweight, long long n_ids, int dim) {
  const long long n = n_ids * dim;
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    const long long r = i / dim;
    const long long c = i - r * dim;
    atomicAdd(dweight + (long long)ids[r] * dim + c, to_acc(dout[i]));
  }
}
