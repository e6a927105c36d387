// Checksum micro-benchmark (no MPI): the CRC32C of plugin/common/core, which
// pml dr runs over every header and (with pml_dr_csum) every payload, against
// plain memcpy and a read-only pass over the same bytes.
//
//   csum_bench [-S max_bytes] [-s min_bytes] [-f factor] [-t ms]
//
// Sizes go from min_bytes (64) to max_bytes (64 MiB) by `factor` (2); sizes
// beyond the last-level cache measure the machine's memory bandwidth. For each
// size it prints one line of throughputs, payload bytes per second (a copy
// counts its bytes once):
//   size=<bytes> memcpy_MBps=... read_MBps=... crc32c_MBps=... crc32c_hw_MBps=...
//       crc32c_sw_MBps=... crc32c_copy_MBps=... crc32c_copy_hw_MBps=...
//       crc32c_copy_sw_MBps=... memcpy+crc32c_MBps=... hw=<0|1> isal=<0|1>
// crc32c / crc32c_copy are what pml dr runs (ISA-L when the build has it),
// _hw our CRC32C-instruction code, _sw the table fallback. memcpy+crc32c is
// the two-pass path the fused crc32c_copy replaces.
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <span>

#include "crc32c.hpp"

namespace {

namespace common = plugin::common;

struct Options {
    std::size_t min_bytes = 64;
    std::size_t max_bytes = std::size_t{64} << 20;
    std::size_t factor = 2;
    double budget_s = 0.1;
};

// Keeps the compiler from dropping a copy nobody reads.
inline void clobber(const void* p) {
    asm volatile("" : : "g"(p) : "memory");
}

struct Buffers {
    std::uint8_t* src;
    std::uint8_t* dst;
    std::size_t len;
};

using OpFn = std::uint32_t (*)(const Buffers& b);

std::uint32_t op_memcpy(const Buffers& b) {
    std::memcpy(b.dst, b.src, b.len);
    clobber(b.dst);
    return 0;
}

std::uint32_t op_read(const Buffers& b) {
    std::uint64_t sum = 0;
    std::size_t i = 0;
    for (; i + 8 <= b.len; i += 8) {
        std::uint64_t v;
        std::memcpy(&v, b.src + i, sizeof v);
        sum += v;
    }
    for (; i < b.len; ++i)
        sum += b.src[i];
    return static_cast<std::uint32_t>(sum ^ (sum >> 32));
}

std::uint32_t op_crc32c(const Buffers& b) {
    return common::crc32c(b.src, b.len);
}

std::uint32_t op_crc32c_hw(const Buffers& b) {
    return common::crc32c_hw(b.src, b.len);
}

std::uint32_t op_crc32c_copy_hw(const Buffers& b) {
    const std::uint32_t crc = common::crc32c_copy_hw(b.dst, b.src, b.len);
    clobber(b.dst);
    return crc;
}

std::uint32_t op_crc32c_sw(const Buffers& b) {
    return common::crc32c_sw(b.src, b.len);
}

std::uint32_t op_crc32c_copy(const Buffers& b) {
    const std::uint32_t crc = common::crc32c_copy(b.dst, b.src, b.len);
    clobber(b.dst);
    return crc;
}

std::uint32_t op_crc32c_copy_sw(const Buffers& b) {
    const std::uint32_t crc = common::crc32c_copy_sw(b.dst, b.src, b.len);
    clobber(b.dst);
    return crc;
}

std::uint32_t op_memcpy_then_crc32c(const Buffers& b) {
    std::memcpy(b.dst, b.src, b.len);
    return common::crc32c(b.dst, b.len);
}

struct Op {
    const char* name;
    OpFn fn;
};

constexpr Op kOps[] = {
    {"memcpy", op_memcpy},
    {"read", op_read},
    {"crc32c", op_crc32c},
    {"crc32c_hw", op_crc32c_hw},
    {"crc32c_sw", op_crc32c_sw},
    {"crc32c_copy", op_crc32c_copy},
    {"crc32c_copy_hw", op_crc32c_copy_hw},
    {"crc32c_copy_sw", op_crc32c_copy_sw},
    {"memcpy+crc32c", op_memcpy_then_crc32c},
};

volatile std::uint32_t g_sink;  // results land here so no call is optimised away

double now_s() {
    using Clock = std::chrono::steady_clock;
    return std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
}

// Seconds per call: batches of 1, 2, 4, ... calls warm up until a batch of at
// least 8 takes a tenth of the budget; then as many calls as fill the budget
// are timed (the same scheme as mpi_tests/bench/bench.h).
double seconds_per_call(OpFn fn, const Buffers& b, double budget_s) {
    std::uint32_t acc = 0;
    std::uint64_t iters = 0;
    for (std::uint64_t count = 1; iters == 0; count *= 2) {
        const double t0 = now_s();
        for (std::uint64_t i = 0; i < count; ++i)
            acc ^= fn(b);
        const double dt = now_s() - t0;
        if ((dt >= budget_s / 10 && count >= 8) || dt >= budget_s || count >= (1u << 30)) {
            const double per_call = dt / static_cast<double>(count);
            iters = per_call > 0 ? static_cast<std::uint64_t>(budget_s / per_call) : count;
            if (iters == 0)
                iters = 1;
        }
    }
    const double t0 = now_s();
    for (std::uint64_t i = 0; i < iters; ++i)
        acc ^= fn(b);
    const double dt = now_s() - t0;
    g_sink = g_sink ^ acc;
    return dt / static_cast<double>(iters);
}

Options parse(int argc, char** argv) {
    Options o;
    int c;
    while ((c = getopt(argc, argv, "S:s:f:t:")) != -1) {
        switch (c) {
            case 'S':
                o.max_bytes = std::strtoull(optarg, nullptr, 10);
                break;
            case 's':
                o.min_bytes = std::strtoull(optarg, nullptr, 10);
                break;
            case 'f':
                o.factor = std::strtoull(optarg, nullptr, 10);
                break;
            case 't':
                o.budget_s = std::atof(optarg) / 1e3;
                break;
            default:
                std::fprintf(stderr,
                             "usage: %s [-S max_bytes] [-s min_bytes] [-f factor] [-t ms]\n",
                             argv[0]);
                std::exit(2);
        }
    }
    if (o.factor < 2)
        o.factor = 2;
    if (o.min_bytes < 1)
        o.min_bytes = 1;
    return o;
}

}  // namespace

int main(int argc, char** argv) {
    const Options o = parse(argc, argv);
    // 64-byte aligned, and touched up front so no page fault lands in a timing.
    auto alloc = [&] {
        auto* p = static_cast<std::uint8_t*>(std::aligned_alloc(64, (o.max_bytes + 63) / 64 * 64));
        if (p == nullptr) {
            std::fprintf(stderr, "out of memory (%zu bytes)\n", o.max_bytes);
            std::exit(1);
        }
        return std::unique_ptr<std::uint8_t, decltype(&std::free)>(p, &std::free);
    };
    auto src = alloc();
    auto dst = alloc();
    std::uint32_t x = 0x9E3779B9u;
    for (std::size_t i = 0; i < o.max_bytes; ++i) {
        x = x * 1664525u + 1013904223u;  // any bytes will do; not all zero
        src.get()[i] = static_cast<std::uint8_t>(x >> 24);
    }
    std::memset(dst.get(), 0, o.max_bytes);

    for (std::size_t n = o.min_bytes; n <= o.max_bytes; n *= o.factor) {
        const Buffers b{src.get(), dst.get(), n};
        std::printf("size=%zu", n);
        for (const Op& op : kOps) {
            const double s = seconds_per_call(op.fn, b, o.budget_s);
            std::printf(" %s_MBps=%.1f", op.name, static_cast<double>(n) / s / 1e6);
        }
        std::printf(" hw=%d isal=%d\n", common::crc32c_hw_available() ? 1 : 0,
                    common::crc32c_lib_available() ? 1 : 0);
        std::fflush(stdout);
    }
    return 0;
}
