// A codelet including a header that does not exist (line 3).
#include <poplar/Vertex.hpp>
#include "no_such_header.hpp"

class Nothing : public poplar::Vertex {
public:
  bool compute() { return true; }
};
