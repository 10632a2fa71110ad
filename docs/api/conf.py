"""Sphinx configuration of ferrox's API reference (``make docs``).

The pages are autodoc over the built extension and the Python package, with
napoleon reading the Google-style (MLX-style) Args/Returns sections. The
page of the root module, ``ferrox.rst``, is written at build time: its
functions are grouped by the file that binds them (scripts/rustsig.py), one
section per op family of crates/ferrox-python/src/ops/.
"""

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

project = "ferrox"
author = "the ferrox authors"
extensions = ["sphinx.ext.autodoc", "sphinx.ext.napoleon"]
napoleon_google_docstring = True
napoleon_numpy_docstring = False
autodoc_default_options = {"undoc-members": False, "show-inheritance": True}
autodoc_member_order = "alphabetical"
autodoc_typehints = "signature"
default_role = "code"  # `x` in a docstring is code, as in the Rust doc comments
html_theme = "alabaster"
html_title = "ferrox API reference"
exclude_patterns = ["_build", "generated/*.inc"]
suppress_warnings = ["ref.python"]  # type names in signatures (array, Dtype) that autodoc cannot link twice

# Section titles of the root page: the binding file's stem -> title.
GROUPS = {
    "elementwise": "Elementwise operations",
    "math": "Elementwise math",
    "reduction": "Reductions",
    "scan": "Scans",
    "sort": "Sorting and selection",
    "indexing": "Indexing",
    "shaping": "Shapes",
    "rearrange": "Rearranging",
    "creation": "Array creation",
    "contraction": "Matrix products and contractions",
    "linalg": "Linear algebra",
    "convolution": "Convolutions",
    "quantized": "Quantization",
    "memory": "Evaluation and memory",
    "dtype": "Data types",
    "device": "Devices and streams",
    "transforms": "Transforms",
    "compile": "Compilation",
    "io": "Saving and loading",
    "dlpack": "Interoperability",
    "export": "Export",
    "array": "Arrays",
    "print": "Printing",
}
PYTHON_GROUPS = {"ferrox._autodiff": "transforms", "ferrox._compile": "compile", "ferrox._export": "export"}


# The pages after the root's: module -> what it holds.
MODULES = {
    "ferrox.random": "Random number generation",
    "ferrox.fast": "Fused kernels and custom kernels",
    "ferrox.fft": "Fast Fourier transforms",
    "ferrox.linalg": "Linear algebra",
    "ferrox.cuda": "CUDA",
    "ferrox.metal": "Metal",
    "ferrox.distributed": "Distributed communication",
    "ferrox.nn": "Neural networks: layers and functions",
    "ferrox.nn.losses": "Loss functions",
    "ferrox.nn.init": "Initializers",
    "ferrox.optimizers": "Optimizers and schedules",
    "ferrox.utils": "Tree utilities",
}
GENERATED = HERE / "generated"


def public(module):
    """The module's public classes, functions and constants, as (name, object);
    names that other packages define (typing's Any, math) are left out."""
    import inspect

    out = []
    for name in sorted(n for n in dir(module) if not n.startswith("_")):
        obj = getattr(module, name)
        if inspect.ismodule(obj):
            continue
        if (isinstance(obj, type) or callable(obj)) and not (getattr(obj, "__module__", "") or "").startswith("ferrox"):
            continue
        out.append((name, obj))
    return out


def entries(name, obj):
    if isinstance(obj, type):
        return [f".. autoclass:: {name}", "   :members:", ""]
    if callable(obj):
        return [f".. autofunction:: {name}", ""]
    return [f".. autodata:: {name}", "   :annotation: = " + repr(obj).replace("\n", " "), ""]


def section(title, lines, mark="-"):
    return [title, mark * len(title), "", *lines]


def write(path, lines):
    text = "\n".join(lines) + "\n"
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


def root_page(crate):
    """ferrox.rst: the root module's names; functions grouped by binding file."""
    import ferrox

    files = {b.py_name: Path(b.file).stem for b in crate.bindings if b.owner is None and b.module == "ferrox._core"}
    groups, classes, constants = {}, [], []
    for name, obj in public(ferrox):
        if isinstance(obj, type):
            classes += entries(name, obj)
        elif callable(obj):
            # (an alias, acos, is the function object of its target, arccos)
            stem = files.get(getattr(obj, "__name__", name)) or PYTHON_GROUPS.get(obj.__module__, "other")
            groups.setdefault(stem, []).extend(entries(name, obj))
        else:
            constants += entries(name, obj)
    lines = ["ferrox", "======", "", ".. automodule:: ferrox", "   :no-members:", "", ".. currentmodule:: ferrox", ""]
    lines += section("Classes", classes)
    for stem in list(GROUPS) + sorted(set(groups) - set(GROUPS)):
        if stem in groups:
            lines += section(GROUPS.get(stem, stem.capitalize()), groups[stem])
    if constants:
        lines += section("Constants", constants)
    return lines


def module_page(module):
    lines = [module.__name__, "=" * len(module.__name__), "", f".. automodule:: {module.__name__}", "   :no-members:",
             "", f".. currentmodule:: {module.__name__}", ""]
    names = public(module)
    for title, test in (("Classes", lambda o: isinstance(o, type)), ("Functions", lambda o: callable(o) and not isinstance(o, type)),
                        ("Constants", lambda o: not callable(o))):
        chosen = [line for n, o in names if test(o) for line in entries(n, o)]
        if chosen:
            lines += section(title, chosen)
    return lines


def readme_examples():
    """The README's Python examples, each with the sentence before it."""
    import re

    text = (ROOT / "README.md").read_text()
    lines = []
    for m in re.finditer(r"(?:^([^\n`#][^\n]*)\n\n)?```python\n(.*?)```", text, re.S | re.M):
        if m.group(1):
            lines += [m.group(1).replace("`", "``"), ""]
        lines += [".. code-block:: python", "", *["   " + line if line else "" for line in m.group(2).splitlines()], ""]
    return lines


def generate(app):
    """Writes generated/: the module pages, the examples and the table of contents."""
    import importlib

    import rustsig

    GENERATED.mkdir(exist_ok=True)
    crate = rustsig.load()
    pages = ["ferrox"]
    write(GENERATED / "ferrox.rst", root_page(crate))
    for name in MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError:
            continue  # a module this checkout does not have
        write(GENERATED / f"{name}.rst", module_page(module))
        pages.append(name)
    write(GENERATED / "examples.inc", readme_examples())
    toc = [".. toctree::", "   :maxdepth: 1", ""]
    toc += [f"   {MODULES.get(p, 'Arrays, ops, transforms, devices')} <generated/{p}>" for p in pages]
    write(GENERATED / "toc.inc", toc)


def setup(app):
    app.connect("builder-inited", generate)
