#include "mt/dtype.h"

#include "mt/error.h"

namespace mt {

int64_t dtype_size(DType dtype) {
    switch (dtype) {
        case DType::f64:
        case DType::i64:
            return 8;
        case DType::f32:
        case DType::i32:
            return 4;
        case DType::f16:
        case DType::bf16:
        case DType::i16:
        case DType::u16:
            return 2;
        case DType::i8:
        case DType::u8:
        case DType::boolean:
            return 1;
    }
    MT_FAIL("unknown dtype ", static_cast<int>(dtype));
}

std::string_view dtype_name(DType dtype) {
    switch (dtype) {
        case DType::f32:
            return "f32";
        case DType::f64:
            return "f64";
        case DType::f16:
            return "f16";
        case DType::bf16:
            return "bf16";
        case DType::i8:
            return "i8";
        case DType::i16:
            return "i16";
        case DType::i32:
            return "i32";
        case DType::i64:
            return "i64";
        case DType::u8:
            return "u8";
        case DType::u16:
            return "u16";
        case DType::boolean:
            return "bool";
    }
    return "?";
}

}  // namespace mt
