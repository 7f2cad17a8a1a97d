"""The argument checks popnn's non-linearities and softmaxes share."""
from ..poputil import PoplibsError
from ..poputil.checks import check_tensor, describe
from .non_linearity_vertices import FP_TYPES, NonLinearityType


def check_nl_type(nl_type, what: str) -> NonLinearityType:
    if not isinstance(nl_type, NonLinearityType):
        known = ", ".join(t.name for t in NonLinearityType)
        raise PoplibsError(f"{what}: unknown non-linearity type {nl_type!r}; expected a popnn.NonLinearityType "
                           f"member ({known})")
    return nl_type


def check_fp_tensor(graph, t, what: str, role: str) -> None:
    """``t`` is a FLOAT or HALF tensor of ``graph``."""
    check_tensor(graph, t, what, role)
    if t.dtype not in FP_TYPES:
        raise PoplibsError(f"{what}: the {role} {describe(t)} must be FLOAT or HALF, found {t.dtype.name}; "
                           "cast it with popops.cast")
