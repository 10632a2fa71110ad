"""Writes docs/coverage.md: how much of the API checklist the built ferrox has.

The checklist (../shared/API.md) has sections ``## <group>``, each followed by
a fenced block of names. A name is present when it resolves, attribute by
attribute, from one of the modules the group maps to (``array.astype`` is the
``astype`` attribute of ``ferrox.array``; ``cuda.is_available`` lives in the
``ferrox.cuda`` submodule). The last section, the Lucid kernels, is free text;
see ``lucid_names``.

Usage (from the repository root, after building the extension):
    PYTHONPATH=python .venv/bin/python scripts/coverage.py          # rewrite
    PYTHONPATH=python .venv/bin/python scripts/coverage.py --check  # verify
"""

import argparse
import importlib
import re
import sys
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
API = ROOT.parent / "shared" / "API.md"
OUTPUT = ROOT / "docs" / "coverage.md"

# The modules each checklist group's names are looked up in, first hit wins.
GROUPS = {
    "ops": ("ferrox",),
    "array": ("ferrox",),
    "transforms": ("ferrox",),
    "linalg": ("ferrox.linalg",),
    "fft": ("ferrox.fft",),
    "random": ("ferrox.random",),
    "fast": ("ferrox.fast",),
    "devices_and_streams": ("ferrox",),
    "memory_management": ("ferrox",),
    "export": ("ferrox",),
    "distributed": ("ferrox.distributed",),
    "tree_utils": ("ferrox.utils",),
    "io": ("ferrox",),
    "data types": ("ferrox",),
    "cuda": ("ferrox",),
    "nn/module": ("ferrox.nn",),
    "nn/layers": ("ferrox.nn",),
    "nn/functions": ("ferrox.nn",),
    "nn/losses": ("ferrox.nn.losses",),
    "nn/init": ("ferrox.nn.init",),
    "nn/distributed": ("ferrox.nn", "ferrox.nn.layers.distributed"),
    "optimizers/optimizer": ("ferrox.optimizers",),
    "optimizers/common_optimizers": ("ferrox.optimizers",),
    "nn (top level)": ("ferrox.nn",),
    # "optimizers.clip_grad_norm" is spelled from the package root.
    "optimizers/schedulers": ("ferrox.optimizers", "ferrox"),
}
LUCID = "Lucid kernels"
# The checklist says "in ferrox or ferrox.nn"; MLX keeps rope, the norms and
# attention in its fast module, and the losses in nn.losses.
LUCID_MODULES = ("ferrox", "ferrox.nn", "ferrox.nn.losses", "ferrox.fast")


def sections(text):
    """(heading, fenced block) for each ``## heading`` of the checklist."""
    return re.findall(r"^## (.+?)\s*$.*?^```\s*$\n(.*?)^```", text, re.M | re.S)


def plain_names(block):
    """Names of an ordinary block: separated by spaces, ';' or ','; a
    parenthesized remark (``(load reads .npy ...)``) is not a name."""
    return re.split(r"[\s;,]+", re.sub(r"\([^)]*\)", " ", block).strip())


def lucid_names(block):
    """(names, phrases) of the Lucid section's free text.

    Each line lists kernels as ``name (options) + backward``, separated by
    ';', ',', '/' or 'and'; a ``with ...`` qualifier ends an item.
    ``linalg extras: a, b`` names ``linalg.a``; ``name: variants`` names
    only ``name``. A word is a name when it contains
    '_' or stands alone in its item (``rotate``); items that are descriptions,
    such as ``adaptive pools`` or a line about ``fused ...`` variants of other
    kernels, are returned as phrases, which are not checked.
    """
    names, phrases = [], []
    for line in block.splitlines():
        # Options, "+ backward" and "with ..." qualifiers are not names.
        line = re.sub(r"\([^)]*\)|\+ backward| with [^;]*", " ", line).strip()
        if not line:
            continue
        if line.startswith("fused "):
            phrases.append(line)
            continue
        prefix = ""
        if m := re.match(r"(\w+) extras:(.*)", line):
            prefix, line = m[1] + ".", m[2]
        elif m := re.match(r"(\w+):", line):
            line = m[1]
        for item in re.split(r"[;,/]| and ", line):
            words = item.split()
            if words and words[0].isidentifier() and ("_" in words[0] or len(words) == 1):
                names.append(prefix + words[0])
            elif words:
                phrases.append(" ".join(words))
    return names, phrases


def importable(module_name):
    """Whether the module exists (importing it if need be)."""
    try:
        importlib.import_module(module_name)
    except ImportError:
        return False
    return True


def resolve(module_name, name, kernel=False):
    """Whether ``name`` (possibly dotted) resolves from the module; a missing
    attribute of a module may still be a submodule that is not imported yet.
    A ``kernel`` (Lucid's names) must be a function, not a module of that
    name (``nn.embedding`` is the layer module, not the embedding kernel)."""
    if not importable(module_name):
        return False
    obj = sys.modules[module_name]
    for part in name.split("."):
        if hasattr(obj, part):
            obj = getattr(obj, part)
            continue
        if not isinstance(obj, types.ModuleType) or not importable(f"{obj.__name__}.{part}"):
            return False
        obj = sys.modules[f"{obj.__name__}.{part}"]
    return not (kernel and isinstance(obj, types.ModuleType))


def rows():
    """(group, modules, names, missing names, unchecked phrases) per section."""
    out = []
    for heading, block in sections(API.read_text()):
        if heading.startswith("Lucid"):
            group, modules = LUCID, LUCID_MODULES
            names, phrases = lucid_names(block)
        elif heading in GROUPS:
            group, modules = heading, GROUPS[heading]
            names, phrases = plain_names(block), []
        else:
            sys.exit(f"coverage.py: no modules known for checklist group {heading!r}; add it to GROUPS")
        names = sorted(set(names))
        kernel = group == LUCID
        missing = [n for n in names if not any(resolve(m, n, kernel) for m in modules)]
        out.append((group, modules, names, missing, sorted(set(phrases))))
    return out


def percent(part, whole):
    return f"{100 * part / whole:.1f}%" if whole else "-"


def render(table):
    lines = [
        "# API coverage",
        "",
        "Generated by `scripts/coverage.py` from the checklist `../shared/API.md` and the",
        "built `ferrox` module; do not edit. Regenerate after a rebuild with",
        "`PYTHONPATH=python .venv/bin/python scripts/coverage.py` (`--check` verifies it).",
        "",
        "A name counts as present when the attribute exists; it says nothing about",
        "semantics. A name listed in two groups (e.g. `load`) counts in both.",
        "",
        "| group | looked up in | present | total | % |",
        "|---|---|---:|---:|---:|",
    ]
    present = total = 0
    for group, modules, names, missing, _ in table:
        have = len(names) - len(missing)
        present, total = present + have, total + len(names)
        where = ", ".join(f"`{m}`" + ("" if importable(m) else " (absent)") for m in modules)
        lines.append(f"| {group} | {where} | {have} | {len(names)} | {percent(have, len(names))} |")
    lines += [f"| **all** | | **{present}** | **{total}** | **{percent(present, total)}** |", ""]
    lines += ["## Missing", ""]
    for group, _, names, missing, phrases in table:
        lines += [f"### {group} ({len(missing)} of {len(names)} missing)", ""]
        lines += [" ".join(f"`{n}`" for n in missing) or "(none)", ""]
        if phrases:
            lines += ["Not checked (descriptions, not Python names): " + "; ".join(phrases), ""]
    return "\n".join(lines), present, total


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if docs/coverage.md is out of date")
    args = parser.parse_args()
    text, present, total = render(rows())
    if args.check:
        if not OUTPUT.exists() or OUTPUT.read_text() != text:
            sys.exit("docs/coverage.md is out of date; run scripts/coverage.py")
        return
    OUTPUT.write_text(text)
    print(f"wrote {OUTPUT.relative_to(ROOT)}: {present}/{total} names present ({percent(present, total)})")


if __name__ == "__main__":
    main()
