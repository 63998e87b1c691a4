#!/usr/bin/env python3
"""The man pages say what --help says: every flag of every (sub)command's --help appears in its
rendered man page, and every subcommand --help lists has a page.

    man_flags_test.py SWITCHBACK MAN_DIR

MAN_DIR is the build's tools/man: PAGE.8 files and pages.txt ("PAGE|WORDS" a line, WORDS the
subcommand words after `switchback`). Exit 77 (ctest: skipped) without man-db.
"""
import os
import re
import shutil
import subprocess
import sys

# A flag in an option line's name column: --long-name, or a one-letter -x.
FLAG = re.compile(r"(?<![\w-])(--[A-Za-z0-9][\w-]*|-[A-Za-z](?![\w-]))")


def help_text(switchback, words):
    r = subprocess.run([switchback, *words, "--help"], capture_output=True, text=True, check=False)
    if r.returncode != 0:
        raise SystemExit(f"FAIL: switchback {' '.join(words)} --help exited {r.returncode}: {r.stderr}")
    return r.stdout


def sections(text):
    """CLI11's help: 'Options:', 'Subcommands:', ... headers at column 0, entries indented."""
    current, out = None, {}
    for line in text.splitlines():
        m = re.match(r"^([A-Z][A-Za-z ]*):\s*$", line)
        if m:
            current = m.group(1).lower()
            out[current] = []
        elif current and line.strip():
            out[current].append(line)
    return out


def flags(text):
    found = []
    for line in sections(text).get("options", []):
        # The name column: up to the first run of two spaces (the description follows).
        m = re.match(r"^ {1,4}(-\S.*?)(?: {2,}|$)", line)
        if m:
            found += FLAG.findall(m.group(1))
    return found


def subcommands(text):
    names = []
    for line in sections(text).get("subcommands", []):
        m = re.match(r"^ {1,4}([a-z][\w-]*)(?: {2,}|$)", line)
        if m:
            names.append(m.group(1))
    return names


def render(page_path):
    env = dict(os.environ, MANWIDTH="250", LC_ALL="C", MAN_KEEP_FORMATTING="")
    r = subprocess.run(["man", "-l", "-P", "cat", page_path], capture_output=True, text=True, env=env, check=False)
    if r.returncode != 0:
        raise SystemExit(f"FAIL: man -l {page_path}: {r.stderr}")
    # Overstrike bold/underline, should the formatter keep it.
    return re.sub(r".\x08", "", r.stdout)


def main():
    switchback, man_dir = sys.argv[1], sys.argv[2]
    if shutil.which("man") is None:
        print("SKIP: man (man-db) is not installed")
        return 77
    pages = {}
    with open(os.path.join(man_dir, "pages.txt")) as f:
        for line in f:
            if line.strip():
                page, words = line.rstrip("\n").split("|", 1)
                pages[tuple(words.split())] = page
    errors = []
    checked = 0
    todo = [()]
    seen = set()
    while todo:
        words = todo.pop(0)
        if words in seen:
            continue
        seen.add(words)
        cmd = " ".join(("switchback",) + words)
        text = help_text(switchback, list(words))
        todo += [words + (s,) for s in subcommands(text)]
        page = pages.get(words)
        if page is None:
            errors.append(f"`{cmd}` has no man page (add it to SB_MAN_PAGES in tools/man/CMakeLists.txt)")
            continue
        rendered = render(os.path.join(man_dir, page + ".8"))
        fl = flags(text)
        if not fl:
            errors.append(f"`{cmd} --help`: no flags found (has the help format changed?)")
        for flag in fl:
            if not re.search(r"(?<![\w-])" + re.escape(flag) + r"(?![\w-])", rendered):
                errors.append(f"{page}(8) lacks {flag} of `{cmd} --help`")
        for s in subcommands(text):
            if not re.search(r"(?<![\w-])" + re.escape(s) + r"(?![\w-])", rendered):
                errors.append(f"{page}(8) does not list the subcommand {s}")
        print(f"{page}(8): {len(fl)} flags of `{cmd} --help` present")
        checked += 1
    stale = set(pages) - seen
    for words in sorted(stale):
        errors.append(f"{pages[words]}(8) describes `switchback {' '.join(words)}`, which --help does not list")
    for e in errors:
        print("FAIL:", e)
    if not errors:
        print(f"PASS: {checked} pages")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
