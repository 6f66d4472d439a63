// Kernels for the compiler's default target (x86-64: SSE2; others: their base ISA).
#include "isa_common.hpp"

namespace ember_native {
namespace baseline {
#include "simd_math.hpp"
#include "kernels_impl.hpp"
}  // namespace baseline

KernelTable baseline_kernels() { return baseline::make_table("baseline"); }

}  // namespace ember_native
