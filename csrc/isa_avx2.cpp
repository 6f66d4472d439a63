// Kernels compiled for AVX2 + FMA (x86-64-v3 class CPUs), chosen at run time.
//
// The target pragma comes after every system header so only ember's own code
// (which lives in its own namespace) is compiled with AVX2 instructions; a
// shared inline/template symbol compiled here could otherwise be picked by the
// linker for the baseline path and crash older CPUs.
#include "isa_common.hpp"

namespace ember_native {

#if EMBER_MULTI_ISA
#pragma GCC push_options
#pragma GCC target("avx2,fma")
namespace avx2 {
#include "simd_math.hpp"
#include "kernels_impl.hpp"
}  // namespace avx2
#pragma GCC pop_options

KernelTable avx2_kernels() { return avx2::make_table("avx2"); }
#else
KernelTable avx2_kernels() { return KernelTable{nullptr, {}, {}}; }
#endif

}  // namespace ember_native
