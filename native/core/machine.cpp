#include "core/machine.hpp"

#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <cstring>
#include <limits>
#include <new>
#include <stdexcept>
#include <utility>

#include "core/copy_tables.hpp"
#include "core/run_signals.hpp"
#include "core/scalars.hpp"
#include "core/superstep.hpp"

namespace popsim {

namespace {
// Calls into the host every this many instructions so a long run can be interrupted.
constexpr uint64_t kPollInterval = 1u << 18;

uint64_t mask_of(int64_t bits) { return static_cast<uint64_t>(bits); }
}  // namespace

Machine::Machine(Executable exe, unsigned num_threads, int64_t trace_capacity, int64_t streaming_bytes,
                 int64_t first_replica, int64_t local_replicas)
    : exe_(std::move(exe)), block_(exe_.num_replicas, first_replica, local_replicas),
      extents_(validate(exe_)), arena_bytes_(exe_.arena_bytes),
      clocks_(exe_.num_steps, exe_.num_ipus, trace_capacity), pool_(num_threads) {
  if (!block_.valid())
    throw std::invalid_argument("the replicas a process holds must be a block of the graph's " +
                                std::to_string(exe_.num_replicas) + ", of a size that divides it");
  memory_ = std::make_unique<TileMemory>(arena_bytes_, block_.local());
  arena_ = memory_->base();
  arena_stride_ = memory_->stride();
  streams_.resize(exe_.stream_transfer_bytes.size() * static_cast<size_t>(block_.local()));
  for (int64_t s = 0; s < num_streams(); ++s)
    for (int64_t r = 0; r < block_.local(); ++r) endpoint(s, r).transfer_bytes = transfer_bytes(s);
  loop_counters_.assign(static_cast<size_t>(exe_.num_loop_slots), 0);
  call_stack_.reserve(64);
  superstep_.assign(static_cast<size_t>(exe_.num_ipus * NUM_COST_CATEGORIES), 0.0);
  copies_ = std::make_unique<CopyTables>(exe_, pool_, streaming_bytes);
  compute_ = std::make_unique<ComputeEngine>(exe_.vertex, pool_, block_, &stop_);
  reset_counters();
}

Machine::~Machine() = default;

void Machine::request_stop() {
  stop_ = 1;
  stop_vertex_code();  // vertex code that does not poll the flag (C++ codelets)
}

void Machine::locate_fault() {
  int64_t replica = 0, offset = 0;
  if (error_.error_field == FAULT_ELSEWHERE &&
      memory_->locate(static_cast<uintptr_t>(error_.error_size), replica, offset)) {
    error_.error_field = FAULT_BESIDE_TILE_MEMORY;
    error_.error_size = offset;
  }
}

void Machine::reset_counters() {
  step_counts_.assign(static_cast<size_t>(exe_.num_steps), 0);
  clocks_.reset();
  if (compute_) compute_->reset_counters();
}

bool Machine::host_table_fits(int64_t table, int64_t host_bytes, bool to_device) const {
  if (table < 0 || table >= static_cast<int64_t>(extents_.src.size())) return false;
  const int64_t host = to_device ? extents_.src[static_cast<size_t>(table)] : extents_.dst[static_cast<size_t>(table)];
  const int64_t arena = to_device ? extents_.dst[static_cast<size_t>(table)] : extents_.src[static_cast<size_t>(table)];
  return host <= host_bytes && arena <= arena_bytes_;
}

void Machine::load(int64_t table, const uint8_t *image, int64_t vertex_table, const uint8_t *vertex_image) {
  // A fresh arena is lazily zeroed memory: not touching it keeps a huge one (a graph
  // built with debug.allowOutOfMemory) from costing host memory.
  if (!fresh_) memory_->zero();
  fresh_ = false;
  for (int64_t r = 0; r < block_.local(); ++r) {
    if (table >= 0) run_table(table, image, arena(r));
    if (vertex_table >= 0) run_table(vertex_table, vertex_image, arena(r));
    const uint32_t index = static_cast<uint32_t>(block_.first() + r);  // the graph's replica index
    for (int64_t offset : exe_.replication_index_offsets) std::memcpy(arena(r) + offset, &index, sizeof index);
  }
  compute_->bind_all(arena_, arena_stride_);
  loaded_ = true;
}

void Machine::write(int64_t table, const uint8_t *host, int64_t replica) {
  fresh_ = false;
  for (int64_t r = 0; r < block_.local(); ++r)
    if (replica < 0 || replica == r) run_table(table, host, arena(r));
}
void Machine::read(int64_t table, uint8_t *host, int64_t replica) { run_table(table, arena(replica), host); }

void Machine::connect_buffer(int64_t stream, int64_t replica, uint8_t *data, int64_t bytes) {
  StreamEndpoint &s = endpoint(stream, replica);
  s.kind = StreamEndpoint::Buffer;
  s.buffer = data;
  s.buffer_bytes = bytes;
  s.position = 0;
  s.staging = nullptr;
}

void Machine::connect_callback(int64_t stream, int64_t replica, uint8_t *staging) {
  StreamEndpoint &s = endpoint(stream, replica);
  s.kind = StreamEndpoint::Callback;
  s.buffer = nullptr;
  s.buffer_bytes = 0;
  s.position = 0;
  s.staging = staging;
}

void Machine::disconnect(int64_t stream, int64_t replica) {
  endpoint(stream, replica) = StreamEndpoint{StreamEndpoint::None, transfer_bytes(stream)};
}

bool Machine::connected(int64_t stream, int64_t replica) const {
  return endpoint(stream, replica).kind != StreamEndpoint::None;
}

Status Machine::fail(Status status, int64_t pc, int64_t id, int64_t replica) {
  error_.status = status;
  error_.pc = pc;
  error_.id = id;
  error_.replica = replica;
  error_.step = (pc >= 0 && pc < static_cast<int64_t>(exe_.instrs.size())) ? exe_.instrs[pc].step : -1;
  return status;
}

// Replicas run one control program in lockstep: a decision they disagree on is an
// error (ReplicasDiverge), never one replica's choice silently imposed on the others.
// `read(scalar)` is what the decision takes from each replica's scalar.
// Across processes every process learns every other's first value and first dissenter,
// so all decide the same, and name the same replica if they disagree.
template <typename T, typename Read>
bool Machine::uniform(const Instr &in, int64_t pc, Read read, T &value, const HostInterface &host) {
  value = read(arena(0) + in.b, in.c);
  int64_t differs = -1;  // the first replica that differs from replica 0 (of this block, then of all)
  for (int64_t r = 1; r < block_.local() && differs < 0; ++r)
    if (read(arena(r) + in.b, in.c) != value) differs = block_.first() + r;
  if (block_.distributed()) {
    const int64_t mine[2] = {static_cast<int64_t>(value), differs};
    peer_votes_.resize(static_cast<size_t>(2 * block_.instances()));
    if (!block_.gather(host, mine, sizeof mine, peer_votes_.data())) return fail(Status::HostError, pc, -1), false;
    value = static_cast<T>(peer_votes_[0]);
    differs = -1;
    for (int64_t p = 0; p < block_.instances() && differs < 0; ++p)
      differs = peer_votes_[static_cast<size_t>(2 * p)] != peer_votes_[0] ? p * block_.local()
                                                                         : peer_votes_[static_cast<size_t>(2 * p + 1)];
  }
  if (differs >= 0) return fail(Status::ReplicasDiverge, pc, -1, differs), false;
  return true;
}

// Any replica's condition stops the run: the first one's, across processes too.
bool Machine::first_aborting(const Instr &in, const HostInterface &host, int64_t &replica) {
  replica = -1;
  for (int64_t r = 0; r < block_.local() && replica < 0; ++r)
    if (scalar_is_true(arena(r) + in.b, in.c)) replica = block_.first() + r;
  if (!block_.distributed()) return true;
  peer_votes_.resize(static_cast<size_t>(block_.instances()));
  if (!block_.gather(host, &replica, sizeof replica, peer_votes_.data())) return false;
  replica = -1;
  for (int64_t p = 0; p < block_.instances() && replica < 0; ++p) replica = peer_votes_[static_cast<size_t>(p)];
  return true;
}

// Every endpoint a transfer of `stream` uses must be connected (else the run fails with
// StreamNotConnected). A callback may disconnect its own stream: the transfer under way
// completes on the endpoints it started with (transfer_endpoint).
bool Machine::begin_transfer(int64_t stream, int64_t pc) {
  const int64_t ends = stream_endpoints(stream);
  for (int64_t r = 0; r < ends; ++r)
    if (endpoint(stream, r).kind == StreamEndpoint::None)
      return fail(Status::StreamNotConnected, pc, stream, block_.first() + r), false;
  const auto first = streams_.begin() + stream * block_.local();
  started_.assign(first, first + ends);
  return true;
}

StreamEndpoint &Machine::transfer_endpoint(int64_t stream, int64_t replica) {
  StreamEndpoint &now = endpoint(stream, replica);
  return now.kind != StreamEndpoint::None ? now : started_[static_cast<size_t>(replica)];
}

Status Machine::stream_to_device(const Instr &in, int64_t pc, const HostInterface &host) {
  const int64_t stream = in.a, ends = stream_endpoints(stream);
  if (transfer_bytes(stream) == 0) return Status::Ok;
  if (!begin_transfer(stream, pc)) return error_.status;
  for (int64_t r = 0; r < ends; ++r) {
    StreamEndpoint &s = transfer_endpoint(stream, r);
    const uint8_t *src;
    if (s.kind == StreamEndpoint::Buffer) {
      src = s.next_buffer_transfer();
    } else {
      // The host keeps the staging buffer alive until the run ends, even if the
      // callback disconnects the stream.
      src = s.staging;
      if (host.call(host.ctx, HOST_STREAM_FETCH, stream, s.staging, s.transfer_bytes, r) != 0)
        return fail(Status::HostError, pc, stream, block_.first() + r);
    }
    if (ends == 1) {  // broadcast (or one replica): every replica reads the one transfer
      for (int64_t k = 0; k < block_.local(); ++k) run_table(in.b, src, arena(k));
    } else {
      run_table(in.b, src, arena(r));
    }
  }
  return Status::Ok;
}

Status Machine::stream_from_device(const Instr &in, int64_t pc, const HostInterface &host) {
  const int64_t stream = in.a, ends = stream_endpoints(stream);
  if (transfer_bytes(stream) == 0) return Status::Ok;
  if (!begin_transfer(stream, pc)) return error_.status;
  for (int64_t r = 0; r < ends; ++r) {
    StreamEndpoint &s = transfer_endpoint(stream, r);
    if (s.kind == StreamEndpoint::Buffer) {
      run_table(in.b, arena(r), s.next_buffer_transfer());
    } else {
      run_table(in.b, arena(r), s.staging);
      if (host.call(host.ctx, HOST_STREAM_COMPLETE, stream, s.staging, s.transfer_bytes, r) != 0)
        return fail(Status::HostError, pc, stream, block_.first() + r);
    }
  }
  return Status::Ok;
}

// Source replica r's elements go to replica map[r]. All replicas send at once, as over
// the IPU-Links: when source and destination overlap, every source is read before any
// destination is written.
bool Machine::cross_replica_copy(int64_t table, int64_t map, const HostInterface &host) {
  if (block_.distributed()) return cross_process_copy(table, map, host);
  const int64_t *dest = exe_.replica_maps.data() + map * exe_.num_replicas;
  if (!exe_.table_overlaps[static_cast<size_t>(table)]) {
    for (int64_t r = 0; r < exe_.num_replicas; ++r)
      if (dest[r] >= 0) run_table(table, arena(r), arena(dest[r]));
    return true;
  }
  const CopyRun *first = copies_->first(table), *last = copies_->end(table);
  const int64_t bytes = copies_->bytes(table);
  replica_scratch_.resize(static_cast<size_t>(bytes * exe_.num_replicas));
  for (int64_t r = 0; r < exe_.num_replicas; ++r)
    if (dest[r] >= 0) gather_runs(first, last, arena(r), replica_scratch_.data() + r * bytes);
  for (int64_t r = 0; r < exe_.num_replicas; ++r)
    if (dest[r] >= 0) scatter_runs(first, last, replica_scratch_.data() + r * bytes, arena(dest[r]));
  return true;
}

// The same across processes. When the table's sources and destinations do not overlap,
// this block's own pairs copy here and MPI moves the others' fragments straight between
// tile memories (PEER_COPY). Otherwise the fragments for each other process go in one
// message, in source replica order, and every source here is read (into the messages,
// or into scratch for this block's own pairs) before any destination here is written.
bool Machine::cross_process_copy(int64_t table, int64_t map, const HostInterface &host) {
  const int64_t *dest = exe_.replica_maps.data() + map * exe_.num_replicas;
  if (!exe_.table_overlaps[static_cast<size_t>(table)]) {
    for (int64_t r = block_.first(); r < block_.first() + block_.local(); ++r)
      if (dest[r] >= 0 && block_.holds(dest[r])) run_table(table, arena(r - block_.first()), arena(dest[r] - block_.first()));
    return block_.copy(host, table, map);
  }
  const CopyRun *first = copies_->first(table), *last = copies_->end(table);
  const int64_t bytes = copies_->bytes(table);
  const int64_t base = block_.first(), n = block_.instances();
  std::vector<int64_t> send_bytes(static_cast<size_t>(n), 0), recv_bytes(static_cast<size_t>(n), 0);
  int64_t local_pairs = 0;
  for (int64_t r = 0; r < exe_.num_replicas; ++r) {
    const int64_t d = dest[r];
    if (d < 0) continue;
    if (block_.holds(r) && block_.holds(d)) ++local_pairs;
    else if (block_.holds(r)) send_bytes[static_cast<size_t>(block_.owner(d))] += bytes;
    else if (block_.holds(d)) recv_bytes[static_cast<size_t>(block_.owner(r))] += bytes;
  }
  int64_t total_send = 0, total_recv = 0;
  for (int64_t p = 0; p < n; ++p) total_send += send_bytes[static_cast<size_t>(p)], total_recv += recv_bytes[static_cast<size_t>(p)];
  peer_send_.resize(static_cast<size_t>(total_send));
  peer_recv_.resize(static_cast<size_t>(total_recv));
  replica_scratch_.resize(static_cast<size_t>(bytes * local_pairs));
  auto gather_source = [&](int64_t r, uint8_t *out) { gather_runs(first, last, arena(r - base), out); };
  auto scatter_to = [&](int64_t d, const uint8_t *in) { scatter_runs(first, last, in, arena(d - base)); };
  uint8_t *out = peer_send_.data(), *scratch = replica_scratch_.data();
  for (int64_t p = 0; p < n; ++p)
    for (int64_t r = base; r < base + block_.local(); ++r)
      if (dest[r] >= 0 && !block_.holds(dest[r]) && block_.owner(dest[r]) == p) gather_source(r, out), out += bytes;
  for (int64_t r = base; r < base + block_.local(); ++r)
    if (dest[r] >= 0 && block_.holds(dest[r])) gather_source(r, scratch), scratch += bytes;
  scratch = replica_scratch_.data();
  for (int64_t r = base; r < base + block_.local(); ++r)
    if (dest[r] >= 0 && block_.holds(dest[r])) scatter_to(dest[r], scratch), scratch += bytes;
  if (!block_.exchange(host, peer_send_, send_bytes, peer_recv_, recv_bytes)) return false;
  const uint8_t *in = peer_recv_.data();
  for (int64_t r = 0; r < exe_.num_replicas; ++r)  // by source: process order, then replica order
    if (dest[r] >= 0 && !block_.holds(r) && block_.holds(dest[r])) scatter_to(dest[r], in), in += bytes;
  return true;
}

Status Machine::run(int64_t program, const HostInterface &host) {
  error_ = ErrorRecord{};
  if (!loaded_) return fail(Status::NotLoaded, -1, program);
  if (program < 0 || program >= static_cast<int64_t>(exe_.entries.size())) return fail(Status::BadProgram, -1, program);
  call_stack_.clear();
  const Instr *instrs = exe_.instrs.data();
  const int64_t step_width = exe_.num_ipus * NUM_COST_CATEGORIES;
  const double *costs = exe_.step_costs.data();
  uint64_t *counts = step_counts_.data();
  uint64_t executed = 0;
  int64_t pc = exe_.entries[program];
  const int64_t replicas = block_.local();
  struct FinishRun {  // however the run ends, its IPUs end together
    IpuClocks &clocks;
    ~FinishRun() { clocks.finish_run(); }
  } finish{clocks_};

  for (;;) {
    const Instr &in = instrs[pc];
    if (in.step >= 0) {
      ++counts[in.step];
      // An Execute's cost is known once its compute phase has run (below).
      if (in.op != OP_EXECUTE) {
        const StepIpus &ipus = exe_.step_ipus[static_cast<size_t>(in.step)];
        clocks_.charge(in.step, costs + in.step * step_width, mask_of(ipus.involved), mask_of(ipus.join),
                       static_cast<double>(ipus.tail));
      }
    }
    if (++executed % kPollInterval == 0) {
      if (stop_ || *interrupt_flag()) return fail(Status::Stopped, pc, -1);
      if (host.call(host.ctx, HOST_POLL, 0, nullptr, 0, 0) != 0) return fail(Status::HostError, pc, -1);
    }
    int64_t next = pc + 1;
    switch (in.op) {
      case OP_HALT:
        return Status::Ok;
      case OP_ACCOUNT:
        break;
      case OP_EXECUTE: {
        const ComputeSetRow &cs = exe_.vertex.compute_sets[static_cast<size_t>(in.a)];
        // Each tile's gathers just before its vertices where the executable allows it and
        // the table's rows are order-free (else all of them first, as the exchange does).
        const bool by_group = cs.gathers_by_group && copies_->order_free(cs.exchange_in);
        if (cs.exchange_in >= 0 && !by_group)
          for (int64_t r = 0; r < replicas; ++r) run_table(cs.exchange_in, arena(r), arena(r));
        ComputeSetCycles cc;
        const Status status = compute_->run(in.a, host, cc, error_, by_group ? copies_->first(cs.exchange_in) : nullptr);
        if (status != Status::Ok) {
          error_.pc = pc;
          error_.step = in.step;
          if (error_.error_kind == POPSIM_FAULT) locate_fault();
          return status;
        }
        if (cs.exchange_out >= 0)
          for (int64_t r = 0; r < replicas; ++r) run_table(cs.exchange_out, arena(r), arena(r));
        std::fflush(stdout);  // what codelets printed appears before anything the host prints next
        if (in.step >= 0) {  // the superstep's cost, known only now that its compute phase has run
          const StepIpus &ipus = exe_.step_ipus[static_cast<size_t>(in.step)];
          compose_superstep(exe_.vertex.exchange_costs.data() + in.a * 2 * step_width, exe_.num_ipus,
                            mask_of(ipus.involved), mask_of(ipus.join), exe_.vertex.sync_cycles, cc, superstep_.data());
          clocks_.charge(in.step, superstep_.data(), mask_of(ipus.involved), mask_of(ipus.join));
        }
        break;
      }
      case OP_COPY:
        for (int64_t r = 0; r < replicas; ++r) run_table(in.a, arena(r), arena(r));
        break;
      case OP_CROSS_REPLICA_COPY:
        if (!cross_replica_copy(in.a, in.b, host)) return fail(Status::HostError, pc, -1);
        break;
      case OP_STREAM_TO_DEVICE: {
        const Status status = stream_to_device(in, pc, host);
        if (status != Status::Ok) return status;
        break;
      }
      case OP_STREAM_FROM_DEVICE: {
        const Status status = stream_from_device(in, pc, host);
        if (status != Status::Ok) return status;
        break;
      }
      case OP_HOST_CALL:
        for (int64_t r = 0; r < replicas; ++r)
          if (host.call(host.ctx, HOST_CALLBACK, in.a, nullptr, 0, r) != 0)
            return fail(Status::HostError, pc, in.a, block_.first() + r);
        break;
      case OP_JUMP:
        next = in.a;
        break;
      case OP_LOOP_BEGIN:
        loop_counters_[in.a] = in.b;
        if (in.b <= 0) next = in.c;
        break;
      case OP_LOOP_END:
        if (--loop_counters_[in.a] > 0) next = in.b;
        break;
      case OP_BRANCH_IF_FALSE: case OP_BRANCH_IF_TRUE: {
        bool value;
        if (!uniform(in, pc, scalar_is_true, value, host)) return error_.status;
        if (value == (in.op == OP_BRANCH_IF_TRUE)) next = in.a;
        break;
      }
      case OP_SWITCH: {
        int64_t value;
        if (!uniform(in, pc, scalar_as_int, value, host)) return error_.status;
        next = exe_.switch_default[in.a];
        for (int64_t i = exe_.switch_begin[in.a]; i < exe_.switch_begin[in.a + 1]; ++i) {
          if (exe_.cases[i].value == value) { next = exe_.cases[i].target; break; }
        }
        break;
      }
      case OP_CALL:
        if (call_stack_.size() >= static_cast<size_t>(MAX_CALL_DEPTH)) return fail(Status::CallStackOverflow, pc, -1);
        call_stack_.push_back(next);
        next = in.a;
        break;
      case OP_RETURN:
        if (call_stack_.empty()) return fail(Status::BadProgram, pc, -1);
        next = call_stack_.back();
        call_stack_.pop_back();
        break;
      case OP_ABORT:
        return fail(Status::Aborted, pc, in.a);
      case OP_ABORT_IF: {
        int64_t replica;
        if (!first_aborting(in, host, replica)) return fail(Status::HostError, pc, -1);
        if (replica >= 0) return fail(Status::Aborted, pc, in.a, exe_.num_replicas > 1 ? replica : -1);
        break;
      }
      default:
        return fail(Status::BadProgram, pc, in.op);
    }
    pc = next;
  }
}

}  // namespace popsim
