// Layout arguments of Vector / VectorList fields. On the IPU they choose how a field's
// pointer and size are packed into vertex state; popsim accepts them all and always
// stores a full pointer and element count, so they change nothing but the reports.
//
// Both are scoped enums, as codelets spell them `poplar::VectorLayout::ONE_PTR` or define
// their own short constants (`static constexpr auto ONE_PTR = VectorLayout::ONE_PTR;`);
// unscoped names here would clash with such constants under `using namespace poplar`.
#ifndef POPSIM_POPLAR_VECTORLAYOUT_HPP
#define POPSIM_POPLAR_VECTORLAYOUT_HPP

namespace poplar {

enum class VectorLayout {
  NONE,
  SPAN,
  ONE_PTR,
  SHORT_SPAN,
  SCALED_PTR32,
  SCALED_PTR64,
  SCALED_PTR128,
  COMPACT_PTR,
  COMPACT_DELTAN,
  DELTAN,
  DELTANELEMENTS,
};

enum class VectorListLayout {
  NONE,
  DELTAN,
  DELTANELEMENTS,
  COMPACT_DELTAN,
  ONE_PTR,
  SCALED_PTR32,
  SCALED_PTR64,
};

}  // namespace poplar

#endif  // POPSIM_POPLAR_VECTORLAYOUT_HPP
