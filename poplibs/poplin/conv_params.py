"""ConvParams: what a convolution computes (PopLibs' poplin/ConvParams.hpp), the one
description the planner, the executor and the tensor creators share. A matmul is the
1-D convolution ``for_mat_mul`` gives (PopLibs' MatMul.cpp getConvParams).

Per field dimension, as PopLibs' ConvParams.cpp sizes it (PopLibs' documentation):

    truncated   = size - truncation_lower - truncation_upper
    dilated     = 0 if truncated == 0 else 1 + (truncated - 1) * dilation
    transformed = padding_lower + dilated + padding_upper          (input and kernel each)
    out         = output_padding_lower
                  + ceil((transformed_input + 1 - transformed_kernel
                          - output_truncation_lower - output_truncation_upper) / stride)
                  + output_padding_upper
"""
import dataclasses
from dataclasses import dataclass
from typing import Optional, Sequence, Tuple

import popsim

from ..poputil import PoplibsError
from ..poputil.checks import check_count, check_flag, check_per_dim, check_whole_numbers

Shape = Tuple[int, ...]


def _per_dim(name: str, values: Optional[Sequence], rank: int, default, minimum=None, kind=int) -> tuple:
    """One value per field dimension (``default`` each when None), of ``kind``, each at
    least ``minimum`` when given."""
    if values is None:
        return (default,) * rank
    if kind is bool:
        if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
            raise PoplibsError(f"ConvParams: {name} must be a list of True/False, found {values!r:.60}")
        values = tuple(check_flag(v, "ConvParams", f"each entry of {name}") for v in values)
    else:
        values = check_whole_numbers(values, "ConvParams", name)
    return check_per_dim(values, "ConvParams", name, rank, minimum)


def _transformed(size: int, trunc_lo: int, trunc_hi: int, dilation: int, pad_lo: int, pad_hi: int) -> int:
    truncated = size - trunc_lo - trunc_hi
    dilated = 0 if truncated <= 0 else 1 + (truncated - 1) * dilation
    return pad_lo + dilated + pad_hi


@dataclass(frozen=True)
class ConvParams:
    """A (grouped, multi-dimensional) convolution. Layouts: input [B, G*Cin, *field],
    weights [G, Cout, Cin, *kernel], output [B, G*Cout, *output_field]."""
    data_type: object
    batch_size: int
    input_field_shape: Shape
    kernel_shape: Shape
    input_channels_per_group: int
    output_channels_per_group: int
    num_conv_groups: int = 1
    stride: Optional[Shape] = None
    padding_lower: Optional[Shape] = None
    padding_upper: Optional[Shape] = None
    input_dilation: Optional[Shape] = None
    kernel_dilation: Optional[Shape] = None
    input_truncation_lower: Optional[Shape] = None
    input_truncation_upper: Optional[Shape] = None
    input_flip: Optional[Tuple[bool, ...]] = None
    kernel_truncation_lower: Optional[Shape] = None
    kernel_truncation_upper: Optional[Shape] = None
    kernel_padding_lower: Optional[Shape] = None
    kernel_padding_upper: Optional[Shape] = None
    kernel_flip: Optional[Tuple[bool, ...]] = None
    output_truncation_lower: Optional[Shape] = None
    output_truncation_upper: Optional[Shape] = None
    output_padding_lower: Optional[Shape] = None
    output_padding_upper: Optional[Shape] = None
    output_type: object = None

    def __post_init__(self):
        if not isinstance(self.data_type, popsim.Type) or self.data_type not in (popsim.FLOAT, popsim.HALF):
            raise PoplibsError(f"ConvParams: data_type must be FLOAT or HALF, found {self.data_type!r}")
        field = check_whole_numbers(self.input_field_shape, "ConvParams", "input_field_shape")
        kernel = check_whole_numbers(self.kernel_shape, "ConvParams", "kernel_shape")
        if len(kernel) != len(field):
            raise PoplibsError(f"ConvParams: kernel_shape {kernel} and input_field_shape {field} must have the same "
                               "number of dimensions")
        for name in ("batch_size", "input_channels_per_group", "output_channels_per_group", "num_conv_groups"):
            check_count(getattr(self, name), "ConvParams", name)
        if any(s < 0 for s in field + kernel):
            raise PoplibsError(f"ConvParams: field {field} and kernel {kernel} sizes must be >= 0")
        rank = len(field)
        set_ = object.__setattr__  # frozen: normalise once, here
        set_(self, "input_field_shape", field)
        set_(self, "kernel_shape", kernel)
        for name in ("batch_size", "input_channels_per_group", "output_channels_per_group", "num_conv_groups"):
            set_(self, name, int(getattr(self, name)))
        for name, default, minimum in (("stride", 1, 1), ("input_dilation", 1, 1), ("kernel_dilation", 1, 1),
                                       ("padding_lower", 0, 0), ("padding_upper", 0, 0),
                                       ("input_truncation_lower", 0, 0), ("input_truncation_upper", 0, 0),
                                       ("kernel_truncation_lower", 0, 0), ("kernel_truncation_upper", 0, 0),
                                       ("kernel_padding_lower", 0, 0), ("kernel_padding_upper", 0, 0),
                                       ("output_truncation_lower", 0, 0), ("output_truncation_upper", 0, 0),
                                       ("output_padding_lower", 0, 0), ("output_padding_upper", 0, 0)):
            set_(self, name, _per_dim(name, getattr(self, name), rank, default, minimum))
        for name in ("input_flip", "kernel_flip"):
            set_(self, name, _per_dim(name, getattr(self, name), rank, False, kind=bool))
        set_(self, "output_type", self.output_type or self.data_type)
        for d in range(rank):
            if self.transformed_input_size(d) + 1 - self.transformed_kernel_size(d) \
                    - self.output_truncation_lower[d] - self.output_truncation_upper[d] < 1:
                raise PoplibsError(
                    f"ConvParams: the output field is empty or negative in dimension {d}: the input of {field[d]} "
                    f"(transformed {self.transformed_input_size(d)}) has no room for the kernel of {kernel[d]} "
                    f"(transformed {self.transformed_kernel_size(d)}); pad the input or shrink the kernel")

    # -- sizes (PopLibs' ConvParams helpers) --------------------------------------------------------
    @property
    def num_field_dims(self) -> int:
        return len(self.input_field_shape)

    def transformed_input_size(self, dim: int) -> int:
        return _transformed(self.input_field_shape[dim], self.input_truncation_lower[dim],
                            self.input_truncation_upper[dim], self.input_dilation[dim], self.padding_lower[dim],
                            self.padding_upper[dim])

    def transformed_kernel_size(self, dim: int) -> int:
        return _transformed(self.kernel_shape[dim], self.kernel_truncation_lower[dim],
                            self.kernel_truncation_upper[dim], self.kernel_dilation[dim],
                            self.kernel_padding_lower[dim], self.kernel_padding_upper[dim])

    def output_size(self, dim: int) -> int:
        untransformed = (self.transformed_input_size(dim) + 1 - self.transformed_kernel_size(dim)
                         - self.output_truncation_lower[dim] - self.output_truncation_upper[dim])
        strided = -(-untransformed // self.stride[dim])
        return self.output_padding_lower[dim] + strided + self.output_padding_upper[dim]

    def output_field_shape(self) -> Shape:
        return tuple(self.output_size(d) for d in range(self.num_field_dims))

    @property
    def input_channels(self) -> int:
        return self.num_conv_groups * self.input_channels_per_group

    @property
    def output_channels(self) -> int:
        return self.num_conv_groups * self.output_channels_per_group

    def input_shape(self) -> Shape:
        return (self.batch_size, self.input_channels) + self.input_field_shape

    def weights_shape(self) -> Shape:
        return (self.num_conv_groups, self.output_channels_per_group, self.input_channels_per_group) \
            + self.kernel_shape

    def output_shape(self) -> Shape:
        return (self.batch_size, self.output_channels) + self.output_field_shape()

    def replace(self, **changes) -> "ConvParams":
        return dataclasses.replace(self, **changes)

    # Poplar spellings
    getOutputFieldShape = output_field_shape
    getOutputSize = output_size


def for_mat_mul(data_type, a_shape: Sequence[int], b_shape: Sequence[int], output_type=None) -> ConvParams:
    """The 1-D convolution PopLibs plans a matmul as: A [G, M, K] @ B [G, K, N] is batch M,
    input channels K, output channels N, G conv groups, field and kernel {1}."""
    g, m, k = (1,) * (3 - len(a_shape)) + tuple(a_shape)
    g2, k2, n = (1,) * (3 - len(b_shape)) + tuple(b_shape)
    if k != k2 or g != g2:
        raise PoplibsError(f"matmul: the shapes {tuple(a_shape)} and {tuple(b_shape)} do not multiply (inner "
                           f"dimensions {k} and {k2}" + (f", groups {g} and {g2}" if g != g2 else "") + ")")
    return ConvParams(data_type, m, (1,), (1,), k, n, g, output_type=output_type)
