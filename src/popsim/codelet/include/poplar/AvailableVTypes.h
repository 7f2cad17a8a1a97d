// <poplar/AvailableVTypes.h> for Poplar codelets on the host. On the IPU it says which
// compact vector layouts the target supports; popsim stores every field as a full
// pointer and count, so it advertises none and codelets fall back to their portable
// layouts (ONE_PTR, SPAN, DELTANELEMENTS).
#ifndef POPSIM_POPLAR_AVAILABLEVTYPES_H
#define POPSIM_POPLAR_AVAILABLEVTYPES_H

#include <poplar/VectorLayout.hpp>

#endif  // POPSIM_POPLAR_AVAILABLEVTYPES_H
