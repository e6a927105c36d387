#include "opal_log.hpp"

#include <cstdio>

#include "opal_prelude.hpp"

namespace plugin::common {

void OpalLogSink::open(const char* prefix, int verbosity) noexcept {
    verbosity_ = verbosity;
    std::snprintf(prefix_, sizeof prefix_, "%s", prefix);
    if (stream_ < 0) {
        stream_ = opal_output_open(nullptr);
    }
    opal_output_set_verbosity(stream_, verbosity);
}

void OpalLogSink::close() noexcept {
    if (stream_ >= 0) {
        opal_output_close(stream_);
        stream_ = -1;
    }
}

void OpalLogSink::write(LogLevel level, const char* message) noexcept {
    // Errors always reach stderr (stream 0) even when the component is quiet.
    const int stream = (level == LogLevel::Error || stream_ < 0) ? 0 : stream_;
    opal_output(stream, "[%s] %s", prefix_, message);
}

}  // namespace plugin::common
