// LogSink over opal_output: one stream per component, its verbosity taken
// from the component's <fw>_<name>_verbose MCA parameter.
#pragma once
#include "log.hpp"

namespace plugin::common {

class OpalLogSink final : public LogSink {
  public:
    // prefix is printed before every line, e.g. "pml:dr".
    void open(const char* prefix, int verbosity) noexcept;
    void close() noexcept;
    [[nodiscard]] bool enabled(LogLevel level) const noexcept override {
        return static_cast<int>(level) <= verbosity_;
    }
    void write(LogLevel level, const char* message) noexcept override;
    [[nodiscard]] int stream() const noexcept { return stream_; }

  private:
    int stream_ = -1;
    int verbosity_ = 0;
    char prefix_[32] = {};
};

}  // namespace plugin::common
