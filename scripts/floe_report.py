#!/usr/bin/env python3
"""The report of `floe compare` and `floe validate` (docs/compare.md).

    floe_report.py compare DIR     DIR/variants.csv lists the runs (written by floe compare)
    floe_report.py validate DIR    DIR/cases.csv lists the checks (written by floe validate)

compare: for every variant, the numbers of its last run record (run.yaml or
run.N.yaml with the largest N) go into summary.csv (one line a variant),
frames.csv (one line a frame, the record's values unchanged), stages.csv
(milliseconds per stage) and, with the variant's name in front, its probe
tables; plots (PNG, matplotlib) and report.html show them. validate: the
cases' table and their plots. Without matplotlib the tables and the page are
written and the page says that plots need it (python3-matplotlib).
"""
import csv
import html
import math
import os
import re
import shutil
import sys

import yaml

try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    HAVE_MPL = True
except ImportError:  # tables and page only
    HAVE_MPL = False


def last_record(folder):
    """The last run record of a run folder: run.yaml, run.2.yaml, ..."""
    best, best_n = None, -1
    for name in os.listdir(folder):
        m = re.fullmatch(r"run(?:\.(\d+))?\.yaml", name)
        if m:
            n = int(m.group(1) or 1)
            if n > best_n:
                best, best_n = name, n
    if best is None:
        return None, None
    with open(os.path.join(folder, best)) as f:
        return best, yaml.safe_load(f)


def variant_numbers(rec):
    """summary.csv's numbers from one run record (docs/compare.md defines each)."""
    frames = rec.get("frames") or []
    out = {"status": rec.get("status", "?"), "frames": len(frames)}
    if not frames:
        return out
    fps = float(rec.get("fps", 30))
    steps = sum(int(f["steps"]) for f in frames)
    wall = sum(float(f["wall_s"]) for f in frames)
    sim_time = float(frames[-1]["time"]) - (float(frames[0]["time"]) - 1.0 / fps)
    psteps = sum(int(f["steps"]) * int(f["particles"]) for f in frames)
    e0 = float(frames[0]["kinetic_energy"]) + float(frames[0]["potential_energy"])
    e1 = float(frames[-1]["kinetic_energy"]) + float(frames[-1]["potential_energy"])
    it_sum, it_steps = 0.0, 0
    for f in frames:
        for name, st in (f.get("stats") or {}).items():
            if name.endswith(".iterations") and "divergence" not in name:
                it_sum += float(st["mean"]) * int(f["steps"])
                it_steps += int(f["steps"])
    out.update({
        "steps": steps,
        "sim_time_s": sim_time,
        "wall_s": wall,
        "wall_per_sim_s": wall / sim_time if sim_time > 0 else float("nan"),
        "particle_steps_per_s": psteps / wall if wall > 0 else float("nan"),
        "iterations_per_step": it_sum / it_steps if it_steps else float("nan"),
        "density_err_avg": sum(float(f["density_error_avg"]) for f in frames) / len(frames),
        "density_err_max": max(float(f["density_error_max"]) for f in frames),
        "energy_first_J": e0,
        "energy_last_J": e1,
        "energy_drift": (e1 - e0) / abs(e0) if e0 else float("nan"),
    })
    return out


SUMMARY_COLS = ["variant", "status", "frames", "steps", "sim_time_s", "wall_s", "wall_per_sim_s",
                "particle_steps_per_s", "iterations_per_step", "density_err_avg", "density_err_max",
                "energy_first_J", "energy_last_J", "energy_drift"]
FRAME_COLS = ["frame", "time", "steps", "dt_min", "dt_max", "particles", "max_speed", "density_error_avg",
              "density_error_max", "kinetic_energy", "potential_energy", "wall_s"]


def fmt(v):
    if isinstance(v, float):
        return repr(v)
    return str(v)


def write_csv(path, cols, rows):
    with open(path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(cols)
        for r in rows:
            w.writerow([fmt(r.get(c, "")) for c in cols])


def read_csv(path):
    with open(path) as f:
        rows = [r for r in csv.reader(f) if r and not r[0].startswith("#")]
    return rows[0], rows[1:]


def num(s):
    try:
        return float(s)
    except ValueError:
        return float("nan")


def interp(xs, ys, x):
    """ys at x, linear in the table (xs increasing); None outside it"""
    for k in range(1, len(xs)):
        if xs[k - 1] <= x <= xs[k] and xs[k] > xs[k - 1]:
            return ys[k - 1] + (x - xs[k - 1]) / (xs[k] - xs[k - 1]) * (ys[k] - ys[k - 1])
    return None


def reference_errors(out, probes):
    """Each probe column against the probe's reference data, at the
    reference's x inside the probe's time range: relative errors."""
    rows = []
    for pname, pr in probes.items():
        if not pr["ref"] or not os.path.exists(pr["ref"]):
            continue
        _, rr = read_csv(pr["ref"])
        ref = [(num(r[0]), num(r[1])) for r in rr]
        for n, dst in pr["tables"]:
            cols, trows = read_csv(os.path.join(out, dst))
            xs = [num(r[0]) for r in trows]
            for k in range(1, len(cols)):
                if cols[k].startswith("ksum"):
                    continue
                ys = [num(r[k]) for r in trows]
                errs = [(v - y) / y for x, y in ref if y != 0 for v in [interp(xs, ys, x)] if v is not None]
                if errs:
                    rows.append({"probe": pname, "variant": n, "column": cols[k], "points": len(errs),
                                 "worst_error": max(errs, key=abs), "mean_error": sum(errs) / len(errs)})
    return rows


def plot(name, draw, out, images):
    if not HAVE_MPL:
        return
    fig, ax = plt.subplots(figsize=(7, 4.2))
    draw(ax)
    fig.tight_layout()
    fig.savefig(os.path.join(out, name), dpi=100)
    plt.close(fig)
    images.append(name)


def table_html(cols, rows, fmt_cell=None):
    h = ["<table><tr>" + "".join("<th>%s</th>" % html.escape(c) for c in cols) + "</tr>"]
    for r in rows:
        cells = []
        for c in cols:
            v = r.get(c, "")
            if isinstance(v, float):
                v = "%.4g" % v
            cells.append("<td>%s</td>" % html.escape(str(v)))
        h.append("<tr>" + "".join(cells) + "</tr>")
    h.append("</table>")
    return "\n".join(h)


PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>%s</title>
<style>body{font-family:sans-serif;max-width:1100px;margin:2em auto}table{border-collapse:collapse;margin:1em 0}
td,th{border:1px solid #bbb;padding:3px 8px;text-align:right}th{background:#eee}img{max-width:100%%}
.fail{color:#b00}.pass{color:#070}</style></head><body>
%s
</body></html>
"""


def compare(out):
    _, variants = read_csv(os.path.join(out, "variants.csv"))
    summary, frames_rows, stage_rows, probes = [], [], [], {}
    per_variant = {}
    for name, folder, params, scene, status in variants:
        path = os.path.join(out, folder)
        rec_name, rec = last_record(path) if os.path.isdir(path) else (None, None)
        row = {"variant": name, "status": status}
        if rec:
            row.update(variant_numbers(rec))
            frs = rec.get("frames") or []
            per_variant[name] = frs
            for f in frs:
                r = {"variant": name}
                r.update({c: f.get(c, "") for c in FRAME_COLS})
                frames_rows.append(r)
            steps = sum(int(f["steps"]) for f in frs) or 1
            totals = {}
            for f in frs:
                for st, ms in (f.get("stage_ms") or {}).items():
                    totals[st] = totals.get(st, 0.0) + float(ms)
            for st, ms in totals.items():
                stage_rows.append({"variant": name, "stage": st, "ms_total": ms, "ms_per_step": ms / steps})
        summary.append(row)
        index = os.path.join(path, "probes.csv")
        if os.path.exists(index):
            _, plist = read_csv(index)
            for pname, kind, pfile, ref in plist:
                src = os.path.join(path, pfile)
                if not os.path.exists(src):
                    continue
                dst = "%s.%s" % (name, pfile)
                shutil.copyfile(src, os.path.join(out, dst))
                if ref and not os.path.isabs(ref):
                    ref = os.path.normpath(os.path.join(os.path.dirname(scene), ref))
                probes.setdefault(pname, {"ref": ref, "tables": []})["tables"].append((name, dst))
    write_csv(os.path.join(out, "summary.csv"), SUMMARY_COLS, summary)
    write_csv(os.path.join(out, "frames.csv"), ["variant"] + FRAME_COLS, frames_rows)
    write_csv(os.path.join(out, "stages.csv"), ["variant", "stage", "ms_total", "ms_per_step"], stage_rows)
    ref_cols = ["probe", "variant", "column", "points", "worst_error", "mean_error"]
    ref_rows = reference_errors(out, probes)
    if ref_rows:
        write_csv(os.path.join(out, "reference_errors.csv"), ref_cols, ref_rows)

    images = []
    names = [r["variant"] for r in summary if r["variant"] in per_variant]

    def series(key):
        return lambda ax: ([ax.plot([float(f["time"]) for f in per_variant[n]],
                                    [float(f[key]) * (100 if "density" in key else 1) for f in per_variant[n]],
                                    label=n) for n in names],
                           ax.set_xlabel("time (s)"), ax.set_ylabel(key + (" (%)" if "density" in key else "")),
                           ax.legend(), ax.grid(alpha=0.3))

    plot("density_error.png", series("density_error_avg"), out, images)
    plot("kinetic_energy.png", series("kinetic_energy"), out, images)

    def energy(ax):
        for n in names:
            fr = per_variant[n]
            ax.plot([float(f["time"]) for f in fr],
                    [float(f["kinetic_energy"]) + float(f["potential_energy"]) for f in fr], label=n)
        ax.set_xlabel("time (s)"), ax.set_ylabel("kinetic + potential energy (J)"), ax.legend(), ax.grid(alpha=0.3)

    plot("energy.png", energy, out, images)

    def cost(ax):
        vals = [next(r for r in summary if r["variant"] == n).get("wall_per_sim_s", 0) for n in names]
        ax.bar(names, vals)
        ax.set_ylabel("wall seconds per simulated second")

    plot("cost.png", cost, out, images)

    def stages(ax):
        bottom = [0.0] * len(names)
        for st in sorted({r["stage"] for r in stage_rows}):
            vals = [sum(r["ms_per_step"] for r in stage_rows if r["variant"] == n and r["stage"] == st)
                    for n in names]
            ax.bar(names, vals, bottom=bottom, label=st)
            bottom = [b + v for b, v in zip(bottom, vals)]
        ax.set_ylabel("ms per step"), ax.legend(fontsize=7)

    plot("stages.png", stages, out, images)

    for pname, pr in probes.items():
        def draw(ax, pr=pr, pname=pname):
            for n, dst in pr["tables"]:
                cols, rows = read_csv(os.path.join(out, dst))
                for k in range(1, len(cols)):
                    if cols[k].startswith("ksum"):
                        continue
                    ax.plot([num(r[0]) for r in rows], [num(r[k]) for r in rows], label="%s %s" % (n, cols[k]))
            if pr["ref"] and os.path.exists(pr["ref"]):
                rc, rr = read_csv(pr["ref"])
                ax.plot([num(r[0]) for r in rr], [num(r[1]) for r in rr], "ko", label="reference")
            ax.set_xlabel("time (probe units)"), ax.set_title(pname), ax.legend(fontsize=7), ax.grid(alpha=0.3)

        plot("probe_%s.png" % pname, draw, out, images)

    body = ["<h1>floe compare</h1>", "<p>Scene %s; variants: %s.</p>" % (
        html.escape(variants[0][3] if variants else ""), html.escape(", ".join(v[0] for v in variants)))]
    body.append("<h2>Summary</h2>" + table_html(SUMMARY_COLS, summary))
    body.append("<p>Numbers of each variant's last run record; definitions in docs/compare.md. "
                "Tables: summary.csv, frames.csv, stages.csv, and each variant's probe tables.</p>")
    if ref_rows:
        body.append("<h2>Probes against their reference data</h2>" + table_html(ref_cols, ref_rows))
        body.append("<p>Relative errors at the reference's points inside each probe's time range "
                    "(reference_errors.csv).</p>")
    if not HAVE_MPL:
        body.append("<p>No plots: matplotlib is not installed (python3-matplotlib).</p>")
    for img in images:
        body.append('<h2>%s</h2><img src="%s" alt="%s">' % (html.escape(img[:-4]), html.escape(img), html.escape(img)))
    with open(os.path.join(out, "report.html"), "w") as f:
        f.write(PAGE % ("floe compare", "\n".join(body)))


def validate(out):
    cols, rows = read_csv(os.path.join(out, "cases.csv"))
    recs = [dict(zip(cols, r)) for r in rows]
    images = []
    for r in recs:
        series = r.get("series", "")
        if not series or not os.path.exists(os.path.join(out, series)):
            continue
        sc, sr = read_csv(os.path.join(out, series))

        def draw(ax, sc=sc, sr=sr, r=r):
            for k in range(1, len(sc)):
                style = "ko" if sc[k] == "reference" else "-"
                ax.plot([num(x[0]) for x in sr], [num(x[k]) for x in sr], style, label=sc[k])
            ax.set_xlabel(sc[0]), ax.set_title("%s (%s)" % (r["case"], r["method"])), ax.legend(fontsize=7)
            ax.grid(alpha=0.3)

        name = series[:-4] + ".png"
        plot(name, draw, out, images)
        r["plot"] = name
    body = ["<h1>floe validate</h1>"]
    show = [c for c in cols if c != "series"]
    trs = []
    for r in recs:
        cls = "pass" if r.get("result") == "pass" else "fail"
        trs.append("<tr>" + "".join('<td class="%s">%s</td>' % (cls if c == "result" else "", html.escape(r.get(c, "")))
                                    for c in show) + "</tr>")
    body.append("<table><tr>" + "".join("<th>%s</th>" % html.escape(c) for c in show) + "</tr>" + "".join(trs) +
                "</table>")
    if not HAVE_MPL:
        body.append("<p>No plots: matplotlib is not installed (python3-matplotlib).</p>")
    for img in images:
        body.append('<h2>%s</h2><img src="%s" alt="%s">' % (html.escape(img[:-4]), html.escape(img), html.escape(img)))
    with open(os.path.join(out, "report.html"), "w") as f:
        f.write(PAGE % ("floe validate", "\n".join(body)))


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("compare", "validate"):
        sys.exit(__doc__)
    (compare if sys.argv[1] == "compare" else validate)(sys.argv[2])
