"""``python -m ferrox``: what ferrox sees on this machine (version, devices,
and where each CUDA library was found or why it is missing)."""

import ferrox as fx


def main() -> None:
    """Prints ferrox's version, its devices and its CUDA libraries."""
    print(f"ferrox {fx.__version__}")
    print(f"default device: {fx.default_device()}")
    if fx.cuda.is_available():
        print(f"GPU: {fx.cuda.device_name()}")
    else:
        print("GPU: none (everything runs on the CPU)")
    libraries = fx.cuda.libraries()
    if not libraries:
        print("CUDA libraries: not looked for (built without the CUDA backend)")
    for name, info in libraries.items():
        if info["path"]:
            version = f" {info['version']}" if info["version"] else ""
            print(f"  {name:<9}{version}: {info['path']}")
        else:
            print(f"  {name:<9} missing: {info['error']}")


if __name__ == "__main__":
    main()
