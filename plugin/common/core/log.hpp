// Logging seen from a core: an injected sink, so cores stay free of Open MPI.
// The glue forwards to opal_output with the component's verbosity; tests
// capture or discard.
#pragma once
#include <cstdarg>
#include <cstdio>
#include <string>

namespace plugin::common {

// Verbosity levels shared by every component (the *_verbose MCA parameter).
enum class LogLevel : int { Error = 0, Warn = 10, Info = 20, Debug = 50, Trace = 90 };

class LogSink {
  public:
    virtual ~LogSink() = default;
    [[nodiscard]] virtual bool enabled(LogLevel level) const noexcept = 0;
    virtual void write(LogLevel level, const char* message) noexcept = 0;
};

// Discards everything: the default for cores constructed without a sink.
class NullLogSink final : public LogSink {
  public:
    [[nodiscard]] bool enabled(LogLevel) const noexcept override { return false; }
    void write(LogLevel, const char*) noexcept override {}
    static NullLogSink& instance() noexcept {
        static NullLogSink sink;
        return sink;
    }
};

// printf-style helper; formats only when the level is enabled.
[[gnu::format(printf, 3, 4)]] inline void logf(LogSink& sink, LogLevel level, const char* fmt,
                                               ...) noexcept {
    if (!sink.enabled(level))
        return;
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    sink.write(level, buf);
}

}  // namespace plugin::common
