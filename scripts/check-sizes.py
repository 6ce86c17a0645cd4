#!/usr/bin/env python3
"""Checks the size rules of the tree: no source file over 700 lines and no
function over 120 lines outside tests and benchmarks, unless the file says
why near its top in one line that starts with "// size:".

    scripts/check-sizes.py            # every tracked .h/.cc; exit 1 on a breach
    scripts/check-sizes.py --list N   # the N longest functions, breach or not

Functions are found on clang-formatted text (.clang-format): a definition's
head ends with ") ... {" and its body ends at the first "}" line with the
head's indentation. Lambdas and local classes count toward the function
that holds them; a class body is not a function.
"""
import re
import subprocess
import sys

MAX_FILE_LINES = 700
MAX_FUNCTION_LINES = 120
WAIVER = re.compile(r"^// size: \S")
CONTROL = re.compile(r"^\s*(\}\s*)?(if|for|while|switch|catch|else|do|return|case|default)\b")
HEAD_END = re.compile(r"\)\s*(const)?\s*(&{1,2})?\s*(override|final)?\s*(noexcept)?\s*"
                      r"(->\s*[^{]+)?\s*\{\s*(//.*)?$")
TYPE_HEAD = re.compile(r"^\s*(template\s*<.*>\s*)?(class|struct|union|enum|namespace)\b")


def tracked_sources():
    out = subprocess.run(["git", "ls-files", "*.cc", "*.h"], capture_output=True, text=True,
                         check=True).stdout.split()
    return [p for p in out
            if not p.startswith(("tests/", "bench/")) and "_test." not in p]


def functions(lines):
    """Yields (name, first line number, length in lines) of each function."""
    i = 0
    n = len(lines)
    while i < n:
        line = lines[i]
        if HEAD_END.search(line) and not CONTROL.match(line) and not TYPE_HEAD.match(line) \
                and "=" not in line.split("(")[0] and "[" not in line.split("(")[0]:
            # The head may start on an earlier line (a long parameter list).
            start = i
            while start > 0:
                prev = lines[start - 1].rstrip()
                text = prev.strip()
                if not text or text.startswith(("//", "#")) or prev.endswith((";", "{", "}")) \
                        or (text.endswith(":") and not text.endswith("::")):
                    break
                start -= 1
            indent = len(lines[start]) - len(lines[start].lstrip())
            close = " " * indent + "}"
            j = i + 1
            while j < n and not (lines[j].startswith(close) and
                                 (len(lines[j]) == len(close) or lines[j][len(close)] in " ;")):
                j += 1
            name = re.sub(r"\s+", " ", " ".join(l.strip() for l in lines[start:i + 1]))
            name = name.split("(")[0].split()[-1] if "(" in name else name
            yield name, start + 1, j - start + 1
            i = j + 1
            continue
        i += 1


def main(argv):
    list_n = 0
    if len(argv) > 2 and argv[1] == "--list":
        list_n = int(argv[2])
    breaches = []
    all_functions = []
    for path in tracked_sources():
        with open(path, encoding="utf-8") as f:
            lines = f.read().split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        waived = any(WAIVER.match(l) for l in lines[:40])
        if len(lines) > MAX_FILE_LINES and not waived:
            breaches.append(f"{path}: {len(lines)} lines (limit {MAX_FILE_LINES})")
        for name, first, length in functions(lines):
            all_functions.append((length, f"{path}:{first}", name))
            if length > MAX_FUNCTION_LINES and not waived:
                breaches.append(f"{path}:{first}: {name} is {length} lines "
                                f"(limit {MAX_FUNCTION_LINES})")
    if list_n:
        for length, where, name in sorted(all_functions, reverse=True)[:list_n]:
            print(f"{length:5d} {where} {name}")
        return 0
    for b in breaches:
        print(b)
    if breaches:
        print(f"check-sizes: {len(breaches)} breach(es); split the file or function by job, or "
              "say why in one line starting with '// size:' near the file's top")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
