#include "param_parse.hpp"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <system_error>

namespace plugin::common {

namespace {

constexpr bool is_blank(char c) noexcept {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

std::string_view trim(std::string_view s) noexcept {
    while (!s.empty() && is_blank(s.front()))
        s.remove_prefix(1);
    while (!s.empty() && is_blank(s.back()))
        s.remove_suffix(1);
    return s;
}

constexpr char lower(char c) noexcept {
    return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

bool iequals(std::string_view a, std::string_view b) noexcept {
    if (a.size() != b.size())
        return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
        if (lower(a[i]) != lower(b[i]))
            return false;
    }
    return true;
}

int digit_value(char c, int base) noexcept {
    int d = 99;
    if (c >= '0' && c <= '9')
        d = c - '0';
    else if (base == 16 && lower(c) >= 'a' && lower(c) <= 'f')
        d = lower(c) - 'a' + 10;
    return d < base ? d : -1;
}

// An integer's magnitude and sign: digits (decimal or 0x-hex) and an optional
// K/M/G suffix. Empty reason on success.
struct Magnitude {
    bool negative = false;
    unsigned long long value = 0;
    std::string reason;
};

Magnitude parse_magnitude(std::string_view s) {
    Magnitude m;
    if (!s.empty() && (s.front() == '-' || s.front() == '+')) {
        m.negative = s.front() == '-';
        s.remove_prefix(1);
    }
    int base = 10;
    if (s.size() > 2 && s[0] == '0' && lower(s[1]) == 'x') {
        base = 16;
        s.remove_prefix(2);
    }
    std::size_t i = 0;
    bool overflow = false;
    constexpr auto kMax = std::numeric_limits<unsigned long long>::max();
    for (; i < s.size(); ++i) {
        const int d = digit_value(s[i], base);
        if (d < 0)
            break;
        const auto ud = static_cast<unsigned long long>(d);
        if (m.value > (kMax - ud) / static_cast<unsigned long long>(base))
            overflow = true;
        else
            m.value = m.value * static_cast<unsigned long long>(base) + ud;
    }
    if (i == 0) {
        m.reason = "not a number";
        return m;
    }
    s.remove_prefix(i);
    if (s.size() == 1) {
        int shift = 0;
        switch (lower(s.front())) {
            case 'k':
                shift = 10;
                break;
            case 'm':
                shift = 20;
                break;
            case 'g':
                shift = 30;
                break;
            default:
                break;
        }
        if (shift != 0) {
            if (m.value > (kMax >> shift))
                overflow = true;
            else
                m.value <<= shift;
            s.remove_prefix(1);
        }
    }
    if (!s.empty()) {
        m.reason = "not an integer";
        return m;
    }
    if (overflow)
        m.reason = "too large";
    return m;
}

std::string range_reason(long long lo, unsigned long long hi) {
    return "out of range (" + std::to_string(lo) + ".." + std::to_string(hi) + ")";
}

void parse_unsigned(ParamParse& out, std::string_view s, unsigned long long max) {
    Magnitude m = parse_magnitude(s);
    if (!m.reason.empty()) {
        out.reason = m.reason == "too large" ? range_reason(0, max) : m.reason;
        return;
    }
    if (m.negative && m.value != 0) {
        out.reason = "negative; must be 0.." + std::to_string(max);
        return;
    }
    if (m.value > max) {
        out.reason = range_reason(0, max);
        return;
    }
    out.value.size = m.value;
    out.ok = true;
}

void parse_int(ParamParse& out, std::string_view s) {
    constexpr long long kLo = std::numeric_limits<std::int32_t>::min();
    constexpr long long kHi = std::numeric_limits<std::int32_t>::max();
    Magnitude m = parse_magnitude(s);
    if (!m.reason.empty()) {
        out.reason = m.reason == "too large" ? range_reason(kLo, kHi) : m.reason;
        return;
    }
    const unsigned long long limit = m.negative ? static_cast<unsigned long long>(kHi) + 1
                                                : static_cast<unsigned long long>(kHi);
    if (m.value > limit) {
        out.reason = range_reason(kLo, kHi);
        return;
    }
    out.value.integer =
        m.negative ? -static_cast<long long>(m.value) : static_cast<long long>(m.value);
    out.ok = true;
}

void parse_double(ParamParse& out, std::string_view s, ParamRange range) {
    if (!s.empty() && s.front() == '+')
        s.remove_prefix(1);
    double v = 0.0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec == std::errc::result_out_of_range) {
        out.reason = "out of range";
        return;
    }
    if (ec != std::errc{} || end != s.data() + s.size()) {
        out.reason = "not a number";
        return;
    }
    if (!std::isfinite(v)) {
        out.reason = "not a finite number";
        return;
    }
    if (range == ParamRange::Probability && !(v >= 0.0 && v < 1.0)) {
        out.reason = "a fault probability must be at least 0 and below 1";
        return;
    }
    out.value.real = v;
    out.ok = true;
}

void parse_bool(ParamParse& out, std::string_view s) {
    static constexpr std::string_view kTrue[] = {"true", "yes", "on", "enabled", "1", "t", "y"};
    static constexpr std::string_view kFalse[] = {"false", "no", "off", "disabled", "0", "f", "n"};
    for (std::string_view t : kTrue) {
        if (iequals(s, t)) {
            out.value.flag = true;
            out.ok = true;
            return;
        }
    }
    for (std::string_view f : kFalse) {
        if (iequals(s, f)) {
            out.value.flag = false;
            out.ok = true;
            return;
        }
    }
    out.reason = "not a boolean (true/false, yes/no, on/off, 1/0)";
}

void parse_enum(ParamParse& out, std::string_view s, const ParamEnumValue* values) {
    if (values != nullptr) {
        for (const ParamEnumValue* v = values; v->name != nullptr; ++v) {
            if (iequals(s, v->name)) {
                out.value.integer = v->value;
                out.ok = true;
                return;
            }
        }
        ParamParse number;
        parse_int(number, s);
        if (number.ok) {
            for (const ParamEnumValue* v = values; v->name != nullptr; ++v) {
                if (v->value == number.value.integer) {
                    out.value.integer = v->value;
                    out.ok = true;
                    return;
                }
            }
        }
    }
    out.reason = "must be one of: " + enum_names(values);
}

}  // namespace

ParamParse parse_param(ParamKind kind, std::string_view text, const ParamEnumValue* enum_values,
                       ParamRange range) {
    ParamParse out;
    const std::string_view s = trim(text);
    if (s.empty()) {
        out.reason = "empty";
        return out;
    }
    switch (kind) {
        case ParamKind::Int:
            parse_int(out, s);
            break;
        case ParamKind::Unsigned:
            parse_unsigned(out, s, std::numeric_limits<std::uint32_t>::max());
            break;
        case ParamKind::SizeT:
            parse_unsigned(out, s, std::numeric_limits<std::size_t>::max());
            break;
        case ParamKind::Bool:
            parse_bool(out, s);
            break;
        case ParamKind::Double:
            parse_double(out, s, range);
            break;
        case ParamKind::Enum:
            parse_enum(out, s, enum_values);
            break;
    }
    return out;
}

std::string format_param(ParamKind kind, const ParamValue& value,
                         const ParamEnumValue* enum_values) {
    switch (kind) {
        case ParamKind::Int:
            return std::to_string(value.integer);
        case ParamKind::Unsigned:
        case ParamKind::SizeT:
            return std::to_string(value.size);
        case ParamKind::Bool:
            return value.flag ? "true" : "false";
        case ParamKind::Double: {
            char buf[64];
            const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value.real);
            return ec == std::errc{} ? std::string(buf, end) : std::string("0");
        }
        case ParamKind::Enum:
            if (enum_values != nullptr) {
                for (const ParamEnumValue* v = enum_values; v->name != nullptr; ++v) {
                    if (v->value == value.integer)
                        return v->name;
                }
            }
            return std::to_string(value.integer);
    }
    return {};
}

std::string bad_param_message(std::string_view full_name, std::string_view text,
                              std::string_view reason) {
    std::string m = "invalid value for MCA parameter ";
    m += full_name;
    m += ": \"";
    m += text;
    m += "\" (";
    m += reason;
    m += ')';
    return m;
}

std::string enum_names(const ParamEnumValue* enum_values) {
    std::string names;
    if (enum_values == nullptr)
        return names;
    for (const ParamEnumValue* v = enum_values; v->name != nullptr; ++v) {
        if (!names.empty())
            names += ", ";
        names += v->name;
    }
    return names;
}

}  // namespace plugin::common
