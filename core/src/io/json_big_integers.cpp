#include "mt/io/json_big_integers.h"

namespace mt::io {

void zero_big_json_integers(char* p, size_t n) {
    bool in_string = false;
    for (size_t i = 0; i < n; ++i) {
        if (in_string) {
            if (p[i] == '\\')
                ++i;
            else if (p[i] == '"')
                in_string = false;
        } else if (p[i] == '"') {
            in_string = true;
        } else if (p[i] >= '0' && p[i] <= '9') {
            size_t j = i;
            while (j < n && p[j] >= '0' && p[j] <= '9') ++j;
            if (j - i > 19 && (j == n || (p[j] != '.' && p[j] != 'e' && p[j] != 'E'))) {
                p[i] = '0';
                for (size_t k = i + 1; k < j; ++k) p[k] = ' ';
            }
            i = j - 1;
        }
    }
}

}  // namespace mt::io
