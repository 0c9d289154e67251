#!/usr/bin/python3
"""Exports the line patterns of the shipped rules for grep and rg, so the benchmark compares
the same patterns. RE2 syntax is close to rg's (Unicode is turned off and non-ASCII characters are written as
their UTF-8 bytes, as trainwatch matches bytes); for `grep -E` (POSIX ERE with GNU
extensions) the constructs our packs use are rewritten: (?:...) groups, \\d, and (?i:...).

usage: export_patterns.py RULES_DIR OUT_DIR   (writes patterns.rg and patterns.ere)
"""
import glob
import os
import re
import sys

import yaml


def to_ere(pattern):
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("(?i:", i):
            depth, j = 1, i + 4
            while depth:
                depth += {"(": 1, ")": -1}.get(pattern[j], 0) if pattern[j - 1] != "\\" else 0
                j += 1
            inner = to_ere(pattern[i + 4:j - 1])
            out.append("(" + re.sub(r"[A-Za-z]", lambda m: f"[{m[0].lower()}{m[0].upper()}]", inner) + ")")
            i = j
        elif pattern.startswith("(?:", i):
            out.append("(")
            i += 3
        elif pattern.startswith("\\d", i):
            out.append("[0-9]")
            i += 2
        elif pattern[i] == "\\" and i + 1 < len(pattern):
            out.append(pattern[i:i + 2])
            i += 2
        else:
            out.append(pattern[i])
            i += 1
    return "".join(out)


def to_bytes(pattern):
    return "".join(c if c.isascii() else "".join(f"\\x{b:02X}" for b in c.encode())
                   for c in pattern)


def main():
    rules_dir, out_dir = sys.argv[1], sys.argv[2]
    patterns = []
    for path in sorted(glob.glob(os.path.join(rules_dir, "*.yaml"))):
        for rule in yaml.safe_load(open(path, encoding="utf-8"))["rules"]:
            if "pattern" in rule:
                patterns.append(rule["pattern"])
            elif "threshold" in rule:
                patterns.append(rule["threshold"]["pattern"])
    # rg: Unicode off, as in trainwatch (patterns match bytes), with non-ASCII characters
    # spelled as their UTF-8 bytes. With Unicode on, \b and \w make rg leave its DFA on every
    # non-ASCII byte (the tqdm bars' blocks) and it slows down a thousandfold.
    with open(os.path.join(out_dir, "patterns.rg"), "w", encoding="utf-8") as f:
        f.write("\n".join(f"(?-u:{to_bytes(p)})" for p in patterns) + "\n")
    with open(os.path.join(out_dir, "patterns.ere"), "w", encoding="utf-8") as f:
        f.write("\n".join(to_ere(p) for p in patterns) + "\n")
    print(len(patterns))


if __name__ == "__main__":
    main()
