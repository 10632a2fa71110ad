"""Reads the Python entry points of the bindings crate from its Rust source.

``bindings()`` returns every ``#[pyfunction]`` and every method of a
``#[pymethods]`` block under crates/ferrox-python/src, including those that
``macro_rules!`` macros generate (from their own rows, or from the rows of
the core crate's op tables, ``ferrox::unary_ops!`` and friends): the
Python name, the owning module (the ``PyModule::new`` name of the file that
defines it) or class (its ``#[pyclass(name = ...)]``), the Rust parameter
names and types, the return type and the body's tokens. scripts/stubgen.py
turns them into Python types.

The macros are expanded by a small ``macro_rules!`` interpreter: enough of
the matcher (literal tokens, ``$x:ident``, ``literal``, ``tt``, ``path``,
``ty``, ``expr``, ``$( ... ) sep rep`` repetitions) and the transcriber for
the bindings' macros. A macro form it cannot match raises ``RustError``.
"""

import re
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BINDINGS = ROOT / "crates" / "ferrox-python" / "src"
# Files of the core crate whose macros the bindings invoke (the op tables).
CORE_MACRO_FILES = [ROOT / "crates" / "ferrox" / "src" / "ops" / "tables.rs"]
ROOT_MODULE = "ferrox._core"


class RustError(Exception):
    pass


# ---------------------------------------------------------------- tokens


@dataclass(frozen=True)
class Tok:
    kind: str  # ident, lit, punct, life
    text: str

    def __repr__(self):
        return self.text


@dataclass(frozen=True)
class Group:
    delim: str  # ( [ {
    tts: tuple

    def __repr__(self):
        close = {"(": ")", "[": "]", "{": "}"}[self.delim]
        return self.delim + " ".join(map(repr, self.tts)) + close


PUNCT2 = ("::", "=>", "->", "..", "==", "!=", "&&", "||")
TOKEN = re.compile(
    r"""(?P<ws>\s+)|(?P<lcom>//[^\n]*)|(?P<bcom>/\*)
    |(?P<str>b?r(?P<hashes>\#*)"(?:.|\n)*?"(?P=hashes)|b?"(?:[^"\\]|\\.|\\\n)*")
    |(?P<char>b?'(?:[^'\\]|\\.|\\u\{[0-9a-fA-F]+\})')
    |(?P<life>'[A-Za-z_][A-Za-z0-9_]*)
    |(?P<num>[0-9][0-9A-Za-z_]*(?:\.[0-9][0-9A-Za-z_]*)?(?:[eE][+-]?[0-9]+)?)
    |(?P<ident>(?:r\#)?[A-Za-z_][A-Za-z0-9_]*)
    |(?P<punct>::|=>|->|\.\.|==|!=|&&|\|\||[^\sA-Za-z0-9_])""",
    re.X | re.S,
)


def tokenize(text):
    """The token trees of Rust source text (comments dropped)."""
    stack, pos = [("", [])], 0
    while pos < len(text):
        m = TOKEN.match(text, pos)
        if not m:
            raise RustError(f"cannot tokenize at {text[pos:pos + 40]!r}")
        kind = m.lastgroup if m.lastgroup != "hashes" else "str"
        if kind == "bcom":  # nested block comments
            depth, pos = 1, m.end()
            while depth:
                nxt = re.compile(r"/\*|\*/").search(text, pos)
                depth += 1 if nxt.group() == "/*" else -1
                pos = nxt.end()
            continue
        pos = m.end()
        if kind in ("ws", "lcom"):
            continue
        s = m.group()
        if kind == "punct" and s in "([{":
            stack.append((s, []))
        elif kind == "punct" and s in ")]}":
            delim, tts = stack.pop()
            stack[-1][1].append(Group(delim, tuple(tts)))
        else:
            kind = {"str": "lit", "char": "lit", "num": "lit"}.get(kind, kind)
            stack[-1][1].append(Tok(kind, s))
    if len(stack) != 1:
        raise RustError("unbalanced delimiters")
    return stack[0][1]


def text_of(tts):
    """Source-like text of token trees (for types and messages)."""
    out = ""
    for t in tts:
        s = repr(t)
        if out and (out[-1].isalnum() or out[-1] in "_'") and (s[0].isalnum() or s[0] in "_'\""):
            out += " "
        out += s
    return out


def split(tts, sep=","):
    """Top-level pieces of a token list separated by punctuation ``sep``."""
    parts, cur = [], []
    for t in tts:
        if isinstance(t, Tok) and t.kind == "punct" and t.text == sep:
            parts.append(cur)
            cur = []
        else:
            cur.append(t)
    if cur:
        parts.append(cur)
    return parts


def split_generic(tts):
    """Top-level comma pieces inside ``<...>`` (angle depth counted)."""
    parts, cur, depth = [], [], 0
    for t in tts:
        if is_punct(t, "<"):
            depth += 1
        elif is_punct(t, ">"):
            depth -= 1
        elif is_punct(t, ",") and depth == 0:
            parts.append(cur)
            cur = []
            continue
        cur.append(t)
    if cur:
        parts.append(cur)
    return parts


def is_punct(t, s):
    return isinstance(t, Tok) and t.kind == "punct" and t.text == s


def is_ident(t, s=None):
    return isinstance(t, Tok) and t.kind == "ident" and (s is None or t.text == s)


# ---------------------------------------------------------------- macro_rules


class Frag(tuple):
    """The tokens one metavariable matched."""


def parse_pattern(tts):
    """A matcher as a list of elements: Tok, ("var", name, frag),
    ("rep", elements, sep, op) or ("group", delim, elements)."""
    out, i = [], 0
    while i < len(tts):
        t = tts[i]
        if is_punct(t, "$") and i + 1 < len(tts):
            nxt = tts[i + 1]
            if isinstance(nxt, Group) and nxt.delim == "(":
                sub, i = parse_pattern(nxt.tts), i + 2
                sep = None
                if not (is_punct(tts[i], "*") or is_punct(tts[i], "+") or is_punct(tts[i], "?")):
                    sep, i = tts[i], i + 1
                out.append(("rep", sub, sep, tts[i].text))
                i += 1
                continue
            if is_ident(nxt) and i + 3 < len(tts) and is_punct(tts[i + 2], ":"):
                out.append(("var", nxt.text, tts[i + 3].text))
                i += 4
                continue
        if isinstance(t, Group):
            out.append(("group", t.delim, parse_pattern(t.tts)))
        else:
            out.append(t)
        i += 1
    return out


EXPR_FOLLOW = {"=>", ",", ";"}
TY_FOLLOW = {"=>", ",", "=", "|", ";", ":", "{", "["}


def match_frag(frag, tts, i):
    """The end index of fragment ``frag`` starting at ``tts[i]``, or None."""
    if i >= len(tts):
        return None
    t = tts[i]
    if frag == "ident":
        return i + 1 if is_ident(t) else None
    if frag == "literal":
        if is_punct(t, "-") and i + 1 < len(tts) and isinstance(tts[i + 1], Tok) and tts[i + 1].kind == "lit":
            return i + 2
        return i + 1 if isinstance(t, Tok) and (t.kind == "lit" or t.text in ("true", "false")) else None
    if frag == "tt":
        return i + 1
    if frag == "lifetime":
        return i + 1 if isinstance(t, Tok) and t.kind == "life" else None
    if frag == "path":
        j = i + 1 if is_punct(t, "::") else i
        if j >= len(tts) or not is_ident(tts[j]):
            return None
        j += 1
        while j + 1 < len(tts) and is_punct(tts[j], "::") and is_ident(tts[j + 1]):
            j += 2
        return j
    if frag in ("expr", "ty", "pat", "block", "stmt", "item"):
        follow = EXPR_FOLLOW if frag in ("expr", "stmt") else TY_FOLLOW
        j, depth = i, 0
        while j < len(tts):
            u = tts[j]
            if frag == "ty" and is_punct(u, "<"):
                depth += 1
            elif frag == "ty" and is_punct(u, ">"):
                depth -= 1
            elif depth == 0 and isinstance(u, Tok) and u.kind == "punct" and u.text in follow:
                break
            j += 1
        return j if j > i else None
    raise RustError(f"fragment ${frag} is not supported")


def match_seq(pat, tts, i, b):
    """Matches pattern elements from ``tts[i]``; returns the end index or None."""
    for el in pat:
        if isinstance(el, Tok):
            if i < len(tts) and isinstance(tts[i], Tok) and tts[i].text == el.text:
                i += 1
            else:
                return None
        elif el[0] == "var":
            j = match_frag(el[2], tts, i)
            if j is None:
                return None
            b[el[1]] = Frag(tts[i:j])
            i = j
        elif el[0] == "group":
            if i < len(tts) and isinstance(tts[i], Group) and tts[i].delim == el[1]:
                sub = {}
                if match_seq(el[2], tts[i].tts, 0, sub) != len(tts[i].tts):
                    return None
                b.update(sub)
                i += 1
            else:
                return None
        else:  # repetition
            _, sub_pat, sep, op = el
            runs = []
            while i < len(tts):
                start = i
                if runs and sep is not None:
                    if not (isinstance(tts[i], Tok) and tts[i].text == sep.text):
                        break
                    i += 1
                sub = {}
                j = match_seq(sub_pat, tts, i, sub)
                if j is None or j == i:
                    i = start
                    break
                runs.append(sub)
                i = j
                if op == "?":
                    break
            for name in pattern_vars(sub_pat):
                b[name] = [r.get(name) for r in runs]
    return i


def pattern_vars(pat):
    names = []
    for el in pat:
        if isinstance(el, tuple):
            if el[0] == "var":
                names.append(el[1])
            elif el[0] == "group":
                names += pattern_vars(el[2])
            else:
                names += pattern_vars(el[1])
    return names


def transcribe(tts, b):
    """The expansion of a macro body with bindings ``b``."""
    out, i = [], 0
    while i < len(tts):
        t = tts[i]
        if is_punct(t, "$") and i + 1 < len(tts):
            nxt = tts[i + 1]
            if isinstance(nxt, Group) and nxt.delim == "(":
                j = i + 2
                sep = None
                if not any(is_punct(tts[j], s) for s in "*+?"):
                    sep, j = tts[j], j + 1
                used = [n for n in body_vars(nxt.tts) if isinstance(b.get(n), list)]
                if not used:
                    raise RustError(f"repetition without repeated variables: {nxt!r}")
                for k in range(len(b[used[0]])):
                    if k and sep is not None:
                        out.append(sep)
                    out += transcribe(nxt.tts, {**b, **{n: b[n][k] for n in used}})
                i = j + 1
                continue
            if is_ident(nxt) and nxt.text in b:
                out += list(b[nxt.text])
                i += 2
                continue
        if isinstance(t, Group):
            out.append(Group(t.delim, tuple(transcribe(t.tts, b))))
        else:
            out.append(t)
        i += 1
    return out


def body_vars(tts):
    names = []
    for i, t in enumerate(tts):
        if is_punct(t, "$") and i + 1 < len(tts) and is_ident(tts[i + 1]):
            names.append(tts[i + 1].text)
        elif isinstance(t, Group):
            names += body_vars(t.tts)
    return names


@dataclass
class Macro:
    name: str
    arms: list  # (pattern elements, body tts)

    def expand(self, tts):
        for pat, body in self.arms:
            b = {}
            if match_seq(pat, tts, 0, b) == len(tts):
                return transcribe(body, b)
        raise RustError(f"no arm of {self.name}! matches {text_of(tts)[:200]}")


def macro_def(group):
    arms = []
    tts = group.tts
    i = 0
    while i < len(tts):
        pat, arrow, body = tts[i], tts[i + 1], tts[i + 2]
        if not is_punct(arrow, "=>"):
            raise RustError("malformed macro_rules arm")
        arms.append((parse_pattern(pat.tts), body.tts))
        i += 3
        if i < len(tts) and is_punct(tts[i], ";"):
            i += 1
    return arms


# ---------------------------------------------------------------- items


@dataclass
class Param:
    name: str
    ty: list  # tokens of the Rust type


@dataclass
class Binding:
    py_name: str
    rust_name: str
    params: list  # Param, Python-visible only (no self, py, slf)
    ret: list  # tokens of the return type ([] for none)
    body: list
    attrs: list  # attribute groups' token lists
    file: str
    owner: str | None = None  # the Rust type of a method's impl block
    kind: str = "function"  # function, method, getter, setter, new, staticmethod, classmethod, classattr
    module: str | None = None

    def attr(self, name):
        """The token list inside the first ``#[name(...)]``, [] for ``#[name]``, None if absent."""
        for a in self.attrs:
            if a and is_ident(a[0], name):
                return list(a[1].tts) if len(a) > 1 and isinstance(a[1], Group) else []
        return None


def attr_value(tokens, key):
    """The string value of ``key = "..."`` in an attribute's arguments."""
    for part in split(tokens):
        if len(part) >= 3 and is_ident(part[0], key) and is_punct(part[1], "="):
            t = part[2]
            if isinstance(t, Tok) and t.kind == "lit" and t.text.startswith('"'):
                return t.text[1:-1]
            return text_of(part[2:])
    return None


@dataclass
class Crate:
    bindings: list = field(default_factory=list)
    fns: dict = field(default_factory=dict)  # name -> [Binding] of every fn (helpers included)
    classes: dict = field(default_factory=dict)  # Rust type -> Python class name
    class_modules: dict = field(default_factory=dict)  # Rust type -> module
    global_macros: dict = field(default_factory=dict)

    def __repr__(self):
        return f"Crate({len(self.bindings)} bindings)"


def load():
    """Every Python entry point of the bindings crate."""
    crate = Crate()
    for path in CORE_MACRO_FILES:
        collect_macros(tokenize(path.read_text()), crate.global_macros)
    files = sorted(BINDINGS.rglob("*.rs"))
    parsed = {p: tokenize(p.read_text()) for p in files}
    for tts in parsed.values():  # #[macro_export] macros are crate-wide
        collect_macros(tts, crate.global_macros, exported_only=True)
    modules = {p: file_module(tts) for p, tts in parsed.items()}
    for path, tts in parsed.items():
        rel = str(path.relative_to(ROOT))
        local = dict(crate.global_macros)
        collect_macros(tts, local)
        # A file of a directory module (nn/functions.rs) adds to the module
        # its mod.rs makes.
        module = modules[path] or modules.get(path.parent / "mod.rs") or ROOT_MODULE
        scan_items(tts, crate, local, rel, module)
    return crate


def collect_macros(tts, into, exported_only=False):
    attrs = []
    for i, t in enumerate(tts):
        if is_punct(t, "#") and i + 1 < len(tts) and isinstance(tts[i + 1], Group) and tts[i + 1].delim == "[":
            attrs.append(tts[i + 1].tts)
        if is_ident(t, "macro_rules") and i + 3 < len(tts) and is_punct(tts[i + 1], "!"):
            exported = any(a and is_ident(a[0], "macro_export") for a in attrs[-2:])
            if exported or not exported_only:
                into[tts[i + 2].text] = Macro(tts[i + 2].text, macro_def(tts[i + 3]))
        if isinstance(t, Tok) and t.text in (";", "}") or isinstance(t, Group) and t.delim == "{":
            attrs = []


def file_module(tts):
    """The name a file's ``PyModule::new(py, "...")`` gives its functions' module."""
    names = set()

    def walk(ts):
        for i, t in enumerate(ts):
            if is_ident(t, "PyModule") and i + 4 < len(ts) and is_punct(ts[i + 1], "::") and is_ident(ts[i + 2], "new"):
                args = split(ts[i + 3].tts)
                if len(args) == 2 and isinstance(args[1][0], Tok) and args[1][0].kind == "lit":
                    names.add(args[1][0].text.strip('"'))
            if isinstance(t, Group):
                walk(t.tts)

    walk(tts)
    if len(names) > 1:
        raise RustError(f"a file makes several modules: {names}")
    return names.pop() if names else None


def scan_items(tts, crate, macros, file, module, owner=None, in_pymethods=False):
    """Finds bindings among items (expanding macro invocations)."""
    attrs, i = [], 0
    while i < len(tts):
        t = tts[i]
        if is_punct(t, "#") and i + 1 < len(tts) and is_punct(tts[i + 1], "!"):
            i += 3  # inner attribute
            continue
        if is_punct(t, "#") and i + 1 < len(tts) and isinstance(tts[i + 1], Group):
            attrs.append(list(tts[i + 1].tts))
            i += 2
            continue
        if is_ident(t, "macro_rules"):
            i += 4
            attrs = []
            continue
        # A macro invocation at item level: path ! group
        j = i
        while j + 2 < len(tts) and is_ident(tts[j]) and is_punct(tts[j + 1], "::"):
            j += 2
        if j + 2 < len(tts) and is_ident(tts[j]) and is_punct(tts[j + 1], "!") and isinstance(tts[j + 2], Group):
            name = tts[j].text
            if name in macros:
                expansion = macros[name].expand(list(tts[j + 2].tts))
                scan_items(expansion, crate, macros, file, module, owner, in_pymethods)
            i = j + 3
            attrs = []
            continue
        if is_ident(t, "impl"):
            j = i + 1
            while not (isinstance(tts[j], Group) and tts[j].delim == "{"):
                j += 1
            head = list(tts[i + 1:j])
            fors = [n for n, x in enumerate(head) if is_ident(x, "for")]
            head = head[fors[-1] + 1:] if fors else head
            self_ty = re.sub(r"<.*", "", text_of(head)).strip()
            pym = any(a and is_ident(a[0], "pymethods") for a in attrs)
            scan_items(list(tts[j].tts), crate, macros, file, module, self_ty, pym)
            i, attrs = j + 1, []
            continue
        if is_ident(t, "struct") or is_ident(t, "enum"):
            for a in attrs:
                if a and is_ident(a[0], "pyclass"):
                    args = list(a[1].tts) if len(a) > 1 else []
                    crate.classes[tts[i + 1].text] = attr_value(args, "name") or tts[i + 1].text
                    crate.class_modules[tts[i + 1].text] = attr_value(args, "module")
                    body = next((u for u in tts[i + 2:i + 6] if isinstance(u, Group) and u.delim == "{"), None)
                    if body is not None:
                        field_getters(crate, tts[i + 1].text, list(body.tts), file, module)
            attrs = []
            i += 2
            continue
        if is_ident(t, "fn"):
            i = read_fn(tts, i, attrs, crate, file, module, owner, in_pymethods)
            attrs = []
            continue
        if isinstance(t, Tok) and t.text == ";" or isinstance(t, Group) and t.delim == "{":
            attrs = []
        i += 1


def field_getters(crate, owner, tts, file, module):
    """Getters of a pyclass's ``#[pyo3(get)]`` fields (their type is the getter's return type)."""
    for part in split_generic(tts):
        attrs = [list(part[k + 1].tts) for k in range(len(part) - 1) if is_punct(part[k], "#") and isinstance(part[k + 1], Group)]
        gets = any(a and is_ident(a[0], "pyo3") and len(a) > 1 and any(is_ident(x, "get") for x in a[1].tts) for a in attrs)
        colon = next((n for n, x in enumerate(part) if is_punct(x, ":")), None)
        if not gets or colon is None:
            continue
        name = part[colon - 1].text
        crate.bindings.append(Binding(name, name, [], list(part[colon + 1:]), [], attrs, file, owner, "getter", module))


def read_fn(tts, i, attrs, crate, file, module, owner, in_pymethods):
    """Reads ``fn name<generics>(params) -> ret where ... { body }`` at ``tts[i]``;
    returns the index after it."""
    name = tts[i + 1].text
    j = i + 2
    while not (isinstance(tts[j], Group) and tts[j].delim == "("):
        j += 1
    params_group = tts[j]
    k = j + 1
    while k < len(tts) and not (isinstance(tts[k], Group) and tts[k].delim == "{") and not is_punct(tts[k], ";"):
        k += 1
    ret = list(tts[j + 1:k])
    if ret and is_punct(ret[0], "->"):
        ret = ret[1:]
    if "where" in [x.text for x in ret if isinstance(x, Tok)]:
        ret = ret[:[x.text if isinstance(x, Tok) else "" for x in ret].index("where")]
    body = list(tts[k].tts) if k < len(tts) and isinstance(tts[k], Group) else []
    is_py = in_pymethods or any(a and is_ident(a[0], "pyfunction") for a in attrs)
    add_binding(crate, name, params_group, ret, body, attrs, file, module, owner, is_py)
    return k + 1


def rust_params(params_group):
    """Every parameter of a fn (``self`` excepted) as Params."""
    params = []
    for part in split_generic(list(params_group.tts)):
        if not part:
            continue
        if any(is_ident(x, "self") for x in part[:3]) and not any(is_punct(x, ":") for x in part):
            continue  # &self, &mut self, self
        colon = next(n for n, x in enumerate(part) if is_punct(x, ":"))
        pname = "".join(x.text for x in part[:colon] if isinstance(x, Tok) and x.text not in ("mut",))
        params.append(Param(pname.removeprefix("r#"), part[colon + 1:]))
    return params


def add_binding(crate, name, params_group, ret, body, attrs, file, module, owner, is_py):
    params = rust_params(params_group)
    helper = Binding(name, name, params, ret, body, attrs, file, owner=owner, module=module)
    crate.fns.setdefault(name, []).append(helper)
    if not is_py:
        return
    # Python sees neither the GIL token nor the receiver (`slf`).
    params = [p for p in params if p.name not in ("slf", "self_") and not is_python_token(p.ty)]
    b = Binding(name, name, params, ret, body, attrs, file, owner=owner, module=module)
    kind = "method" if owner else "function"
    for k in ("getter", "setter", "new", "staticmethod", "classmethod", "classattr"):
        if b.attr(k) is not None:
            kind = k
    b.kind = kind
    explicit = None
    for key in ("pyfunction", "pyo3"):
        a = b.attr(key)
        if a:
            explicit = attr_value(a, "name") or explicit
    if kind in ("getter", "setter"):
        a = b.attr(kind)
        if a:
            explicit = text_of(a)
        elif explicit is None:
            explicit = re.sub(r"^(get|set)_", "", name.removeprefix("r#"))
    if kind == "new":
        explicit = "__new__"
    b.py_name = explicit or name.removeprefix("r#")
    crate.bindings.append(b)


def is_python_token(ty):
    return bool(ty) and is_ident(ty[0], "Python")


def pyo3_signature(b):
    """The tokens of ``#[pyo3(signature = (...))]``, or None."""
    for key in ("pyo3", "pyfunction"):
        a = b.attr(key)
        if a:
            for part in split(a):
                if len(part) >= 3 and is_ident(part[0], "signature"):
                    return list(part[2].tts)
    return None
