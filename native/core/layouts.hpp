// The memory layouts Python must build or read byte for byte, as data: the column of
// each table row's field, and the C structs of the codelet ABI. The binding exports
// them (popsim._core.ROW_COLUMNS, EXEC_FIELDS, SPAN_FIELDS); offsets come from the
// structs themselves, so they cannot drift.
#pragma once
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "core/executable.hpp"
#include "popsim_codelet.h"

namespace popsim {

struct RowLayout {
  const char *table;
  size_t width;  // int64 columns
  std::vector<std::pair<const char *, size_t>> columns;
};

#define POPSIM_COLUMN(ROW, NAME) std::pair<const char *, size_t>(#NAME, offsetof(ROW, NAME) / sizeof(int64_t))
#define POPSIM_ROW(TABLE, ROW, ...) RowLayout{TABLE, sizeof(ROW) / sizeof(int64_t), {__VA_ARGS__}}

inline std::vector<RowLayout> row_layouts() {
  return {
      POPSIM_ROW("instrs", Instr, POPSIM_COLUMN(Instr, op), POPSIM_COLUMN(Instr, step), POPSIM_COLUMN(Instr, a),
                 POPSIM_COLUMN(Instr, b), POPSIM_COLUMN(Instr, c), POPSIM_COLUMN(Instr, d)),
      POPSIM_ROW("copy_runs", CopyRun, POPSIM_COLUMN(CopyRun, src), POPSIM_COLUMN(CopyRun, dst),
                 POPSIM_COLUMN(CopyRun, len), POPSIM_COLUMN(CopyRun, count), POPSIM_COLUMN(CopyRun, src_stride),
                 POPSIM_COLUMN(CopyRun, dst_stride), POPSIM_COLUMN(CopyRun, outer),
                 POPSIM_COLUMN(CopyRun, outer_src), POPSIM_COLUMN(CopyRun, outer_dst)),
      POPSIM_ROW("cases", SwitchCase, POPSIM_COLUMN(SwitchCase, value), POPSIM_COLUMN(SwitchCase, target)),
      POPSIM_ROW("step_ipus", StepIpus, POPSIM_COLUMN(StepIpus, involved), POPSIM_COLUMN(StepIpus, join),
                 POPSIM_COLUMN(StepIpus, tail)),
      POPSIM_ROW("vertices", VertexRow, POPSIM_COLUMN(VertexRow, codelet), POPSIM_COLUMN(VertexRow, tile),
                 POPSIM_COLUMN(VertexRow, worker), POPSIM_COLUMN(VertexRow, state_offset),
                 POPSIM_COLUMN(VertexRow, first_field), POPSIM_COLUMN(VertexRow, num_fields),
                 POPSIM_COLUMN(VertexRow, estimate), POPSIM_COLUMN(VertexRow, flags)),
      POPSIM_ROW("fields", FieldRow, POPSIM_COLUMN(FieldRow, base), POPSIM_COLUMN(FieldRow, offset),
                 POPSIM_COLUMN(FieldRow, size)),
      POPSIM_ROW("spans", SpanRow, POPSIM_COLUMN(SpanRow, offset), POPSIM_COLUMN(SpanRow, size)),
      POPSIM_ROW("groups", GroupRow, POPSIM_COLUMN(GroupRow, tile), POPSIM_COLUMN(GroupRow, first_vertex),
                 POPSIM_COLUMN(GroupRow, num_vertices), POPSIM_COLUMN(GroupRow, first_gather),
                 POPSIM_COLUMN(GroupRow, end_gather)),
      POPSIM_ROW("compute_sets", ComputeSetRow, POPSIM_COLUMN(ComputeSetRow, first_group),
                 POPSIM_COLUMN(ComputeSetRow, num_groups), POPSIM_COLUMN(ComputeSetRow, exchange_in),
                 POPSIM_COLUMN(ComputeSetRow, exchange_out), POPSIM_COLUMN(ComputeSetRow, gathers_by_group)),
  };
}
#undef POPSIM_ROW
#undef POPSIM_COLUMN

// A C struct field: name, byte offset, byte size, numpy kind ('u', 'i', 'p' pointer).
struct CField {
  const char *name;
  size_t offset, size;
  const char *kind;
};
#define POPSIM_C_FIELD(STRUCT, NAME, KIND) CField{#NAME, offsetof(STRUCT, NAME), sizeof(STRUCT::NAME), KIND}

// Every field of popsim_exec, in order. A field added to the struct must be added here:
// the assertion below (and tests/test_contract.py, which finds gaps) fail otherwise.
inline std::vector<CField> exec_fields() {
  return {POPSIM_C_FIELD(popsim_exec, cycles, "u"),      POPSIM_C_FIELD(popsim_exec, num_workers, "u"),
          POPSIM_C_FIELD(popsim_exec, error, "i"),       POPSIM_C_FIELD(popsim_exec, error_field, "i"),
          POPSIM_C_FIELD(popsim_exec, error_line, "i"),  POPSIM_C_FIELD(popsim_exec, error_index, "i"),
          POPSIM_C_FIELD(popsim_exec, error_size, "i"),  POPSIM_C_FIELD(popsim_exec, interrupt, "p")};
}
static_assert(offsetof(popsim_exec, interrupt) + sizeof(popsim_exec::interrupt) == sizeof(popsim_exec),
              "popsim_exec changed: list its fields in exec_fields()");

inline std::vector<CField> span_fields() {
  return {POPSIM_C_FIELD(popsim_span, data, "p"), POPSIM_C_FIELD(popsim_span, size, "u")};
}
#undef POPSIM_C_FIELD

}  // namespace popsim
