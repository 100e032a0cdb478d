// The small functions of the op vocabulary (mt/op_types.h).
#include "mt/op_types.h"

namespace mt::ops {

const char* unary_op_name(UnaryOp op) {
    switch (op) {
        case UnaryOp::gelu:
            return "gelu";
        case UnaryOp::gelu_erf:
            return "gelu_erf";
        case UnaryOp::silu:
            return "silu";
        case UnaryOp::relu:
            return "relu";
        case UnaryOp::squared_relu:
            return "squared_relu";
        case UnaryOp::exp:
            return "exp";
        case UnaryOp::log:
            return "log";
    }
    return "unknown";
}

uint64_t attention_dropout_counters(const Tensor& q) {
    MT_CHECK(q.dim() == 4, "attention_dropout_counters: q must be (B, T, nq, hd), got ",
             q.describe());
    return uint64_t(q.size(0) * q.size(2) * q.size(1) * q.size(1));
}

}  // namespace mt::ops
