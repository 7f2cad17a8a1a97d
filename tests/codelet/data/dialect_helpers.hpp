// A codelet file's own header, found next to it (the file's directory is on the include path).
#ifndef DIALECT_HELPERS_HPP
#define DIALECT_HELPERS_HPP

template <typename T> inline T squareOf(T x) { return x * x; }

#endif
