#!/usr/bin/env python3
"""Checks the layout of every crate of the workspace (`src/` of delayq, delayq-codec,
delayq-cli and delayq-gateway): modules import each other in one direction only (no cycles), and so do the files
inside each module (no file-level loop, at any depth; the compat peer's crate is checked for
loops too); no file is over its crate's line limit, no function over 80 lines, no Lua script
over 400 lines; and a root file's written `# Layout` list names every module, each after the
modules it uses. Prints each crate's module order and, for each public type, the modules that
hold its inherent methods; exits 1 on a violation.

An import is any `crate::NAME` outside comments: a module's name, or a name lib.rs re-exports
from a module (`crate::Error` is the `error` module). Inside a module, a file imports a sibling
by `super::NAME` (or `crate::MODULE::NAME`), NAME being the sibling or a name the module's
`mod.rs` re-exports from it; `mod.rs`, the module's face, declares and re-exports its files and
is left out of the loops. Test modules (`#[cfg(test)] mod tests`) are left out.
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
    ("crates/delayq-gateway", "lib.rs", 600),
]
# Crates checked for import loops only: (crate folder, its root file).
LOOPS_ONLY = [("compat-tests/rust-peer", "main.rs")]
MAX_LUA_LINES = 400


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
    for folder, root_file in LOOPS_ONLY:
        print(f"== {folder} (import loops only)")
        failed |= check_loops_only(os.path.join(ROOT, folder, "src"), root_file)
    print("== lua")
    failed |= report("lua", lua_sizes(os.path.join(ROOT, "lua")),
                     f"no Lua file over {MAX_LUA_LINES} lines")
    return failed


def report(what, problems, fine):
    if problems:
        print(f"{what} problems:")
        for p in problems:
            print("  " + p)
        return 1
    print(fine)
    return 0


def lua_sizes(folder):
    """Lua files over MAX_LUA_LINES lines: a file per concern stays readable."""
    out = []
    for root, _dirs, names in os.walk(folder):
        for name in sorted(names):
            if name.endswith(".lua"):
                path = os.path.join(root, name)
                lines = open(path).read().count("\n")
                if lines > MAX_LUA_LINES:
                    rel = os.path.relpath(path, ROOT)
                    out.append(f"{rel}: {lines} lines (more than {MAX_LUA_LINES}); "
                               "split it into helpers under lua/lib/")
        _dirs.sort()
    return out


def check_loops_only(src, root_file):
    files = list(crate_files(src))
    modules = sorted({module_of(src, root_file, f) for f in files} - {"lib"})
    edges = module_edges(src, root_file, files, modules)
    _order, cycles = topological(edges)
    problems = ["modules that import each other: " + " <-> ".join(sorted(c)) for c in cycles]
    problems += file_loops(src)
    return report("layout", problems, "no import loops")


def check_crate(src, root_file, max_file_lines):
    files = list(crate_files(src))
    modules = sorted({module_of(src, root_file, f) for f in files} - {"lib"})
    lib_text = open(os.path.join(src, root_file)).read()
    edges = module_edges(src, root_file, files, modules)
    problems = []

    for path in files:
        text = open(path).read()
        code = code_lines(text)
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
    problems += file_loops(src)
    problems += written_layout(root_file, lib_text, edges)
    print_method_homes(src, files)
    if problems:
        print("\nlayout problems:")
        for p in problems:
            print("  " + p)
        return 1
    print(f"\nno import cycles, no file-level loops; no file over {max_file_lines} lines; "
          f"no function over {MAX_FN_LINES} lines")
    return 0


def module_edges(src, root_file, files, modules):
    """Which top-level modules each module imports."""
    lib_text = open(os.path.join(src, root_file)).read()
    exported = reexports(code_lines(lib_text))
    edges = {m: set() for m in modules}
    for path in files:
        me = module_of(src, root_file, path)
        if me == "lib":
            continue
        for name in path_heads(code_lines(open(path).read()), r"\$?crate::"):
            target = name if name in edges else exported.get(name)
            if target and target != me and target in edges:
                edges[me].add(target)
    return edges


def path_heads(code, prefix):
    """The first segment of every path after `prefix` (a regex), groups `{a::X, b}` included."""
    heads = []
    for m in re.finditer(prefix, code):
        rest = code[m.end():]
        if rest.startswith("{"):
            depth, end = 0, 0
            for i, c in enumerate(rest):
                depth += {"{": 1, "}": -1}.get(c, 0)
                if depth == 0:
                    end = i
                    break
            group, top, depth = rest[1:end], [], 0
            part = ""
            for c in group:
                depth += {"{": 1, "}": -1}.get(c, 0)
                if c == "," and depth == 0:
                    top.append(part)
                    part = ""
                else:
                    part += c
            top.append(part)
            heads += [re.match(r"\s*(\w*)", t).group(1) for t in top if t.strip()]
        else:
            w = re.match(r"\w+", rest)
            if w:
                heads.append(w.group(0))
    return heads


def file_loops(src):
    """File-level import loops inside each module folder (one with a `mod.rs`), at any depth: a
    file uses a sibling (a file or a folder of the same folder) by `super::NAME`,
    `crate::PATH::NAME`, or a name the folder's `mod.rs` re-exports from it."""
    problems = []
    for root, dirs, names in os.walk(src):
        dirs.sort()
        if "mod.rs" not in names:
            continue
        siblings = {n.removesuffix(".rs") for n in names if n.endswith(".rs")} | set(dirs)
        siblings.discard("mod")
        face = code_lines(open(os.path.join(root, "mod.rs")).read())
        # Names mod.rs brings in from a sibling (`pub use config::{GroupConfig, ..}`).
        via_face = {}
        for m in re.finditer(r"\buse\s+(?:self::)?(\w+)::", face):
            if m.group(1) in siblings:
                for name in names_used(face[m.end():]):
                    via_face.setdefault(name, m.group(1))
        module_path = os.path.relpath(root, src).replace(os.sep, "::")
        edges = {n: set() for n in siblings}
        for name in sorted(siblings):
            path = os.path.join(root, name + ".rs")
            if not os.path.exists(path):
                path = os.path.join(root, name, "mod.rs")
                if not os.path.exists(path):
                    continue
                # A sub-folder's face speaks of its parent as `super::super`.
                prefixes = [r"\bsuper::super::", r"\bcrate::" + re.escape(module_path) + "::"]
            else:
                prefixes = [r"(?<!::)\bsuper::", r"\bcrate::" + re.escape(module_path) + "::"]
            code = code_lines(open(path).read())
            for prefix in prefixes:
                for head in path_heads(code, prefix):
                    target = head if head in siblings else via_face.get(head)
                    if target and target != name:
                        edges[name].add(target)
        _order, cycles = topological(edges)
        rel = os.path.relpath(root, src)
        for cycle in cycles:
            problems.append(f"files of {rel}/ that import each other: "
                            + " <-> ".join(sorted(cycle)))
    return problems


def names_used(rest):
    """The names a `use` brings in, from the text after `PATH::` to its `;`."""
    text = rest.split(";", 1)[0]
    return [n for n in re.findall(r"\b([A-Za-z_]\w*)\b", text) if n not in ("as", "self")]


def written_layout(root_file, lib_text, edges):
    """The root file's `# Layout` list against the modules found: every module listed, none that
    is not, and each after the modules it uses. A bullet names its module by the first of its
    backticked words that is one (`[`time`]`, `(`options.rs`)`, `` `redis/` ``)."""
    lines = lib_text.splitlines()
    try:
        start = next(i for i, l in enumerate(lines) if l.strip() == "//! # Layout")
    except StopIteration:
        return []
    listed = []
    for line in lines[start + 1:]:
        if not line.startswith("//!"):
            break
        body = line[3:].strip()
        if body.startswith("# "):
            break
        if not body.startswith("- "):
            continue
        words = [w.removesuffix(".rs").removesuffix("/") for w in re.findall(r"`([^`]+)`", body)]
        module = next((w for w in words if w in edges), None)
        if module is None:
            listed.append((None, body[:60]))
        else:
            listed.append((module, body[:60]))
    problems = []
    seen = set()
    for module, text in listed:
        if module is None:
            problems.append(f"{root_file}'s # Layout: a line naming no module: {text!r}")
            continue
        later = sorted(edges[module] - seen)
        if later:
            problems.append(f"{root_file}'s # Layout: {module} is listed before "
                            f"{', '.join(later)}, which it uses")
        seen.add(module)
    for module in sorted(set(edges) - seen):
        problems.append(f"{root_file}'s # Layout misses the module {module}")
    return problems


def print_method_homes(src, files):
    """For each public type, the modules holding its inherent methods (`impl TYPE {`)."""
    public = set()
    homes = {}
    for path in files:
        code = code_lines(open(path).read())
        public |= set(re.findall(r"^\s*pub\s+(?:struct|enum|trait)\s+(\w+)", code, re.M))
        for m in re.finditer(r"^\s*impl(?:<[^>{]*>)?\s+(\w+)(?:<[^>{]*>)?\s*(?:where[^{]*)?\{",
                             code, re.M):
            rel = os.path.relpath(path, src)
            homes.setdefault(m.group(1), set()).add(rel)
    rows = sorted((t, sorted(h)) for t, h in homes.items() if t in public)
    if not rows:
        return
    print("inherent methods of the public types, by file:")
    for name, where in rows:
        print(f"  {name:<22} {len(where)} file{'s' if len(where) > 1 else ''}: {', '.join(where)}")


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
            # Braces in string and char literals ('{', "{x}") are not blocks.
            bare = re.sub(r'"(?:\\.|[^"\\])*"', '""', lines[j])
            bare = re.sub(r"'(?:\\.|[^'\\])'", "''", bare)
            depth += bare.count("{") - bare.count("}")
            if "{" in bare:
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
