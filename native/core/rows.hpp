// Rows<T>: a table the core reads, in its own storage or in memory lent to it.
//
// Building an engine from a big executable (80,000 vertices, 230,000 fields) would
// otherwise copy every table the lowering handed over; the binding instead lends the
// core the memory of read-only numpy arrays it keeps alive for the machine's lifetime
// (native/binding/description.cpp). The core itself only reads a table, so it neither
// knows nor cares which kind it has.
#pragma once
#include <cstddef>
#include <stdexcept>
#include <utility>
#include <vector>

namespace popsim {

template <typename T>
class Rows {
 public:
  using value_type = T;

  Rows() = default;
  Rows(std::vector<T> own) : own_(std::move(own)), data_(own_.data()), size_(own_.size()) {}  // NOLINT: a vector is a table
  // `n` rows at `data`, which must stay valid and unchanged while any copy of this reads them.
  static Rows lend(const T *data, size_t n) {
    Rows r;
    r.data_ = data;
    r.size_ = n;
    return r;
  }

  Rows(const Rows &other) : own_(other.own_), data_(other.owns() ? own_.data() : other.data_), size_(other.size_) {}
  Rows(Rows &&other) noexcept : size_(other.size_) {
    const bool owned = other.owns();
    own_ = std::move(other.own_);  // the vector's buffer moves with it
    data_ = owned ? own_.data() : other.data_;
    other.data_ = nullptr;
    other.size_ = 0;
  }
  Rows &operator=(Rows other) noexcept {
    const bool owned = other.owns();
    own_ = std::move(other.own_);
    data_ = owned ? own_.data() : other.data_;
    size_ = other.size_;
    return *this;
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const T *data() const { return data_; }
  const T *begin() const { return data_; }
  const T *end() const { return data_ + size_; }
  const T &operator[](size_t i) const { return data_[i]; }
  const T &at(size_t i) const {
    if (i >= size_) throw std::out_of_range("Rows::at");
    return data_[i];
  }
  bool lent() const { return size_ && !owns(); }

 private:
  bool owns() const { return !own_.empty(); }
  std::vector<T> own_;
  const T *data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace popsim
