"""Codelet front ends: Python vertex classes and Poplar C++ codelet files, compiled to
shared libraries with one ABI (include/popsim_codelet.h). Knows types and fields,
never the Engine."""
