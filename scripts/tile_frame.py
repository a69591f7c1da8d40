#!/usr/bin/env python3
"""Copies of a particle frame side by side: a large frame for timing the surfacer.

    scripts/tile_frame.py IN.ply OUT.ply COPIES

IN.ply is a Floe particle frame (binary little-endian PLY of float
properties, x y z first); OUT.ply holds COPIES copies of its particles on a
square grid in x and z, 0.2 m apart, so no two copies touch. 17 copies of
the 59,319-particle dam-break frame give 1,008,423 particles
(docs/surface.md, "1M particles"). Needs numpy."""
import re
import sys

import numpy as np


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    src, dst, copies = sys.argv[1], sys.argv[2], int(sys.argv[3])
    raw = open(src, "rb").read()
    end = raw.find(b"end_header\n")
    if end < 0:
        sys.exit(f"{src}: no end_header")
    end += len(b"end_header\n")
    head = raw[:end].decode("ascii")
    if "binary_little_endian" not in head:
        sys.exit(f"{src}: not a binary little-endian PLY")
    n = int(re.search(r"element vertex (\d+)", head).group(1))
    props = re.findall(r"property float (\w+)", head)
    a = np.frombuffer(raw[end:end + 4 * n * len(props)], dtype="<f4").reshape(n, len(props))
    ix, iz = props.index("x"), props.index("z")
    step_x = float(a[:, ix].max() - a[:, ix].min()) + 0.2
    step_z = float(a[:, iz].max() - a[:, iz].min()) + 0.2
    side = int(np.ceil(np.sqrt(copies)))
    out = []
    for c in range(copies):
        b = a.copy()
        b[:, ix] += (c % side) * step_x
        b[:, iz] += (c // side) * step_z
        out.append(b)
    o = np.concatenate(out)
    head = head.replace(f"element vertex {n}", f"element vertex {len(o)}")
    with open(dst, "wb") as f:
        f.write(head.encode("ascii") + o.astype("<f4").tobytes())
    print(f"{dst}: {len(o)} particles")


if __name__ == "__main__":
    main()
