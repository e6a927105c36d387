// Strict parsing of MCA parameter text (sans I/O).
//
// Open MPI's own parsing reads junk as 0 ("abc" -> 0, "1.5x" -> 1.5, an
// integer that overflows -> all ones), so the glue registers every parameter
// as a string and parses it here: whatever does not parse completely is an
// error that names the parameter and the value, never a silent default.
#pragma once
#include <string>
#include <string_view>

namespace plugin::common {

enum class ParamKind { Int, Unsigned, SizeT, Bool, Double, Enum };

// Extra bounds a kind alone does not express.
enum class ParamRange {
    Any,
    Probability,  // a fault probability: 0 <= p < 1 (1 would lose every frame: a hang)
};

// Enum-valued parameters (e.g. csum=auto|always|never) take a list ending in
// {0, nullptr}. Same layout as Open MPI's mca_base_var_enum_value_t.
struct ParamEnumValue {
    int value;
    const char* name;
};

// The parsed value; the member for the kind is set (Enum -> integer).
struct ParamValue {
    long long integer = 0;        // Int, Enum
    unsigned long long size = 0;  // Unsigned, SizeT
    double real = 0.0;            // Double
    bool flag = false;            // Bool
};

struct ParamParse {
    bool ok = false;
    ParamValue value;
    std::string reason;  // why not, when !ok (no parameter name, no value)
};

// Parses `text` as `kind`. Leading/trailing blanks are ignored; an empty text
// is an error (a parameter the user set to nothing). Integers are decimal or
// 0x-hex with an optional K/M/G suffix (x1024, as Open MPI reads them);
// Unsigned is 32-bit, SizeT 64-bit, Int a signed 32-bit value. Bool takes
// true/false, yes/no, on/off, enabled/disabled, 1/0. Enum takes a listed name
// (any case) or its number.
ParamParse parse_param(ParamKind kind, std::string_view text,
                       const ParamEnumValue* enum_values = nullptr,
                       ParamRange range = ParamRange::Any);

// The text of a value as the user would type it (the default shown by
// ompi_info): integers in decimal, doubles shortest round-trip, bools
// true/false, enums by name.
std::string format_param(ParamKind kind, const ParamValue& value,
                         const ParamEnumValue* enum_values = nullptr);

// "invalid value for MCA parameter pml_dr_fault_drop: \"abc\" (not a number)".
std::string bad_param_message(std::string_view full_name, std::string_view text,
                              std::string_view reason);

// Names of an enum's values, "auto, always, never".
std::string enum_names(const ParamEnumValue* enum_values);

}  // namespace plugin::common
