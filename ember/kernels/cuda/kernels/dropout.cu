// Dropout with the counter-based hash of common.cuh: element i (flat, row-major) is kept
// iff ember_keep(seed, i, threshold); kept values are multiplied by inv_keep = 1 / (1 - p),
// dropped ones become 0. The same kernel serves forward and backward (same mask).
// 1-D grid-stride launches.

template <typename T>
__global__ void __launch_bounds__(256)
dropout_apply(const T* __restrict__ x, T* __restrict__ y, long long n, unsigned long long seed,
              unsigned int threshold, typename AccType<T>::type inv_keep) {
  typedef typename AccType<T>::type A;
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    const bool keep = ember_keep(seed, (unsigned long long)i, threshold);
    y[i] = from_acc<T>(keep ? to_acc(x[i]) * inv_keep : (A)0);
  }
}

// keep[i] = 1 if element i is kept, else 0 (the mask itself, for tests and debugging).
__global__ void __launch_bounds__(256)
dropout_mask(unsigned char* __restrict__ keep, long long n, unsigned long long seed,
             unsigned int threshold) {
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
    keep[i] = ember_keep(seed, (unsigned long long)i, threshold) ? 1 : 0;
}
