// The executable description the Python lowering produces and the core runs:
// a flat instruction list with entry points per program, byte-level copy tables,
// switch tables and per-step cost vectors.
//
// This header is the one copy of the Python <-> C++ contract: opcodes, scalar type
// codes, field bases, vertex flags, cost categories and the row layouts of every table.
// The binding exports them (popsim._core.Op, ScalarType, ..., ROW_COLUMNS) and
// popsim/contract.py reads them from there; tests/test_contract.py checks both sides.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/rows.hpp"

namespace popsim {

// X(name, operands): every opcode, in code order.
#define POPSIM_OPS(X)                                                                   \
  X(HALT, "stop: the program is done")                                                  \
  X(ACCOUNT, "only accounting (Sync, WriteUndef, ...)")                                 \
  X(COPY, "a = copy table (arena -> arena)")                                            \
  X(STREAM_TO_DEVICE, "a = stream, b = copy table (transfer -> arena)")                 \
  X(STREAM_FROM_DEVICE, "a = stream, b = copy table (arena -> transfer)")               \
  X(HOST_CALL, "a = host callback id (PrintTensor, ...)")                               \
  X(JUMP, "a = target")                                                                 \
  X(LOOP_BEGIN, "a = slot, b = count, c = exit target")                                 \
  X(LOOP_END, "a = slot, b = body start")                                               \
  X(BRANCH_IF_FALSE, "a = target, b = arena offset, c = scalar type")                   \
  X(BRANCH_IF_TRUE, "a = target, b = arena offset, c = scalar type")                    \
  X(SWITCH, "a = switch table, b = arena offset, c = scalar type")                      \
  X(CALL, "a = target")                                                                 \
  X(RETURN, "back to the instruction after the last CALL")                              \
  X(ABORT, "a = message id")                                                            \
  X(ABORT_IF, "a = message id, b = arena offset, c = scalar type")                      \
  X(EXECUTE, "a = compute set")                                                        \
  X(CROSS_REPLICA_COPY, "a = copy table (arena -> arena), b = replica map")

#define POPSIM_ENUM_OP(name, doc) OP_##name,
enum Op : int64_t { POPSIM_OPS(POPSIM_ENUM_OP) OP_COUNT };
#undef POPSIM_ENUM_OP

// X(name, storage type, numpy kind): element types of the scalars control flow reads
// (predicates, switch control), in code order. popsim.types gives each Type its code.
#define POPSIM_SCALAR_TYPES(X) \
  X(BOOL, uint8_t, 'b')        \
  X(I8, int8_t, 'i')           \
  X(U8, uint8_t, 'u')          \
  X(I16, int16_t, 'i')         \
  X(U16, uint16_t, 'u')        \
  X(I32, int32_t, 'i')         \
  X(U32, uint32_t, 'u')        \
  X(I64, int64_t, 'i')         \
  X(U64, uint64_t, 'u')        \
  X(F16, uint16_t, 'f')        \
  X(F32, float, 'f')

#define POPSIM_ENUM_ST(name, type, kind) ST_##name,
enum ScalarType : int64_t { POPSIM_SCALAR_TYPES(POPSIM_ENUM_ST) ST_COUNT };
#undef POPSIM_ENUM_ST

// Bytes of a scalar of each type (0 for a code out of range).
inline int64_t scalar_type_size(int64_t type) {
#define POPSIM_SIZE_ST(name, ctype, kind) sizeof(ctype),
  static const int64_t sizes[] = {POPSIM_SCALAR_TYPES(POPSIM_SIZE_ST)};
#undef POPSIM_SIZE_ST
  return type >= 0 && type < ST_COUNT ? sizes[type] : 0;
}

// X(name, report key): the cost categories of a step's cost vector, in index order.
// CYCLES is the step's duration; the others are tile averages of each activity.
#define POPSIM_COST_CATEGORIES(X)                    \
  X(CYCLES, "cycles")                                \
  X(COMPUTE_INCL, "compute_including_idle")          \
  X(COMPUTE_EXCL, "compute_excluding_idle")          \
  X(IPU_EXCHANGE, "ipu_exchange")                    \
  X(GLOBAL_EXCHANGE, "global_exchange")              \
  X(HOST_EXCHANGE, "host_exchange")                  \
  X(SYNC, "sync")                                    \
  X(CONTROL, "control")

#define POPSIM_ENUM_CAT(name, key) CAT_##name,
enum CostCategory : int64_t { POPSIM_COST_CATEGORIES(POPSIM_ENUM_CAT) NUM_COST_CATEGORIES };
#undef POPSIM_ENUM_CAT

struct Instr {
  int64_t op, step, a, b, c, d;
};

// A row of a copy table (src/popsim/lower/copy_runs.py makes them): `outer` rows of
// `count` elements of `len` bytes, element i of row o copied from src + o * outer_src +
// i * src_stride to dst + o * outer_dst + i * dst_stride (byte offsets), rows in order and
// each row's elements in order. A plain segment is a run of one element (count and outer
// 1, strides 0). Lengths, counts and strides are within 32 bits (COPY_RUN_LIMIT), so a
// run's extent is computed in 64 bits without overflow (validate.cpp checks them).
struct CopyRun {
  int64_t src, dst, len, count, src_stride, dst_stride;
  int64_t outer, outer_src, outer_dst;
};
// The bound on a run's len, count, outer and on each stride's magnitude.
constexpr int64_t COPY_RUN_LIMIT = (int64_t{1} << 31) - 1;
// The most elements and bytes one copy table may move (all its runs together): the
// validation refuses more, so that a crafted executable cannot ask for unbounded work.
constexpr int64_t MAX_TABLE_ELEMENTS = int64_t{1} << 34;
constexpr int64_t MAX_TABLE_BYTES = int64_t{1} << 40;

struct SwitchCase {
  int64_t value, target;
};

// The IPUs (of one replica) a step charges, as bit masks: `involved` IPUs spend its
// cycles; `join` IPUs wait for each other (their clocks meet at the latest one), as an
// inter-IPU transfer or an external sync makes them (clocks.hpp). They meet before the
// last `tail` cycles of their durations (the phase they run together: a copy's link
// phase and global sync, after each IPU's own local phases), or at the start (tail -1).
struct StepIpus {
  int64_t involved, join, tail;
};

// Vertices and compute sets. A vertex's fields are rows of `fields`; each is an arena
// pointer (FIELD_ARENA: data = arena + offset), a run of `spans` (FIELD_SPANS: data =
// &spans[offset], for vectors of edges and VectorLists), or nothing (FIELD_NONE).
#define POPSIM_FIELD_BASES(X) X(ARENA) X(SPANS) X(NONE)
#define POPSIM_ENUM_FIELD(name) FIELD_##name,
enum FieldBase : int64_t { POPSIM_FIELD_BASES(POPSIM_ENUM_FIELD) FIELD_BASE_COUNT };
#undef POPSIM_ENUM_FIELD

#define POPSIM_VERTEX_FLAGS(X) X(MULTI, 1)
#define POPSIM_ENUM_FLAG(name, bit) VERTEX_##name = bit,
enum VertexFlags : int64_t { POPSIM_VERTEX_FLAGS(POPSIM_ENUM_FLAG) };
#undef POPSIM_ENUM_FLAG

// Vertex state objects (VertexRow::state_offset) start at multiples of this.
constexpr int64_t STATE_ALIGNMENT = 16;
// How deep Calls may nest at run time (the VM's return stack); the lowering refuses deeper
// programs when they are built.
constexpr int64_t MAX_CALL_DEPTH = int64_t{1} << 16;

struct VertexRow {
  int64_t codelet, tile, worker, state_offset, first_field, num_fields;
  int64_t estimate;  // worker cycles per run; -1: the codelet counts its own
  int64_t flags;
};
struct FieldRow {
  int64_t base, offset, size;  // size: element count (FIELD_SPANS: sub-edge count)
};
struct SpanRow {
  int64_t offset, size;  // arena offset, element count
};
// The vertices of one compute set on one tile, run in order by one thread; with their
// compute set's gathers_by_group, that thread first copies rows [first_gather,
// end_gather) of the compute set's exchange_in table (its tile's inputs). Else both 0.
struct GroupRow {
  int64_t tile, first_vertex, num_vertices;
  int64_t first_gather, end_gather;
};
struct ComputeSetRow {
  int64_t first_group, num_groups;
  int64_t exchange_in, exchange_out;  // copy tables run before / after compute, or -1
  // 1: the groups' gather rows cut exchange_in in order, and no vertex of the set writes
  // what any of them reads, so each group may run its share just before its vertices.
  int64_t gathers_by_group;
};

// What a codelet's bind() expects of each of its fields, in declaration order: where
// the field points (FieldBase), the bytes of one element, and how many elements the
// codelet reads there whatever the row's size says (for a list field: at each sub-edge):
// 1 for a scalar (src/popsim/codelet/include/popsim_codelet.h: its size is 1), 0 for a vector (it reads
// size elements). A field row is checked against it before any vertex runs.
struct FieldLayout {
  int64_t base, itemsize, elements;
};
struct CodeletInfo {
  std::string path;    // shared library; empty: a host-run (interpreted) codelet
  std::string symbol;  // ABI symbol prefix
  std::vector<FieldLayout> fields;
};

// The big tables are Rows (rows.hpp): the binding may lend them instead of copying.
struct VertexTables {
  Rows<VertexRow> vertices;
  Rows<FieldRow> fields;
  Rows<SpanRow> spans;
  std::vector<GroupRow> groups;
  std::vector<ComputeSetRow> compute_sets;
  // Per compute set: the cost vectors (NUM_COST_CATEGORIES each) of its exchange-in and
  // exchange-out phases, from the lowering; the superstep adds them (superstep.hpp).
  // Per IPU of a replica, as step costs are.
  std::vector<double> exchange_costs;  // num compute sets x 2 x num_ipus x NUM_COST_CATEGORIES
  std::vector<CodeletInfo> codelets;
  // For reports the core writes itself (a vertex crashing): the vertex type name of each
  // codelet and the name of each compute set.
  std::vector<std::string> codelet_names;
  std::vector<std::string> compute_set_names;
  int64_t state_bytes = 0;   // vertex state objects, at VertexRow::state_offset
  int64_t num_workers = 6;
  int64_t num_tiles = 1;     // of one replica, for tile averages
  int64_t tiles_per_ipu = 1;  // tile t is on IPU t / tiles_per_ipu (of its replica)
  double sync_cycles = 0;    // the internal sync ending a compute phase
};

// The most IPUs one replica has: a step's IPUs are the bits of a mask (StepIpus).
constexpr int64_t MAX_IPUS_PER_REPLICA = 64;

struct Executable {
  int64_t arena_bytes = 0;                // one replica's tile memory: every variable, constant and buffer
  // Replicas share everything below but tile memory, vertex state and stream endpoints:
  // the machine holds num_replicas copies of those and runs every step on each.
  int64_t num_replicas = 1;
  int64_t num_ipus = 1;                   // IPUs of one replica, each with its own clock
  std::vector<int64_t> replica_maps;      // num maps x num_replicas: destination of each source replica, or -1
  std::vector<int64_t> replication_index_offsets;  // arena offsets of uint32 constants holding the replica index
  std::vector<uint8_t> stream_broadcast;  // per stream: 1 = one transfer read by every replica
  std::vector<Instr> instrs;
  std::vector<int64_t> entries;           // program index -> first instruction
  Rows<CopyRun> copy_runs;                // all copy tables' runs, concatenated
  std::vector<int64_t> table_begin;       // table t = copy_runs[table_begin[t] .. table_begin[t+1])
  std::vector<uint8_t> table_overlaps;    // 1 when a table's source and destination overlap
  std::vector<SwitchCase> cases;          // all switch tables, concatenated
  std::vector<int64_t> switch_begin;      // like table_begin
  std::vector<int64_t> switch_default;    // default target per switch table
  std::vector<int64_t> stream_transfer_bytes;
  std::vector<double> step_costs;         // num_steps x num_ipus x NUM_COST_CATEGORIES
  std::vector<StepIpus> step_ipus;        // per step
  int64_t num_steps = 0;
  int64_t num_loop_slots = 0;
  int64_t num_host_calls = 0;             // OP_HOST_CALL ids are below this
  int64_t num_messages = 0;               // OP_ABORT / OP_ABORT_IF message ids are below this
  VertexTables vertex;
};

}  // namespace popsim
