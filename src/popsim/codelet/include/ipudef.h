// <ipudef.h> for Poplar codelets on the host: the IPU's short vector types, as GCC/Clang
// vector extensions (element-wise arithmetic, [] indexing, same size and alignment as on
// the IPU). Half-precision vectors (half2, half4) are not provided: popsim's half is a
// class, which vector extensions cannot hold. No IPU builtins are provided either.
#ifndef POPSIM_IPUDEF_H
#define POPSIM_IPUDEF_H

typedef float float2 __attribute__((vector_size(8)));
typedef float float4 __attribute__((vector_size(16)));
typedef int int2 __attribute__((vector_size(8)));
typedef int int4 __attribute__((vector_size(16)));
typedef unsigned int uint2 __attribute__((vector_size(8)));
typedef unsigned int uint4 __attribute__((vector_size(16)));
typedef short short2 __attribute__((vector_size(4)));
typedef short short4 __attribute__((vector_size(8)));
typedef unsigned short ushort2 __attribute__((vector_size(4)));
typedef unsigned short ushort4 __attribute__((vector_size(8)));

#endif  // POPSIM_IPUDEF_H
