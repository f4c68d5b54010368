#!/usr/bin/env python3
"""Checks the library's layout (src/, without src/bin): modules import each other in one
direction only (no cycles), no file outside src/codec/ is over 600 lines, no function is over
80 lines. Prints the module order it found; exits 1 on a violation.

An import is any `crate::NAME` outside comments: a module's name, or a name lib.rs re-exports
from a module (`crate::Error` is the `error` module). Test modules (`#[cfg(test)] mod tests`)
are left out.
"""
import os
import re
import sys

SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")
MAX_FILE_LINES = 600
MAX_FN_LINES = 80


def library_files():
    for root, dirs, names in os.walk(SRC):
        dirs[:] = [d for d in dirs if os.path.join(root, d) != os.path.join(SRC, "bin")]
        for name in sorted(names):
            if name.endswith(".rs"):
                yield os.path.join(root, name)


def module_of(path):
    rel = os.path.relpath(path, SRC).split(os.sep)
    return "lib" if rel == ["lib.rs"] else rel[0].removesuffix(".rs")


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
    files = list(library_files())
    modules = sorted({module_of(f) for f in files} - {"lib"})
    lib_text = open(os.path.join(SRC, "lib.rs")).read()
    exported = reexports(code_lines(lib_text))
    edges = {m: set() for m in modules}
    problems = []

    for path in files:
        me = module_of(path)
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
        rel = os.path.relpath(path, SRC)
        lines = text.count("\n") + 1
        if lines > MAX_FILE_LINES and not rel.startswith("codec" + os.sep):
            problems.append(f"{rel}: {lines} lines (more than {MAX_FILE_LINES})")
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
    print(f"\nno import cycles; no file over {MAX_FILE_LINES} lines outside codec/; "
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
