#include "mt/text/replace_all.h"

namespace mt::text {

void replace_all(std::string& s, std::string_view from, std::string_view to) {
    if (from.empty() || s.find(from) == std::string::npos) return;
    std::string out;
    out.reserve(s.size() + to.size());
    size_t at = 0;
    for (size_t hit; (hit = s.find(from, at)) != std::string::npos; at = hit + from.size()) {
        out.append(s, at, hit - at);
        out.append(to);
    }
    out.append(s, at, std::string::npos);
    s = std::move(out);
}

}  // namespace mt::text
