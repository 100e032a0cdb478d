// Argument checks shared by the CPU ops.
#include "op_support.h"

namespace mt::cpu::detail {

void check_f32(const char* op, const char* name, const Tensor& x) {
    MT_CHECK(x.defined(), op, ": ", name, " is undefined");
    MT_CHECK(x.dtype() == DType::f32, op, ": ", name, " must be f32, got ", x.describe());
    MT_CHECK(x.device().type == DeviceType::cpu, op, ": ", name, " must be on the CPU, got ",
             x.describe());
    MT_CHECK(x.is_contiguous(), op, ": ", name, " must be contiguous, got ", x.describe());
}

void check_f32_shape(const char* op, const char* name, const Tensor& x, const Shape& shape) {
    check_f32(op, name, x);
    MT_CHECK(x.shape() == shape, op, ": ", name, " must have shape ", shape_str(shape), ", got ",
             x.describe());
}

void check_float(const char* op, const char* name, const Tensor& x) {
    MT_CHECK(x.defined(), op, ": ", name, " is undefined");
    MT_CHECK(x.dtype() == DType::f32 || x.dtype() == DType::f64, op, ": ", name,
             " must be f32 or f64, got ", x.describe());
    MT_CHECK(x.device().type == DeviceType::cpu, op, ": ", name, " must be on the CPU, got ",
             x.describe());
    MT_CHECK(x.is_contiguous(), op, ": ", name, " must be contiguous, got ", x.describe());
}

void check_float_shape(const char* op, const char* name, const Tensor& x, const Shape& shape,
                       DType dtype) {
    check_float(op, name, x);
    MT_CHECK(x.dtype() == dtype, op, ": ", name, " must be ", dtype_name(dtype), ", got ",
             x.describe());
    MT_CHECK(x.shape() == shape, op, ": ", name, " must have shape ", shape_str(shape), ", got ",
             x.describe());
}

void check_any_float(const char* op, const char* name, const Tensor& x) {
    MT_CHECK(x.defined(), op, ": ", name, " is undefined");
    const DType d = x.dtype();
    MT_CHECK(d == DType::f32 || d == DType::f64 || d == DType::bf16 || d == DType::f16, op, ": ",
             name, " must be a float tensor, got ", x.describe());
    MT_CHECK(x.device().type == DeviceType::cpu && x.is_contiguous(), op, ": ", name,
             " must be a contiguous CPU tensor, got ", x.describe());
}

void check_float_or_bf16(const char* op, const char* name, const Tensor& x) {
    MT_CHECK(x.defined(), op, ": ", name, " is undefined");
    const DType d = x.dtype();
    MT_CHECK(d == DType::f32 || d == DType::f64 || d == DType::bf16, op, ": ", name,
             " must be f32, f64 or bf16, got ", x.describe());
    MT_CHECK(x.device().type == DeviceType::cpu && x.is_contiguous(), op, ": ", name,
             " must be a contiguous CPU tensor, got ", x.describe());
}

void check_float_or_bf16_shape(const char* op, const char* name, const Tensor& x,
                               const Shape& shape, DType dtype) {
    check_float_or_bf16(op, name, x);
    MT_CHECK(x.dtype() == dtype, op, ": ", name, " must be ", dtype_name(dtype), ", got ",
             x.describe());
    MT_CHECK(x.shape() == shape, op, ": ", name, " must have shape ", shape_str(shape), ", got ",
             x.describe());
}

Shape leading_shape(const Tensor& x) {
    return Shape(x.shape().begin(), x.shape().end() - 1);
}

}  // namespace mt::cpu::detail
