// Largest single heap allocation made while running a function, so tests can
// show that a hostile count is refused before anything is sized by it.
// alloc_probe.cpp replaces the global operator new of the test binary.
#pragma once
#include <cstddef>
#include <functional>

namespace pmix_dr_test {

std::size_t largest_allocation(const std::function<void()>& f);

}  // namespace pmix_dr_test
