#!/usr/bin/env python3
"""Checks what the workspace would publish: each published crate's `cargo package --list` holds
what the crate needs and no tests, benches, scripts or fixtures; the workspace's rust-version is
the newest that a locked dependency asks for (an older one would be a promise the lockfile
breaks) and no newer than the toolchain building it. Prints a line a check and
`N passed, N failed`; exits 1 on a failure.
"""
import json
import os
import re
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
PUBLISHED = {
    "delayq": ["src/lib.rs", "lua/transfer.lua", "README.md", "LICENSE-MIT", "LICENSE-APACHE"],
    "delayq-codec": ["src/lib.rs", "README.md"],
    "delayq-cli": ["src/main.rs", "src/ui/index.html", "README.md"],
}
FORBIDDEN = re.compile(r"^(tests|benches|scripts|compat-tests|crates|examples|docs|\.ci)/|fixtures")


def version(text):
    return tuple(int(x) for x in re.findall(r"\d+", text)[:3])


def main():
    passed, failed = 0, 0

    def check(ok, what):
        nonlocal passed, failed
        print(("ok    " if ok else "FAIL  ") + what)
        if ok:
            passed += 1
        else:
            failed += 1

    for crate, needed in PUBLISHED.items():
        listing = subprocess.run(
            ["cargo", "package", "--list", "--allow-dirty", "-p", crate],
            cwd=ROOT, capture_output=True, text=True,
        )
        if listing.returncode != 0:
            check(False, f"{crate}: cargo package --list failed: {listing.stderr.strip()}")
            continue
        files = listing.stdout.split()
        stray = [f for f in files if FORBIDDEN.search(f)]
        check(not stray, f"{crate}: {len(files)} files, none of them tests, benches, scripts "
                         f"or fixtures{': ' + ', '.join(stray[:5]) if stray else ''}")
        missing = [f for f in needed if f not in files]
        check(not missing, f"{crate}: ships {', '.join(needed)}"
                           f"{' (missing ' + ', '.join(missing) + ')' if missing else ''}")

    meta = json.loads(subprocess.run(
        ["cargo", "metadata", "--format-version", "1", "--locked"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout)
    members = set(meta["workspace_members"])
    ours = {p["rust_version"] for p in meta["packages"]
            if p["id"] in members and p["name"] in PUBLISHED}
    check(len(ours) == 1, f"one rust-version for the published crates: {sorted(ours)}")
    ours = version(ours.pop()) if ours else (0,)
    deps = [(version(p["rust_version"]), p["name"]) for p in meta["packages"]
            if p["id"] not in members and p.get("rust_version")]
    newest, who = max(deps)
    check(ours == newest, f"rust-version {'.'.join(map(str, ours))} is the newest a locked "
                          f"dependency needs ({'.'.join(map(str, newest))}, {who})")
    rustc = version(subprocess.run(["rustc", "--version"], capture_output=True, text=True,
                                   check=True).stdout.split()[1])
    check(ours <= rustc, f"the toolchain here ({'.'.join(map(str, rustc))}) is not older")

    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
