#!/usr/bin/env python3
"""Checks the tree's documentation: every relative link and #anchor in every tracked Markdown
file resolves (file exists; anchor is a heading of the target, GitHub's slug rules), the README
is at most 200 lines, and no tracked text file names a session ("session N") or a history issue
number in a heading. Prints one line per problem and exits 1 if there is any.

Usage: tools/check_docs.py [SOURCE_DIR]
"""
import os
import re
import subprocess
import sys

root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))
files = subprocess.run(["git", "-C", root, "ls-files", "-z"], capture_output=True, check=True).stdout.decode().split("\0")
files = [f for f in files if f]
problems = []


def slug(heading):
    """GitHub's anchor for a heading: lower case, punctuation other than - and _ dropped, spaces to -."""
    h = re.sub(r"`|\*\*|\*|__", "", heading.strip().lower())
    h = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", h)
    h = re.sub(r"[^\w\- ]", "", h)
    return h.replace(" ", "-")


anchors = {}


def anchors_of(path):
    if path not in anchors:
        seen, out = {}, set()
        in_code = False
        for line in open(path, encoding="utf-8", errors="replace"):
            if line.startswith("```"):
                in_code = not in_code
            if in_code:
                continue
            m = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
            if m:
                s = slug(m.group(1))
                n = seen.get(s, 0)
                seen[s] = n + 1
                out.add(s if n == 0 else f"{s}-{n}")
        anchors[path] = out
    return anchors[path]


link = re.compile(r"\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
for f in files:
    if not f.endswith(".md"):
        continue
    path = os.path.join(root, f)
    in_code = False
    for no, line in enumerate(open(path, encoding="utf-8", errors="replace"), 1):
        if line.startswith("```"):
            in_code = not in_code
        if in_code:
            continue
        if re.match(r"#{1,6}\s", line) and re.search(r"\(issue \d+", line, re.I):
            problems.append(f"{f}:{no}: a heading names an issue number")
        for target in link.findall(line):
            if re.match(r"[a-z]+:", target) or target.startswith("//"):
                continue  # external: http(s), mailto, man:
            file_part, _, anchor = target.partition("#")
            dest = path if not file_part else os.path.normpath(os.path.join(os.path.dirname(path), file_part))
            if not os.path.exists(dest):
                problems.append(f"{f}:{no}: link to a missing file: {target}")
                continue
            if anchor and dest.endswith(".md") and anchor not in anchors_of(dest):
                problems.append(f"{f}:{no}: link to a missing anchor: {target}")

readme = os.path.join(root, "README.md")
n = sum(1 for _ in open(readme, encoding="utf-8"))
if n > 200:
    problems.append(f"README.md: {n} lines (at most 200)")

session = re.compile(r"session[s]? [0-9]", re.I)
for f in files:
    path = os.path.join(root, f)
    try:
        with open(path, "rb") as fh:
            data = fh.read(1 << 20)
    except OSError:
        continue
    if b"\0" in data[:8192]:
        continue  # binary
    for no, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
        if session.search(line):
            problems.append(f"{f}:{no}: names a session: {line.strip()[:100]}")

for p in problems:
    print(p)
print(f"check_docs: {len([f for f in files if f.endswith('.md')])} Markdown files, {len(problems)} problems")
sys.exit(1 if problems else 0)
