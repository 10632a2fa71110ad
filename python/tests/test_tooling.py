"""The generated files stay in step with the built module: docs/coverage.md
(scripts/coverage.py) and the type stubs (scripts/stubgen.py)."""

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

import ferrox as fx

pytestmark = pytest.mark.whole_process

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = Path(fx.__file__).parent


def run_script(name, *args):
    # The script must see the ferrox this process imported (the source tree or
    # an installed wheel).
    env = {**os.environ, "PYTHONPATH": str(PACKAGE.parent)}
    return subprocess.run(
        [sys.executable, str(ROOT / "scripts" / name), *args], env=env, capture_output=True, text=True, timeout=60
    )


@pytest.mark.skipif(not (ROOT.parent / "shared" / "API.md").exists(), reason="no API checklist next to the checkout")
def test_coverage_report_is_current():
    result = run_script("coverage.py", "--check")
    assert result.returncode == 0, result.stderr


def test_stubs_are_current():
    result = run_script("stubgen.py", "--check")
    assert result.returncode == 0, result.stderr


def stub_names(tree):
    """Names a stub's top-level statements (or a class body's) define."""
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.AnnAssign):
            names.add(node.target.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update(alias.asname or alias.name for alias in node.names)
    return names


@pytest.mark.parametrize("module, stub", [(fx, "__init__.pyi"), (fx.cuda, "cuda.pyi")])
def test_stub_names_every_public_attribute(module, stub):
    tree = ast.parse((ROOT / "python" / "ferrox" / stub).read_text())
    # Pure-Python subpackages carry their own annotations; they become
    # attributes of ferrox once some code imports them.
    typed_sources = {"nn", "optimizers", "utils"} if module is fx else set()
    public = {n for n in dir(module) if not n.startswith("_")} - typed_sources
    assert public - stub_names(tree) == set()
    if module is fx:
        (array,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "array"]
        assert {n for n in dir(fx.array) if not n.startswith("_")} - stub_names(array) == set()


def test_package_is_marked_typed():
    assert (ROOT / "python" / "ferrox" / "py.typed").exists()
