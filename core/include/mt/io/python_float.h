// Python's repr of a float (what print() and json.dumps write): the shortest string that reads
// back to the same double, "1e-05" not "1e-5", "1.0" not "1", "nan", "inf", "-inf".
#pragma once

#include <string>

#include "mt/api.h"

namespace mt::io {

MT_API std::string python_float(double v);

}  // namespace mt::io
