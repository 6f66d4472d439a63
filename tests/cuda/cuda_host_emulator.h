// Host emulation of the CUDA subset used by ember's kernels (tests only).
//
// A kernel source (common.cuh + kernels/<x>.cu) is compiled by g++ after this header.
// Blocks run one after another; the threads of a block are user-level fibers that run
// until they reach a barrier (__syncthreads, or a warp barrier inside a shuffle), with the
// scheduling order reversed at every round so that a missing barrier shows up as a wrong
// result. __shared__ variables become function statics, which is exact because only one
// block runs at a time. Barrier misuse (a barrier reached by only part of the block or
// warp) is reported as an error instead of hanging.
#define EMBER_HOST_EMULATION 1

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

#include <functional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __restrict__ __restrict
#define __launch_bounds__(...)
#define __align__(n) alignas(n)
#define __shared__ static

struct uint3 {
  unsigned int x, y, z;
};
static uint3 threadIdx, blockIdx, blockDim, gridDim;
static const int warpSize = 32;

static inline float ember_h2f(unsigned short b) {
  _Float16 h;
  memcpy(&h, &b, 2);
  return (float)h;
}
static inline unsigned short ember_f2h(float f) {
  _Float16 h = (_Float16)f;  // round to nearest even, like cvt.rn.f16.f32
  unsigned short b;
  memcpy(&b, &h, 2);
  return b;
}
static inline float __int_as_float(int i) {
  float f;
  memcpy(&f, &i, 4);
  return f;
}
static inline double __longlong_as_double(long long i) {
  double d;
  memcpy(&d, &i, 8);
  return d;
}

// Fibers run on one OS thread, so plain read-modify-write is atomic here.
static inline float atomicAdd(float* p, float v) {
  float o = *p;
  *p = o + v;
  return o;
}
static inline double atomicAdd(double* p, double v) {
  double o = *p;
  *p = o + v;
  return o;
}
static inline unsigned long long atomicMin(unsigned long long* p, unsigned long long v) {
  unsigned long long o = *p;
  if (v < o) *p = v;
  return o;
}

namespace emu {
enum State { RUNNABLE, WAIT_BLOCK, WAIT_WARP, DONE };
struct Fiber {
  ucontext_t ctx;
  State state;
  uint3 tid;
  int linear;
};
static const size_t kStack = 256 * 1024;
static std::vector<Fiber> fibers;
static std::vector<char*> stacks;
static int current = -1;
static int nthreads = 0;
static ucontext_t sched_ctx;
static std::function<void()> body;
static std::vector<unsigned long long> shfl_slots;
static std::string error;

static void fail(const std::string& msg) {
  if (error.empty()) error = msg;
}
static void yield_as(State s) {
  Fiber& f = fibers[current];
  f.state = s;
  swapcontext(&f.ctx, &sched_ctx);
}
static void trampoline() {
  body();
  fibers[current].state = DONE;
  // returning resumes uc_link = sched_ctx
}
static void warp_barrier(unsigned mask) {
  if (mask != 0xffffffffu) fail("warp operation with a partial mask");
  const int lin = fibers[current].linear;
  if ((lin / 32 + 1) * 32 > nthreads) fail("warp operation in a partial warp");
  yield_as(WAIT_WARP);
}

static bool run_block() {
  const int n = nthreads;
  while ((int)stacks.size() < n) stacks.push_back((char*)malloc(kStack));
  fibers.assign(n, Fiber());
  shfl_slots.assign(((n + 31) / 32) * 32, 0ull);
  for (int t = 0; t < n; ++t) {
    Fiber& f = fibers[t];
    getcontext(&f.ctx);
    f.ctx.uc_stack.ss_sp = stacks[t];
    f.ctx.uc_stack.ss_size = kStack;
    f.ctx.uc_link = &sched_ctx;
    makecontext(&f.ctx, trampoline, 0);
    f.state = RUNNABLE;
    f.linear = t;
    f.tid.x = t % blockDim.x;
    f.tid.y = (t / blockDim.x) % blockDim.y;
    f.tid.z = t / (blockDim.x * blockDim.y);
  }
  bool forward = true;
  for (;;) {
    for (int k = 0; k < n; ++k) {
      const int t = forward ? k : n - 1 - k;
      if (fibers[t].state != RUNNABLE) continue;
      current = t;
      threadIdx = fibers[t].tid;
      swapcontext(&sched_ctx, &fibers[t].ctx);
      if (!error.empty()) return false;
    }
    forward = !forward;
    // Nothing is runnable now: release complete warp barriers first, then the block barrier.
    bool released = false;
    for (int w0 = 0; w0 < n; w0 += 32) {
      const int w1 = w0 + 32 < n ? w0 + 32 : n;
      int waiting = 0;
      for (int t = w0; t < w1; ++t) waiting += fibers[t].state == WAIT_WARP;
      if (waiting == 0) continue;
      if (waiting != w1 - w0) {
        fail("warp barrier (shuffle) not reached by all 32 lanes of warp " +
             std::to_string(w0 / 32) + " (others exited or wait at __syncthreads)");
        return false;
      }
      for (int t = w0; t < w1; ++t) fibers[t].state = RUNNABLE;
      released = true;
    }
    if (released) continue;
    int done = 0, at_block = 0;
    for (int t = 0; t < n; ++t) {
      done += fibers[t].state == DONE;
      at_block += fibers[t].state == WAIT_BLOCK;
    }
    if (done == n) return true;
    if (at_block == n) {
      for (int t = 0; t < n; ++t) fibers[t].state = RUNNABLE;
      continue;
    }
    fail("__syncthreads reached by " + std::to_string(at_block) + " of " + std::to_string(n) +
         " threads while " + std::to_string(done) + " had exited");
    return false;
  }
}
}  // namespace emu

static inline void __syncthreads() { emu::yield_as(emu::WAIT_BLOCK); }
static inline void __syncwarp(unsigned mask = 0xffffffffu) { emu::warp_barrier(mask); }

template <typename T>
static inline T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = 32) {
  static_assert(sizeof(T) <= 8, "shuffle of a type wider than 8 bytes");
  if (width != 32) emu::fail("__shfl_xor_sync with width != 32 is not emulated");
  const int lin = emu::fibers[emu::current].linear;
  const int base = (lin / 32) * 32;
  unsigned long long slot = 0;
  memcpy(&slot, &v, sizeof(T));
  emu::shfl_slots[lin] = slot;
  emu::warp_barrier(mask);
  const unsigned long long other = emu::shfl_slots[base + ((lin - base) ^ lane_mask)];
  emu::warp_barrier(mask);
  T r;
  memcpy(&r, &other, sizeof(T));
  return r;
}

// ---- kernel table: signature strings and type-erased launchers -----------------------------
struct ember_half;
template <typename T> struct EmuType { static const char* code() { return "?"; } };
template <> struct EmuType<float> { static const char* code() { return "f"; } };
template <> struct EmuType<double> { static const char* code() { return "d"; } };
template <> struct EmuType<int> { static const char* code() { return "i"; } };
template <> struct EmuType<unsigned int> { static const char* code() { return "I"; } };
template <> struct EmuType<long long> { static const char* code() { return "q"; } };
template <> struct EmuType<unsigned long long> { static const char* code() { return "Q"; } };
template <> struct EmuType<unsigned char> { static const char* code() { return "B"; } };
template <> struct EmuType<ember_half> { static const char* code() { return "e"; } };

template <typename T> static std::string emu_param_code() {
  if constexpr (std::is_pointer<T>::value) {
    return std::string(EmuType<std::remove_cv_t<std::remove_pointer_t<T>>>::code()) + "*";
  } else {
    return EmuType<std::remove_cv_t<T>>::code();
  }
}

struct EmuKernel {
  std::string name;
  std::string sig;  // comma-separated parameter codes, e.g. "f*,f*,q,i"
  std::function<void(void**)> run;
};

template <typename... P, size_t... I>
static void emu_call(void (*k)(P...), void** args, std::index_sequence<I...>) {
  k(*static_cast<std::remove_cv_t<P>*>(args[I])...);
}

template <typename... P> static EmuKernel emu_make(const char* name, void (*k)(P...)) {
  EmuKernel e;
  e.name = name;
  std::string codes[] = {emu_param_code<P>()..., std::string()};
  for (size_t i = 0; i < sizeof...(P); ++i) e.sig += (i ? "," : "") + codes[i];
  e.run = [k](void** args) { emu_call(k, args, std::index_sequence_for<P...>{}); };
  return e;
}

std::vector<EmuKernel>& emu_table();

extern "C" int emu_kernel_count() { return (int)emu_table().size(); }
extern "C" const char* emu_kernel_name(int i) { return emu_table()[i].name.c_str(); }
extern "C" const char* emu_kernel_sig(int i) { return emu_table()[i].sig.c_str(); }

extern "C" int emu_launch(int index, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                          unsigned by, unsigned bz, void** args, char* err, int errlen) {
  emu::error.clear();
  gridDim = {gx, gy, gz};
  blockDim = {bx, by, bz};
  emu::nthreads = (int)(bx * by * bz);
  EmuKernel& k = emu_table()[index];
  emu::body = [&k, args]() { k.run(args); };
  for (unsigned z = 0; z < gz; ++z)
    for (unsigned y = 0; y < gy; ++y)
      for (unsigned x = 0; x < gx; ++x) {
        blockIdx = {x, y, z};
        if (!emu::run_block()) {
          snprintf(err, errlen, "block (%u, %u, %u): %s", x, y, z, emu::error.c_str());
          return 1;
        }
      }
  return 0;
}
