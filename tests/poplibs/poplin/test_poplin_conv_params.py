"""ConvParams' sizes against PopLibs' formulas (PopLibs' documentation) worked by hand and
against numpy's own convolution sizes, and its errors."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from popsim import FLOAT, HALF, INT, poplin, poputil
from popsim.poplin.conv_params import for_mat_mul


def test_sizes_by_hand():
    p = poplin.ConvParams(FLOAT, 2, (7, 9), (3, 2), 4, 5, 3, stride=(2, 1), padding_lower=(1, 0),
                          padding_upper=(1, 2), kernel_dilation=(1, 2))
    # dim 0: 1 + 7 + 1 = 9 input, kernel 3: (9 + 1 - 3) / 2 -> ceil(3.5) = 4
    # dim 1: 9 + 2 = 11 input, kernel 1 + (2 - 1) * 2 = 3: 11 + 1 - 3 = 9
    assert p.output_field_shape() == (4, 9) == p.getOutputFieldShape()
    assert p.input_shape() == (2, 12, 7, 9) and p.weights_shape() == (3, 5, 4, 3, 2)
    assert p.output_shape() == (2, 15, 4, 9)


def test_input_dilation_and_truncation_by_hand():
    p = poplin.ConvParams(HALF, 1, (5,), (2,), 1, 1, input_dilation=(3,), input_truncation_lower=(1,))
    # truncated 4, dilated 1 + 3 * 3 = 10, kernel 2: 10 + 1 - 2 = 9
    assert p.output_field_shape() == (9,)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 12), st.integers(1, 5), st.integers(1, 3), st.integers(0, 2), st.integers(0, 2),
       st.integers(1, 3))
def test_output_size_matches_a_direct_count(size, kernel, stride, pad_lo, pad_hi, dilation):
    """The number of kernel placements a direct loop finds over the padded input."""
    span = 1 + (kernel - 1) * dilation
    padded = size + pad_lo + pad_hi
    if padded < span:
        with pytest.raises(poputil.PoplibsError, match="output field is empty or negative"):
            poplin.ConvParams(FLOAT, 1, (size,), (kernel,), 1, 1, stride=(stride,), padding_lower=(pad_lo,),
                              padding_upper=(pad_hi,), kernel_dilation=(dilation,))
        return
    p = poplin.ConvParams(FLOAT, 1, (size,), (kernel,), 1, 1, stride=(stride,), padding_lower=(pad_lo,),
                          padding_upper=(pad_hi,), kernel_dilation=(dilation,))
    assert p.output_field_shape() == (len(range(0, padded - span + 1, stride)),)


def test_mat_mul_is_a_1d_convolution():
    p = for_mat_mul(FLOAT, (3, 8, 16), (3, 16, 4))
    assert (p.batch_size, p.input_channels_per_group, p.output_channels_per_group, p.num_conv_groups) == (8, 16, 4, 3)
    assert p.input_field_shape == (1,) == p.kernel_shape and p.output_field_shape() == (1,)
    with pytest.raises(poputil.PoplibsError, match=r"\(8, 16\) and \(15, 4\) do not multiply"):
        for_mat_mul(FLOAT, (8, 16), (15, 4))


def test_errors():
    with pytest.raises(poputil.PoplibsError, match="FLOAT or HALF"):
        poplin.ConvParams(INT, 1, (3,), (1,), 1, 1)
    with pytest.raises(poputil.PoplibsError, match="same number of dimensions"):
        poplin.ConvParams(FLOAT, 1, (3, 3), (1,), 1, 1)
    with pytest.raises(poputil.PoplibsError, match="stride has 1 entries"):
        poplin.ConvParams(FLOAT, 1, (3, 3), (1, 1), 1, 1, stride=(2,))
    with pytest.raises(poputil.PoplibsError, match="stride must be >= 1"):
        poplin.ConvParams(FLOAT, 1, (3,), (1,), 1, 1, stride=(0,))
    with pytest.raises(poputil.PoplibsError, match="batch_size must be >= 0"):
        poplin.ConvParams(FLOAT, -1, (3,), (1,), 1, 1)


def test_plan_is_plain_data():
    part = poplin.Partition(field_split=(1,), batch_split=4, out_chan_split=poplin.Split(2, 3))
    assert part.total_parallel_split() == 12 and part.total_serial_split() == 2
    plan = poplin.Plan(part, poplin.Method("AMP", 8, 2), tiles_used=12)
    assert plan.serial_splits == {"in_chan": 1, "out_chan": 2}
    assert plan == poplin.Plan(part, poplin.Method("AMP", 8, 2), tiles_used=12) and hash(plan)
    assert plan.method.macs_per_cycle(2, 8) == 16
    with pytest.raises(ValueError, match="unknown convolution method"):
        poplin.Method("FFT")
    np.testing.assert_equal(part.field_split, (1,))


@pytest.mark.parametrize("args, kw, message", [
    ((FLOAT, 1, ["4", 4], [3, 3], 1, 1), {}, "input_field_shape must be whole numbers, found str '4'"),
    ((FLOAT, 1, [4.0, 4], [3, 3], 1, 1), {}, "input_field_shape must be whole numbers, found float"),
    ((FLOAT, 1, [4, 4], INT, 1, 1), {}, "kernel_shape must be a list of whole numbers, found Type"),
    ((FLOAT, 1, 4, [3], 1, 1), {}, "input_field_shape must be a list of whole numbers, found int"),
    ((FLOAT, "1", [4], [3], 1, 1), {}, "batch_size must be a whole number >= 0, found str '1'"),
    ((FLOAT, 1, [4], [3], 1.5, 1), {}, "input_channels_per_group must be a whole number >= 0, found float"),
    ((FLOAT, 1, [4], [3], 1, 1), {"stride": ["²"]}, "stride must be whole numbers, found str '²'"),
    ((FLOAT, 1, [4], [3], 1, 1), {"input_flip": [1]}, "each entry of input_flip must be True or False, found int"),
])
def test_sizes_are_whole_numbers_never_converted(args, kw, message):
    """int("4") and int(4.0) were taken as 4, int("²") was a ValueError, a Tensor a
    TypeError; Poplar's unsigned sizes are whole numbers."""
    with pytest.raises(poputil.PoplibsError, match=message):
        poplin.ConvParams(*args, **kw)
