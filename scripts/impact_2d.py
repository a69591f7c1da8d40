# The first impact of scenes/validation/impact_2d.lua on the far wall, from
# its output folder: when the wall point (5a - d, d) gets wet, the peak of
# the Shepard-interpolated pressure there in the first 30 ms (sampled every
# step), the peak of its 1 ms running mean, the pressure impulse over the
# first 10 and 30 ms, and (IISPH) the largest iteration count and the
# smallest dt in the frames of that window (run.2.yaml).
#   floe run scenes/validation/impact_2d.lua --threads 1 --set solver=iisph --out DIR
#   python3 scripts/impact_2d.py DIR
import bisect, csv, os, re, sys

d = sys.argv[1]
rows = list(csv.reader(open(os.path.join(d, 'wall.probe.csv'))))[1:]
r = [(float(x[0]), float(x[1]) if x[1] != 'nan' else 0.0) for x in rows]
wet = next(float(x[0]) for x in rows if x[1] != 'nan')  # the point's kernel sum first above 0.1
first = [(p, t) for t, p in r if wet <= t < wet + 0.03]
peak, tpk = max(first)
def impulse(win):
    return sum((t1 - t0) * p0 for (t0, p0), (t1, _) in zip(r, r[1:]) if wet <= t0 < wet + win)
ts = [t for t, _ in r]
best = 0.0
for i, (t, p) in enumerate(r):
    if t > wet + 0.03:
        break
    if t < wet:
        continue
    seg = r[i:bisect.bisect_left(ts, t + 0.001)]
    if len(seg) > 1:
        best = max(best, sum((b[0] - a[0]) * a[1] for a, b in zip(seg, seg[1:])) / (seg[-1][0] - seg[0][0]))
its = []
rec = os.path.join(d, 'run.2.yaml')
for l in open(rec) if os.path.exists(rec) else []:
    m = re.search(r'time: ([\d.]+), steps: (\d+), dt_min: ([\d.e-]+).*iisph.iterations: \{mean: ([\d.]+), max: (\d+)\}', l)
    if m and wet - 0.002 <= float(m.group(1)) <= wet + 0.03:
        its.append((int(m.group(5)), float(m.group(3))))
print('wet at t = %.4f s; peak %.0f Pa %.1f ms later; 1 ms running mean peak %.0f Pa; impulse 10 ms %.1f Pa s, '
      '30 ms %.1f Pa s; %s' % (wet, peak, 1000 * (tpk - wet), best, impulse(0.01), impulse(0.03),
      'iterations max %d, dt min %.3g s' % (max(i for i, _ in its), min(x for _, x in its)) if its else 'no iterations'))
