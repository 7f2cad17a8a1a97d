#include "core/compute_set.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>
#include <utility>
#include <vector>

#include "core/validate.hpp"

#include "core/run_signals.hpp"

namespace popsim {

namespace {
uint8_t *alloc_state(int64_t bytes) {
  // 64-byte alignment covers any vertex class; calloc gives the zeroed memory init expects.
  const size_t n = static_cast<size_t>((bytes + 63) / 64 * 64 + 64);
  void *p = std::aligned_alloc(64, n);
  if (!p) throw std::bad_alloc();
  std::memset(p, 0, n);
  return static_cast<uint8_t *>(p);
}
}  // namespace

ComputeEngine::ComputeEngine(const VertexTables &tables, unsigned num_threads)
    : t_(tables), state_(alloc_state(tables.state_bytes), std::free), interrupt_(interrupt_flag()),
      pool_(num_threads) {
  // The tables were validated with the executable (validate.hpp); what remains to check
  // needs the codelets themselves: the vertices' state objects (which hold the field
  // pointers bind() sets) must be aligned, fit, and not overlap.
  for (const CodeletInfo &info : t_.codelets) codelets_.push_back(libraries_.load(info.path, info.symbol));
  std::vector<std::pair<int64_t, int64_t>> objects;  // (offset, end)
  for (const VertexRow &v : t_.vertices) {
    const Codelet &c = codelets_[static_cast<size_t>(v.codelet)];
    if (c.host) continue;
    const uint64_t size = c.size();
    if (size > static_cast<uint64_t>(t_.state_bytes - v.state_offset) || v.state_offset % STATE_ALIGNMENT != 0)
      throw MalformedExecutable("a vertex's state object is misaligned or reaches past the vertex state memory");
    objects.emplace_back(v.state_offset, v.state_offset + static_cast<int64_t>(size));
  }
  std::sort(objects.begin(), objects.end());
  for (size_t i = 1; i < objects.size(); ++i)
    if (objects[i].first < objects[i - 1].second) throw MalformedExecutable("two vertices' state objects overlap");
  for (const ComputeSetRow &cs : t_.compute_sets) {
    uint8_t host = 0;
    for (int64_t g = cs.first_group; g < cs.first_group + cs.num_groups; ++g) {
      const GroupRow &gr = t_.groups.at(static_cast<size_t>(g));
      for (int64_t v = gr.first_vertex; v < gr.first_vertex + gr.num_vertices; ++v)
        host |= codelets_[t_.vertices.at(static_cast<size_t>(v)).codelet].host;
    }
    has_host_.push_back(host);
  }
  results_.resize(t_.groups.size());
  reset_counters();
}

void ComputeEngine::reset_counters() {
  vertex_cycles_.assign(t_.vertices.size(), 0.0);
  group_cycles_.assign(t_.groups.size(), 0.0);
}

void ComputeEngine::bind_all(uint8_t *arena) {
  spans_.resize(t_.spans.size());
  for (size_t i = 0; i < t_.spans.size(); ++i) spans_[i] = popsim_span{arena + t_.spans[i].offset,
                                                                       static_cast<uint64_t>(t_.spans[i].size)};
  std::vector<popsim_field> fields;
  std::memset(state_.get(), 0, static_cast<size_t>(t_.state_bytes));
  for (const VertexRow &v : t_.vertices) {
    const Codelet &c = codelets_[v.codelet];
    if (c.host) continue;
    fields.resize(static_cast<size_t>(std::max<int64_t>(1, v.num_fields)));
    for (int64_t f = 0; f < v.num_fields; ++f) {
      const FieldRow &row = t_.fields[static_cast<size_t>(v.first_field + f)];
      void *data = row.base == FIELD_ARENA ? static_cast<void *>(arena + row.offset)
                   : row.base == FIELD_SPANS ? static_cast<void *>(spans_.data() + row.offset) : nullptr;
      fields[static_cast<size_t>(f)] = popsim_field{data, static_cast<uint64_t>(row.size)};
    }
    void *obj = state_.get() + v.state_offset;
    c.init(obj);
    c.bind(obj, fields.data());
  }
}

const char *ComputeEngine::vertex_type_name(int64_t vertex) const {
  if (vertex < 0 || vertex >= static_cast<int64_t>(t_.vertices.size())) return "?";
  const size_t codelet = static_cast<size_t>(t_.vertices[static_cast<size_t>(vertex)].codelet);
  return codelet < t_.codelet_names.size() ? t_.codelet_names[codelet].c_str() : t_.codelets[codelet].symbol.c_str();
}

int64_t ComputeEngine::vertex_tile(int64_t vertex) const {
  if (vertex < 0 || vertex >= static_cast<int64_t>(t_.vertices.size())) return -1;
  return t_.vertices[static_cast<size_t>(vertex)].tile;
}

const char *ComputeEngine::compute_set_name(int64_t compute_set) const {
  if (compute_set < 0 || compute_set >= static_cast<int64_t>(t_.compute_set_names.size())) return "?";
  return t_.compute_set_names[static_cast<size_t>(compute_set)].c_str();
}

namespace {
// Marks the thread as running vertex code of `engine` for the fatal-signal report, until
// the group returns.
struct RunningScope {
  RunningVertex &running;
  RunningScope(const ComputeEngine *engine, int64_t compute_set) : running(running_vertex()) {
    running.engine = engine;
    running.compute_set = compute_set;
  }
  ~RunningScope() { running.engine = nullptr; }
};
}  // namespace

void ComputeEngine::run_group(int64_t compute_set, int64_t group, const HostInterface *host, GroupResult &out) {
  const GroupRow &g = t_.groups[static_cast<size_t>(group)];
  const int64_t workers = t_.num_workers;
  double busy[64] = {0};  // per worker; targets have at most 64 worker contexts
  out = GroupResult{};
  RunningScope running(this, compute_set);
  for (int64_t v = g.first_vertex; v < g.first_vertex + g.num_vertices; ++v) {
    running.running.vertex = v;
    if (*interrupt_) {  // Ctrl-C: stop between vertices too (C++ codelets do not poll)
      out.failed_vertex = v;
      out.result = -1;
      out.ctx.error = POPSIM_INTERRUPTED;
      return;
    }
    const VertexRow &row = t_.vertices[static_cast<size_t>(v)];
    const Codelet &c = codelets_[row.codelet];
    void *obj = state_.get() + row.state_offset;
    const bool multi = row.flags & VERTEX_MULTI;
    const int64_t first = multi ? 0 : row.worker, last = multi ? workers : row.worker + 1;
    double spent = 0;
    for (int64_t w = first; w < last; ++w) {
      popsim_exec ctx{0, static_cast<uint32_t>(workers), 0, -1, 0, 0, 0, interrupt_};
      int result;
      if (c.host) {
        HostVertexCall call{ctx, 1};
        if (host->call(host->ctx, HOST_VERTEX, v, reinterpret_cast<uint8_t *>(&call), w) != 0) {
          out.failed_vertex = v;
          out.result = -2;  // the host raised: the binding holds the exception
          return;
        }
        ctx = call.ctx;
        result = call.result;
      } else {
        result = c.compute(obj, static_cast<uint32_t>(w), &ctx);
      }
      const double cycles = row.estimate >= 0 ? static_cast<double>(row.estimate) : static_cast<double>(ctx.cycles);
      busy[w] += cycles;
      spent += cycles;
      if (result != 1) {
        out.failed_vertex = v;
        out.result = result;
        out.ctx = ctx;
        return;
      }
    }
    vertex_cycles_[static_cast<size_t>(v)] += spent;
  }
  double most = 0, total = 0;
  for (int64_t w = 0; w < workers; ++w) {
    most = std::max(most, busy[w]);
    total += busy[w];
  }
  out.including_idle = most * static_cast<double>(workers);
  out.excluding_idle = total;
}

Status ComputeEngine::run(int64_t compute_set, const HostInterface &host, ComputeSetCycles &cycles,
                          ErrorRecord &error) {
  const ComputeSetRow &cs = t_.compute_sets[static_cast<size_t>(compute_set)];
  if (has_host_[static_cast<size_t>(compute_set)]) {
    for (int64_t i = 0; i < cs.num_groups; ++i)
      run_group(compute_set, cs.first_group + i, &host, results_[cs.first_group + i]);
  } else {
    pool_.parallel_for(cs.num_groups, [&](int64_t i) {
      run_group(compute_set, cs.first_group + i, nullptr, results_[cs.first_group + i]);
    });
  }
  cycles = ComputeSetCycles{};
  for (int64_t i = 0; i < cs.num_groups; ++i) {  // in tile order: the same sums for any thread count
    const GroupResult &r = results_[static_cast<size_t>(cs.first_group + i)];
    if (r.failed_vertex >= 0 && (error.status == Status::Ok || r.failed_vertex < error.a)) {
      error.status = r.result == -2 ? Status::HostError : Status::VertexFailed;
      error.id = compute_set;
      error.a = r.failed_vertex;
      error.vertex_result = r.result;
      error.error_kind = r.ctx.error;
      error.error_field = r.ctx.error_field;
      error.error_line = r.ctx.error_line;
      error.error_index = r.ctx.error_index;
      error.error_size = r.ctx.error_size;
    }
    group_cycles_[static_cast<size_t>(cs.first_group + i)] += r.including_idle;
    cycles.compute_phase = std::max(cycles.compute_phase, r.including_idle);
    cycles.avg_including_idle += r.including_idle;
    cycles.avg_excluding_idle += r.excluding_idle;
  }
  const double tiles = static_cast<double>(std::max<int64_t>(1, t_.num_tiles));
  cycles.avg_including_idle /= tiles;
  cycles.avg_excluding_idle /= tiles;
  return error.status;
}

}  // namespace popsim
