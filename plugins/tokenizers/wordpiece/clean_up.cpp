#include "clean_up.h"

#include <array>
#include <string_view>
#include <utility>

#include "mt/text/replace_all.h"

namespace mt::plugins::wordpiece {

void clean_up_tokenization(std::string& text, CleanUp rules) {
    static constexpr std::array<std::pair<std::string_view, std::string_view>, 11> kRules{{
        {" .", "."},
        {" ?", "?"},
        {" !", "!"},
        {" ,", ","},
        {" ' ", "'"},
        {" n't", "n't"},
        {" 'm", "'m"},
        {" do not", " don't"},  // tokenizers' only
        {" 's", "'s"},
        {" 've", "'ve"},
        {" 're", "'re"},
    }};
    for (const auto& [from, to] : kRules)
        if (rules == CleanUp::kTokenizersWordPiece || from != " do not")
            text::replace_all(text, from, to);
}

}  // namespace mt::plugins::wordpiece
