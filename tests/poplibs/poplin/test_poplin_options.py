"""matmul/conv options and planConstraints: defaults, strings and Python values, errors."""
import pytest

from popsim import FLOAT, HALF, poputil
from popsim.poplin.options import parse_conv_options, parse_mat_mul_options
from popsim.poplin.plan_constraints import PlanConstraints, parse_plan_constraints


def test_defaults_are_poplibs():
    o = parse_mat_mul_options()
    assert o.available_memory_proportion == 0.6 and o.partials_type is FLOAT
    assert o.inter_tile_partials_type is FLOAT and o.pass_ == "NONE_MATMUL" and o.is_fully_connected
    assert o.enable_multi_stage_reduce and o.remap_output_tensor and not o.use_128bit_conv_unit_load
    assert o.plan_constraints.empty
    c = parse_conv_options({})
    assert c.pass_ == "NONE" and not c.is_fully_connected


def test_strings_and_python_values_agree():
    as_strings = parse_mat_mul_options({"availableMemoryProportion": "0.25", "partialsType": "half",
                                        "partialsType.interTile": "half", "enableMultiStageReduce": "false",
                                        "fullyConnectedPass": "TRAINING_BWD"})
    as_values = parse_mat_mul_options({"availableMemoryProportion": 0.25, "partialsType": HALF,
                                       "partialsType.interTile": HALF, "enableMultiStageReduce": False,
                                       "fullyConnectedPass": "TRAINING_BWD"})
    assert as_strings == as_values and hash(as_strings) == hash(as_values)
    assert as_strings.pass_ == "FC_TRAINING_BWD" and as_strings.partials_type is HALF
    assert parse_mat_mul_options({"availableMemoryProportion": 0}).available_memory_proportion == 0.0
    assert parse_mat_mul_options({"availableMemoryProportion": "3"}).available_memory_proportion == 3.0


@pytest.mark.parametrize("options, fragments", [
    ({"availableMemoryProportion": -0.1}, ["availableMemoryProportion", "-0.1", ">= 0"]),
    ({"availableMemoryProportion": "lots"}, ["availableMemoryProportion", "'lots'", "number"]),
    ({"availableMemoryProportion": float("nan")}, ["availableMemoryProportion", "finite"]),
    ({"partialsType": "double"}, ["partialsType", "'double'", "'float' or 'half'"]),
    ({"partialsType": "FLOAT"}, ["partialsType", "'FLOAT'"]),
    ({"fullyConnectedPass": "TRAINING_FW"}, ["fullyConnectedPass", "TRAINING_FW", "did you mean 'TRAINING_FWD'"]),
    ({"enableFastReduce": "yes"}, ["enableFastReduce", "'yes'", "'true' or 'false'"]),
    ({"availableMemoryProportions": 0.5}, ["unknown option 'availableMemoryProportions'",
                                            "did you mean 'availableMemoryProportion'"]),
    ({"pass": "NONE"}, ["unknown option 'pass'"]),  # a conv key, not a matmul one
])
def test_bad_matmul_options(options, fragments):
    with pytest.raises(poputil.PoplibsError) as e:
        parse_mat_mul_options(options)
    for f in fragments:
        assert f in str(e.value)


def test_conv_only_keys():
    assert parse_conv_options({"pass": "TRAINING_WU"}).pass_ == "TRAINING_WU"
    with pytest.raises(poputil.PoplibsError, match="unknown option 'fullyConnectedPass'"):
        parse_conv_options({"fullyConnectedPass": "NONE"})
    with pytest.raises(poputil.PoplibsError, match="options must be a dict"):
        parse_conv_options(["availableMemoryProportion"])


def test_plan_constraints_parse():
    text = ('{"0": {"transform": {"swapOperands": true}, "partition": {"fieldSplit": {"0": 4}, "inChanSplit": 4, '
            '"outChanSplit": {"parallel": 4, "serial": 2}, "batchSplit": 8}}, "method": "AMP", '
            '"inChansPerGroup": 16}')
    c = parse_mat_mul_options({"planConstraints": text}).plan_constraints
    assert c == PlanConstraints(swap_operands=True, field_split=((0, 4),), in_chan_parallel=4, out_chan_parallel=4,
                                out_chan_serial=2, batch_split=8, method="AMP", in_chans_per_group=16)
    assert parse_plan_constraints({"method": {"type": "AMP", "convUnits": 8, "convInputLoadElems": 2}}) == \
        PlanConstraints(method="AMP", conv_units=8, conv_input_load_elems=2)
    assert parse_plan_constraints("") == PlanConstraints() and "batch_split=8" in c.describe()


@pytest.mark.parametrize("text, fragments", [
    ("{not json", ["planConstraints", "not valid JSON"]),
    ("[1, 2]", ["must be a JSON object"]),
    ('{"0": {"partition": {"batchSplt": 2}}}', ["0.partition.batchSplt", "did you mean 'batchSplit'"]),
    ('{"0": {"partition": {"inChanSplit": {"paralel": 2}}}}', ["'paralel' is not either 'parallel' or 'serial'"]),
    ('{"0": {"partition": {"batchSplit": -1}}}', ["0.partition.batchSplit", "unsigned integer", "-1"]),
    ('{"0": {"partition": {"batchSplit": 0}}}', ["a split must be >= 1"]),
    ('{"0": {"transform": {"swapOperands": 1}}}', ["0.transform.swapOperands", "true or false"]),
    ('{"0": {"plan": {}}}', ["0.plan", "'transform' or 'partition'"]),
    ('{"1": {"partition": {}}}', ["level 1 does not exist"]),
    ('{"method": "FAST"}', ["unknown method 'FAST'", "AMP"]),
    ('{"methd": "AMP"}', ["did you mean 'method'"]),
])
def test_bad_plan_constraints(text, fragments):
    with pytest.raises(poputil.PoplibsError) as e:
        parse_mat_mul_options({"planConstraints": text})
    for f in fragments:
        assert f in str(e.value)
