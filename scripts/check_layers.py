#!/usr/bin/env python3
"""No include or call circle among the core's files (docs/architecture.md).

    scripts/check_layers.py [core/src] [--levels]

Two graphs over the files under core/src (subfolders included):
  include: file -> the file each `#include "..."` line names (resolved
           beside the including file, then in core/src);
  call:    a.c -> b.c when a.c names a function that b.c defines without
           `static` (a call, or its address taken for a table), itself or
           through a macro or static inline function of a header it includes.
Either graph holding a circle is an error: the script prints each circle
and exits 1. With --levels it prints the call graph's layers, lowest first
(a file calls only files of lower layers).

The scan reads the sources as text: comments and strings are dropped, a
definition is a line starting a non-static function at column 0. Calls
through a function pointer (the backend table, a stage's run function) are
not calls in this sense: that is what a seam is for.
"""
import os
import re
import sys

root = "core/src"
args = [a for a in sys.argv[1:] if not a.startswith("--")]
if args:
    root = args[0]
show_levels = "--levels" in sys.argv

files = []
for d, _, names in os.walk(root):
    for n in sorted(names):
        if n.endswith((".c", ".h")):
            files.append(os.path.relpath(os.path.join(d, n), root))
files.sort()


def strip(text):
    """C text without comments, string and character literals."""
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
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(c + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


src, raw = {}, {}
for f in files:
    with open(os.path.join(root, f), encoding="utf-8", errors="replace") as fp:
        raw[f] = fp.read()
    src[f] = strip(raw[f])

# include graph
inc = {f: set() for f in files}
for f in files:
    for m in re.finditer(r'^\s*#\s*include\s+"([^"]+)"', raw[f], re.M):
        name = m.group(1)
        here = os.path.normpath(os.path.join(os.path.dirname(f), name))
        for cand in (here, os.path.normpath(name)):
            if cand in inc:
                inc[f].add(cand)
                break

# definitions: a non-static function starting at column 0, its body next
defn = {}
defre = re.compile(r"^(?!static\b)(?!typedef\b)(?!extern\b)[A-Za-z_][\w \t\*]*?\b([A-Za-z_]\w*)\s*\(([^;{}]*)\)\s*\{",
                   re.M)
for f in files:
    if not f.endswith(".c"):
        continue
    for m in defre.finditer(src[f]):
        name = m.group(1)
        if name in ("if", "for", "while", "switch", "return", "sizeof"):
            continue
        defn.setdefault(name, f)

ident = re.compile(r"\b[A-Za-z_]\w*\b")

# what a header calls on behalf of its includers: the names in the body of
# each of its macros and static inline functions, counted where one is used
def header_code(text):
    out = {}
    for m in re.finditer(r"^\s*#\s*define\s+(\w+)((?:[^\n]*\\\n)*[^\n]*)", text, re.M):
        out[m.group(1)] = m.group(2)
    for m in re.finditer(r"^static inline[^;{(]*?\b(\w+)\s*\([^;{]*\{", text, re.M):
        depth, i = 1, m.end()
        while depth and i < len(text):
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
        out[m.group(1)] = text[m.end():i]
    return out


def included(f, seen=None):
    seen = set() if seen is None else seen
    for h in inc[f]:
        if h not in seen:
            seen.add(h)
            included(h, seen)
    return seen


hcode = {f: header_code(src[f]) for f in files if f.endswith(".h")}
call = {f: set() for f in files if f.endswith(".c")}
for f in call:
    inline = {}
    for h in included(f):
        inline.update(hcode[h])
    names, todo = set(), set(ident.findall(src[f]))
    while todo:
        name = todo.pop()
        if name in names:
            continue
        names.add(name)
        if name in inline:
            todo |= set(ident.findall(inline[name]))
    for name in names:
        g = defn.get(name)
        if g and g != f:
            call[f].add(g)


def circles(graph):
    """Strongly connected components of more than one node (Tarjan)."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1 or v in graph[v]:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


bad = 0
for what, g in (("include", inc), ("call", call)):
    for comp in circles(g):
        bad = 1
        print(f"{what} circle among {len(comp)} files: " + " ".join(comp))
        for v in comp:
            print(f"    {v} -> " + " ".join(sorted(w for w in g[v] if w in comp)))

if show_levels and not bad:
    level = {}

    def lv(v):
        if v not in level:
            level[v] = 1 + max((lv(w) for w in call[v]), default=-1)
        return level[v]

    for v in call:
        lv(v)
    for k in range(max(level.values()) + 1):
        print(f"layer {k}: " + " ".join(sorted(v for v in level if level[v] == k)))

if not bad:
    print(f"check_layers: {len(files)} files under {root}, {sum(len(v) for v in call.values())} call edges, "
          f"{sum(len(v) for v in inc.values())} include edges, no circle")
sys.exit(bad)
