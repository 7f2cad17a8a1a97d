#include "core/validate.hpp"

#include <algorithm>
#include <cstdlib>
#include <limits>

namespace popsim {

namespace {

[[noreturn]] void bad(const std::string &what) { throw MalformedExecutable(what); }

std::string at(const char *table, size_t row) { return std::string(table) + " row " + std::to_string(row); }

// Which row a check is about; spelled out (`where + "..."`) only when the check fails,
// so that checking a large executable allocates nothing per row.
struct Where {
  const char *table;
  size_t row;
};
std::string operator+(const Where &where, const char *text) { return at(where.table, where.row) + text; }

bool in_range(int64_t v, int64_t size) { return v >= 0 && v < size; }

// What a field's elements are aligned to: their size's largest power of two, at most 16.
// The lowering places every element at a multiple of its size (allocations are 16-byte
// aligned, views step by whole elements), and a codelet's typed pointers rely on it: a
// compiler may vectorize a vertex's loop with aligned loads.
int64_t alignment_of(int64_t itemsize) { return std::min<int64_t>(itemsize & -itemsize, 16); }

std::string str(int64_t v) { return std::to_string(v); }

// offset + count * itemsize <= limit, without overflow.
bool fits(int64_t offset, int64_t count, int64_t itemsize, int64_t limit) {
  if (offset < 0 || count < 0 || itemsize < 0 || offset > limit) return false;
  return itemsize == 0 || count <= (limit - offset) / itemsize;
}

// A run of rows [begin[i], begin[i + 1]) per item: begin starts at 0, never decreases
// and ends at the number of rows.
void check_ranges(const std::vector<int64_t> &begin, size_t rows, const char *what) {
  if (begin.empty() || begin.front() != 0 || begin.back() != static_cast<int64_t>(rows))
    bad(std::string(what) + ": the row ranges do not cover the rows");
  for (size_t i = 1; i < begin.size(); ++i)
    if (begin[i] < begin[i - 1]) bad(std::string(what) + ": row ranges out of order");
}

// One run's reach on one side, [low, high), with every factor bounded first, so that
// nothing overflows: |len|, |count|, |outer| and the strides are at most 2^31, so each
// product is below 2^62 and the two together below 2^63.
bool run_reach(int64_t base, int64_t stride, int64_t outer_stride, const CopyRun &r, int64_t &low, int64_t &high) {
  if (base < 0 || std::llabs(stride) > COPY_RUN_LIMIT || std::llabs(outer_stride) > COPY_RUN_LIMIT) return false;
  const int64_t a = (r.outer - 1) * outer_stride, b = (r.count - 1) * stride;
  const int64_t up = std::max<int64_t>(a, 0) + std::max<int64_t>(b, 0) + r.len;
  if (up > std::numeric_limits<int64_t>::max() - base) return false;
  low = base + std::min<int64_t>(a, 0) + std::min<int64_t>(b, 0);
  high = base + up;
  return low >= 0;
}

TableExtents copy_table_extents(const Executable &exe) {
  check_ranges(exe.table_begin, exe.copy_runs.size(), "copy tables");
  const size_t ntables = exe.table_begin.size() - 1;
  if (exe.table_overlaps.size() != ntables) bad("copy tables: one overlap flag per table expected");
  TableExtents ext;
  ext.src.assign(ntables, 0);
  ext.dst.assign(ntables, 0);
  auto in_limit = [](int64_t v) { return v >= 1 && v <= COPY_RUN_LIMIT; };
  for (size_t t = 0; t < ntables; ++t) {
    int64_t elements = 0, bytes = 0;
    for (int64_t i = exe.table_begin[t]; i < exe.table_begin[t + 1]; ++i) {
      const CopyRun &r = exe.copy_runs[static_cast<size_t>(i)];
      const Where where{"copy run", static_cast<size_t>(i)};
      if (!in_limit(r.len) || !in_limit(r.count) || !in_limit(r.outer))
        bad(where + ": len, count and outer must be 1 to " + str(COPY_RUN_LIMIT) + ", found " + str(r.len) + ", " +
            str(r.count) + ", " + str(r.outer) + "; the executable is corrupted: compile it again");
      int64_t src_low, src_high, dst_low, dst_high;
      if (!run_reach(r.src, r.src_stride, r.outer_src, r, src_low, src_high) ||
          !run_reach(r.dst, r.dst_stride, r.outer_dst, r, dst_low, dst_high))
        bad(where + ": a negative or overflowing offset, or a stride past " + str(COPY_RUN_LIMIT) +
            " bytes; the executable is corrupted: compile it again");
      ext.src[t] = std::max(ext.src[t], src_high);
      ext.dst[t] = std::max(ext.dst[t], dst_high);
      // Each product below 2^62, and the sums checked at every step: no overflow.
      const int64_t n = r.count * r.outer;
      elements += n;
      if (elements <= MAX_TABLE_ELEMENTS) bytes += n * r.len;  // below 2^34 * 2^31
      if (elements > MAX_TABLE_ELEMENTS || bytes > MAX_TABLE_BYTES)
        bad("copy table " + str(static_cast<int64_t>(t)) + ": its runs move more than " + str(MAX_TABLE_ELEMENTS) +
            " elements or " + str(MAX_TABLE_BYTES) + " bytes (by copy run " + str(i) + "), more than any table "
            "popsim makes; the executable is corrupted or crafted: compile it again");
    }
  }
  return ext;
}

class Checker {
 public:
  Checker(const Executable &exe, const TableExtents &ext) : exe_(exe), ext_(ext) {}

  // A table copying from `src_limit` bytes into `dst_limit` bytes.
  void table(int64_t t, int64_t src_limit, int64_t dst_limit, const Where &where) const {
    if (!in_range(t, static_cast<int64_t>(ext_.src.size()))) bad(where + ": copy table " + std::to_string(t) + " does not exist");
    if (ext_.src[static_cast<size_t>(t)] > src_limit || ext_.dst[static_cast<size_t>(t)] > dst_limit)
      bad(where + ": copy table " + std::to_string(t) + " reaches past the memory it copies between");
  }

  // How many run rows table `t` has (t checked by table()).
  int64_t table_rows(int64_t t) const {
    return exe_.table_begin[static_cast<size_t>(t) + 1] - exe_.table_begin[static_cast<size_t>(t)];
  }

  void target(int64_t pc, const Where &where) const {
    if (!in_range(pc, static_cast<int64_t>(exe_.instrs.size()))) bad(where + ": jump target out of range");
  }

  void scalar(int64_t offset, int64_t type, const Where &where) const {
    const int64_t size = scalar_type_size(type);
    if (size == 0) bad(where + ": unknown scalar type " + std::to_string(type));
    if (!fits(offset, 1, size, exe_.arena_bytes)) bad(where + ": the scalar it reads lies outside tile memory");
  }

  void instructions() const {
    const int64_t n = static_cast<int64_t>(exe_.instrs.size());
    const int64_t arena = exe_.arena_bytes;
    const int64_t nstreams = static_cast<int64_t>(exe_.stream_transfer_bytes.size());
    const int64_t nswitch = static_cast<int64_t>(exe_.switch_default.size());
    const int64_t ncs = static_cast<int64_t>(exe_.vertex.compute_sets.size());
    for (int64_t pc = 0; pc < n; ++pc) {
      const Instr &in = exe_.instrs[static_cast<size_t>(pc)];
      const Where where{"instruction", static_cast<size_t>(pc)};
      if (!in_range(in.op, OP_COUNT)) bad(where + ": unknown opcode " + std::to_string(in.op));
      if (in.step < -1 || in.step >= exe_.num_steps) bad(where + ": step out of range");
      const bool falls_through = in.op != OP_HALT && in.op != OP_JUMP && in.op != OP_RETURN && in.op != OP_ABORT &&
                                 in.op != OP_SWITCH;
      if (falls_through && pc + 1 >= n) bad(where + ": the last instruction falls off the end of the program");
      switch (in.op) {
        case OP_JUMP: case OP_CALL: target(in.a, where); break;
        case OP_BRANCH_IF_FALSE: case OP_BRANCH_IF_TRUE: target(in.a, where); scalar(in.b, in.c, where); break;
        case OP_LOOP_BEGIN:
          if (!in_range(in.a, exe_.num_loop_slots)) bad(where + ": loop slot out of range");
          target(in.c, where);
          break;
        case OP_LOOP_END:
          if (!in_range(in.a, exe_.num_loop_slots)) bad(where + ": loop slot out of range");
          target(in.b, where);
          break;
        case OP_SWITCH:
          if (!in_range(in.a, nswitch)) bad(where + ": switch table out of range");
          scalar(in.b, in.c, where);
          break;
        case OP_ABORT: case OP_ABORT_IF:
          if (!in_range(in.a, exe_.num_messages)) bad(where + ": abort message out of range");
          if (in.op == OP_ABORT_IF) scalar(in.b, in.c, where);
          break;
        case OP_HOST_CALL:
          if (!in_range(in.a, exe_.num_host_calls)) bad(where + ": host callback out of range");
          break;
        case OP_COPY: table(in.a, arena, arena, where); break;
        case OP_STREAM_TO_DEVICE: case OP_STREAM_FROM_DEVICE: {
          if (!in_range(in.a, nstreams)) bad(where + ": stream out of range");
          const int64_t transfer = exe_.stream_transfer_bytes[static_cast<size_t>(in.a)];
          if (in.op == OP_STREAM_TO_DEVICE) table(in.b, transfer, arena, where);
          else table(in.b, arena, transfer, where);
          break;
        }
        case OP_EXECUTE:
          if (!in_range(in.a, ncs)) bad(where + ": compute set out of range");
          break;
        case OP_CROSS_REPLICA_COPY:
          table(in.a, arena, arena, where);
          if (!in_range(in.b, static_cast<int64_t>(exe_.replica_maps.size()) / exe_.num_replicas))
            bad(where + ": replica map out of range");
          break;
        default: break;
      }
    }
    for (size_t i = 0; i < exe_.entries.size(); ++i)
      if (!in_range(exe_.entries[i], n)) bad(at("entry point", i) + ": out of range");
  }

  void switches() const {
    check_ranges(exe_.switch_begin, exe_.cases.size(), "switch tables");
    if (exe_.switch_begin.size() != exe_.switch_default.size() + 1) bad("switch tables: one default per table expected");
    for (size_t i = 0; i < exe_.switch_default.size(); ++i) target(exe_.switch_default[i], Where{"switch default", i});
    for (size_t i = 0; i < exe_.cases.size(); ++i) target(exe_.cases[i].target, Where{"switch case", i});
  }

  void vertices() const {
    const VertexTables &v = exe_.vertex;
    const int64_t arena = exe_.arena_bytes;
    if (v.num_workers < 1 || v.num_workers > 64) bad("num_workers must be 1..64");
    if (v.num_tiles < 1) bad("num_tiles must be at least 1");
    // The compute engine packs state offsets (in STATE_ALIGNMENT units) and codelet
    // indices into its per-vertex run rows (compute_set.hpp).
    if (v.state_bytes < 0 || v.state_bytes >= (int64_t{1} << 36)) bad("state_bytes out of range");
    if (v.codelets.size() >= (size_t{1} << 25)) bad("more than 2^25 codelets");
    if (v.exchange_costs.size() != v.compute_sets.size() * 2 * static_cast<size_t>(exe_.num_ipus) * NUM_COST_CATEGORIES)
      bad("compute sets: two exchange cost vectors per compute set and IPU expected");
    if (v.tiles_per_ipu < 1 || v.tiles_per_ipu * exe_.num_ipus != v.num_tiles)
      bad("tiles_per_ipu x num_ipus must be num_tiles");
    for (size_t c = 0; c < v.codelets.size(); ++c)
      for (const FieldLayout &f : v.codelets[c].fields)
        if ((f.base != FIELD_ARENA && f.base != FIELD_SPANS) || f.itemsize < 1 || f.elements < 0 || f.elements > 1)
          bad(at("codelet", c) + ": bad field layout");
    for (size_t i = 0; i < v.vertices.size(); ++i) {
      const VertexRow &row = v.vertices[i];
      const Where where{"vertex", i};
      if (!in_range(row.codelet, static_cast<int64_t>(v.codelets.size()))) bad(where + ": codelet out of range");
      if ((row.flags & ~static_cast<int64_t>(VERTEX_MULTI)) != 0) bad(where + ": unknown flags");
      if (!(row.flags & VERTEX_MULTI) && !in_range(row.worker, v.num_workers)) bad(where + ": worker out of range");
      if (!in_range(row.tile, v.num_tiles))
        bad(where + ": tile " + str(row.tile) + " out of range (expected 0.." + str(v.num_tiles - 1) + ")");
      if (row.state_offset < 0 || row.state_offset > v.state_bytes) bad(where + ": state offset out of range");
      const std::vector<FieldLayout> &layout = v.codelets[static_cast<size_t>(row.codelet)].fields;
      if (row.num_fields != static_cast<int64_t>(layout.size()))
        bad(where + ": " + std::to_string(row.num_fields) + " fields, its codelet binds " + std::to_string(layout.size()));
      if (!fits(row.first_field, row.num_fields, 1, static_cast<int64_t>(v.fields.size())))
        bad(where + ": field rows out of range");
      for (int64_t f = 0; f < row.num_fields; ++f) field(v.fields[static_cast<size_t>(row.first_field + f)],
                                                          layout[static_cast<size_t>(f)], arena, where, f);
    }
    int64_t next = 0;
    for (size_t i = 0; i < v.groups.size(); ++i) {
      const GroupRow &g = v.groups[i];
      if (g.first_vertex < next || !fits(g.first_vertex, g.num_vertices, 1, static_cast<int64_t>(v.vertices.size())))
        bad(at("tile group", i) + ": vertex rows out of range or shared with another group");
      if (!in_range(g.tile, v.num_tiles)) bad(at("tile group", i) + ": tile out of range");
      // A group runs its vertices on its tile: the tile whose clock (IPU) their cycles
      // count on, and the one messages and reports name for each vertex.
      for (int64_t k = g.first_vertex; k < g.first_vertex + g.num_vertices; ++k)
        if (v.vertices[static_cast<size_t>(k)].tile != g.tile)
          bad(at("vertex", static_cast<size_t>(k)) + ": on tile " + str(v.vertices[static_cast<size_t>(k)].tile) +
              ", but its tile group (row " + std::to_string(i) + ") runs on tile " + str(g.tile));
      next = g.first_vertex + g.num_vertices;
    }
    next = 0;
    const int64_t ntables = static_cast<int64_t>(ext_.src.size());
    for (size_t i = 0; i < v.compute_sets.size(); ++i) {
      const ComputeSetRow &cs = v.compute_sets[i];
      const Where where{"compute set", i};
      if (cs.first_group < next || !fits(cs.first_group, cs.num_groups, 1, static_cast<int64_t>(v.groups.size())))
        bad(where + ": tile groups out of range or shared with another compute set");
      next = cs.first_group + cs.num_groups;
      for (int64_t t : {cs.exchange_in, cs.exchange_out}) {
        if (t < -1 || t >= ntables) bad(where + ": exchange table out of range");
        if (t >= 0) table(t, arena, arena, where);
      }
      // Gathers by group: the groups' rows, in order, are exactly the exchange_in table's.
      if (cs.gathers_by_group != 0 && cs.gathers_by_group != 1) bad(where + ": gathers_by_group is not 0 or 1");
      int64_t row = 0;
      const int64_t rows = cs.gathers_by_group && cs.exchange_in >= 0 ? table_rows(cs.exchange_in) : 0;
      if (cs.gathers_by_group && cs.exchange_in < 0) bad(where + ": gathers by group without an exchange_in table");
      for (int64_t g = cs.first_group; g < cs.first_group + cs.num_groups; ++g) {
        const GroupRow &gr = v.groups[static_cast<size_t>(g)];
        const bool none = gr.first_gather == 0 && gr.end_gather == 0;
        if (!cs.gathers_by_group ? !none : gr.first_gather != row || gr.end_gather < row || gr.end_gather > rows)
          bad(at("tile group", static_cast<size_t>(g)) + ": gather rows [" + str(gr.first_gather) + ", " +
              str(gr.end_gather) + ") do not continue its compute set's (expected from row " + str(row) + " of " +
              str(rows) + ")");
        if (cs.gathers_by_group) row = gr.end_gather;
      }
      if (row != rows) bad(where + ": its groups' gather rows end at row " + str(row) + " of " + str(rows));
    }
  }

 private:
  // Field `f` of a vertex: its row (or each of its sub-edges) inside tile memory and
  // aligned to its elements.
  void field(const FieldRow &row, const FieldLayout &layout, int64_t arena, const Where &where, int64_t f) const {
    // Spelled out only when a check fails (see Where).
    auto which = [&where, f] { return where + ": field " + str(f); };
    if (row.base != layout.base)
      bad(which() + " has base " + str(row.base) + ", its codelet's field " + str(layout.base));
    const int64_t align = alignment_of(layout.itemsize);
    if (row.base == FIELD_ARENA) {
      if (!fits(row.offset, row.size, layout.itemsize, arena))
        bad(which() + " (" + str(row.size) + " elements of " + str(layout.itemsize) + " bytes at offset " +
            str(row.offset) + ") reaches past tile memory (" + str(arena) + " bytes)");
      if (row.offset % align)
        bad(which() + " at offset " + str(row.offset) + " is not aligned to " + str(align) + " bytes");
      if (layout.elements && row.size != layout.elements)  // a scalar's codelet reads it whatever its size
        bad(which() + " is a scalar, but its row has " + str(row.size) + " elements");
      return;
    }
    const int64_t nspans = static_cast<int64_t>(exe_.vertex.spans.size());
    if (!fits(row.offset, row.size, 1, nspans))
      bad(which() + ": sub-edges " + str(row.offset) + " + " + str(row.size) + " out of range (expected within " +
          str(nspans) + " spans)");
    for (int64_t s = row.offset; s < row.offset + row.size; ++s) {
      const SpanRow &span = exe_.vertex.spans[static_cast<size_t>(s)];
      if (!fits(span.offset, span.size, layout.itemsize, arena))
        bad(which() + ": sub-edge (span row " + str(s) + ", " + str(span.size) + " elements of " +
            str(layout.itemsize) + " bytes at offset " + str(span.offset) + ") reaches past tile memory (" +
            str(arena) + " bytes)");
      if (span.offset % align)
        bad(which() + ": sub-edge (span row " + str(s) + ") at offset " + str(span.offset) +
            " is not aligned to " + str(align) + " bytes");
      if (layout.elements && span.size != layout.elements)
        bad(which() + ": sub-edge (span row " + str(s) + ") is a scalar, but has " + str(span.size) + " elements");
    }
  }

  const Executable &exe_;
  const TableExtents &ext_;
};

}  // namespace

// Replicas and IPUs: counts in range, a cost vector per step and IPU, step IPU masks
// naming IPUs that exist, replica maps naming replicas that exist.
static void check_replicas_and_ipus(const Executable &exe) {
  if (exe.num_replicas < 1 || exe.num_replicas > (int64_t{1} << 16)) bad("num_replicas out of range");
  if (exe.num_ipus < 1 || exe.num_ipus > MAX_IPUS_PER_REPLICA) bad("num_ipus must be 1..64");
  if (exe.arena_bytes > std::numeric_limits<int64_t>::max() / 2 / exe.num_replicas) bad("arena_bytes too large");
  if (exe.num_steps < 0 ||
      exe.step_costs.size() != static_cast<size_t>(exe.num_steps * exe.num_ipus) * NUM_COST_CATEGORIES)
    bad("step costs: one cost vector per step and IPU expected");
  if (exe.step_ipus.size() != static_cast<size_t>(exe.num_steps)) bad("step IPUs: one row per step expected");
  const uint64_t all = exe.num_ipus == 64 ? ~uint64_t{0} : (uint64_t{1} << exe.num_ipus) - 1;
  for (size_t s = 0; s < exe.step_ipus.size(); ++s) {
    const uint64_t involved = static_cast<uint64_t>(exe.step_ipus[s].involved);
    const uint64_t join = static_cast<uint64_t>(exe.step_ipus[s].join);
    if (involved == 0 || (involved & ~all) || (join & ~all)) bad(at("step IPUs", s) + ": IPU mask out of range");
    if (exe.step_ipus[s].tail < -1) bad(at("step IPUs", s) + ": negative joined tail");
  }
  if (exe.replica_maps.size() % static_cast<size_t>(exe.num_replicas)) bad("replica maps: rows of num_replicas expected");
  for (size_t i = 0; i < exe.replica_maps.size(); ++i)
    if (exe.replica_maps[i] < -1 || exe.replica_maps[i] >= exe.num_replicas) bad(at("replica map entry", i) + ": out of range");
  for (size_t i = 0; i < exe.replication_index_offsets.size(); ++i)
    if (!fits(exe.replication_index_offsets[i], 1, 4, exe.arena_bytes)) bad(at("replication index", i) + ": outside tile memory");
  if (exe.stream_broadcast.size() != exe.stream_transfer_bytes.size()) bad("streams: one broadcast flag per stream expected");
}

TableExtents validate(const Executable &exe) {
  if (exe.arena_bytes < 0) bad("arena_bytes is negative");
  check_replicas_and_ipus(exe);
  if (exe.num_loop_slots < 0 || exe.num_loop_slots > static_cast<int64_t>(exe.instrs.size()))
    bad("num_loop_slots out of range");
  if (exe.num_host_calls < 0 || exe.num_messages < 0) bad("negative host callback or message count");
  for (size_t s = 0; s < exe.stream_transfer_bytes.size(); ++s)
    if (exe.stream_transfer_bytes[s] < 0) bad(at("stream", s) + ": negative transfer size");
  TableExtents ext = copy_table_extents(exe);
  Checker check(exe, ext);
  check.switches();
  check.instructions();
  check.vertices();
  return ext;
}

}  // namespace popsim
