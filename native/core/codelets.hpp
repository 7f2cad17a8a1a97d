// Vertex code: the four ABI functions of each vertex type (popsim_codelet.h), found in
// shared libraries with dlopen, or marked as run by the host (interpreted vertices).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "popsim_codelet.h"

namespace popsim {

struct Codelet {
  uint64_t (*size)() = nullptr;
  void (*init)(void *) = nullptr;
  void (*bind)(void *, const popsim_field *) = nullptr;
  int (*compute)(void *, uint32_t, popsim_exec *) = nullptr;
  bool host = false;  // run through the host interface (interpreted Python vertices)
};

class CodeletLibraries {
 public:
  CodeletLibraries() = default;
  ~CodeletLibraries();
  CodeletLibraries(const CodeletLibraries &) = delete;
  CodeletLibraries &operator=(const CodeletLibraries &) = delete;

  // Resolve "path" + "prefix"; an empty path makes a host codelet. Throws std::runtime_error.
  Codelet load(const std::string &path, const std::string &prefix);

 private:
  std::vector<std::pair<std::string, void *>> handles_;
};

}  // namespace popsim
