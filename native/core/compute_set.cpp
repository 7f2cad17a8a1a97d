#include "core/compute_set.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>
#include <utility>
#include <vector>

#include "core/copy_tables.hpp"
#include "core/validate.hpp"

#include "core/run_signals.hpp"
#include "core/vertex_guard.hpp"

namespace popsim {

namespace {
const volatile int32_t kNeverStopped = 0;  // the stop flag of a machine that gives none

uint8_t *alloc_state(int64_t bytes) {
  // 64-byte alignment covers any vertex class. Not zeroed here: bind_all zeroes the
  // state before it constructs the objects, at every load.
  const size_t n = static_cast<size_t>((bytes + 63) / 64 * 64 + 64);
  void *p = std::aligned_alloc(64, n);
  if (!p) throw std::bad_alloc();
  return static_cast<uint8_t *>(p);
}
}  // namespace

ComputeEngine::ComputeEngine(const VertexTables &tables, ThreadPool &pool, const ReplicaBlock &block,
                             const volatile int32_t *stop)
    : t_(tables), block_(block), num_replicas_(std::max<int64_t>(block.local(), 1)),
      state_stride_((tables.state_bytes + 63) / 64 * 64),
      state_(alloc_state(state_stride_ * std::max<int64_t>(block.local(), 1)), std::free),
      interrupt_(stop ? stop : &kNeverStopped), pool_(pool) {
  // The tables were validated with the executable (validate.hpp); what remains to check
  // needs the codelets themselves: the vertices' state objects (which hold the field
  // pointers bind() sets) must be aligned, fit, and not overlap.
  std::vector<uint64_t> sizes;  // of each codelet's state object; 0 for host codelets (no object)
  for (const CodeletInfo &info : t_.codelets) {
    codelets_.push_back(libraries_.load(info.path, info.symbol));
    sizes.push_back(codelets_.back().host ? 0 : codelets_.back().size());
  }
  check_state_objects(sizes);
  for (const ComputeSetRow &cs : t_.compute_sets) {
    uint8_t host = 0;
    for (int64_t g = cs.first_group; g < cs.first_group + cs.num_groups; ++g) {
      const GroupRow &gr = t_.groups.at(static_cast<size_t>(g));
      for (int64_t v = gr.first_vertex; v < gr.first_vertex + gr.num_vertices; ++v)
        host |= codelets_[t_.vertices.at(static_cast<size_t>(v)).codelet].host;
    }
    has_host_.push_back(host);
  }
  // validate() bounds state offsets (state_bytes < 2^36) and the codelet count (< 2^25),
  // so each vertex packs into a run row.
  runs_.reserve(t_.vertices.size());
  for (const VertexRow &v : t_.vertices) {
    const uint32_t multi = (v.flags & VERTEX_MULTI) ? kMulti : 0;
    const uint32_t worker = multi ? 0 : static_cast<uint32_t>(v.worker);
    runs_.push_back(RunRow{v.estimate >= 0 ? static_cast<double>(v.estimate) : -1.0,
                           static_cast<uint32_t>(v.state_offset / STATE_ALIGNMENT),
                           static_cast<uint32_t>(v.codelet) << kCodeletShift | multi | worker});
  }
  for (const GroupRow &g : t_.groups) {
    uint8_t counts = 0;
    for (int64_t v = g.first_vertex; v < g.first_vertex + g.num_vertices; ++v)
      counts |= runs_[static_cast<size_t>(v)].estimate < 0;
    group_counts_.push_back(counts);
  }
  for (const ComputeSetRow &cs : t_.compute_sets) {
    uint8_t counts = 0;
    for (int64_t g = cs.first_group; g < cs.first_group + cs.num_groups; ++g) counts |= group_counts_[static_cast<size_t>(g)];
    cs_counts_.push_back(counts);
  }
  if (block_.distributed()) counted_now_.assign(t_.vertices.size(), 0.0);
  results_.resize(t_.groups.size() * static_cast<size_t>(num_replicas_));
  reset_counters();
}

void ComputeEngine::check_state_objects(const std::vector<uint64_t> &sizes) const {
  // The lowering lays the objects out in vertex order, so one pass that checks each
  // against the end of the one before finds overlaps; objects out of order (possible
  // only in a file made by hand) are sorted first.
  std::vector<std::pair<int64_t, int64_t>> unordered;  // (offset, end)
  int64_t last_offset = 0, last_end = 0;
  for (const VertexRow &v : t_.vertices) {
    if (codelets_[static_cast<size_t>(v.codelet)].host) continue;
    const uint64_t size = sizes[static_cast<size_t>(v.codelet)];
    if (size > static_cast<uint64_t>(t_.state_bytes - v.state_offset) || v.state_offset % STATE_ALIGNMENT != 0)
      throw MalformedExecutable("a vertex's state object is misaligned or reaches past the vertex state memory");
    const int64_t end = v.state_offset + static_cast<int64_t>(size);
    if (!unordered.empty() || v.state_offset < last_offset) {
      if (unordered.empty()) unordered = objects_in_order(sizes);
      continue;
    }
    if (v.state_offset < last_end) throw MalformedExecutable("two vertices' state objects overlap");
    last_offset = v.state_offset;
    last_end = end;
  }
  for (size_t i = 1; i < unordered.size(); ++i)
    if (unordered[i].first < unordered[i - 1].second) throw MalformedExecutable("two vertices' state objects overlap");
}

std::vector<std::pair<int64_t, int64_t>> ComputeEngine::objects_in_order(const std::vector<uint64_t> &sizes) const {
  std::vector<std::pair<int64_t, int64_t>> objects;  // (offset, end)
  objects.reserve(t_.vertices.size());
  for (const VertexRow &v : t_.vertices)
    if (!codelets_[static_cast<size_t>(v.codelet)].host)
      objects.emplace_back(v.state_offset, v.state_offset + static_cast<int64_t>(sizes[static_cast<size_t>(v.codelet)]));
  std::sort(objects.begin(), objects.end());
  return objects;
}

void ComputeEngine::reset_counters() {
  counted_cycles_.assign(t_.vertices.size(), 0.0);
  cs_runs_.assign(t_.compute_sets.size(), 0);
  group_cycles_.assign(t_.groups.size(), 0.0);
}

double ComputeEngine::fixed_cycles(const RunRow &row) const {
  if (row.estimate < 0) return 0;
  double spent = 0;  // added worker by worker, as a run adds them
  for (int64_t w = 0, n = (row.code & kMulti) ? t_.num_workers : 1; w < n; ++w) spent += row.estimate;
  return spent;
}

std::vector<double> ComputeEngine::vertex_cycles() const {
  std::vector<double> out(counted_cycles_);
  for (size_t i = 0; i < t_.compute_sets.size(); ++i) {
    if (!cs_runs_[i]) continue;
    const double runs = static_cast<double>(cs_runs_[i]);
    const ComputeSetRow &cs = t_.compute_sets[i];
    for (int64_t g = cs.first_group; g < cs.first_group + cs.num_groups; ++g) {
      const GroupRow &gr = t_.groups[static_cast<size_t>(g)];
      for (int64_t v = gr.first_vertex; v < gr.first_vertex + gr.num_vertices; ++v)
        out[static_cast<size_t>(v)] += runs * fixed_cycles(runs_[static_cast<size_t>(v)]);
    }
  }
  return out;
}

void ComputeEngine::bind_all(uint8_t *arena, int64_t arena_stride) {
  arena_ = arena;
  arena_stride_ = arena_stride;
  const size_t nspans = t_.spans.size();
  spans_.resize(nspans * static_cast<size_t>(num_replicas_));
  std::memset(state_.get(), 0, static_cast<size_t>(state_stride_ * num_replicas_));
  std::vector<popsim_field> fields;
  for (int64_t r = 0; r < num_replicas_; ++r) {
    uint8_t *memory = arena + r * arena_stride;
    popsim_span *spans = spans_.data() + static_cast<size_t>(r) * nspans;
    for (size_t i = 0; i < nspans; ++i)
      spans[i] = popsim_span{memory + t_.spans[i].offset, static_cast<uint64_t>(t_.spans[i].size)};
    uint8_t *state = replica_state(r);
    for (const VertexRow &v : t_.vertices) {
      const Codelet &c = codelets_[v.codelet];
      if (c.host) continue;
      fields.resize(static_cast<size_t>(std::max<int64_t>(1, v.num_fields)));
      for (int64_t f = 0; f < v.num_fields; ++f) {
        const FieldRow &row = t_.fields[static_cast<size_t>(v.first_field + f)];
        void *data = row.base == FIELD_ARENA ? static_cast<void *>(memory + row.offset)
                     : row.base == FIELD_SPANS ? static_cast<void *>(spans + row.offset) : nullptr;
        fields[static_cast<size_t>(f)] = popsim_field{data, static_cast<uint64_t>(row.size)};
      }
      void *obj = state + v.state_offset;
      c.init(obj);
      c.bind(obj, fields.data());
    }
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

// kHost: the group may hold host-run vertices; kCounts: it may hold vertices that count
// their own cycles (no estimate). The common case, compiled vertices with estimates,
// runs the leanest loop: it is what a compute set of small vertices spends its time on.
template <bool kHost, bool kCounts>
void ComputeEngine::run_group(int64_t compute_set, int64_t group, int64_t replica, const HostInterface *host,
                              GroupResult &out) {
  const GroupRow &g = t_.groups[static_cast<size_t>(group)];
  const int64_t workers = t_.num_workers;
  double busy[64];  // per worker; targets have at most 64 worker contexts
  std::fill_n(busy, workers, 0.0);
  // Where the group stops early: vertex v failed (result as the ABI's, or -2: the host raised).
  auto fail = [&out](int64_t v, int32_t result, const popsim_exec &ctx) {
    out = GroupResult{};
    out.failed_vertex = v;
    out.result = result;
    out.ctx = ctx;
  };
  RunningScope running(this, compute_set);
  // Locals, not members: the compiler must assume a call may change what members hold.
  RunningVertex &current = running.running;
  // Host-run vertices run Python, which must not be jumped out of: such a group marks
  // only its compiled vertices as vertex code (vertex_guard.hpp); others are marked whole.
  std::atomic<const volatile int32_t *> *inside = kHost ? vertex_guard().inside() : nullptr;
  const volatile int32_t *interrupt = interrupt_;
  const RunRow *rows = runs_.data();
  const Codelet *codelets = codelets_.data();
  // Per-vertex counters are replica 0's: other replicas' runs would race on them. Across
  // processes, this run's go aside until combine_with_peers takes process 0's.
  double *counted = replica != 0 ? nullptr : block_.distributed() ? counted_now_.data() : counted_cycles_.data();
  uint8_t *state = replica_state(replica);
  const uint32_t num_workers = static_cast<uint32_t>(workers);
  // Runs worker w of vertex v and adds its cycles; false (`out` says why) if it failed.
  auto run_worker = [&](int64_t v, const Codelet &c, void *obj, int64_t w, double estimate) {
    popsim_exec ctx{0, num_workers, 0, -1, 0, 0, 0, interrupt};  // made in place: a copy stalls store forwarding
    int result;
    if (kHost && c.host) {
      HostVertexCall call{ctx, 1};
      if (host->call(host->ctx, HOST_VERTEX, v, reinterpret_cast<uint8_t *>(&call), w, replica) != 0) {
        fail(v, -2, popsim_exec{});  // the host raised: the binding holds the exception
        return false;
      }
      ctx = call.ctx;
      result = call.result;
    } else {
      if (kHost) inside->store(interrupt, std::memory_order_relaxed);
      result = c.compute(obj, static_cast<uint32_t>(w), &ctx);
      if (kHost) inside->store(nullptr, std::memory_order_relaxed);
    }
    const double cycles = !kCounts || estimate >= 0 ? estimate : static_cast<double>(ctx.cycles);
    busy[w] += cycles;
    if (kCounts && estimate < 0 && counted) counted[v] += cycles;
    if (result == 1) return true;
    fail(v, result, ctx);
    return false;
  };
  const RunRow *end = rows + g.first_vertex + g.num_vertices;
  for (const RunRow *row = rows + g.first_vertex; row != end; ++row) {
    const int64_t v = row - rows;
    current.vertex = v;
    if (*interrupt) {  // Ctrl-C: stop between vertices too (C++ codelets do not poll)
      popsim_exec ctx{};
      ctx.error = POPSIM_INTERRUPTED;
      fail(v, -1, ctx);
      return;
    }
    const uint32_t code = row->code;
    const Codelet &c = codelets[code >> kCodeletShift];
    void *obj = state + static_cast<size_t>(row->state_slot) * STATE_ALIGNMENT;
    if (!(code & kMulti)) {
      if (!run_worker(v, c, obj, code & (kMulti - 1), row->estimate)) return;
    } else {
      for (int64_t w = 0; w < workers; ++w)
        if (!run_worker(v, c, obj, w, row->estimate)) return;
    }
  }
  double most = 0, total = 0;
  for (int64_t w = 0; w < workers; ++w) {
    most = std::max(most, busy[w]);
    total += busy[w];
  }
  out.including_idle = most * static_cast<double>(workers);
  out.excluding_idle = total;
  out.failed_vertex = -1;
  out.result = 1;
}

template <bool kHost, bool kCounts>
void ComputeEngine::run_guarded(int64_t compute_set, int64_t group, int64_t replica, const HostInterface *host,
                                GroupResult &out) {
  VertexGuard &guard = vertex_guard();
  guard.prepare();
  // The recovery point (vertex_guard.hpp): a jump back means the vertex running then
  // (running_vertex().vertex) faulted, or its run was stopped while it ran.
  if (sigsetjmp(guard.recovery, 0) != 0) {
    RunningVertex &running = running_vertex();
    const VertexFault &fault = guard.fault;
    out = GroupResult{};
    out.failed_vertex = running.vertex;
    out.result = -1;
    out.ctx.error = fault.signal ? POPSIM_FAULT : POPSIM_INTERRUPTED;
    out.ctx.error_index = fault.signal;
    out.ctx.error_field = fault.stack_overflow ? FAULT_STACK_OVERFLOW : FAULT_ELSEWHERE;
    out.ctx.error_size = static_cast<int64_t>(fault.address);
    running.engine = nullptr;  // the jump skipped run_group's RunningScope
    return;
  }
  guard.armed = 1;
  std::atomic<const volatile int32_t *> *inside = guard.inside();
  if (!kHost) inside->store(interrupt_, std::memory_order_relaxed);
  run_group<kHost, kCounts>(compute_set, group, replica, host, out);
  if (!kHost) inside->store(nullptr, std::memory_order_relaxed);
  guard.armed = 0;
}

void ComputeEngine::gather(const CopyRun *gathers, int64_t group, int64_t replica) const {
  if (!gathers) return;
  const GroupRow &g = t_.groups[static_cast<size_t>(group)];
  uint8_t *memory = arena_ + replica * arena_stride_;
  for (const CopyRun *r = gathers + g.first_gather, *end = gathers + g.end_gather; r != end; ++r)
    copy_run(*r, memory, memory);
}

Status ComputeEngine::run(int64_t compute_set, const HostInterface &host, ComputeSetCycles &cycles,
                          ErrorRecord &error, const CopyRun *gathers) {
  const ComputeSetRow &cs = t_.compute_sets[static_cast<size_t>(compute_set)];
  const int64_t ngroups = static_cast<int64_t>(t_.groups.size());
  // results_[r * ngroups + g]: group g of replica r. Every (replica, tile) is a unit of
  // work for the pool: the replicas of one compute set run side by side.
  auto result = [&](int64_t r, int64_t g) -> GroupResult & { return results_[static_cast<size_t>(r * ngroups + g)]; };
  const bool combine = block_.distributed() && cs_counts_[static_cast<size_t>(compute_set)];
  if (combine) {
    for (int64_t g = cs.first_group; g < cs.first_group + cs.num_groups; ++g) {
      const GroupRow &gr = t_.groups[static_cast<size_t>(g)];
      if (group_counts_[static_cast<size_t>(g)])
        std::fill_n(counted_now_.begin() + gr.first_vertex, gr.num_vertices, 0.0);
    }
  }
  if (has_host_[static_cast<size_t>(compute_set)]) {
    for (int64_t r = 0; r < num_replicas_; ++r)
      for (int64_t i = 0; i < cs.num_groups; ++i) {
        gather(gathers, cs.first_group + i, r);
        run_guarded<true, true>(compute_set, cs.first_group + i, r, &host, result(r, cs.first_group + i));
      }
  } else {
    pool_.parallel_for(cs.num_groups * num_replicas_, [&](int64_t k) {
      const int64_t r = k / cs.num_groups, g = cs.first_group + k % cs.num_groups;
      gather(gathers, g, r);
      if (group_counts_[static_cast<size_t>(g)]) run_guarded<false, true>(compute_set, g, r, nullptr, result(r, g));
      else run_guarded<false, false>(compute_set, g, r, nullptr, result(r, g));
    });
  }
  cycles = ComputeSetCycles{};
  bool failed = false;
  const int64_t tiles_per_ipu = std::max<int64_t>(1, t_.tiles_per_ipu);
  // In replica then tile order: the same sums, and the same failure reported, for any
  // thread count.
  for (int64_t r = 0; r < num_replicas_; ++r) {
    const int64_t replica = block_.first() + r;
    for (int64_t i = 0; i < cs.num_groups; ++i) {
      const GroupResult &res = result(r, cs.first_group + i);
      failed = failed || res.failed_vertex >= 0;
      if (res.failed_vertex >= 0 &&
          (error.status == Status::Ok || (error.replica == replica && res.failed_vertex < error.a))) {
        error.status = res.result == -2 ? Status::HostError : Status::VertexFailed;
        error.id = compute_set;
        error.a = res.failed_vertex;
        error.replica = replica;
        error.vertex_result = res.result;
        error.error_kind = res.ctx.error;
        error.error_field = res.ctx.error_field;
        error.error_line = res.ctx.error_line;
        error.error_index = res.ctx.error_index;
        error.error_size = res.ctx.error_size;
      }
    }
  }
  // Cycles are whole numbers, so these sums are exact in any order: the same whether
  // one process adds every replica's or each adds its own and the sums are combined.
  const std::vector<int64_t> &combined = combined_;
  if (combine && !failed && !combine_with_peers(cs, host, combined_)) {
    error.status = Status::HostError;
    error.id = compute_set;
    return error.status;
  }
  const bool across = combine && !failed;
  const double replicas = static_cast<double>(across ? block_.total() : num_replicas_);
  for (int64_t i = 0; i < cs.num_groups; ++i) {
    const int64_t g = cs.first_group + i;
    const int64_t ipu = t_.groups[static_cast<size_t>(g)].tile / tiles_per_ipu;
    double slowest = 0, including = 0, excluding = 0;
    if (across) {
      slowest = static_cast<double>(combined[static_cast<size_t>(3 * i)]);
      including = static_cast<double>(combined[static_cast<size_t>(3 * i + 1)]);
      excluding = static_cast<double>(combined[static_cast<size_t>(3 * i + 2)]);
    }
    for (int64_t r = 0; r < num_replicas_ && !across; ++r) {
      const GroupResult &res = result(r, g);
      slowest = std::max(slowest, res.including_idle);
      including += res.including_idle;
      excluding += res.excluding_idle;
    }
    group_cycles_[static_cast<size_t>(g)] += slowest;
    cycles.compute_phase[ipu] = std::max(cycles.compute_phase[ipu], slowest);
    cycles.avg_including_idle[ipu] += including / replicas;
    cycles.avg_excluding_idle[ipu] += excluding / replicas;
  }
  if (!failed) {
    ++cs_runs_[static_cast<size_t>(compute_set)];
  } else {  // a partial run: count the fixed cycles of the vertices replica 0 ran, one by one
    for (int64_t i = 0; i < cs.num_groups; ++i) {
      const GroupRow &g = t_.groups[static_cast<size_t>(cs.first_group + i)];
      const int64_t stop = result(0, cs.first_group + i).failed_vertex;
      for (int64_t v = g.first_vertex; v < (stop >= 0 ? stop : g.first_vertex + g.num_vertices); ++v)
        counted_cycles_[static_cast<size_t>(v)] += fixed_cycles(runs_[static_cast<size_t>(v)]);
    }
  }
  const int64_t num_ipus = std::max<int64_t>(1, t_.num_tiles / tiles_per_ipu);
  const double tiles = static_cast<double>(tiles_per_ipu);
  for (int64_t i = 0; i < num_ipus && i < MAX_IPUS_PER_REPLICA; ++i) {
    cycles.avg_including_idle[i] /= tiles;
    cycles.avg_excluding_idle[i] /= tiles;
  }
  return error.status;
}

bool ComputeEngine::combine_with_peers(const ComputeSetRow &cs, const HostInterface &host,
                                       std::vector<int64_t> &groups) {
  const int64_t ngroups = static_cast<int64_t>(t_.groups.size());
  std::vector<int64_t> &mine = peer_mine_;
  mine.clear();
  for (int64_t g = cs.first_group; g < cs.first_group + cs.num_groups; ++g) {
    int64_t slowest = 0, including = 0, excluding = 0;
    for (int64_t r = 0; r < num_replicas_; ++r) {
      const GroupResult &res = results_[static_cast<size_t>(r * ngroups + g)];
      slowest = std::max(slowest, static_cast<int64_t>(res.including_idle));
      including += static_cast<int64_t>(res.including_idle);
      excluding += static_cast<int64_t>(res.excluding_idle);
    }
    mine.insert(mine.end(), {slowest, including, excluding});
  }
  for (int64_t g = cs.first_group; g < cs.first_group + cs.num_groups; ++g) {
    if (!group_counts_[static_cast<size_t>(g)]) continue;
    const GroupRow &gr = t_.groups[static_cast<size_t>(g)];
    for (int64_t v = gr.first_vertex; v < gr.first_vertex + gr.num_vertices; ++v)
      mine.push_back(static_cast<int64_t>(counted_now_[static_cast<size_t>(v)]));
  }
  const size_t width = mine.size();
  std::vector<int64_t> &all = peer_all_;
  all.resize(width * static_cast<size_t>(block_.instances()));
  if (!block_.gather(host, mine.data(), static_cast<int64_t>(width * sizeof(int64_t)), all.data())) return false;
  groups.assign(static_cast<size_t>(3 * cs.num_groups), 0);
  for (int64_t p = 0; p < block_.instances(); ++p) {
    const int64_t *theirs = all.data() + p * static_cast<int64_t>(width);
    for (int64_t i = 0; i < cs.num_groups; ++i) {
      groups[static_cast<size_t>(3 * i)] = std::max(groups[static_cast<size_t>(3 * i)], theirs[3 * i]);
      groups[static_cast<size_t>(3 * i + 1)] += theirs[3 * i + 1];
      groups[static_cast<size_t>(3 * i + 2)] += theirs[3 * i + 2];
    }
  }
  const int64_t *first = all.data() + 3 * cs.num_groups;  // process 0's: it holds replica 0
  for (int64_t g = cs.first_group; g < cs.first_group + cs.num_groups; ++g) {
    if (!group_counts_[static_cast<size_t>(g)]) continue;
    const GroupRow &gr = t_.groups[static_cast<size_t>(g)];
    for (int64_t v = gr.first_vertex; v < gr.first_vertex + gr.num_vertices; ++v)
      counted_cycles_[static_cast<size_t>(v)] += static_cast<double>(*first++);
  }
  return true;
}

}  // namespace popsim
