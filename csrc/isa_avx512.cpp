// Kernels compiled for AVX-512 (F/DQ/BW/VL, x86-64-v4 class CPUs), chosen at run
// time. Same header discipline as isa_avx2.cpp.
#include "isa_common.hpp"

namespace ember_native {

#if EMBER_MULTI_ISA
#pragma GCC push_options
#pragma GCC target("avx512f,avx512dq,avx512bw,avx512vl,avx2,fma,prefer-vector-width=512")
namespace avx512 {
#include "simd_math.hpp"
#include "kernels_impl.hpp"
}  // namespace avx512
#pragma GCC pop_options

KernelTable avx512_kernels() { return avx512::make_table("avx512"); }
#else
KernelTable avx512_kernels() { return KernelTable{nullptr, {}, {}}; }
#endif

}  // namespace ember_native
