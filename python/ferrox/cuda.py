"""CUDA device queries and settings (``ferrox.cuda``)."""

from ferrox import _core


def is_available() -> bool:
    """Whether a CUDA GPU can be used. False on machines without one."""
    return _core.cuda_is_available()


def device_name():
    """The GPU's name (e.g. ``"NVIDIA H200"``), or None without a GPU."""
    return _core.cuda_device_name()


def set_allow_tf32(allow: bool) -> bool:
    """Lets float32 matrix products use TF32 tensor cores (faster, about
    3e-4 relative error). Off by default. Returns the previous setting."""
    return _core.cuda_set_allow_tf32(bool(allow))
