#!/usr/bin/env python3
"""Blocks of six or more lines that repeat between two modules' sources.

    scripts/check_repeats.py [--exact | --names] [--all] [--min N] [--list]

Reads modules/<m>/*.c|*.h and kernels/<m>/*.cl|*.h (one module = one folder
name under modules/ or kernels/), and the core's sources and headers
(core/, kernels/core/: the core and the kit, one owner). Each line is
normalised: comments dropped, blanks squeezed, empty lines and lines of only
braces, parentheses, `;`, `break;`, `return;`, `#include`, `#endif` or
`#else` dropped, and string and number literals replaced by placeholders
(so two parameter tables or two error paths that differ only in their text
still count). A repeated block is a run of N (default 6) or more such lines
that stands in a module and in another module or the core (counted once per
pair of places however long the run). Prints every pair and exits 1 when there is one.

  --exact  compare the lines as written (literals kept)
  --names  replace identifiers too (the shape of the code; informational:
           it matches any two tables of the same form)
  --all    count repeats repo-wide instead: between any two places of core/,
           modules/, kernels/, tests/ and viewer/ (the same file included);
           prints the count only (exit 0), --list prints the pairs too
"""
import os
import re
import sys

MIN = 6
argv = sys.argv[1:]
if "--min" in argv:
    MIN = int(argv[argv.index("--min") + 1])
ALL = "--all" in argv
LIST = "--list" in argv or not ALL
NAMES = "--names" in argv
LOOSE = "--exact" not in argv

TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|[A-Za-z_]\w*|\d[\w.]*(?:[eE][-+]?\d+)?f?|\S')
KEYWORDS = set("""if else for while do return break continue switch case default goto sizeof struct union enum
typedef static const volatile inline restrict extern void char short int long float double signed unsigned
_Bool _Pragma __kernel __global __local __constant kernel global local constant private""".split())


def shape(s):
    """the line with names, numbers and strings replaced by placeholders"""
    out = []
    for t in TOKEN.findall(s):
        if t[0] in "\"'":
            out.append("S")
        elif t[0].isdigit():
            out.append("0")
        elif t[0].isalpha() or t[0] == "_":
            out.append(t if t in KEYWORDS or not NAMES else "n")
        else:
            out.append(t)
    return " ".join(out)


TRIVIAL = re.compile(r"^[{}()\[\];,]*$|^#\s*(endif|else|include)\b.*$|^(break|continue|return);$|^\}\s*while\s*\(0\);?$")


def strip_comments(text):
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * text.count("\n", i, j))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def lines_of(path):
    """[(line number, normalised text)] of the lines that count."""
    with open(path, encoding="utf-8", errors="replace") as fh:
        text = strip_comments(fh.read())
    res = []
    for no, line in enumerate(text.split("\n"), 1):
        s = " ".join(line.split()).rstrip("\\").strip()
        if s and not TRIVIAL.match(s):
            res.append((no, shape(s) if LOOSE else s))
    return res


def files():
    """[(path, owner)]: owner is the module's name, or "core" """
    out = []
    tops = ("core", "modules", "kernels", "tests", "viewer") if ALL else ("core", "modules", "kernels")
    for top in tops:
        for d, dirs, names in os.walk(top):
            dirs.sort()
            parts = d.split(os.sep)
            if top == "modules" or (top == "kernels" and len(parts) > 1 and parts[1] != "core"):
                if len(parts) < 2:
                    continue
                owner = parts[1]
            else:
                owner = "core"
            for nm in sorted(names):
                if nm.endswith((".c", ".h", ".cl")):
                    path = os.path.join(d, nm)
                    out.append((path, path if ALL else owner))
    return out


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    os.chdir(root)
    fl = files()
    data = {p: lines_of(p) for p, _ in fl}
    owner = dict(fl)
    index = {}
    for p, _ in fl:
        L = data[p]
        for k in range(len(L) - MIN + 1):
            index.setdefault(tuple(s for _, s in L[k:k + MIN]), []).append((p, k))
    # pairs of places (file a, window ka) ~ (file b, window kb), merged along diagonals
    hits = {}
    for places in index.values():
        if len(places) < 2:
            continue
        for u in range(len(places)):
            for v in range(u + 1, len(places)):
                (a, ka), (b, kb) = places[u], places[v]
                if not ALL and owner[a] == owner[b]:
                    continue
                if a == b and abs(ka - kb) < MIN:
                    continue
                if (a, b) > (b, a) or (a == b and ka > kb):
                    (a, ka), (b, kb) = (b, kb), (a, ka)
                hits.setdefault((a, b, ka - kb), []).append(ka)
    blocks = {}
    for (a, b, diag), ks in hits.items():
        ks.sort()
        start = prev = ks[0]
        runs = []
        for k in ks[1:]:
            if k != prev + 1:
                runs.append((start, prev))
                start = k
            prev = k
        runs.append((start, prev))
        for s, e in runs:
            la, lb = data[a], data[b]
            blk = (la[s][0], la[e + MIN - 1][0], lb[s - diag][0], lb[e - diag + MIN - 1][0])
            # count each pair of files once per block (longest kept)
            blocks.setdefault((a, b), []).append(blk)
    pairs = sorted((a, b, blk) for (a, b), bl in blocks.items() for blk in bl)
    if LIST:
        for a, b, (a0, a1, b0, b1) in pairs:
            print(f"{a}:{a0}-{a1}  ~  {b}:{b0}-{b1}")
    what = "repo-wide" if ALL else "between modules"
    print(f"{len(pairs)} repeated blocks of {MIN}+ lines {what}")
    return 1 if pairs and not ALL else 0


sys.exit(main())
