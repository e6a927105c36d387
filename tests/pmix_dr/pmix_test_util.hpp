// Helpers shared by the pmix dr core tests (not part of the core): sample
// values of every shape, nested lists, and byte surgery on encodings.
#pragma once
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "value.hpp"
#include "wire.hpp"

namespace pmix_dr_test {

using namespace plugin::pmix::core;
using Bytes = std::vector<std::uint8_t>;
using U8s = std::initializer_list<std::uint8_t>;

inline Bytes bytes_of(std::string_view s) {
    return {s.begin(), s.end()};
}

// One value of every shape (scalars of every size at their maximum), each
// under its own key, type and scope. Two lists deep, so it still fits one
// level further down (kMaxDepth is 3).
inline KvList every_shape() {
    const Bytes zeros{0, 1, 0, 0, 0xFF, 0};
    return {
        {"s1", Value::scalar(1, 1, 0xFF), Scope::Local},
        {"s2", Value::scalar(2, 2, 0xFFFF), Scope::Remote},
        {"s4", Value::scalar(3, 4, 0xFFFFFFFFu), Scope::Global},
        {"s8", Value::scalar(4, 8, ~0ull)},
        {"zero", Value::scalar(5, 4, 0)},
        {"str", Value::string(6, "hello")},
        {"empty", Value::string(6, "")},
        {"null", Value::null_string(6)},
        {"nul inside", Value::string(6, std::string_view("a\0b", 3))},
        {"blob", Value::blob(7, zeros)},
        {"no bytes", Value::blob(7, {})},
        {"name", Value::proc(8, {0xFFFFFFFFu, kRankWildcard})},
        {"list", Value::nested(0xFFFF, {{"in", Value::scalar(10, 2, 7)},
                                        {"x", Value::null_string(6), Scope::Local}})},
        {"empty list", Value::nested(9, {})},
    };
}

// A KvList that is `levels` lists deep, counting itself: 1 is a flat list.
inline KvList nested_lists(int levels) {
    KvList l{{"leaf", Value::scalar(1, 4, 42)}};
    for (int i = 1; i < levels; ++i)
        l = KvList{{"level" + std::to_string(i), Value::nested(2, std::move(l))}};
    return l;
}

inline void put_be32(Bytes& b, std::size_t at, std::uint32_t v) {
    for (std::size_t i = 0; i < 4; ++i)
        b.at(at + i) = static_cast<std::uint8_t>(v >> (24 - 8 * i));
}

inline std::uint32_t get_be32(const Bytes& b, std::size_t at) {
    std::uint32_t v = 0;
    for (std::size_t i = 0; i < 4; ++i)
        v = (v << 8) | b.at(at + i);
    return v;
}

// What a decoder may say about a truncated input.
inline bool is_truncation(ErrorCode c) {
    return c == ErrorCode::Truncated || c == ErrorCode::BadLength;
}

}  // namespace pmix_dr_test
