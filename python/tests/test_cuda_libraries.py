"""How ferrox finds the CUDA libraries: in the ``nvidia-*`` wheels of
Python's import path with no ``LD_LIBRARY_PATH``, overridden by
``FERROX_CUDA_LIBRARY_PATH``, and reported by ``ferrox.cuda.libraries()``
and ``python -m ferrox``. These run without a GPU: CI has NVRTC's wheel."""

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import ferrox as fx

LIBRARIES = ["driver", "nvrtc", "cublaslt", "cublas", "cudnn", "cufft", "cusolver", "nccl"]


def nvrtc_wheel_folder():
    """The folder of the nvidia-cuda-nvrtc wheel's library, or None."""
    spec = importlib.util.find_spec("nvidia")
    if spec is None or not spec.submodule_search_locations:
        return None
    for root in spec.submodule_search_locations:
        folder = Path(root) / "cu13" / "lib"
        if (folder / "libnvrtc.so.13").is_file():
            return folder.resolve()
    return None


def run_python(code, **env):
    full_env = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "FERROX_CUDA_LIBRARY_PATH")}
    full_env.update(env)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=full_env, check=True)
    return out.stdout


def test_every_library_has_a_path_or_a_reason():
    libs = fx.cuda.libraries()
    assert list(libs) == LIBRARIES
    for name, info in libs.items():
        assert set(info) == {"path", "version", "error"}
        if info["path"] is None:
            assert info["error"] and ".so" in info["error"], name
            assert info["version"] is None
        else:
            assert info["error"] is None and Path(info["path"]).is_file(), name


def test_missing_libraries_name_the_wheel_that_provides_them():
    libs = fx.cuda.libraries()
    if libs["nccl"]["path"] is None:
        assert "nvidia-nccl-cu13" in libs["nccl"]["error"]
    if libs["cudnn"]["path"] is None:
        assert "nvidia-cudnn-cu13" in libs["cudnn"]["error"]


@pytest.mark.skipif(nvrtc_wheel_folder() is None, reason="the nvidia-cuda-nvrtc wheel is not installed")
def test_nvrtc_is_found_in_the_wheel_without_ld_library_path():
    out = run_python("import json, ferrox as fx; print(json.dumps(fx.cuda.libraries()['nvrtc']))")
    info = json.loads(out)
    assert info["error"] is None, info
    assert Path(info["path"]).resolve().parent == nvrtc_wheel_folder()
    assert info["version"].startswith("13.")


@pytest.mark.skipif(nvrtc_wheel_folder() is None, reason="the nvidia-cuda-nvrtc wheel is not installed")
def test_the_environment_variable_overrides_the_search(tmp_path):
    # A folder holding a link to the same library: the override is searched first.
    (tmp_path / "libnvrtc.so.13").symlink_to(nvrtc_wheel_folder() / "libnvrtc.so.13")
    out = run_python(
        "import json, ferrox as fx; print(json.dumps(fx.cuda.libraries()['nvrtc']))",
        FERROX_CUDA_LIBRARY_PATH=f"{tmp_path / 'missing'}:{tmp_path}",
    )
    info = json.loads(out)
    assert info["error"] is None, info
    assert Path(info["path"]) == tmp_path / "libnvrtc.so.13"


def test_python_dash_m_ferrox_reports_devices_and_libraries():
    out = run_python("import runpy; runpy.run_module('ferrox', run_name='__main__')")
    assert out.startswith("ferrox ")
    assert "default device:" in out
    for name in LIBRARIES:
        assert f"  {name}" in out
