"""code_fingerprint: what a callable reaches, for cache keys."""
import functools
import math

import numpy as np

from popsim.code_fingerprint import code_fingerprint


def function_from(source, name="f", module="user_code", **globals_):
    """A function defined by ``source`` in a fresh module namespace (the user's code)."""
    namespace = {"__name__": module, **globals_}
    exec(compile(source, f"<{module}>", "exec"), namespace)  # noqa: S102 - test input
    return namespace[name]


def test_same_code_same_fingerprint_and_any_edit_changes_it():
    a = function_from("def f(x):\n    return x + 1\n")
    b = function_from("def f(x):\n    return x + 1\n")
    c = function_from("def f(x):\n    return x + 2\n")
    d = function_from("def f(x):\n    return x - 1\n")
    assert code_fingerprint(a) == code_fingerprint(b)
    assert len({code_fingerprint(a), code_fingerprint(c), code_fingerprint(d)}) == 3


def test_globals_it_names_are_followed_and_others_ignored():
    src = "def f(x):\n    return helper(x) * K\n"
    helper1 = function_from("def helper(x):\n    return x\n", "helper")
    helper2 = function_from("def helper(x):\n    return -x\n", "helper")
    base = code_fingerprint(function_from(src, helper=helper1, K=2, unused=1))
    assert code_fingerprint(function_from(src, helper=helper1, K=2, unused=99)) == base
    assert code_fingerprint(function_from(src, helper=helper2, K=2)) != base
    assert code_fingerprint(function_from(src, helper=helper1, K=3)) != base


def test_nested_functions_lambdas_and_comprehensions_are_read():
    a = function_from("def f(xs):\n    return sum(g(x) for x in xs if (lambda y: y > 0)(x))\n", g=abs)
    b = function_from("def f(xs):\n    return sum(g(x) for x in xs if (lambda y: y > 1)(x))\n", g=abs)
    assert code_fingerprint(a) != code_fingerprint(b)


def test_containers_arrays_and_objects_by_content():
    src = "def f(x):\n    return TABLE[x]\n"
    fp = [code_fingerprint(function_from(src, TABLE=t)) for t in
          ({1: 2}, {1: 3}, [1, 2], (1, 2), {1, 2}, {1, 3}, np.arange(3), np.arange(4))]
    assert len(set(fp)) == len(fp)
    assert code_fingerprint(function_from(src, TABLE={"a", "b", "c"})) == \
        code_fingerprint(function_from(src, TABLE={"c", "b", "a"}))

    class Config:
        def __init__(self, k):
            self.k = k
    one, two = (code_fingerprint(function_from(src, TABLE=Config(k))) for k in (1, 2))
    assert one != two
    assert one == code_fingerprint(function_from(src, TABLE=Config(1)))


def test_cycles_recursion_and_self_reference_terminate():
    f = function_from("def f(n):\n    return 0 if n == 0 else f(n - 1)\n")
    assert len(code_fingerprint(f)) == 64
    loop = []
    loop.append(loop)
    assert len(code_fingerprint(function_from("def f():\n    return L\n", L=loop))) == 64


def test_long_helper_chains_need_no_recursion():
    g = function_from("def g0(x):\n    return x\n", "g0")
    for i in range(1, 3000):
        g = function_from(f"def g{i}(x):\n    return prev(x)\n", f"g{i}", prev=g)
    assert len(code_fingerprint(g)) == 64


def test_installed_code_is_named_not_read_and_builtins_work():
    assert code_fingerprint(math.sqrt) == code_fingerprint(math.sqrt)
    assert code_fingerprint(np.sum) != code_fingerprint(np.mean)
    assert code_fingerprint(functools.partial(max, 1)) != code_fingerprint(functools.partial(max, 2))
    bound = function_from("class C:\n    def m(self, x):\n        return x * self.k\n", "C")
    a, b = bound(), bound()
    a.k, b.k = 1, 2
    assert code_fingerprint(a.m) != code_fingerprint(b.m)


def test_no_addresses_leak_into_the_fingerprint():
    plain = object()
    f = function_from("def f():\n    return SENTINEL\n", SENTINEL=plain)
    g = function_from("def f():\n    return SENTINEL\n", SENTINEL=object())
    assert code_fingerprint(f) == code_fingerprint(g)


def test_closures_of_installed_functions_are_followed():
    from popsim.lower.cost_model import CostModel  # any popsim module stands for installed code
    make = function_from("def make(k):\n    return lambda info, target: k\n", "make", module="popsim.fake")
    assert code_fingerprint(make(1)) != code_fingerprint(make(2))
    assert code_fingerprint(make(1)) == code_fingerprint(make(1))
    assert code_fingerprint(CostModel.loop_iteration) == code_fingerprint(CostModel.loop_iteration)
