"""The PopLibs libraries are part of the installed package."""
import popsim


def test_libraries_import_from_popsim():
    from popsim import poplin, popnn, popops, poprand, poputil
    for lib in (poplin, popnn, popops, poprand, poputil):
        assert lib.__name__.startswith("popsim.") and lib.__doc__


def test_poplibs_error_is_a_popsim_error():
    from popsim import poputil
    assert issubclass(poputil.PoplibsError, popsim.PopsimError)
