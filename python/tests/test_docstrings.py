"""Every public name of ferrox's modules has an MLX-style docstring.

The rule, for each public function, class and method (a name without a
leading underscore, defined by ferrox; methods are those a class defines
itself, not inherited ones, and special methods are left to their class):

* it has a docstring;
* a callable with parameters (other than ``self``, ``cls`` and ``stream``)
  has an ``Args:`` section; a class counts its constructor's parameters;
* a function or method that returns a value has a ``Returns:`` (or
  ``Yields:``) section. Whether it returns one comes from the code: the Rust
  return type of a binding (scripts/rustsig.py), or, for Python, a return
  annotation other than None or a ``return <value>``/``yield`` in its body.
  Properties need only the docstring.

A method overriding a base-class method whose docstring has these sections
(``Optimizer.apply_single`` in each optimizer) shares its contract and
needs only a docstring of its own.
"""

import ast
import importlib
import inspect
import sys
import textwrap
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
import rustsig  # noqa: E402

MODULES = [
    "ferrox",
    "ferrox.random",
    "ferrox.fast",
    "ferrox.cuda",
    "ferrox.metal",
    "ferrox.distributed",
    "ferrox.nn",
    "ferrox.nn.losses",
    "ferrox.nn.init",
    "ferrox.nn.layers",
    "ferrox.optimizers",
    "ferrox.utils",
]
IGNORED_PARAMS = {"self", "cls", "stream"}


@pytest.fixture(scope="module")
def crate():
    return rustsig.load()


def is_rust(obj):
    return isinstance(obj, (types.BuiltinFunctionType, types.MethodDescriptorType, types.WrapperDescriptorType,
                            types.ClassMethodDescriptorType, types.GetSetDescriptorType))


def parameters(obj):
    """The documented parameters of a callable (None when they cannot be read)."""
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return None
    return [p for p in sig.parameters if p not in IGNORED_PARAMS]


def python_returns(fn):
    """Whether a Python function returns a value (annotation, else body)."""
    ret = inspect.signature(fn).return_annotation
    if ret is not inspect.Signature.empty:
        return ret is not None and ret != "None"
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return False
    body = tree.body[0]

    def walk(node):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                continue
            if isinstance(child, ast.Return) and child.value is not None:
                return True
            if isinstance(child, (ast.Yield, ast.YieldFrom)):
                return True
            if walk(child):
                return True
        return False

    return walk(body)


def rust_returns(crate, name, owner):
    """Whether a Rust binding returns a value: its return type is not ``()``."""
    found = [b for b in crate.bindings if b.py_name == name and (crate.classes.get(b.owner) == owner)
             and b.kind in ("function", "method", "staticmethod", "classmethod")]
    if not found:
        return True  # unknown: ask for the section
    ret = rustsig.text_of(found[0].ret).replace(" ", "")
    return ret not in ("", "()", "PyResult<()>")


def overrides_documented(owner_cls, name):
    """Whether a base class of ``owner_cls`` defines ``name`` with an Args: or Returns: section."""
    for base in (owner_cls.__mro__[1:] if isinstance(owner_cls, type) else ()):
        doc = base.__dict__.get(name).__doc__ if name in base.__dict__ else None
        if doc and ("Args:" in doc or "Returns:" in doc):
            return True
    return False


def problems(crate, qualname, obj, owner=None, owner_cls=None):
    """What the docstring of one object lacks."""
    doc = obj.__doc__ if isinstance(obj, property) else vars(obj).get("__doc__") if isinstance(obj, type) else obj.__doc__
    doc = inspect.cleandoc(doc) if doc else doc
    if not doc or not doc.strip():
        return [f"{qualname}: no docstring"]
    if isinstance(obj, (property, types.GetSetDescriptorType)):
        return []
    if owner_cls is not None and overrides_documented(owner_cls, qualname.rsplit(".", 1)[-1]):
        return []
    out = []
    params = parameters(obj.__init__ if isinstance(obj, type) and "__init__" in vars(obj) else obj)
    if params and "Args:" not in doc:
        out.append(f"{qualname}: no Args: section ({', '.join(params)})")
    if isinstance(obj, type):
        return out
    returns = rust_returns(crate, obj.__name__, owner) if is_rust(obj) else python_returns(obj)
    if returns and "Returns:" not in doc and "Yields:" not in doc:
        out.append(f"{qualname}: no Returns: section")
    return out


def own_members(cls):
    for name, raw in sorted(vars(cls).items()):
        if name.startswith("_"):
            continue
        if isinstance(raw, (staticmethod, classmethod)):
            raw = raw.__func__
        if callable(raw) or isinstance(raw, (property, types.GetSetDescriptorType)):
            yield name, raw


def public_objects(module):
    """(qualified name, object, owner class) of a module's public functions, classes and methods."""
    seen = set()
    for name in sorted(dir(module)):
        obj = getattr(module, name)
        if name.startswith("_") or isinstance(obj, types.ModuleType):
            continue
        if not (callable(obj) or isinstance(obj, type)):
            continue  # constants
        mod = getattr(obj, "__module__", "") or ""
        if not mod.startswith("ferrox"):
            continue  # re-exported from elsewhere (typing, math)
        yield f"{module.__name__}.{name}", obj, None
        if isinstance(obj, type) and obj not in seen:
            seen.add(obj)
            for member, raw in own_members(obj):
                yield f"{module.__name__}.{name}.{member}", raw, obj


@pytest.mark.parametrize("name", MODULES)
def test_public_names_have_mlx_style_docstrings(crate, name):
    try:
        module = importlib.import_module(name)
    except ModuleNotFoundError:
        pytest.skip(f"no {name} in this checkout")
    missing = [] if (module.__doc__ or "").strip() else [f"{name}: no module docstring"]
    for qualname, obj, owner in public_objects(module):
        missing += problems(crate, qualname, obj, owner.__name__ if owner else None, owner)
    assert not missing, f"{len(missing)} docstring problems:\n" + "\n".join(missing)


def test_the_rule_finds_gaps(crate):
    """The checks above can fail: undocumented objects are reported."""

    def bare(x, y):
        return x + y

    def no_args(x):
        """Adds one.

        Returns:
            The sum."""
        return x + 1

    class Thing:
        """A thing."""

        def __init__(self, size):
            pass

    assert problems(crate, "bare", bare) == ["bare: no docstring"]
    assert problems(crate, "no_args", no_args) == ["no_args: no Args: section (x)"]
    assert problems(crate, "Thing", Thing) == ["Thing: no Args: section (size)"]
