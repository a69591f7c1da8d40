#!/usr/bin/env python3
"""Compare two Floe PLY frames particle by particle.

    scripts/compare_frames.py A.ply B.ply SPACING

Particles are matched by their `id` attribute when both frames have it
(write it with `attributes = { ..., "id" }`), else by index. Prints the RMS
and largest position difference in units of the particle spacing and the
relative L2 difference of the velocities. Used to compare the C and the
OpenCL path of a scene (docs/viscosity_tension.md, "C and OpenCL"). Plain
Python, no packages.
"""
import math
import struct
import sys

TYPES = {"float": "f", "float32": "f", "uint": "I", "uint32": "I", "int": "i", "int32": "i",
         "double": "d", "float64": "d", "uchar": "B", "uint8": "B"}


def read(path):
    with open(path, "rb") as f:
        if f.readline().strip() != b"ply":
            sys.exit(f"{path}: not a PLY file")
        props, n = [], 0
        while True:
            line = f.readline()
            if not line:
                sys.exit(f"{path}: header without end_header")
            w = line.decode("ascii", "replace").split()
            if w[:1] == ["format"] and w[1] != "binary_little_endian":
                sys.exit(f"{path}: only binary_little_endian PLY is read")
            if w[:2] == ["element", "vertex"]:
                n = int(w[2])
            elif w[:1] == ["property"]:
                if w[1] not in TYPES:
                    sys.exit(f"{path}: property type {w[1]} not supported")
                props.append((TYPES[w[1]], w[2]))
            elif w[:1] == ["end_header"]:
                break
        fmt = "<" + "".join(t for t, _ in props)
        size = struct.calcsize(fmt)
        raw = f.read(size * n)
        if len(raw) != size * n:
            sys.exit(f"{path}: {n} vertices announced, file too short")
    rows = [struct.unpack_from(fmt, raw, i * size) for i in range(n)]
    cols = {name: [r[j] for r in rows] for j, (_, name) in enumerate(props)}
    return cols, n


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    a, na = read(sys.argv[1])
    b, nb = read(sys.argv[2])
    d = float(sys.argv[3])
    if na != nb:
        sys.exit(f"particle counts differ: {na} and {nb}")
    by_id = "id" in a and "id" in b
    if by_id:
        for c in (a, b):
            order = sorted(range(na), key=lambda i: c["id"][i])
            for k in c:
                c[k] = [c[k][i] for i in order]
        if a["id"] != b["id"]:
            sys.exit("the two frames hold different particle ids")
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
