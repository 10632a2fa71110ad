"""Metal, Apple's GPU API (``ferrox.metal``): never available in ferrox,
whose GPU backend is CUDA (MLX's CUDA and CPU builds answer the same)."""

import warnings

from ferrox import _core


def is_available() -> bool:
    """Whether the Metal backend can be used: always False.

    Returns:
        bool: Always False.
    """
    return False


def _deprecated(name: str) -> None:
    warnings.warn(
        f"ferrox.metal.{name} is deprecated and will be removed in a future version. Use ferrox.{name} instead.",
        DeprecationWarning,
        stacklevel=3,
    )


def get_active_memory() -> int:
    """Deprecated alias of :func:`ferrox.get_active_memory`.

    Returns:
        int: The bytes held by live arrays.
    """
    _deprecated("get_active_memory")
    return _core.get_active_memory()


def get_peak_memory() -> int:
    """Deprecated alias of :func:`ferrox.get_peak_memory`.

    Returns:
        int: The most bytes held at once since start or the last reset.
    """
    _deprecated("get_peak_memory")
    return _core.get_peak_memory()


def reset_peak_memory() -> None:
    """Deprecated alias of :func:`ferrox.reset_peak_memory`.

    Returns:
        None
    """
    _deprecated("reset_peak_memory")
    _core.reset_peak_memory()


def get_cache_memory() -> int:
    """Deprecated alias of :func:`ferrox.get_cache_memory`.

    Returns:
        int: The bytes held by freed buffers kept for reuse.
    """
    _deprecated("get_cache_memory")
    return _core.get_cache_memory()


def set_memory_limit(limit: int) -> int:
    """Deprecated alias of :func:`ferrox.set_memory_limit`.

    Args:
        limit (int): The memory limit in bytes.

    Returns:
        int: The previous memory limit in bytes.
    """
    _deprecated("set_memory_limit")
    return _core.set_memory_limit(limit)


def set_cache_limit(limit: int) -> int:
    """Deprecated alias of :func:`ferrox.set_cache_limit`.

    Args:
        limit (int): The cache limit in bytes.

    Returns:
        int: The previous cache limit in bytes.
    """
    _deprecated("set_cache_limit")
    return _core.set_cache_limit(limit)


def set_wired_limit(limit: int) -> int:
    """Deprecated alias of :func:`ferrox.set_wired_limit` (no effect
    without Metal).

    Args:
        limit (int): The wired limit in bytes.

    Returns:
        int: The previous wired limit in bytes (always 0).
    """
    _deprecated("set_wired_limit")
    return _core.set_wired_limit(limit)


def clear_cache() -> None:
    """Deprecated alias of :func:`ferrox.clear_cache`.

    Returns:
        None
    """
    _deprecated("clear_cache")
    _core.clear_cache()


def device_info() -> dict:
    """Deprecated alias of :func:`ferrox.device_info` for the GPU.

    Returns:
        dict: The GPU's properties, or an empty dict without a GPU (as MLX's
        builds without Metal return).
    """
    _deprecated("device_info")
    gpu = _core.Device(_core.gpu)
    return _core.device_info(gpu) if _core.is_available(gpu) else {}


def start_capture(path: str) -> None:
    """Start a Metal capture: Metal does not exist here, so this raises.

    Args:
        path (str): The path to save the capture (``.gputrace``).

    Returns:
        None. Always raises RuntimeError: ferrox has no Metal backend (use
        NVIDIA's Nsight tools to trace its CUDA work).
    """
    raise RuntimeError(
        f"[metal.start_capture] Cannot capture to {path!r}: Metal is not available (ferrox's GPU backend is CUDA)."
    )


def stop_capture() -> None:
    """Stop a Metal capture: Metal does not exist here, so this raises.

    Returns:
        None. Always raises RuntimeError: ferrox has no Metal backend.
    """
    raise RuntimeError("[metal.stop_capture] No capture to stop: Metal is not available (ferrox's GPU backend is CUDA).")
