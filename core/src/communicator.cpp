// What every Communicator shares whatever its transport: all_to_all with equal parts, stated
// once on top of the counted form each communicator implements.
#include <vector>

#include "mt/communicator.h"

namespace mt {

void Communicator::all_to_all(const Tensor& in, Tensor& out) {
    const int n = size();
    MT_CHECK(in.dim() >= 1 && out.dim() >= 1, "all_to_all: tensors need a dimension to split, got ",
             in.describe(), " and ", out.describe());
    MT_CHECK(in.size(0) % n == 0 && out.size(0) % n == 0, "all_to_all: ", in.describe(), " and ",
             out.describe(), " do not split into ", n, " equal dim-0 blocks");
    std::vector<int64_t> send_rows(n, in.size(0) / n), recv_rows(n, out.size(0) / n);
    all_to_all(in, send_rows, out, recv_rows);
}

}  // namespace mt
