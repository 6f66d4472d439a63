// ember CUDA kernels: shared device helpers.
//
// modules.py prepends this file to every kernels/*.cu source before handing it to
// cupy.RawModule, so each compiled module is one self-contained translation unit.
// NVRTC (used by CuPy) has no host headers and, without a CUDA toolkit, not even
// cuda_fp16.h: only CUDA built-ins are used, and float16 is handled as raw bits with
// PTX conversion instructions (float16 storage, float32 arithmetic).
//
// Conventions: flat indices are long long; `A` is the accumulation type of a storage
// type `T` (float for float and half, double for double); every kernel states the launch
// shape it expects, and the Python wrappers in ember/kernels/cuda/*.py follow it.

#define EMBER_FULL_MASK 0xffffffffu

// IEEE binary16 storage. Same size and alignment as CuPy's float16 elements.
struct __align__(2) ember_half {
  unsigned short bits;
};

#ifndef EMBER_HOST_EMULATION
__device__ __forceinline__ float ember_h2f(unsigned short b) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(b));
  return f;
}
__device__ __forceinline__ unsigned short ember_f2h(float f) {
  unsigned short b;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(b) : "f"(f));
  return b;
}
#endif

template <typename T> struct AccType { typedef float type; };
template <> struct AccType<double> { typedef double type; };

__device__ __forceinline__ float to_acc(float x) { return x; }
__device__ __forceinline__ double to_acc(double x) { return x; }
__device__ __forceinline__ float to_acc(ember_half x) { return ember_h2f(x.bits); }

template <typename T> struct StoreAs;
template <> struct StoreAs<float> {
  static __device__ __forceinline__ float cvt(float a) { return a; }
};
template <> struct StoreAs<double> {
  static __device__ __forceinline__ double cvt(double a) { return a; }
};
template <> struct StoreAs<ember_half> {
  static __device__ __forceinline__ ember_half cvt(float a) {
    ember_half h;
    h.bits = ember_f2h(a);
    return h;
  }
};
// Convert an accumulator value to storage type T (round to nearest even for half).
template <typename T, typename A> __device__ __forceinline__ T from_acc(A a) {
  return StoreAs<T>::cvt(a);
}

// ---- math overloads on the accumulation types ------------------------------------------
__device__ __forceinline__ float e_exp(float x) { return expf(x); }
__device__ __forceinline__ double e_exp(double x) { return exp(x); }
__device__ __forceinline__ float e_log(float x) { return logf(x); }
__device__ __forceinline__ double e_log(double x) { return log(x); }
__device__ __forceinline__ float e_sqrt(float x) { return sqrtf(x); }
__device__ __forceinline__ double e_sqrt(double x) { return sqrt(x); }
__device__ __forceinline__ float e_erf(float x) { return erff(x); }
__device__ __forceinline__ double e_erf(double x) { return erf(x); }
__device__ __forceinline__ float e_tanh(float x) { return tanhf(x); }
__device__ __forceinline__ double e_tanh(double x) { return tanh(x); }
__device__ __forceinline__ float e_max(float a, float b) { return fmaxf(a, b); }
__device__ __forceinline__ double e_max(double a, double b) { return fmax(a, b); }

template <typename A> __device__ __forceinline__ A neg_inf();
template <> __device__ __forceinline__ float neg_inf<float>() {
  return __int_as_float((int)0xff800000u);
}
template <> __device__ __forceinline__ double neg_inf<double>() {
  return __longlong_as_double((long long)0xfff0000000000000ull);
}

template <typename A> __device__ __forceinline__ A quiet_nan();
template <> __device__ __forceinline__ float quiet_nan<float>() {
  return __int_as_float((int)0x7fc00000u);
}
template <> __device__ __forceinline__ double quiet_nan<double>() {
  return __longlong_as_double((long long)0x7ff8000000000000ull);
}

__device__ __forceinline__ long long ll_min(long long a, long long b) { return a < b ? a : b; }

// ---- reductions -------------------------------------------------------------------------
// The combining step of a reduction, for warp_reduce / block_reduce.
struct SumOp {
  template <typename A> static __device__ __forceinline__ A apply(A a, A b) { return a + b; }
};
struct MaxOp {
  template <typename A> static __device__ __forceinline__ A apply(A a, A b) { return e_max(a, b); }
};

template <typename Op, typename A> __device__ __forceinline__ A warp_reduce(A v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = Op::apply(v, __shfl_xor_sync(EMBER_FULL_MASK, v, o));
  return v;
}

template <typename A> __device__ __forceinline__ A warp_sum(A v) { return warp_reduce<SumOp>(v); }
template <typename A> __device__ __forceinline__ A warp_max(A v) { return warp_reduce<MaxOp>(v); }

// Reduce over the whole block (1-D, blockDim.x a multiple of 32); every thread gets the
// result. The per-warp partials go through this function's own 32 shared values; the
// leading barrier makes it safe to call repeatedly.
template <typename Op, typename A> __device__ A block_reduce(A v) {
  __shared__ A scratch[32];
  v = warp_reduce<Op>(v);
  __syncthreads();
  if ((threadIdx.x & 31) == 0) scratch[threadIdx.x >> 5] = v;
  __syncthreads();
  A t = scratch[0];
  const int warps = blockDim.x >> 5;
  for (int w = 1; w < warps; ++w) t = Op::apply(t, scratch[w]);
  return t;
}

// Row kernels run in one of two shapes (see launch.row_launch):
//   WARP=true : 1-D blocks of ROW_WARP_THREADS, one warp per row, rows = blockIdx.x*warps + warp
//   WARP=false: one 1-D block per row (row = blockIdx.x)
// `lane` and `width` describe this thread's position among the threads of its row; a kernel
// takes them apart with `const auto [row, lane, width] = row_lane<WARP>();` and returns when
// row >= rows.
struct RowLane {
  long long row;
  int lane;
  int width;
};

template <bool WARP> __device__ __forceinline__ RowLane row_lane() {
  if (WARP) {
    return {(long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5), (int)(threadIdx.x & 31), 32};
  }
  return {(long long)blockIdx.x, (int)threadIdx.x, (int)blockDim.x};
}

// Sum / max over the threads of a row (every one of them gets the result).
template <bool WARP, typename A> __device__ __forceinline__ A row_sum(A v) {
  if constexpr (WARP) {
    return warp_sum(v);
  } else {
    return block_reduce<SumOp>(v);
  }
}

template <bool WARP, typename A> __device__ __forceinline__ A row_max(A v) {
  if constexpr (WARP) {
    return warp_max(v);
  } else {
    return block_reduce<MaxOp>(v);
  }
}

// The max `m` of the row `xr[0, cols)` and the sum `s` of exp(x - m) over it: the two
// passes of a softmax's normaliser, in the accumulation type A.
template <bool WARP, typename T, typename A>
__device__ __forceinline__ void row_max_sum_exp(const T* __restrict__ xr, int cols, int lane,
                                                int width, A& m, A& s) {
  m = neg_inf<A>();
  for (int c = lane; c < cols; c += width) m = e_max(m, to_acc(xr[c]));
  m = row_max<WARP>(m);
  s = 0;
  for (int c = lane; c < cols; c += width) s += e_exp(to_acc(xr[c]) - m);
  s = row_sum<WARP>(s);
}

// ---- counter-based dropout hash (SplitMix64 finaliser, see ember/kernels/backend.py) ------
__device__ __forceinline__ unsigned long long ember_mix64(unsigned long long seed,
                                                          unsigned long long i) {
  unsigned long long z = seed + (i + 1ull) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// keep <=> u >= p with u = (z >> 40) * 2^-24. Since u is a multiple of 2^-24 this equals
// (z >> 40) >= ceil(p * 2^24) exactly; the host computes that threshold in float64.
__device__ __forceinline__ bool ember_keep(unsigned long long seed, unsigned long long i,
                                           unsigned int threshold) {
  return (unsigned int)(ember_mix64(seed, i) >> 40) >= threshold;
}

// ---- kernels shared by several modules ------------------------------------------------------

// Sum `parts` [chunks, n] (accumulation type) over chunks and store as T: out[c].
// Also used with chunks == 1 as a plain cast. Launch: 1-D, any grid (grid-stride).
template <typename T>
__global__ void __launch_bounds__(256)
sum_partials(const typename AccType<T>::type* __restrict__ parts, int chunks, long long n,
             T* __restrict__ out) {
  typedef typename AccType<T>::type A;
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long c = (long long)blockIdx.x * blockDim.x + threadIdx.x; c < n; c += stride) {
    A s = parts[c];
    for (int k = 1; k < chunks; ++k) s += parts[(long long)k * n + c];
    out[c] = from_acc<T>(s);
  }
}

// Record in *first_bad the smallest position i with ids[i] outside [0, limit); *first_bad
// must start at ~0ull. Launch: 1-D, any grid (grid-stride).
template <typename I>
__global__ void __launch_bounds__(256)
index_check(const I* __restrict__ ids, long long n, long long limit,
            unsigned long long* __restrict__ first_bad) {
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    const long long v = (long long)ids[i];
    if (v < 0 || v >= limit) atomicMin(first_bad, (unsigned long long)i);
  }
}
