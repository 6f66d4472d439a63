// Headers and macros shared by the isa_*.cpp translation units. Included before
// any target pragma, so standard-library code keeps the baseline ISA.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "kernel_table.hpp"

#if defined(_MSC_VER)
#define EMBER_INLINE static __forceinline
#else
#define EMBER_INLINE static inline __attribute__((always_inline))
#endif

// ISA variants beyond the baseline are built with GCC's target pragma on x86-64.
// Other compilers/architectures get only the baseline table (still OpenMP + SIMD
// at the compiler's default vector width).
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define EMBER_MULTI_ISA 1
#else
#define EMBER_MULTI_ISA 0
#endif
