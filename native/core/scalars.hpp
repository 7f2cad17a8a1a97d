// Reading the scalar tensors that steer control flow (If, Switch, RepeatWhile,
// AbortOnCondition predicates) straight out of tile memory.
#pragma once
#include <cstdint>
#include <cstring>

#include "core/executable.hpp"

namespace popsim {

template <typename T>
inline T load_scalar(const uint8_t *p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

// Non-zero test; for floats, both zeros are false (sign bit masked off).
inline bool scalar_is_true(const uint8_t *p, int64_t type) {
  switch (type) {
    case ST_BOOL: case ST_I8: case ST_U8: return load_scalar<uint8_t>(p) != 0;
    case ST_I16: case ST_U16: return load_scalar<uint16_t>(p) != 0;
    case ST_F16: return (load_scalar<uint16_t>(p) & 0x7fffu) != 0;
    case ST_I32: case ST_U32: return load_scalar<uint32_t>(p) != 0;
    case ST_F32: return (load_scalar<uint32_t>(p) & 0x7fffffffu) != 0;
    default: return load_scalar<uint64_t>(p) != 0;
  }
}

inline int64_t scalar_as_int(const uint8_t *p, int64_t type) {
  switch (type) {
    case ST_BOOL: case ST_U8: return load_scalar<uint8_t>(p);
    case ST_I8: return load_scalar<int8_t>(p);
    case ST_I16: return load_scalar<int16_t>(p);
    case ST_U16: return load_scalar<uint16_t>(p);
    case ST_I32: return load_scalar<int32_t>(p);
    case ST_U32: return load_scalar<uint32_t>(p);
    case ST_U64: return static_cast<int64_t>(load_scalar<uint64_t>(p));
    default: return load_scalar<int64_t>(p);
  }
}

}  // namespace popsim
