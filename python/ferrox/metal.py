"""Metal, Apple's GPU API (``ferrox.metal``): never available in ferrox,
whose GPU backend is CUDA (MLX's CUDA and CPU builds answer the same)."""


def is_available() -> bool:
    """Whether the Metal backend can be used: always False."""
    return False
