#!/usr/bin/env python3
"""Compare two Floe PLY frames particle by particle.

    scripts/compare_frames.py A.ply B.ply SPACING

Particles are matched by their `id` attribute when both frames have it
(write it with `attributes = { ..., "id" }`), else by index. Prints the RMS
and largest position difference in units of the particle spacing and the
relative L2 difference of the velocities. A malformed frame or a non-finite
position or velocity is an error (a message, exit status 2). Used to compare the C and the
OpenCL path of a scene (docs/viscosity_tension.md, "C and OpenCL"). Plain
Python, no packages.
"""
import math
import struct
import sys

TYPES = {"float": "f", "float32": "f", "uint": "I", "uint32": "I", "int": "i", "int32": "i",
         "double": "d", "float64": "d", "uchar": "B", "uint8": "B"}


def fail(msg):
    """A clear message on stderr and exit status 2 (never a traceback)."""
    sys.stderr.write(f"compare_frames: {msg}\n")
    sys.exit(2)


def header(f, path):
    """Vertex count and (struct code, name) of each vertex property."""
    if f.readline().strip() != b"ply":
        fail(f"{path}: not a PLY file (no 'ply' line)")
    props, n, fmt_seen, in_vertex, vertex_seen = [], None, False, False, False
    for lineno in range(2, 10000):
        line = f.readline()
        if not line:
            fail(f"{path}: header without end_header")
        w = line.decode("ascii", "replace").split()
        bad = f"{path}:{lineno}: malformed header line '{' '.join(w)}'"
        if not w or w[0] in ("comment", "obj_info"):
            continue
        if w[0] == "format":
            if len(w) != 3 or w[1] != "binary_little_endian":
                fail(f"{path}:{lineno}: only 'format binary_little_endian 1.0' is read")
            fmt_seen = True
        elif w[0] == "element":
            if len(w) != 3 or not w[2].isdigit():
                fail(bad)
            if props and not vertex_seen:
                fail(f"{path}:{lineno}: an element before 'vertex' is not read")
            in_vertex = w[1] == "vertex"
            if in_vertex:
                vertex_seen, n = True, int(w[2])
        elif w[0] == "property":
            if len(w) != 3:
                fail(bad + " (list properties are not read)")
            if w[1] not in TYPES:
                fail(f"{path}:{lineno}: property type '{w[1]}' not supported")
            if in_vertex:
                if any(name == w[2] for _, name in props):
                    fail(f"{path}:{lineno}: property '{w[2]}' declared twice")
                props.append((TYPES[w[1]], w[2]))
        elif w[0] == "end_header":
            break
        else:
            fail(bad)
    else:
        fail(f"{path}: header too long")
    if not fmt_seen or n is None:
        fail(f"{path}: no format line or no 'element vertex N'")
    for k in "xyz":
        if not any(name == k for _, name in props):
            fail(f"{path}: no vertex property '{k}'")
    return n, props


def read(path):
    try:
        with open(path, "rb") as f:
            n, props = header(f, path)
            fmt = "<" + "".join(t for t, _ in props)
            size = struct.calcsize(fmt)
            raw = f.read(size * n)
    except OSError as e:
        fail(f"{path}: {e.strerror}")
    if len(raw) != size * n:
        fail(f"{path}: {n} vertices announced, file too short")
    rows = [struct.unpack_from(fmt, raw, i * size) for i in range(n)]
    cols = {name: [r[j] for r in rows] for j, (_, name) in enumerate(props)}
    for k in ("x", "y", "z", "v_x", "v_y", "v_z"):
        for i, v in enumerate(cols.get(k, ())):
            if not math.isfinite(v):
                fail(f"{path}: particle {i} has a non-finite {k} ({v})")
    return cols, n


def main():
    if len(sys.argv) != 4:
        sys.stderr.write(__doc__)
        sys.exit(2)
    try:
        d = float(sys.argv[3])
    except ValueError:
        d = 0.0
    if not (math.isfinite(d) and d > 0):
        fail(f"SPACING must be a positive number, got '{sys.argv[3]}'")
    a, na = read(sys.argv[1])
    b, nb = read(sys.argv[2])
    if na != nb:
        fail(f"particle counts differ: {na} and {nb}")
    by_id = "id" in a and "id" in b
    if by_id:
        for c in (a, b):
            order = sorted(range(na), key=lambda i: c["id"][i])
            for k in c:
                c[k] = [c[k][i] for i in order]
        if a["id"] != b["id"]:
            fail("the two frames hold different particle ids")
    dx = [math.sqrt(sum((a[k][i] - b[k][i]) ** 2 for k in "xyz")) for i in range(na)]
    rms = math.sqrt(sum(e * e for e in dx) / na) if na else 0.0
    out = f"{na} particles{' (by id)' if by_id else ' (by index)'}: x rms diff {rms / d:.3g} d, max {max(dx, default=0) / d:.3g} d"
    vk = [k for k in ("v_x", "v_y", "v_z") if k in a and k in b]
    if vk:
        dv = sum((a[k][i] - b[k][i]) ** 2 for k in vk for i in range(na))
        vn = sum(a[k][i] ** 2 for k in vk for i in range(na))
        out += f", v rel L2 {math.sqrt(dv / vn) if vn else math.sqrt(dv):.3g}"
    print(out)


if __name__ == "__main__":
    main()
