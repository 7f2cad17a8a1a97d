#include "core/machine.hpp"

#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <cstring>
#include <limits>
#include <new>
#include <utility>

#include "core/scalars.hpp"
#include "core/superstep.hpp"

namespace popsim {

namespace {
// Calls into the host every this many instructions so a long run can be interrupted.
constexpr uint64_t kPollInterval = 1u << 18;

// acc += c over a step's cost vector, two categories per vector add (the compiler will
// not vectorize the plain loop: it cannot rule out that the two overlap).
inline void add_costs(double *acc, const double *c) {
  typedef double Pair __attribute__((vector_size(16)));
  static_assert(NUM_COST_CATEGORIES % 2 == 0, "cost vectors add two categories at a time");
  for (int64_t k = 0; k < NUM_COST_CATEGORIES; k += 2) {
    Pair a, b;
    std::memcpy(&a, acc + k, sizeof a);
    std::memcpy(&b, c + k, sizeof b);
    a += b;
    std::memcpy(acc + k, &a, sizeof a);
  }
}
}  // namespace

Machine::Machine(Executable exe, unsigned num_threads, int64_t trace_capacity, int64_t streaming_bytes)
    : exe_(std::move(exe)), extents_(validate(exe_)), arena_bytes_(exe_.arena_bytes),
      trace_capacity_(static_cast<size_t>(std::max<int64_t>(trace_capacity, 0))), pool_(num_threads) {
  // calloc: zero pages come lazily from the OS, so big arenas cost nothing up front.
  arena_ = static_cast<uint8_t *>(std::calloc(arena_bytes_ > 0 ? arena_bytes_ : 1, 1));
  if (!arena_) throw std::bad_alloc();
  streams_.resize(exe_.stream_transfer_bytes.size());
  for (size_t s = 0; s < streams_.size(); ++s) streams_[s].transfer_bytes = exe_.stream_transfer_bytes[s];
  loop_counters_.assign(static_cast<size_t>(exe_.num_loop_slots), 0);
  call_stack_.reserve(64);
  copies_ = std::make_unique<CopyTables>(exe_, pool_, streaming_bytes);
  compute_ = std::make_unique<ComputeEngine>(exe_.vertex, pool_);
  reset_counters();
}

Machine::~Machine() { std::free(arena_); }

void Machine::reset_counters() {
  step_counts_.assign(static_cast<size_t>(exe_.num_steps), 0);
  step_cycles_.assign(static_cast<size_t>(exe_.num_steps * NUM_COST_CATEGORIES), 0.0);
  trace_.clear();
  trace_.reserve(std::min<size_t>(trace_capacity_, 4096));
  trace_truncated_ = false;
  clock_ = 0;
  if (compute_) compute_->reset_counters();
}

bool Machine::host_table_fits(int64_t table, int64_t host_bytes, bool to_device) const {
  if (table < 0 || table >= static_cast<int64_t>(extents_.src.size())) return false;
  const int64_t host = to_device ? extents_.src[static_cast<size_t>(table)] : extents_.dst[static_cast<size_t>(table)];
  const int64_t arena = to_device ? extents_.dst[static_cast<size_t>(table)] : extents_.src[static_cast<size_t>(table)];
  return host <= host_bytes && arena <= arena_bytes_;
}

void Machine::load(int64_t table, const uint8_t *image, int64_t vertex_table, const uint8_t *vertex_image) {
  // A fresh arena is calloc's lazily zeroed memory: not touching it keeps a huge one
  // (a graph built with debug.allowOutOfMemory) from costing host memory.
  if (!fresh_) std::memset(arena_, 0, static_cast<size_t>(arena_bytes_));
  fresh_ = false;
  if (table >= 0) run_table(table, image, arena_);
  if (vertex_table >= 0) run_table(vertex_table, vertex_image, arena_);
  compute_->bind_all(arena_);
  loaded_ = true;
}

void Machine::write(int64_t table, const uint8_t *host) {
  fresh_ = false;
  run_table(table, host, arena_);
}
void Machine::read(int64_t table, uint8_t *host) { run_table(table, arena_, host); }

void Machine::connect_buffer(int64_t stream, uint8_t *data, int64_t bytes) {
  StreamEndpoint &s = streams_[stream];
  s.kind = StreamEndpoint::Buffer;
  s.buffer = data;
  s.buffer_bytes = bytes;
  s.position = 0;
  s.staging = nullptr;
}

void Machine::connect_callback(int64_t stream, uint8_t *staging) {
  StreamEndpoint &s = streams_[stream];
  s.kind = StreamEndpoint::Callback;
  s.buffer = nullptr;
  s.buffer_bytes = 0;
  s.position = 0;
  s.staging = staging;
}

void Machine::disconnect(int64_t stream) { streams_[stream] = StreamEndpoint{StreamEndpoint::None, streams_[stream].transfer_bytes}; }

bool Machine::connected(int64_t stream) const { return streams_[stream].kind != StreamEndpoint::None; }

Status Machine::fail(Status status, int64_t pc, int64_t id) {
  error_.status = status;
  error_.pc = pc;
  error_.id = id;
  error_.step = (pc >= 0 && pc < static_cast<int64_t>(exe_.instrs.size())) ? exe_.instrs[pc].step : -1;
  return status;
}

Status Machine::run(int64_t program, const HostInterface &host) {
  error_ = ErrorRecord{};
  if (!loaded_) return fail(Status::NotLoaded, -1, program);
  if (program < 0 || program >= static_cast<int64_t>(exe_.entries.size())) return fail(Status::BadProgram, -1, program);
  call_stack_.clear();
  const Instr *instrs = exe_.instrs.data();
  const int64_t ncat = NUM_COST_CATEGORIES;
  const double *costs = exe_.step_costs.data();
  double *cycles = step_cycles_.data();
  uint64_t *counts = step_counts_.data();
  uint64_t executed = 0;
  int64_t pc = exe_.entries[program];

  for (;;) {
    const Instr &in = instrs[pc];
    if (in.step >= 0) {
      ++counts[in.step];
      const double *c = costs + in.step * ncat;
      add_costs(cycles + in.step * ncat, c);
      if (trace_.size() < trace_capacity_)
        trace_.push_back(TraceEntry{static_cast<double>(in.step), clock_, c[CAT_CYCLES]});
      else
        trace_truncated_ = true;
      clock_ += c[CAT_CYCLES];
    }
    if (++executed % kPollInterval == 0 && host.call(host.ctx, HOST_POLL, 0, nullptr, 0) != 0)
      return fail(Status::HostError, pc, -1);
    int64_t next = pc + 1;
    switch (in.op) {
      case OP_HALT:
        return Status::Ok;
      case OP_ACCOUNT:
        break;
      case OP_EXECUTE: {
        const ComputeSetRow &cs = exe_.vertex.compute_sets[static_cast<size_t>(in.a)];
        if (cs.exchange_in >= 0) run_table(cs.exchange_in, arena_, arena_);
        ComputeSetCycles cc;
        const Status status = compute_->run(in.a, host, cc, error_);
        if (status != Status::Ok) {
          error_.pc = pc;
          error_.step = in.step;
          return status;
        }
        if (cs.exchange_out >= 0) run_table(cs.exchange_out, arena_, arena_);
        std::fflush(stdout);  // what codelets printed appears before anything the host prints next
        if (in.step >= 0) {  // the superstep's cost, known only now that its compute phase has run
          const double duration = account_superstep(
              exe_.vertex.exchange_costs.data() + in.a * 2 * NUM_COST_CATEGORIES, exe_.vertex.sync_cycles, cc,
              cycles + in.step * ncat);
          clock_ += duration;
          if (!trace_.empty() && trace_.back().step == static_cast<double>(in.step) && !trace_truncated_)
            trace_.back().cycles += duration;
        }
        break;
      }
      case OP_COPY:
        run_table(in.a, arena_, arena_);
        break;
      case OP_STREAM_TO_DEVICE: {
        StreamEndpoint &s = streams_[in.a];
        if (s.transfer_bytes == 0) break;
        if (s.kind == StreamEndpoint::None) return fail(Status::StreamNotConnected, pc, in.a);
        const uint8_t *src;
        if (s.kind == StreamEndpoint::Buffer) {
          src = s.next_buffer_transfer();
        } else {
          // The host keeps the staging buffer alive until the run ends, even if the
          // callback disconnects the stream.
          src = s.staging;
          if (host.call(host.ctx, HOST_STREAM_FETCH, in.a, s.staging, s.transfer_bytes) != 0)
            return fail(Status::HostError, pc, in.a);
        }
        run_table(in.b, src, arena_);
        break;
      }
      case OP_STREAM_FROM_DEVICE: {
        StreamEndpoint &s = streams_[in.a];
        if (s.transfer_bytes == 0) break;
        if (s.kind == StreamEndpoint::None) return fail(Status::StreamNotConnected, pc, in.a);
        if (s.kind == StreamEndpoint::Buffer) {
          run_table(in.b, arena_, s.next_buffer_transfer());
        } else {
          run_table(in.b, arena_, s.staging);
          if (host.call(host.ctx, HOST_STREAM_COMPLETE, in.a, s.staging, s.transfer_bytes) != 0)
            return fail(Status::HostError, pc, in.a);
        }
        break;
      }
      case OP_HOST_CALL:
        if (host.call(host.ctx, HOST_CALLBACK, in.a, nullptr, 0) != 0) return fail(Status::HostError, pc, in.a);
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
      case OP_BRANCH_IF_FALSE:
        if (!scalar_is_true(arena_ + in.b, in.c)) next = in.a;
        break;
      case OP_BRANCH_IF_TRUE:
        if (scalar_is_true(arena_ + in.b, in.c)) next = in.a;
        break;
      case OP_SWITCH: {
        const int64_t value = scalar_as_int(arena_ + in.b, in.c);
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
      case OP_ABORT_IF:
        if (scalar_is_true(arena_ + in.b, in.c)) return fail(Status::Aborted, pc, in.a);
        break;
      default:
        return fail(Status::BadProgram, pc, in.op);
    }
    pc = next;
  }
}

}  // namespace popsim
