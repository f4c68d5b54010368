#!/usr/bin/env python3
"""Checks the project's Markdown front door, so that its links work on GitHub and on docs.rs.

- Every relative link in README.md, CHANGELOG.md, docs/*.md and examples/README.md names a file
  or folder of this checkout, and its #anchor (when given) a heading of that Markdown file.
- README.md has no relative links at all: it is the crate's docs on docs.rs too, where they do
  not resolve. It links with absolute URLs instead.
- Every absolute link to this repository (`repository` in Cargo.toml, then `/blob/main/` or
  `/tree/main/`), in those files and in the Rust sources, names a path of this checkout (and a
  heading, for a Markdown file with an #anchor).
- README.md is at most 200 lines.
- The metrics table in docs/operations.md names exactly the metrics of `METRICS` in
  src/metrics.rs, once each.
- The key table in docs/compatibility.md names exactly the key prefixes src/keys/ declares.
- Every code block of README.md and docs/*.md names its language (rustdoc compiles a bare one as
  Rust), and every docs page with a Rust block is compiled as a doc-test: src/lib.rs includes it
  (`#[doc = include_str!("../docs/PAGE.md")]`).

Prints one line per check and `N passed, N failed`; exits 1 when a check fails. Standard library
only.
"""
import glob
import os
import re
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
DEFAULT_REPOSITORY = "https://github.com/delayq/delayq"
README_MAX_LINES = 200
BRANCH = "main"

# `[text](target "title")` and `![alt](target)`; the target may be wrapped in <>.
INLINE_LINK = re.compile(r"\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
# `[label]: target` reference definitions.
REFERENCE_LINK = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+\"[^\"]*\")?\s*$")
# `<https://...>` autolinks.
AUTOLINK = re.compile(r"<(https?://[^>\s]+)>")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")
FENCE = re.compile(r"^\s{0,3}(```+|~~~+)")
HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")


class Checks:
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def report(self, ok, line, details=()):
        print(("ok    " if ok else "FAIL  ") + line)
        for detail in details:
            print("        " + detail)
        if ok:
            self.passed += 1
        else:
            self.failed += 1


def rel(path):
    return os.path.relpath(path, ROOT)


def repository_url():
    """`repository` of the root package in Cargo.toml, else the project's constant."""
    try:
        with open(os.path.join(ROOT, "Cargo.toml"), encoding="utf-8") as f:
            text = f.read()
    except OSError:
        return DEFAULT_REPOSITORY
    try:
        import tomllib

        url = tomllib.loads(text).get("package", {}).get("repository")
    except (ImportError, ValueError):
        package = re.search(r"^\[package\]\s*$(.*?)(?=^\[|\Z)", text, re.M | re.S)
        found = package and re.search(r'^repository\s*=\s*"([^"]+)"', package.group(1), re.M)
        url = found.group(1) if found else None
    if isinstance(url, dict):  # `repository.workspace = true`
        workspace = re.search(r'^repository\s*=\s*"([^"]+)"', text, re.M)
        url = workspace.group(1) if workspace else None
    return (url or DEFAULT_REPOSITORY).rstrip("/").removesuffix(".git")


def walk(text):
    """(line number, line, fence) for every line: `fence` is the opening fence of the code block
    a line opens, "" for a line inside a block or closing one, None for prose."""
    fence = None
    for number, line in enumerate(text.splitlines(), 1):
        opening = FENCE.match(line)
        if fence:
            if opening and opening.group(1)[0] == fence[0] and len(opening.group(1)) >= len(fence):
                fence = None
            yield number, line, ""
        elif opening:
            fence = opening.group(1)
            yield number, line, fence
        else:
            yield number, line, None


def prose_lines(text):
    """(line number, line) of the text outside fenced code blocks, inline code blanked."""
    for number, line, fence in walk(text):
        if fence is None:
            yield number, re.sub(r"`[^`]*`", lambda m: " " * len(m.group(0)), line)


def markdown_links(text):
    """(line number, target) of every link and image in a Markdown text."""
    for number, line in prose_lines(text):
        for pattern in (INLINE_LINK, AUTOLINK):
            for match in pattern.finditer(line):
                yield number, match.group(1)
        match = REFERENCE_LINK.match(line)
        if match:
            yield number, match.group(1)


def slug(heading):
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's text only
    text = re.sub(r"<[^>]+>", "", text).replace("`", "")
    text = re.sub(r"[^\w\- ]", "", text.strip().lower())
    return text.replace(" ", "-")


_anchors = {}


def anchors(path):
    """Every heading anchor of a Markdown file (duplicates numbered as GitHub numbers them)."""
    if path not in _anchors:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        found, seen = set(), {}
        fence = None
        for line in text.splitlines():
            opening = FENCE.match(line)
            if fence:
                if opening and opening.group(1)[0] == fence[0]:
                    fence = None
                continue
            if opening:
                fence = opening.group(1)
                continue
            heading = HEADING.match(line)
            if heading:
                base = slug(heading.group(2))
                count = seen.get(base, 0)
                seen[base] = count + 1
                found.add(base if count == 0 else f"{base}-{count}")
        _anchors[path] = found
    return _anchors[path]


def resolve(path, anchor):
    """None when `path` (absolute, in the checkout) and `anchor` exist, else why not."""
    path = os.path.normpath(path)
    if path != ROOT and not path.startswith(ROOT + os.sep):
        return "points outside the checkout"
    if not os.path.exists(path):
        return "no such file or folder"
    if anchor:
        if not path.endswith(".md") or os.path.isdir(path):
            return None  # anchors into source files (#L10) are GitHub's, not checked here
        if anchor not in anchors(path):
            return f"no heading #{anchor} in {rel(path)}"
    return None


def split_target(target):
    target = target.split("?", 1)[0]
    path, _, anchor = target.partition("#")
    return path, anchor


def check_relative(checks, path, links):
    problems, count = [], 0
    readme = rel(path) == "README.md"
    for number, target in links:
        if SCHEME.match(target) or target.startswith("//"):
            continue
        count += 1
        link_path, anchor = split_target(target)
        if readme and link_path:
            problems.append(f"line {number}: {target}: relative, and README.md is also the docs.rs "
                            "page, where it does not resolve; use an absolute URL")
            continue
        full = os.path.join(os.path.dirname(path), link_path) if link_path else path
        why = resolve(full, anchor)
        if why:
            problems.append(f"line {number}: {target}: {why}")
    checks.report(not problems, f"{rel(path)}: {count} relative links resolve", problems)


def repository_problems(links, repository):
    """How many of `links` point into this repository's tree, and what is wrong with them."""
    problems, count = [], 0
    prefix = repository + "/"
    for number, target in links:
        if not target.startswith(prefix):
            continue
        kind, _, rest = target[len(prefix):].partition("/")
        if kind not in ("blob", "tree"):
            continue  # the repository's issues, releases, ...
        count += 1
        branch, _, rest = rest.partition("/")
        if branch != BRANCH:
            problems.append(f"line {number}: {target}: names branch {branch!r}, not {BRANCH!r}")
            continue
        link_path, anchor = split_target(rest)
        why = resolve(os.path.join(ROOT, link_path), anchor)
        if why:
            problems.append(f"line {number}: {target}: {why}")
    return count, problems


def check_repository(checks, path, links, repository):
    count, problems = repository_problems(links, repository)
    checks.report(not problems, f"{rel(path)}: {count} links to {repository} resolve", problems)


def rust_links(text):
    """(line number, URL) of every URL in a Rust source (docs and comments)."""
    for number, line in enumerate(text.splitlines(), 1):
        for match in re.finditer(r"https?://[^\s)>\]`\"']+", line):
            yield number, match.group(0).rstrip(".,;:")


def markdown_files():
    files = ["README.md", "CHANGELOG.md", "examples/README.md"]
    files += sorted(rel(p) for p in glob.glob(os.path.join(ROOT, "docs", "*.md")))
    return files


def fences(text):
    """(line number, info string) of every fenced code block's opening line."""
    for number, line, fence in walk(text):
        if fence:
            yield number, line.strip()[len(fence):].strip()


def first_column(page, header):
    """The first cells of the first table of `page` whose first header cell is `header`, with
    inline code marked by NULs (None when there is no such table)."""
    rows, in_table = [], False
    for _, line in prose_lines(page.replace("`", "\x00")):
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if "|" in line else []
        if not in_table:
            in_table = bool(cells) and cells[0].lower() == header.lower()
            continue
        if not cells:
            break
        if not set(cells[0]) <= set("-: "):
            rows.append(cells[0])
    return rows if in_table else None


def check_keys(checks):
    try:
        keys_dir = os.path.join(ROOT, "src", "keys")
        source = ""
        for name in sorted(os.listdir(keys_dir)):
            if name.endswith(".rs"):
                with open(os.path.join(keys_dir, name), encoding="utf-8") as f:
                    source += f.read()
        with open(os.path.join(ROOT, "docs", "compatibility.md"), encoding="utf-8") as f:
            page = f.read()
    except OSError as err:
        checks.report(False, f"key table: cannot read {err.filename}")
        return
    declared = set(re.findall(r'const \w+_PREFIX: &str = "([^"]+)";', source))
    rows = first_column(page, "Key")
    problems = []
    if not declared:
        problems.append("no `const ..._PREFIX: &str` in src/keys/")
    if rows is None:
        problems.append("docs/compatibility.md has no table whose first column is `Key`")
        rows = []
    documented = set()
    for cell in rows:
        for key in re.findall(r"\x00([^\x00]+)\x00", cell):
            if ":" in key:
                documented.add(key.split(":", 1)[0])
    missing = sorted(declared - documented)
    extra = sorted(documented - declared)
    if missing:
        problems.append("declared in src/keys/, not in the table: " + ", ".join(missing))
    if extra:
        problems.append("in the table, not declared in src/keys/: " + ", ".join(extra))
    checks.report(not problems, f"key table in docs/compatibility.md: the {len(declared)} key "
                  "prefixes of src/keys/", problems)


def check_code_blocks(checks):
    try:
        with open(os.path.join(ROOT, "src", "lib.rs"), encoding="utf-8") as f:
            lib = f.read()
    except OSError:
        lib = ""
    included = set(re.findall(r'include_str!\(\s*"\.\./(docs/[^"]+\.md)"\s*\)', lib))
    pages = ["README.md"] + sorted(rel(p) for p in glob.glob(os.path.join(ROOT, "docs", "*.md")))
    bare, untested, count = [], [], 0
    for page in pages:
        path = os.path.join(ROOT, page)
        if not os.path.exists(path):
            continue
        with open(path, encoding="utf-8") as f:
            blocks = list(fences(f.read()))
        count += len(blocks)
        bare += [f"{page} line {number}: a code block without a language" for number, info in blocks
                 if not info]
        rust = [n for n, info in blocks if info.split(",")[0].strip() == "rust"]
        if rust and page.startswith("docs/") and page not in included:
            untested.append(f"{page}: Rust blocks (line {rust[0]}, ...) but src/lib.rs does not "
                            f'include it (#[cfg(doctest)] #[doc = include_str!("../{page}")])')
    checks.report(not bare and not untested,
                  f"code blocks: {count} in README.md and docs/, each names its language, "
                  "Rust ones compile as doc-tests", bare + untested)


def metric_names(source):
    """The names of `pub const METRICS` in the text of src/metrics.rs (None without it)."""
    const = re.search(r"pub const METRICS: &\[Metric\] = &\[(.*?)\n\];", source, re.S)
    if not const:
        return None
    code = "\n".join(re.sub(r"//.*$", "", line) for line in const.group(1).splitlines())
    return re.findall(r'Metric::new\(\s*"([^"]+)"', code)


def check_metrics(checks):
    try:
        with open(os.path.join(ROOT, "src", "metrics.rs"), encoding="utf-8") as f:
            source = f.read()
        with open(os.path.join(ROOT, "docs", "operations.md"), encoding="utf-8") as f:
            page = f.read()
    except OSError as err:
        checks.report(False, f"metrics table: cannot read {err.filename}")
        return
    names = metric_names(source)
    if names is None:
        checks.report(False, "metrics table: no `pub const METRICS: &[Metric]` in src/metrics.rs")
        return
    rows = first_column(page, "Metric")
    table = [n for cell in (rows or []) for n in re.findall(r"\x00(delayq_\w+)\x00", cell)]
    problems = []
    if rows is None:
        problems.append("docs/operations.md has no table whose first column is `Metric`")
    duplicated = sorted({n for n in table if table.count(n) > 1})
    missing = [n for n in names if n not in table]
    extra = [n for n in table if n not in names]
    if duplicated:
        problems.append("more than once in the table: " + ", ".join(duplicated))
    if missing:
        problems.append("in METRICS, not in the table: " + ", ".join(missing))
    if extra:
        problems.append("in the table, not in METRICS: " + ", ".join(extra))
    checks.report(
        not problems,
        f"metrics table in docs/operations.md: its {len(table)} names are the {len(names)} of "
        "METRICS in src/metrics.rs",
        problems,
    )


def main():
    checks = Checks()
    repository = repository_url()

    readme = os.path.join(ROOT, "README.md")
    if os.path.exists(readme):
        with open(readme, encoding="utf-8") as f:
            lines = len(f.read().splitlines())
        checks.report(lines <= README_MAX_LINES,
                      f"README.md: {lines} lines (at most {README_MAX_LINES})")

    for name in markdown_files():
        path = os.path.join(ROOT, name)
        if not os.path.exists(path):
            checks.report(False, f"{name}: missing")
            continue
        with open(path, encoding="utf-8") as f:
            links = list(markdown_links(f.read()))
        check_relative(checks, path, links)
        check_repository(checks, path, links, repository)

    sources = []
    for folder in ("src", "crates", "examples"):
        sources += glob.glob(os.path.join(ROOT, folder, "**", "*.rs"), recursive=True)
    problems, count = [], 0
    for path in sorted(sources):
        with open(path, encoding="utf-8") as f:
            found, wrong = repository_problems(list(rust_links(f.read())), repository)
        count += found
        problems += [f"{rel(path)} {problem}" for problem in wrong]
    checks.report(not problems, f"Rust sources: {count} links to {repository} resolve", problems)

    check_metrics(checks)
    check_keys(checks)
    check_code_blocks(checks)

    print(f"{checks.passed} passed, {checks.failed} failed")
    return 1 if checks.failed else 0


if __name__ == "__main__":
    sys.exit(main())
