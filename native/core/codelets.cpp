#include "core/codelets.hpp"

#include <dlfcn.h>

#include <stdexcept>

namespace popsim {

CodeletLibraries::~CodeletLibraries() {
  for (auto &h : handles_) dlclose(h.second);
}

Codelet CodeletLibraries::load(const std::string &path, const std::string &prefix) {
  Codelet c;
  if (path.empty()) {
    c.host = true;
    return c;
  }
  void *handle = nullptr;
  for (auto &h : handles_)
    if (h.first == path) handle = h.second;
  if (!handle) {
    handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) throw std::runtime_error(std::string("cannot load codelet library ") + path + ": " + dlerror());
    handles_.emplace_back(path, handle);
  }
  auto sym = [&](const char *suffix) {
    const std::string name = prefix + suffix;
    void *p = dlsym(handle, name.c_str());
    if (!p) throw std::runtime_error("codelet library " + path + " has no symbol " + name);
    return p;
  };
  c.size = reinterpret_cast<uint64_t (*)()>(sym("_size"));
  c.init = reinterpret_cast<void (*)(void *)>(sym("_init"));
  c.bind = reinterpret_cast<void (*)(void *, const popsim_field *)>(sym("_bind"));
  c.compute = reinterpret_cast<int (*)(void *, uint32_t, popsim_exec *)>(sym("_compute"));
  return c;
}

}  // namespace popsim
