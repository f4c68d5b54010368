#!/usr/bin/env python3
"""Checks the layout of every crate of the workspace (`src/` of delayq, delayq-codec and
delayq-cli): modules import each other in one direction only (no cycles), no file is over its
crate's line limit, no function over 80 lines. Prints each crate's module order; exits 1 on a
violation.

An import is any `crate::NAME` outside comments: a module's name, or a name lib.rs re-exports
from a module (`crate::Error` is the `error` module). Test modules (`#[cfg(test)] mod tests`)
are left out.
"""
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
MAX_FN_LINES = 80
# (crate folder, its root file, most lines a file may have). The codecs follow Java's formats
# one type per file, and their serde readers and writers are long tables of cases.
CRATES = [
    (".", "lib.rs", 600),
    ("crates/delayq-codec", "lib.rs", 800),
    ("crates/delayq-cli", "main.rs", 600),
]


def crate_files(src):
    for root, _dirs, names in os.walk(src):
        for name in sorted(names):
            if name.endswith(".rs"):
                yield os.path.join(root, name)


def module_of(src, root_file, path):
    rel = os.path.relpath(path, src).split(os.sep)
    return "lib" if rel == [root_file] else rel[0].removesuffix(".rs")


def code_lines(text):
    """The file's code: comments removed, and nothing from its test module (`mod tests`, the
    last item of a file by this crate's habit) on."""
    text = "\n".join(re.sub(r"//.*$", "", line) for line in text.splitlines())
    return re.split(r"#\[cfg\(test\)\]\s*mod tests\s*\{", text)[0]


def reexports(lib_text):
    """Names lib.rs re-exports, mapped to the module they come from."""
    names = {}
    for m in re.finditer(r"pub use (\w+)::([^;]+);", lib_text):
        module, rest = m.group(1), m.group(2)
        for name in re.findall(r"\b([A-Za-z_]\w*)\b", rest):
            names.setdefault(name, module)
    return names


def main():
    failed = 0
    for folder, root_file, max_file_lines in CRATES:
        print(f"== {folder}")
        failed |= check_crate(os.path.join(ROOT, folder, "src"), root_file, max_file_lines)
    return failed


def check_crate(src, root_file, max_file_lines):
    files = list(crate_files(src))
    modules = sorted({module_of(src, root_file, f) for f in files} - {"lib"})
    lib_text = open(os.path.join(src, root_file)).read()
    exported = reexports(code_lines(lib_text))
    edges = {m: set() for m in modules}
    problems = []

    for path in files:
        me = module_of(src, root_file, path)
        text = open(path).read()
        code = code_lines(text)
        if me != "lib":
            refs = re.findall(r"\$?crate::(\{[^}]*\}|\w+)", code)
            for ref in refs:
                names = re.findall(r"\b(\w+)\b", ref) if ref.startswith("{") else [ref]
                # In a group only the first segment of each path matters.
                if ref.startswith("{"):
                    names = [seg.strip().split("::")[0] for seg in ref[1:-1].split(",") if seg.strip()]
                for name in names:
                    target = name if name in edges else exported.get(name)
                    if target and target != me and target in edges:
                        edges[me].add(target)
        rel = os.path.relpath(path, src)
        lines = text.count("\n") + 1
        if lines > max_file_lines:
            problems.append(f"{rel}: {lines} lines (more than {max_file_lines})")
        problems += long_functions(rel, code)

    order, cycles = topological(edges)
    print("modules, each using only modules before it:")
    for m in order:
        uses = ", ".join(sorted(edges[m])) or "-"
        print(f"  {m:<10} uses {uses}")
    for cycle in cycles:
        problems.append("modules that import each other: " + " <-> ".join(sorted(cycle)))
    if problems:
        print("\nlayout problems:")
        for p in problems:
            print("  " + p)
        return 1
    print(f"\nno import cycles; no file over {max_file_lines} lines; "
          f"no function over {MAX_FN_LINES} lines")
    return 0


def long_functions(rel, code):
    """Functions whose body spans more than MAX_FN_LINES lines."""
    out = []
    lines = code.splitlines()
    i = 0
    while i < len(lines):
        m = re.match(r"\s*(pub(\([\w:]+\))?\s+)?(const\s+)?(async\s+)?(unsafe\s+)?fn\s+(\w+)", lines[i])
        if not m:
            i += 1
            continue
        name, start, depth, opened = m.group(6), i, 0, False
        j = i
        while j < len(lines):
            depth += lines[j].count("{") - lines[j].count("}")
            if "{" in lines[j]:
                opened = True
            if ";" in lines[j] and not opened:
                break  # a declaration without a body
            if opened and depth <= 0:
                break
            j += 1
        length = j - start + 1
        if opened and length > MAX_FN_LINES:
            out.append(f"{rel}: fn {name} is {length} lines (more than {MAX_FN_LINES})")
        i = j + 1 if opened else i + 1
    return out


def topological(edges):
    """Modules in an order where each uses only earlier ones, and the cycles that prevent it."""
    index, low, stack, on, sccs, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            scc = []
            while True:
                w = stack.pop()
                on.discard(w)
                scc.append(w)
                if w == v:
                    break
            sccs.append(scc)

    for v in sorted(edges):
        if v not in index:
            visit(v)
    # Tarjan emits components dependencies-first.
    order = [m for scc in sccs for m in sorted(scc)]
    return order, [scc for scc in sccs if len(scc) > 1]


if __name__ == "__main__":
    sys.exit(main())
