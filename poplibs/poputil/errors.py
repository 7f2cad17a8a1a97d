"""PoplibsError: what PopLibs ops raise (PopLibs' poputil::poplibs_error)."""
import popsim


class PoplibsError(popsim.PopsimError):
    """A PopLibs op was given something it cannot do: the message names the tensors,
    what was expected and what was found."""
