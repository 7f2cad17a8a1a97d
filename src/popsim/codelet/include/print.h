// <print.h> for Poplar codelets on the host: printf debugging from compute().
// On the IPU this is a device printf; here it is the C library's, writing to the
// process's stdout (buffered by C stdio, separately from Python's sys.stdout).
#ifndef POPSIM_PRINT_H
#define POPSIM_PRINT_H

#include <cstdio>

using std::printf;

#endif  // POPSIM_PRINT_H
