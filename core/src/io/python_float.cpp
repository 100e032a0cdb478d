#include "mt/io/python_float.h"

#include <charconv>
#include <cmath>

namespace mt::io {

std::string python_float(double v) {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    char buf[40];
    const double a = std::fabs(v);
    const bool scientific = a != 0 && (a < 1e-4 || a >= 1e16);
    auto r = std::to_chars(buf, buf + sizeof buf, v,
                           scientific ? std::chars_format::scientific : std::chars_format::fixed);
    std::string s(buf, r.ptr);
    if (scientific) {
        const size_t e = s.find('e');
        std::string exponent = s.substr(e + 1);  // "-5", "+16"
        const char sign = exponent[0] == '-' ? '-' : '+';
        if (exponent[0] == '-' || exponent[0] == '+') exponent.erase(0, 1);
        if (exponent.size() < 2) exponent.insert(0, "0");
        s = s.substr(0, e) + "e" + sign + exponent;
    } else if (s.find('.') == std::string::npos) {
        s += ".0";
    }
    return s;
}

}  // namespace mt::io
