// The executable description the Python lowering produces and the core runs:
// a flat instruction list with entry points per program, byte-level copy tables,
// switch tables and per-step cost vectors.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace popsim {

enum Op : int64_t {
  OP_HALT = 0,
  OP_ACCOUNT = 1,             // only accounting (Sync, WriteUndef, ...)
  OP_COPY = 2,                // a = copy table (arena -> arena)
  OP_STREAM_TO_DEVICE = 3,    // a = stream, b = copy table (transfer -> arena)
  OP_STREAM_FROM_DEVICE = 4,  // a = stream, b = copy table (arena -> transfer)
  OP_HOST_CALL = 5,           // a = host callback id (PrintTensor, ...)
  OP_JUMP = 6,                // a = target
  OP_LOOP_BEGIN = 7,          // a = slot, b = count, c = exit target
  OP_LOOP_END = 8,            // a = slot, b = body start
  OP_BRANCH_IF_FALSE = 9,     // a = target, b = arena offset, c = scalar type
  OP_BRANCH_IF_TRUE = 10,     // a = target, b = arena offset, c = scalar type
  OP_SWITCH = 11,             // a = switch table, b = arena offset, c = scalar type
  OP_CALL = 12,               // a = target
  OP_RETURN = 13,
  OP_ABORT = 14,              // a = message id
  OP_ABORT_IF = 15,           // a = message id, b = arena offset, c = scalar type
  OP_EXECUTE = 16,            // a = compute set
};

// Element types of scalars the control flow reads (predicates, switch control).
enum ScalarType : int64_t {
  ST_BOOL = 0, ST_I8, ST_U8, ST_I16, ST_U16, ST_I32, ST_U32, ST_I64, ST_U64, ST_F16, ST_F32,
};

struct Instr {
  int64_t op, step, a, b, c, d;
};

struct CopySeg {
  int64_t src, dst, len;  // byte offsets and length
};

struct SwitchCase {
  int64_t value, target;
};

// Vertices and compute sets. A vertex's fields are rows of `fields`; each is an arena
// pointer (FIELD_ARENA: data = arena + offset), a run of `spans` (FIELD_SPANS: data =
// &spans[offset], for vectors of edges and VectorLists), or nothing (FIELD_NULL).
enum FieldBase : int64_t { FIELD_ARENA = 0, FIELD_SPANS = 1, FIELD_NULL = 2 };
enum VertexFlags : int64_t { VERTEX_MULTI = 1 };

struct VertexRow {
  int64_t codelet, tile, worker, state_offset, first_field, num_fields;
  int64_t estimate;  // worker cycles per run; -1: the codelet counts its own
  int64_t flags;
};
struct FieldRow {
  int64_t base, offset, size;
};
struct SpanRow {
  int64_t offset, size;  // arena offset, element count
};
// The vertices of one compute set on one tile, run in order by one thread.
struct GroupRow {
  int64_t tile, first_vertex, num_vertices;
};
struct ComputeSetRow {
  int64_t first_group, num_groups;
  int64_t exchange_in, exchange_out;  // copy tables run before / after compute, or -1
};

struct VertexTables {
  std::vector<VertexRow> vertices;
  std::vector<FieldRow> fields;
  std::vector<SpanRow> spans;
  std::vector<GroupRow> groups;
  std::vector<ComputeSetRow> compute_sets;
  std::vector<std::string> codelet_paths;    // empty path: a host-run (interpreted) codelet
  std::vector<std::string> codelet_symbols;
  // For reports the core writes itself (a vertex crashing): the vertex type name of each
  // codelet and the name of each compute set; may be empty.
  std::vector<std::string> codelet_names;
  std::vector<std::string> compute_set_names;
  int64_t state_bytes = 0;   // vertex state objects, at VertexRow::state_offset
  int64_t num_workers = 6;
  int64_t num_tiles = 1;     // for tile averages
};

struct Executable {
  std::vector<Instr> instrs;
  std::vector<int64_t> entries;           // program index -> first instruction
  std::vector<CopySeg> segs;              // all copy tables, concatenated
  std::vector<int64_t> table_begin;       // table t = segs[table_begin[t] .. table_begin[t+1])
  std::vector<uint8_t> table_overlaps;    // 1 when a table's source and destination overlap
  std::vector<SwitchCase> cases;          // all switch tables, concatenated
  std::vector<int64_t> switch_begin;      // like table_begin
  std::vector<int64_t> switch_default;    // default target per switch table
  std::vector<int64_t> stream_transfer_bytes;
  std::vector<double> step_costs;         // num_steps x num_categories
  int64_t num_steps = 0;
  int64_t num_categories = 0;
  int64_t num_loop_slots = 0;
  VertexTables vertex;
};

// Cost categories the core fills in itself (indices into a step's cost vector; the
// Python cost model defines the full list).
enum CostCategory : int64_t { CAT_CYCLES = 0, CAT_COMPUTE_INCL = 1, CAT_COMPUTE_EXCL = 2, CAT_SYNC = 6 };

}  // namespace popsim
