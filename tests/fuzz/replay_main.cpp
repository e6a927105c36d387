// Replay driver for the fuzz targets where there is no libFuzzer (g++): runs
// a seed corpus, then seeded pseudo-random mutations of it, through the
// target's LLVMFuzzerTestOneInput. Linked into one fuzz_<target>_replay per
// target; meson runs each as a unit test.
//
//   fuzz_<target>_replay [options] PATH...
//
// PATH: a corpus directory (its regular files, in name order) or one input
// file (a crash file from libFuzzer, or one written by --dump). Every file
// is run whole and truncated to every shorter length; then --iterations
// mutants of those files are run. Mutant I depends only on (seed, I), so a
// failure replays alone:
//
//   --iterations N   mutants to run (default FUZZ_REPLAY_ITERATIONS, set by
//                    meson; env FUZZ_ITERATIONS)
//   --seed S         mutation seed, a number or "random" (default 1; env FUZZ_SEED)
//   --only I         run mutant I only (not the files themselves)
//   --dump FILE      with --only: also write that mutant to FILE
//   --max-len L      longest mutant in bytes (default 4096)
//
// A crash, a sanitizer report or a property failure (the target calls
// abort()) prints which input was running, the command that replays it and
// its bytes in hex.
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#ifndef FUZZ_REPLAY_ITERATIONS
#define FUZZ_REPLAY_ITERATIONS 20000
#endif

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

// Present only when a sanitizer runtime is linked (scripts/sanitize): it
// reports an error and exits without raising a signal.
extern "C" __attribute__((weak)) void __sanitizer_set_death_callback(void (*callback)());

namespace {

namespace fs = std::filesystem;

struct Seed {
    std::string name;
    std::vector<std::uint8_t> bytes;
};

// splitmix64: tiny, fast and good enough to pick mutations.
class Rng {
  public:
    Rng(std::uint64_t seed, std::uint64_t stream) : s_(mix(seed) ^ mix(~stream)) {}
    std::uint64_t next() { return mix(s_ += 0x9E3779B97F4A7C15u); }
    std::size_t below(std::size_t n) { return n == 0 ? 0 : static_cast<std::size_t>(next() % n); }
    bool one_in(std::size_t n) { return below(n) == 0; }

  private:
    static std::uint64_t mix(std::uint64_t z) {
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
        return z ^ (z >> 31);
    }
    std::uint64_t s_;
};

// ------------------------------------------------------------ failure report
// What is running, for the signal handler. Filled before every input.
struct Current {
    const char* file = nullptr;  // a corpus file, or nullptr for a mutant
    std::size_t prefix = 0;      // of the file: its first `prefix` bytes
    std::size_t file_size = 0;
    std::uint64_t seed = 0;  // of the mutant
    std::uint64_t iteration = 0;
    const std::uint8_t* data = nullptr;
    std::size_t size = 0;
};
Current g_current;
std::string g_replay_prefix;  // "<argv0> --seed S --only "
std::string g_replay_suffix;  // " <paths...>"
volatile sig_atomic_t g_reported = 0;

// Async-signal-safe output: write(2) only, no allocation.
void out(std::string_view s) {
    while (!s.empty()) {
        const ssize_t n = ::write(STDERR_FILENO, s.data(), s.size());
        if (n <= 0)
            return;
        s.remove_prefix(static_cast<std::size_t>(n));
    }
}
void out_u64(std::uint64_t v) {
    char buf[24];
    std::size_t i = sizeof buf;
    do {
        buf[--i] = static_cast<char>('0' + v % 10);
        v /= 10;
    } while (v != 0);
    out(std::string_view(buf + i, sizeof buf - i));
}

void report_current() {
    if (g_reported != 0 || g_current.data == nullptr)
        return;
    g_reported = 1;
    out("\n==== fuzz replay: this input failed ====\n");
    if (g_current.file != nullptr) {
        out("corpus file ");
        out(g_current.file);
        out(" truncated to ");
        out_u64(g_current.prefix);
        out(" of ");
        out_u64(g_current.file_size);
        out(" bytes\n");
    } else {
        out("mutant ");
        out_u64(g_current.iteration);
        out(" of seed ");
        out_u64(g_current.seed);
        out("; replay it (add --dump FILE to save it) with:\n  ");
        out(g_replay_prefix);
        out_u64(g_current.iteration);
        out(g_replay_suffix);
        out("\n");
    }
    out(std::string_view("size "));
    out_u64(g_current.size);
    out(" bytes:");
    static constexpr char kHex[] = "0123456789abcdef";
    const std::size_t shown = std::min<std::size_t>(g_current.size, 4096);
    for (std::size_t i = 0; i < shown; ++i) {
        if (i % 32 == 0)
            out("\n  ");
        const char b[2] = {kHex[g_current.data[i] >> 4], kHex[g_current.data[i] & 15]};
        out(std::string_view(b, 2));
    }
    out(shown < g_current.size ? "\n  ...\n" : "\n");
}

void on_signal(int sig) {
    report_current();
    ::signal(sig, SIG_DFL);
    ::raise(sig);
}

void install_reporters() {
    for (int sig : {SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL})
        ::signal(sig, on_signal);
    if (__sanitizer_set_death_callback != nullptr)
        __sanitizer_set_death_callback(report_current);
}

// ------------------------------------------------------------ running
// Each input in a heap block of exactly its size, so that a sanitizer build
// catches a read one byte past the end.
void run_one(std::span<const std::uint8_t> bytes) {
    std::unique_ptr<std::uint8_t[]> copy(new std::uint8_t[bytes.size()]);
    std::copy(bytes.begin(), bytes.end(), copy.get());
    g_current.data = copy.get();
    g_current.size = bytes.size();
    (void)LLVMFuzzerTestOneInput(copy.get(), bytes.size());
    g_current.data = nullptr;
}

// ------------------------------------------------------------ mutation
template <std::size_t N>
std::uint64_t pick(Rng& rng, const std::array<std::uint64_t, N>& values) {
    return values[rng.below(N)];
}

void put_be(std::vector<std::uint8_t>& v, std::size_t at, std::size_t width, std::uint64_t x) {
    for (std::size_t i = 0; i < width && at + i < v.size(); ++i)
        v[at + i] = static_cast<std::uint8_t>(x >> (8 * (width - 1 - i)));
}
std::uint64_t get_be(const std::vector<std::uint8_t>& v, std::size_t at, std::size_t width) {
    std::uint64_t x = 0;
    for (std::size_t i = 0; i < width; ++i)
        x = (x << 8) | (at + i < v.size() ? v[at + i] : 0u);
    return x;
}

// One edit of the kinds that find codec bugs: bit flips, boundary values in
// integer fields, lengths near the input size, and bytes inserted, removed,
// duplicated or spliced in from another seed.
void mutate_once(std::vector<std::uint8_t>& v, const std::vector<Seed>& seeds, Rng& rng,
                 std::size_t max_len) {
    static constexpr std::array<std::uint64_t, 6> kInteresting8 = {0, 1, 0x7f, 0x80, 0xfe, 0xff};
    static constexpr std::array<std::uint64_t, 10> kInteresting = {
        0, 1, 2, 0x7f, 0x80, 0xff, 0x7fffffffffffffff, 0x8000000000000000, ~0ull, ~0ull - 1};
    const std::size_t at = rng.below(v.size() + 1);
    const std::size_t width = std::size_t{1} << rng.below(4);  // 1, 2, 4 or 8 bytes
    const auto& other = seeds[rng.below(seeds.size())].bytes;
    switch (rng.below(12)) {
        case 0:  // flip one bit
            if (!v.empty())
                v[rng.below(v.size())] ^= static_cast<std::uint8_t>(1u << rng.below(8));
            break;
        case 1:  // a random byte
            if (!v.empty())
                v[rng.below(v.size())] = static_cast<std::uint8_t>(rng.next());
            break;
        case 2:  // a boundary byte
            if (!v.empty())
                v[rng.below(v.size())] = static_cast<std::uint8_t>(pick(rng, kInteresting8));
            break;
        case 3: {  // a boundary value in a big-endian field, truncated to its width
            std::uint64_t x = pick(rng, kInteresting);
            if (width < 8 && rng.one_in(2))
                x >>= 64 - 8 * width;  // the field's own max / half-max
            put_be(v, at, width, x);
            break;
        }
        case 4: {  // small arithmetic on a big-endian field
            const auto delta = static_cast<std::uint64_t>(1 + rng.below(35));
            const std::uint64_t x = get_be(v, at, width);
            put_be(v, at, width, rng.one_in(2) ? x + delta : x - delta);
            break;
        }
        case 5: {  // a length near the size of the input (or of what follows)
            const std::uint64_t base = rng.one_in(2) ? v.size() : v.size() - std::min(at, v.size());
            put_be(v, at, width, base + rng.below(9) - 4);
            break;
        }
        case 6: {  // insert random bytes
            const std::size_t n = 1 + rng.below(rng.one_in(4) ? 64 : 8);
            std::vector<std::uint8_t> ins(n);
            for (auto& b : ins)
                b = static_cast<std::uint8_t>(rng.next());
            v.insert(v.begin() + static_cast<std::ptrdiff_t>(at), ins.begin(), ins.end());
            break;
        }
        case 7: {  // erase a range
            const std::size_t n = std::min(v.size() - at, 1 + rng.below(16));
            v.erase(v.begin() + static_cast<std::ptrdiff_t>(at),
                    v.begin() + static_cast<std::ptrdiff_t>(at + n));
            break;
        }
        case 8: {  // duplicate a range of this input somewhere else
            if (v.empty())
                break;
            const std::size_t from = rng.below(v.size());
            const std::size_t n = 1 + rng.below(v.size() - from);
            const std::vector<std::uint8_t> piece(
                v.begin() + static_cast<std::ptrdiff_t>(from),
                v.begin() + static_cast<std::ptrdiff_t>(from + n));
            v.insert(v.begin() + static_cast<std::ptrdiff_t>(at), piece.begin(), piece.end());
            break;
        }
        case 9:  // truncate
            v.resize(rng.below(v.size() + 1));
            break;
        case 10: {  // splice: keep a head of this input, append a tail of another seed
            const std::size_t from = rng.below(other.size() + 1);
            v.resize(at);
            v.insert(v.end(), other.begin() + static_cast<std::ptrdiff_t>(from), other.end());
            break;
        }
        case 11: {  // overwrite with a piece of another seed (same offset: fields line up)
            if (other.empty())
                break;
            const std::size_t from = rng.below(other.size());
            const std::size_t n = 1 + rng.below(other.size() - from);
            if (v.size() < from + n)
                v.resize(from + n);
            std::copy_n(other.begin() + static_cast<std::ptrdiff_t>(from), n,
                        v.begin() + static_cast<std::ptrdiff_t>(from));
            break;
        }
        default:
            break;
    }
    if (v.size() > max_len)
        v.resize(max_len);
}

std::vector<std::uint8_t> make_mutant(const std::vector<Seed>& seeds, std::uint64_t seed,
                                      std::uint64_t iteration, std::size_t max_len) {
    Rng rng(seed, iteration);
    std::vector<std::uint8_t> v = seeds[rng.below(seeds.size())].bytes;
    // Mostly few edits (near-valid inputs get deep into a decoder), some many.
    const std::size_t edits = rng.one_in(8) ? 1 + rng.below(32) : 1 + rng.below(4);
    for (std::size_t i = 0; i < edits; ++i)
        mutate_once(v, seeds, rng, max_len);
    return v;
}

// ------------------------------------------------------------ command line
[[noreturn]] void usage_error(const char* argv0, const std::string& why) {
    std::fprintf(stderr,
                 "%s: %s\nusage: %s [--iterations N] [--seed S|random] [--only I [--dump FILE]] "
                 "[--max-len L] PATH...\n",
                 argv0, why.c_str(), argv0);
    std::exit(2);
}

std::optional<std::uint64_t> parse_u64(const char* s) {
    if (s == nullptr || *s == '\0')
        return std::nullopt;
    char* end = nullptr;
    errno = 0;
    const unsigned long long v = std::strtoull(s, &end, 0);
    if (errno != 0 || *end != '\0' || *s == '-')
        return std::nullopt;
    return v;
}

std::vector<std::uint8_t> read_file(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::vector<Seed> load(const std::vector<std::string>& paths, const char* argv0) {
    std::vector<Seed> seeds;
    for (const auto& path : paths) {
        std::error_code ec;
        if (fs::is_directory(path, ec)) {
            std::vector<fs::path> files;
            for (const auto& e : fs::directory_iterator(path, ec))
                if (e.is_regular_file())
                    files.push_back(e.path());
            std::sort(files.begin(), files.end());
            for (const auto& f : files)
                seeds.push_back({f.string(), read_file(f)});
        } else if (fs::is_regular_file(path, ec)) {
            seeds.push_back({path, read_file(path)});
        } else {
            usage_error(argv0, "no such file or directory: " + path);
        }
    }
    // An empty corpus would make this test pass without testing anything.
    if (seeds.empty())
        usage_error(argv0, "no input files");
    return seeds;
}

}  // namespace

int main(int argc, char** argv) {
    const char* argv0 = argv[0];
    std::uint64_t iterations = FUZZ_REPLAY_ITERATIONS;
    std::uint64_t seed = 1;
    bool random_seed = false;
    std::optional<std::uint64_t> only;
    const char* dump = nullptr;
    std::size_t max_len = 4096;
    std::vector<std::string> paths;

    const auto seed_from = [&](const char* s) {
        if (std::strcmp(s, "random") == 0) {
            random_seed = true;
            return;
        }
        const auto v = parse_u64(s);
        if (!v)
            usage_error(argv0, std::string("bad seed: ") + s);
        seed = *v;
    };
    if (const char* e = std::getenv("FUZZ_ITERATIONS"); e != nullptr && *e != '\0') {
        const auto v = parse_u64(e);
        if (!v)
            usage_error(argv0, "bad FUZZ_ITERATIONS");
        iterations = *v;
    }
    if (const char* e = std::getenv("FUZZ_SEED"); e != nullptr && *e != '\0')
        seed_from(e);
    for (int i = 1; i < argc; ++i) {
        const std::string_view a = argv[i];
        const auto value = [&]() -> const char* {
            if (i + 1 >= argc)
                usage_error(argv0, std::string(a) + " needs a value");
            return argv[++i];
        };
        const auto number = [&]() {
            const char* s = value();
            const auto v = parse_u64(s);
            if (!v)
                usage_error(argv0, std::string("bad number for ") + std::string(a) + ": " + s);
            return *v;
        };
        if (a == "--iterations") {
            iterations = number();
        } else if (a == "--seed") {
            random_seed = false;
            seed_from(value());
        } else if (a == "--only") {
            only = number();
        } else if (a == "--dump") {
            dump = value();
        } else if (a == "--max-len") {
            max_len = static_cast<std::size_t>(number());
        } else if (a.starts_with("-")) {
            usage_error(argv0, "unknown option " + std::string(a));
        } else {
            paths.emplace_back(a);
        }
    }
    if (paths.empty())
        usage_error(argv0, "no corpus given");
    if (dump != nullptr && !only)
        usage_error(argv0, "--dump needs --only");
    if (random_seed)
        seed = static_cast<std::uint64_t>(
                   std::chrono::steady_clock::now().time_since_epoch().count()) ^
               static_cast<std::uint64_t>(::getpid());

    const std::vector<Seed> seeds = load(paths, argv0);
    g_replay_prefix = std::string(argv0) + " --seed " + std::to_string(seed) + " --max-len " +
                      std::to_string(max_len) + " --only ";
    for (const auto& p : paths)
        g_replay_suffix += " " + p;
    install_reporters();

    if (only) {
        const auto v = make_mutant(seeds, seed, *only, max_len);
        if (dump != nullptr) {
            std::ofstream f(dump, std::ios::binary);
            f.write(reinterpret_cast<const char*>(v.data()),
                    static_cast<std::streamsize>(v.size()));
            if (!f)
                usage_error(argv0, std::string("cannot write ") + dump);
        }
        g_current = Current{nullptr, 0, 0, seed, *only, nullptr, 0};
        run_one(v);
        std::printf("mutant %llu of seed %llu (%zu bytes): ok\n",
                    static_cast<unsigned long long>(*only), static_cast<unsigned long long>(seed),
                    v.size());
        return 0;
    }

    const auto start = std::chrono::steady_clock::now();
    std::size_t runs = 0;
    for (const auto& s : seeds) {
        // The whole file, then every truncation of it.
        for (std::size_t n = s.bytes.size() + 1; n-- > 0;) {
            g_current = Current{s.name.c_str(), n, s.bytes.size(), 0, 0, nullptr, 0};
            run_one(std::span(s.bytes).first(n));
            ++runs;
        }
    }
    for (std::uint64_t i = 0; i < iterations; ++i) {
        const auto v = make_mutant(seeds, seed, i, max_len);
        g_current = Current{nullptr, 0, 0, seed, i, nullptr, 0};
        run_one(v);
    }
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                        std::chrono::steady_clock::now() - start)
                        .count();
    std::printf(
        "%s: %zu corpus files (%zu runs with truncations), %llu mutants of seed %llu: ok "
        "in %lld ms\n",
        fs::path(argv0).filename().c_str(), seeds.size(), runs,
        static_cast<unsigned long long>(iterations), static_cast<unsigned long long>(seed),
        static_cast<long long>(ms));
    return 0;
}
