"""CUDA device queries and settings (``ferrox.cuda``)."""

from ferrox import _core


def is_available() -> bool:
    """Whether a CUDA GPU can be used. False on machines without one.

    Returns:
        bool: Whether a CUDA GPU can be used.
    """
    return _core.cuda_is_available()


def device_name():
    """The GPU's name (e.g. ``"NVIDIA H200"``), or None without a GPU.

    Returns:
        str or None: The GPU's name.
    """
    return _core.cuda_device_name()


def set_allow_tf32(allow: bool) -> bool:
    """Lets float32 matrix products use TF32 tensor cores (faster, about
    3e-4 relative error). Off by default. Returns the previous setting.

    Args:
        allow (bool): Whether float32 matrix products may use TF32.

    Returns:
        bool: The previous setting.
    """
    return _core.cuda_set_allow_tf32(bool(allow))


def libraries() -> dict:
    """The CUDA libraries ferrox uses, and where each was found.

    Each library is looked for in ``FERROX_CUDA_LIBRARY_PATH``, then in the
    ``nvidia-*`` wheels on Python's import path, then in ``CUDA_HOME`` /
    ``CUDA_PATH`` and the usual install prefixes, then on the loader's path
    (opening it, if it was not open yet).

    Returns:
        dict: Maps each library's short name (``"driver"``, ``"nvrtc"``,
        ``"cublaslt"``, ``"cublas"``, ``"cudnn"``, ``"cufft"``, ``"cusolver"``, ``"nccl"``)
        to a dict with ``path`` (the file it was loaded from, or None),
        ``version`` (a string, or None) and ``error`` (why it is missing, or
        None). Empty when ferrox was built without its CUDA backend.
    """
    return _core.cuda_libraries()
