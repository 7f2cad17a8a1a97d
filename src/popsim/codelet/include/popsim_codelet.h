/* The codelet ABI: how the engine binds and runs a vertex, whatever language it was
 * written in. Every vertex type's shared library exports, with C linkage, four
 * functions named PREFIX_size, PREFIX_init, PREFIX_bind and PREFIX_compute, where
 * PREFIX is the type's symbol prefix (chosen by popsim, unique per type):
 *
 *   uint64_t PREFIX_size(void);              bytes of one vertex's state object
 *   void     PREFIX_init(void *obj);         construct the object in place (zeroed memory)
 *   void     PREFIX_bind(void *obj, const popsim_field *fields);
 *                                            connect its fields, in declaration order
 *   int      PREFIX_compute(void *obj, uint32_t worker, popsim_exec *ctx);
 *                                            run once: 1 = success, 0 = the vertex returned
 *                                            false, -1 = an error described in ctx
 *
 * What a popsim_field holds, by field kind:
 *   scalar edge (Input<float>)            data -> the element, size = 1
 *   vector edge (Input<Vector<float>>)    data -> the first element, size = element count
 *   vector of edges, VectorList           data -> popsim_span[size], one per sub-edge
 *   plain state scalar (unsigned n;)      data -> the value, size = 1
 *   plain state vector (Vector<unsigned>) data -> the values, size = count
 * Pointers stay valid for the engine's lifetime; data of HALF fields is IEEE fp16.
 *
 * popsim/codelet/abi.py (run_compiled) is the executable spec of this ABI: it binds and
 * runs one vertex exactly as the engine does (native/core/compute_set.cpp), and the
 * codelet tests drive every front end through it.
 */
#ifndef POPSIM_CODELET_H
#define POPSIM_CODELET_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct popsim_span {
  void *data;
  uint64_t size;
} popsim_span;

typedef popsim_span popsim_field;

/* X(name, value, meaning): what ctx->error may hold (the engine exports the list). */
#define POPSIM_ERROR_KINDS(X)                                                    \
  X(OK, 0, "no error")                                                           \
  X(INDEX_ERROR, 1, "an index out of range: error_field, error_index, error_size") \
  X(EXCEPTION, 2, "a C++ codelet threw (its message went to stderr)")             \
  X(INTERRUPTED, 3, "stopped early: *interrupt became non-zero (Ctrl-C)")           \
  X(FAULT, 4, "set by the engine, not codelets: the vertex's code faulted; error_index = the signal, error_field = where (the engine's FAULT_*), error_size = the address or offset")

#define POPSIM_ENUM_ERROR_KIND(name, value, doc) POPSIM_##name = value,
enum popsim_error_kind { POPSIM_ERROR_KINDS(POPSIM_ENUM_ERROR_KIND) };
#undef POPSIM_ENUM_ERROR_KIND

/* The execution context of one compute call. Its layout is part of the contract: the
 * engine exports it (popsim._core.EXEC_FIELDS) and tests/test_contract.py checks it. */
typedef struct popsim_exec {
  uint64_t cycles;       /* automatic cycle counting adds worker cycles here */
  uint32_t num_workers;  /* worker contexts per tile on the target */
  int32_t error;         /* a popsim_error_kind */
  int32_t error_field;   /* field index (declaration order) */
  int32_t error_line;    /* source line of the failing access, 0 if unknown */
  int64_t error_index;   /* the offending index */
  int64_t error_size;    /* the size it had to be below */
  /* Non-zero once the run is interrupted (Ctrl-C): long-running code (loop back-edges
   * of compiled Python vertices) polls it and returns -1 with error =
   * POPSIM_INTERRUPTED. May be NULL (never interrupted). */
  const volatile int32_t *interrupt;
} popsim_exec;

#ifdef __cplusplus
}
#endif

#endif /* POPSIM_CODELET_H */
