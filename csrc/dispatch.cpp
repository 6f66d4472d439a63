// Picks the widest instruction set both compiled in and supported by the CPU.
#include "dispatch.hpp"

#include <atomic>
#include <stdexcept>

namespace ember_native {
namespace {

bool cpu_has_avx2() {
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
    return false;
#endif
}

bool cpu_has_avx512() {
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
    return cpu_has_avx2() && __builtin_cpu_supports("avx512f") &&
           __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl");
#else
    return false;
#endif
}

// All tables this CPU can run, best last. Built once (thread-safe static init).
const std::vector<KernelTable>& usable_tables() {
    static const std::vector<KernelTable> tables = [] {
        // Ask the CPU first: make_table itself is compiled for its ISA, so calling it
        // on a CPU without that ISA executes illegal instructions.
        std::vector<KernelTable> out{baseline_kernels()};
        if (cpu_has_avx2()) {
            const KernelTable avx2 = avx2_kernels();
            if (avx2.isa != nullptr) out.push_back(avx2);
        }
        if (cpu_has_avx512()) {
            const KernelTable avx512 = avx512_kernels();
            if (avx512.isa != nullptr) out.push_back(avx512);
        }
        return out;
    }();
    return tables;
}

std::atomic<const KernelTable*>& active_slot() {
    static std::atomic<const KernelTable*> slot{&usable_tables().back()};
    return slot;
}

}  // namespace

const KernelTable& active_kernels() { return *active_slot().load(std::memory_order_acquire); }

std::vector<std::string> supported_isas() {
    std::vector<std::string> names;
    for (const KernelTable& table : usable_tables()) names.emplace_back(table.isa);
    return names;
}

void select_isa(const std::string& name) {
    for (const KernelTable& table : usable_tables()) {
        if (name == table.isa) {
            active_slot().store(&table, std::memory_order_release);
            return;
        }
    }
    std::string known;
    for (const std::string& isa : supported_isas()) known += (known.empty() ? "" : ", ") + isa;
    throw std::invalid_argument("ember native: instruction set '" + name +
                                "' is not available on this CPU/build; choose one of: " + known);
}

}  // namespace ember_native
