// Run-time choice of the kernel table for the CPU this process runs on.
#pragma once

#include <string>
#include <vector>

#include "kernel_table.hpp"

namespace ember_native {

// The table in use; starts as the best one the CPU supports.
const KernelTable& active_kernels();

// Names of the tables usable on this CPU, best last (e.g. baseline, avx2, avx512).
std::vector<std::string> supported_isas();

// Switches to the named table; throws std::invalid_argument if the name is
// unknown or the CPU cannot run it.
void select_isa(const std::string& name);

}  // namespace ember_native
