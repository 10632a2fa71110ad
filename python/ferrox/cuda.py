"""CUDA device queries (``ferrox.cuda``)."""

from ferrox import _core


def is_available() -> bool:
    """Whether a CUDA GPU can be used. False on machines without one."""
    return _core.cuda_is_available()
