// Global operator new/delete for the pmix dr test binary: malloc/free plus a
// record of the largest request while a probe is armed (see alloc_probe.hpp).
#include "alloc_probe.hpp"

#include <atomic>
#include <cstdlib>
#include <new>

namespace {

std::atomic<bool> g_armed{false};
std::atomic<std::size_t> g_largest{0};

}  // namespace

void* operator new(std::size_t n) {
    if (g_armed.load(std::memory_order_relaxed)) {
        std::size_t seen = g_largest.load(std::memory_order_relaxed);
        while (n > seen && !g_largest.compare_exchange_weak(seen, n)) {}
    }
    if (void* p = std::malloc(n == 0 ? 1 : n))
        return p;
    throw std::bad_alloc();
}

void operator delete(void* p) noexcept {
    std::free(p);
}

void operator delete(void* p, std::size_t) noexcept {
    std::free(p);
}

namespace pmix_dr_test {

std::size_t largest_allocation(const std::function<void()>& f) {
    g_largest = 0;
    g_armed = true;
    f();
    g_armed = false;
    return g_largest;
}

}  // namespace pmix_dr_test
