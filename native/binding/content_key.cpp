// content_key: a 128-bit key of a list of small integer records, and bytes_key: one of a
// byte buffer, for the executable-cache digest (popsim/digest.py). A compute set's
// connections are hundreds of thousands of tuples such as (variable, offset, (n,), (1,));
// reading them here, with no Python object made per item, costs a
// fraction of hashing them one by one in Python.
//
// Items may be ints or tuples whose elements are ints or tuples of ints (all fitting
// int64); anything else makes the result None, and the caller describes such items
// another way. Each item is read as 64-bit tokens that determine it (a tuple's header
// says its length and which of its elements are tuples; a nested tuple's length comes
// before its elements); the tokens' position-dependent mixes sum to the item's key
// (ItemKey), the items' keys go through two 64-bit lanes per chunk of items, and the
// chunks' lanes through two more. Every step is a bijection of what it takes in, so changing any one token always changes the result; other
// differences collide with a probability of about 2^-64 or less. Not a cryptographic
// hash: the cache is the user's own.
#include <pybind11/pybind11.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <system_error>
#include <thread>
#include <vector>

#include "binding/binding.hpp"

namespace popsim_binding {

namespace {

constexpr int kMaxTupleLength = 56;  // a header holds the length and one tuple bit per element

inline uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

struct Lanes {
  uint64_t a = 0x243f6a8885a308d3ULL, b = 0x13198a2e03707344ULL, count = 0;
  void add(uint64_t t) {
    a = rotl((a ^ t) * 0x9e3779b97f4a7c15ULL, 31);
    b = rotl((b + t) * 0xc2b2ae3d27d4eb4fULL, 27) ^ 0x165667b19e3779f9ULL;
    ++count;
  }
};

inline uint64_t finish(uint64_t x) {  // splitmix64's finalizer: a bijection
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// One item's tokens: each mixed with its position on its own (so that the mixes of an
// item's tokens run side by side, not one after another), and summed. Changing one token
// changes its term, so the item's key; the lanes then take one step per item.
struct ItemKey {
  uint64_t key = 0, position = 0;
  void add(uint64_t t) {
    position += 0x9e3779b97f4a7c15ULL;
    const uint64_t x = (t ^ position) * 0xbf58476d1ce4e5b9ULL;  // bijective: an odd multiplier,
    key += x ^ (x >> 31);                                       // then an xorshift
  }
};

// The int in `o`, if it is a Python int that fits int64. Most are one digit or none,
// read in place where this Python's headers say how; the rest through the API (for an
// exact int it sets no error: it only reads the digits).
inline bool int_of(PyObject *o, uint64_t &out) {
  if (!PyLong_CheckExact(o)) return false;
#if PY_VERSION_HEX >= 0x030C0000
  PyLongObject *v = reinterpret_cast<PyLongObject *>(o);
  if (PyUnstable_Long_IsCompact(v)) {
    out = static_cast<uint64_t>(static_cast<int64_t>(PyUnstable_Long_CompactValue(v)));
    return true;
  }
#elif PY_VERSION_HEX >= 0x030B0000  // 3.11: Python.h includes longintrepr.h
  const Py_ssize_t digits = Py_SIZE(o);
  if (digits >= -1 && digits <= 1) {  // ob_digit[0] is always allocated (and 0 * anything is 0)
    out = static_cast<uint64_t>(digits * static_cast<int64_t>(reinterpret_cast<PyLongObject *>(o)->ob_digit[0]));
    return true;
  }
#endif
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
  if (overflow) return false;
  out = static_cast<uint64_t>(v);
  return true;
}

// Tokens of a tuple of ints (a nested tuple): its length, then its elements.
inline bool add_int_tuple(ItemKey &key, PyObject *t) {
  const Py_ssize_t n = PyTuple_GET_SIZE(t);
  key.add(static_cast<uint64_t>(n));
  for (Py_ssize_t i = 0; i < n; ++i) {
    uint64_t v;
    if (!int_of(PyTuple_GET_ITEM(t, i), v)) return false;
    key.add(v);
  }
  return true;
}

bool add_item(ItemKey &key, PyObject *item) {
  uint64_t v;
  if (int_of(item, v)) {
    key.add(1);
    key.add(v);
    return true;
  }
  if (!PyTuple_CheckExact(item)) return false;
  const Py_ssize_t n = PyTuple_GET_SIZE(item);
  if (n > kMaxTupleLength) return false;
  uint64_t nested = 0;
  for (Py_ssize_t i = 0; i < n; ++i)
    if (PyTuple_CheckExact(PyTuple_GET_ITEM(item, i))) nested |= uint64_t{1} << i;
  key.add(2 | static_cast<uint64_t>(n) << 2 | nested << 8);
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject *e = PyTuple_GET_ITEM(item, i);
    if (nested >> i & 1) {
      if (!add_int_tuple(key, e)) return false;
    } else if (int_of(e, v)) {
      key.add(v);
    } else {
      return false;
    }
  }
  return true;
}

// The lanes of items [begin, end); false if one is not plain.
bool key_items(PyObject *const *data, Py_ssize_t begin, Py_ssize_t end, Lanes &lanes) {
  // Items are objects scattered over memory: fetch each one 16 items ahead, and the
  // elements of each tuple (by then in the cache) 8 items ahead.
  constexpr Py_ssize_t far = 16, near = 8;
  for (Py_ssize_t i = begin; i < end; ++i) {
    if (i + far < end) __builtin_prefetch(data[i + far]);
    if (i + near < end && PyTuple_CheckExact(data[i + near])) {
      PyObject *t = data[i + near];
      for (Py_ssize_t k = 0, m = std::min<Py_ssize_t>(PyTuple_GET_SIZE(t), 4); k < m; ++k)
        __builtin_prefetch(PyTuple_GET_ITEM(t, k));
    }
    ItemKey item;
    if (!add_item(item, data[i])) return false;
    lanes.add(item.key);
  }
  return true;
}

// Items are keyed in chunks of a fixed size, each chunk's lanes finished into one token
// of an outer Lanes: chunks are independent, so a long list is read by two threads (a
// compute set's connections are memory-bound reads of scattered objects), and the key
// does not depend on how many threads read it. The helper thread only reads: the items
// are immutable ints and tuples, the list cannot change while the caller holds the GIL
// (it does throughout), and no reference count is touched.
constexpr Py_ssize_t kChunk = 16384;
constexpr Py_ssize_t kThreadedFrom = 4 * kChunk;  // below this a thread costs more than it saves

// Chunk c's two lanes into out[0], out[1]; false if an item in it is not plain.
bool chunk_lanes(PyObject *const *data, Py_ssize_t n, Py_ssize_t c, uint64_t *out) {
  Lanes lanes;
  if (!key_items(data, c * kChunk, std::min(n, (c + 1) * kChunk), lanes)) return false;
  out[0] = lanes.a;
  out[1] = lanes.b;
  return true;
}

py::object content_key(const py::handle &items) {
  if (!PyList_CheckExact(items.ptr()) && !PyTuple_CheckExact(items.ptr()))
    throw py::type_error("content_key: expected a list or tuple");
  PyObject *seq = items.ptr();
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  PyObject *const *data = PySequence_Fast_ITEMS(seq);
  const Py_ssize_t chunks = (n + kChunk - 1) / kChunk;
  std::vector<uint64_t> lanes_of(2 * static_cast<size_t>(chunks));
  bool plain = true, helper_plain = true;
  // The helper takes the odd chunks, this thread the even ones.
  std::thread helper;
  if (n >= kThreadedFrom && std::thread::hardware_concurrency() > 1) {
    try {
      helper = std::thread([&] {
        for (Py_ssize_t c = 1; c < chunks && helper_plain; c += 2) helper_plain = chunk_lanes(data, n, c, &lanes_of[2 * c]);
      });
    } catch (const std::system_error &) {  // no thread to be had: read them all here
    }
  }
  const Py_ssize_t step = helper.joinable() ? 2 : 1;
  for (Py_ssize_t c = 0; c < chunks && plain; c += step) plain = chunk_lanes(data, n, c, &lanes_of[2 * c]);
  if (helper.joinable()) helper.join();
  if (!plain || !helper_plain) return py::none();
  Lanes lanes;  // each chunk's lanes are tokens: a change in one changes its lane, so the key
  for (uint64_t k : lanes_of) lanes.add(k);
  const uint64_t key[2] = {finish(lanes.a ^ static_cast<uint64_t>(n)), finish(lanes.b + rotl(n, 17))};
  return py::bytes(reinterpret_cast<const char *>(key), sizeof key);
}

// bytes_key: four lanes over the 64-bit words of a buffer (word i to lane i % 4), so that
// their steps run side by side; each lane's step is a bijection, as Lanes::add's.
py::bytes bytes_key(const py::buffer &buffer) {
  py::buffer_info info = buffer.request();
  if (info.ndim != 1 || info.itemsize != 1 || info.strides[0] != 1)
    throw py::type_error("bytes_key: expected a contiguous buffer of bytes (a memoryview cast to 'B')");
  const auto *p = static_cast<const uint8_t *>(info.ptr);
  const size_t n = static_cast<size_t>(info.size);
  uint64_t lane[4] = {0x243f6a8885a308d3ULL, 0x13198a2e03707344ULL, 0xa4093822299f31d0ULL, 0x082efa98ec4e6c89ULL};
  constexpr uint64_t kMul[4] = {0x9e3779b97f4a7c15ULL, 0xc2b2ae3d27d4eb4fULL, 0x165667b19e3779f9ULL,
                                0xd6e8feb86659fd93ULL};
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    uint64_t w[4];
    std::memcpy(w, p + i, sizeof w);
    for (int k = 0; k < 4; ++k) lane[k] = rotl((lane[k] ^ w[k]) * kMul[k], 29);
  }
  uint8_t tail[32] = {};
  std::memcpy(tail, p + i, n - i);
  for (int k = 0; k < 4; ++k) {
    uint64_t w;
    std::memcpy(&w, tail + 8 * k, sizeof w);
    lane[k] = rotl((lane[k] ^ w) * kMul[k], 29);
  }
  // Every lane reaches both halves, so a change to any word changes both.
  const uint64_t key[2] = {finish(lane[0] ^ rotl(lane[1], 17) ^ rotl(lane[2], 31) ^ rotl(lane[3], 47) ^ n),
                           finish(lane[2] + rotl(lane[3], 41) + rotl(lane[0], 13) + rotl(lane[1], 23) + rotl(n, 7))};
  return py::bytes(reinterpret_cast<const char *>(key), sizeof key);
}

}  // namespace

void bind_content_key(py::module_ &m) {
  m.def("bytes_key", &bytes_key, py::arg("data"),
        "A 16-byte key of a contiguous byte buffer (native/binding/content_key.cpp): several times faster than "
        "sha256, for the executable-cache digest's arrays; not cryptographic.");
  m.def("content_key", &content_key, py::arg("items"),
        "A 16-byte key of a list of ints and tuples of ints (and tuples of ints) that determines it but for a "
        "2^-128 chance; None when an item is anything else (native/binding/content_key.cpp).");
}

}  // namespace popsim_binding
