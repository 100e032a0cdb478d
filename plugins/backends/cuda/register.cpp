#include "register.h"

#include "backend_cuda.h"

namespace mt::plugins::cuda {

void register_cuda(Registry& registry) {
    registry.backends().add("cuda",
                            [](int device_index) { return make_cuda_backend(device_index); });
}

}  // namespace mt::plugins::cuda
