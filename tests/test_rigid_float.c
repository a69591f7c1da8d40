/* Floating bodies against hydrostatics (issue 15): Archimedes' drafts,
 * metacentric stability, a sinking body resting on the floor. 2D, WCSPH,
 * coarse (d = 0.02 m, about 600 fluid particles): each check is a minute or
 * two of CPU on 2 shared cores, the finer runs of docs/rigid.md are longer.
 * The box is held still for 0.5 s while the water settles around it, then
 * released; drafts are averaged over the last second. */
#include "plunger_scene.h"
#include "scene_fixture.h"

#include <math.h>

TestSuite(rigid_float, .init = sc_setup, .fini = sc_teardown, .timeout = FLOE_TIMEOUT(1200));

/* One box {w, h} of density ratio r, released at `deg` degrees, in a tank
 * W m wide with H m of water (0.8 and 0.25 but for Archimedes); the scene's on_frame keeps the draft (free
 * surface by the side walls minus the box's lowest point) and the angle,
 * `check` (Lua) judges them at the end. The free surface: the fluid's
 * volume in two strips 0.1 m wide by the side walls (the wall's own column
 * left out), particles x d^2 over the strips' width, above the fluid's
 * bottom edge there (its lowest particles - d/2: the floor's particles
 * hold the fluid some 2-3 mm up); `drafts` from it, averaged over the
 * last `avg` seconds. The top particle of each column + d/2 is logged
 * beside it (`tdrafts`), 0.3-0.5 d lower: the top row sags, its clamped
 * pressure of a deficient density leaving it only the row below to rest
 * on (docs/rigid.md, "Archimedes"). IISPH, the boundary pressure mirrored
 * or (bp = extrapolate) extrapolated, in the solve and on the body. */

static int run_box_with(const char *bp, double W, double H, double w, double h, double r, double deg, double seconds,
                        double avg, const char *check)
{
    floe_scene_opts o = sc_opts();
    return sc_run(&o,
        SC_HEAD "local d, W, H = 0.02, %g, %g\n"
        "local w, h, ratio, deg = %g, %g, %g, %g\n"
        "local sim = floe.sim{ dim = 2, spacing = d, gravity = {0, -9.81}, domain = { min = {-0.1, -0.1}, max = {W + 0.1, 1} } }\n"
        "sim:load{ 'sph', 'iisph' }\n"
        "local rigid = sim:load 'rigid'\n"
        "sim:fluid_box{ min = {0, 0}, max = {W, H} }\n"
        "sim:boundary_box{ min = {0, 0}, max = {W, H + 0.3}, layers = 2, open_top = true }\n"
        "rigid.walls{ min = {0, 0}, max = {W, H + 0.3}, open_top = true }\n"
        "local y0 = math.max(H + h / 2 - ratio * h, h / 2 + 0.001)\n"
        "local b = rigid.body{ name = 'box', shape = 'box', size = {w, h}, density = 1000 * ratio,\n"
        "                      position = {W / 2, y0}, rotation = deg, hold = 0.5 }\n"
        "local bp = '%s'\n"
        "sim:pipeline{ 'neighbours', 'sph.density', 'gravity',\n"
        "  { 'rigid.viscosity', alpha = 0.05, speed_of_sound = 20 },\n"
        "  { 'iisph.solve', tolerance = 0.0005, boundary_pressure = bp, damping = 2 },\n"
        "  { 'rigid.force', solver = 'iisph', boundary_pressure = bp },\n"
        "  'integrate', 'rigid.step' }\n"
        "local seconds, avg = %g, %g\n"
        "local drafts, tdrafts, angles, lows, energies, levels = {}, {}, {}, {}, {}, {}\n"
        "sim:on_frame(function(s, st)\n"
        "  local q = b:state()\n"
        "  local th = 2 * math.atan(q.quaternion[4], q.quaternion[1])\n"
        "  local low = q.position[2] - (h / 2 * math.abs(math.cos(th)) + w / 2 * math.abs(math.sin(th)))\n"
        "  local top, cnt = 0, 0\n"
        "  local col = {}\n"
        "  for i = 1, s:count 'fluid' do local x, y = s:get('fluid', 'x', i)\n"
        "    if (x > 1.5 * d and x < 0.12) or (x < W - 1.5 * d and x > W - 0.12) then local k = math.floor(x / d); if not col[k] or y > col[k] then col[k] = y end end end\n"
        "  for _, y in pairs(col) do top = top + y; cnt = cnt + 1 end\n"
        "  local surf = top / cnt + d / 2\n"
        "  local inside, bot, bs, bn = 0, {}, 0, 0\n"
        "  for i = 1, s:count 'fluid' do local x, y = s:get('fluid', 'x', i); local xl = math.min(x, W - x)\n"
        "    if xl >= d and xl < d + 0.1 then inside = inside + 1; local k = math.floor(x / d); if not bot[k] or y < bot[k] then bot[k] = y end end end\n"
        "  for _, y in pairs(bot) do bs = bs + y; bn = bn + 1 end\n"
        "  local vsurf = bs / bn - d / 2 + inside * d * d / 0.2\n"
        "  -- the hydrostatic level: y + p / (rho0 g) of the particles in the lower half beside the box\n"
        "  local lv, nl = 0, 0\n"
        "  for i = 1, s:count 'fluid' do local x, y = s:get('fluid', 'x', i)\n"
        "    if y < H / 2 and y > 2 * d and math.abs(x - W / 2) > w / 2 + 2 * d and x > 2 * d and x < W - 2 * d then\n"
        "      lv = lv + y + s:get('fluid', 'p', i) / (1000 * 9.81); nl = nl + 1 end end\n"
        "  if st.time > seconds - avg then levels[#levels + 1] = (lv / nl - low) / h end\n"
        "  if st.time > seconds - avg then drafts[#drafts + 1] = (vsurf - low) / h; tdrafts[#tdrafts + 1] = (surf - low) / h end\n"
        "  angles[#angles + 1] = math.deg(th); lows[#lows + 1] = low\n"
        "  energies[#energies + 1] = q.mass * 9.81 * q.position[2] + 0.5 * q.mass * (q.velocity[1]^2 + q.velocity[2]^2)\n"
        "end)\n"
        "sim:run{ end_time = seconds, fps = 20, dt_max = 0.004, out = 'o' }\n"
        "local mean = 0; for _, v in ipairs(drafts) do mean = mean + v end; mean = mean / #drafts\n"
        "local tmean = 0; for _, v in ipairs(tdrafts) do tmean = tmean + v end; tmean = tmean / #tdrafts\n"
        "local hmean = 0; for _, v in ipairs(levels) do hmean = hmean + v end; hmean = hmean / #levels\n"
        "floe.log(string.format('%s: box %%g x %%g, ratio %%g, released at %%g deg: mean draft/height %%.4f over the last %%g s (%%+.1f%%%%; from the top particles + d/2 %%.4f, from the hydrostatic level %%.4f), final angle %%.2f deg, lowest point %%.4f m',\n"
        "  w, h, ratio, deg, mean, avg, 100 * (mean / ratio - 1), tmean, hmean, angles[#angles], lows[#lows]))\n"
        "%s\n",
        W, H, w, h, r, deg, bp, seconds, avg, bp, check);
}

static int run_box(double w, double h, double r, double deg, double seconds, const char *check)
{
    return run_box_with("mirror", 0.8, 0.25, w, h, r, deg, seconds, 1.0, check);
}

/* Archimedes: the draft averaged over 4 s after 1.5 s (the box held
 * 0.5 s) against ratio x height, within the 3%. The box is
 * 0.64 x 0.32 m (32 x 16 spacings, d = 0.02 m), so that ratio 0.25 has a
 * draft of 4 spacings (at 8 spacings tall, 2, and runs that differ in
 * rounding alone scattered from -0.8% to -9.7%); the tank is 1.2 m wide
 * with 0.33 m of water. Its bottom lies on a row of the fluid's lattice
 * (H - ratio h an odd multiple of d/2) so the carve leaves the fluid d/2
 * from the box's particles, as in the smaller tank: with 0.32 m or 0.30 m
 * of water the bottom falls between rows, a row is left d/2 from the box's
 * particles and jets leave the tank in the first 0.05 s. Measured and the
 * runs with perturbations: docs/rigid.md, "Archimedes". Ratio 0.25 is
 * held to 10%: since iisph's predicted density takes the body's velocity
 * (2026-12-05, third session) its draft from the strips scatters from
 * +0.6% to -8.3% over holds of 0.50-0.55 s (`scenes/archimedes_volume_2d.lua`,
 * the last 8 s of 9.5; before: +1.0% to -4.6%), and this test measured
 * +1.8% (native), -1.1% (generic) and -6.0% (generic with the sanitizers). */
#define ARCHIMEDES(r, tol)                                                                                         \
    "assert(math.abs(mean / " #r " - 1) < " #tol ", string.format('draft/height %.4f, expected " #r " within " #tol \
    "', mean))"

Test(rigid_float, archimedes_ratio_0_25)
{
    cr_assert_eq(run_box_with("extrapolate", 1.2, 0.33, 0.64, 0.32, 0.25, 0, 5.5, 4, ARCHIMEDES(0.25, 0.10)), 0, "%s", sc_err);
}
Test(rigid_float, archimedes_ratio_0_5)
{
    cr_assert_eq(run_box_with("extrapolate", 1.2, 0.33, 0.64, 0.32, 0.5, 0, 5.5, 4, ARCHIMEDES(0.5, 0.03)), 0, "%s", sc_err);
}
Test(rigid_float, archimedes_ratio_0_75)
{
    cr_assert_eq(run_box_with("extrapolate", 1.2, 0.33, 0.64, 0.32, 0.75, 0, 5.5, 4, ARCHIMEDES(0.75, 0.03)), 0, "%s", sc_err);
}

/* Metacentric theory for a box of width w, height h, ratio r:
 * GM = w^2 / (12 r h) - h (1 - r) / 2; 3:1 at r = 0.5 gives GM = +0.4 h
 * (rights itself), 1:3 gives GM = -0.24 h (capsizes and lies on its side). */
Test(rigid_float, flat_box_rights_itself)
{
    cr_assert_eq(run_box(0.48, 0.16, 0.5, 20, 3,
                         "assert(math.abs(angles[#angles]) < 3, 'flat box at ' .. angles[#angles] .. ' deg')"),
                 0, "%s", sc_err);
}

Test(rigid_float, tall_box_capsizes)
{
    cr_assert_eq(run_box(0.1, 0.3, 0.5, 20, 3,
                         "local a = math.abs(angles[#angles]) % 180\n"
                         "assert(math.abs(a - 90) < 15, 'tall box should lie on its side, at ' .. angles[#angles] .. ' deg')"),
                 0, "%s", sc_err);
}

/* Density ratio 2: sinks, reaches the floor, rests. Over the last 2 s of
 * 5: its lowest point between d/2 below the floor and d above it (on the
 * floor, or on the one row of particles the bound on trapped particles
 * leaves under it: 13-14 mm), and no energy pumped in: the mean of its
 * energy over the last 0.5 s no more than 1% of its potential energy
 * above the floor (half its height) over the mean of the first 0.5 s, and
 * its range within 3% (a box on the one row bobs by less than a
 * millimetre; measured: range 0.6%, trend -0.05%; over the last 2 s of the
 * first 3 s, while it still settled, ranges of 1.3% and 1.7% and trends of
 * -0.05% and +1.0% for boxes 0.22 and 0.2 m wide; a contact that pumped
 * energy would grow without end). */
Test(rigid_float, heavy_box_rests_on_the_floor)
{
    cr_assert_eq(run_box(0.2, 0.1, 2, 0, 5,
                         "for k = #lows - 39, #lows do assert(lows[k] > -d / 2 and lows[k] < d, 'lowest point ' .. lows[k]) end\n"
                         "local pe, n = b:state().mass * 9.81 * h / 2, #energies\n"
                         "local first, last, lo, hi = 0, 0, math.huge, -math.huge\n"
                         "for k = n - 39, n do lo, hi = math.min(lo, energies[k]), math.max(hi, energies[k]) end\n"
                         "for k = 0, 9 do first, last = first + energies[n - 39 + k] / 10, last + energies[n - k] / 10 end\n"
                         "floe.log(string.format('last 2 s: energy trend %.4f J, range %.4f J (1%% of pe: %.4f J)', last - first, hi - lo, 0.01 * pe))\n"
                         "assert(last - first <= 0.01 * pe, string.format('energy gained: %.4f J over the last 2 s', last - first))\n"
                         "assert(hi - lo <= 0.03 * pe, string.format('energy range %.4f J over the last 2 s', hi - lo))"),
                 0, "%s", sc_err);
}

/* The heavy box of the test above, released flat, tilted by 5 degrees,
 * and 0.3 m wide at 15 degrees, with iisph.solve's defaults: never kicked.
 * After the release no rise of its energy (potential and kinetic, from the
 * lowest value so far) beyond a quarter of its potential energy above the
 * floor at the release (19.6 J), and over the last second its lowest point
 * lies between d/2 below the floor and d above it (it rests on the floor
 * or on the one row of particles left under it). With `trapped_floor = 0`
 * (the bound on particles caught between the box and the floor off) and
 * the density prediction blind to the body's velocity, as before
 * 2026-12-05's third session, these releases rose by 70.6, 22.2 and 9.3 J;
 * with both in, 0.3-0.8 J (docs/iisph.md, "Trapped particles";
 * scenes/heavy_box_2d.lua reproduces them). */
#define NO_KICK                                                                                              \
    "local pe, lo, rise = b:state().mass * 9.81 * (y0 - h / 2), math.huge, 0\n"                             \
    "for k = 11, #energies do lo = math.min(lo, energies[k]); rise = math.max(rise, energies[k] - lo) end\n" \
    "assert(rise <= 0.25 * pe, string.format('energy rise %.3f J after the release (limit %.3f J)', rise, 0.25 * pe))\n" \
    "for k = #lows - 19, #lows do assert(lows[k] > -d / 2 and lows[k] < d, 'lowest point ' .. lows[k]) end"

Test(rigid_float, heavy_box_released_flat_is_not_kicked)
{
    cr_assert_eq(run_box(0.2, 0.1, 2, 0, 3, NO_KICK), 0, "%s", sc_err);
}

Test(rigid_float, heavy_box_released_tilted_is_not_kicked)
{
    cr_assert_eq(run_box(0.2, 0.1, 2, 5, 3, NO_KICK), 0, "%s", sc_err);
}

Test(rigid_float, wide_heavy_box_released_tilted_is_not_kicked)
{
    cr_assert_eq(run_box(0.3, 0.1, 2, 15, 3, NO_KICK), 0, "%s", sc_err);
}

/* A body moving into the water does not compress it (plunger_scene.h):
 * IISPH's density prediction takes the fluid's velocity relative to the
 * body's particles. Mean within 0.5% of rho0, largest 8% (measured -0.12%
 * and 4.7%; with the body's particles taken as at rest, as before
 * 2026-12-05's third session, +2.05% and 18.1%). */
Test(rigid_float, pushed_plate_does_not_compress_the_water)
{
    floe_scene_opts o = sc_opts();
    cr_assert_eq(sc_run(&o, PLUNGER_SCENE, "iisph",
                        "{ 'iisph.solve', tolerance = 0.0005, boundary_pressure = 'mirror', damping = 2 }, "
                        "{ 'rigid.force', solver = 'iisph', boundary_pressure = 'mirror' }",
                        0.005, 0.08),
                 0, "%s", sc_err);
}

/* Displacement: a box 0.2 x 0.2 m lowered slowly (a kinematic body, 1.5 s,
 * smooth start and stop) from above the water into a tank 0.8 m wide and
 * 0.2 m deep until its bottom is 0.1 m above the floor, then held 1.5 s:
 * the free surface (the top particles of the columns between the walls
 * and the box, averaged over 0.25 s before and over the last second)
 * rises by the submerged area over the tank's width, w (h1 - y_bottom) / W,
 * within the 5% (measured +1.8%: 33.5 mm against 32.9 mm). WCSPH,
 * c = 20 m/s (the pressure of 33 mm more water compresses it by 8e-4 of
 * its depth: 0.2 mm); nothing in the measure involves the body's force. */
Test(rigid_float, lowered_body_raises_the_surface_by_its_submerged_volume)
{
    floe_scene_opts o = sc_opts();
    cr_assert_eq(sc_run(&o,
        SC_HEAD "local d, W, H, w, h = 0.02, 0.8, 0.2, 0.2, 0.2\n"
        "local y_top, y_end, t0, t1, seconds = H + h / 2 + 0.02, 0.1 + h / 2, 0.5, 2.0, 3.5\n"
        "local sim = floe.sim{ dim = 2, spacing = d, gravity = {0, -9.81}, domain = { min = {-0.1, -0.1}, max = {W + 0.1, 1} } }\n"
        "sim:load{ 'sph', 'wcsph' }\n"
        "local rigid = sim:load 'rigid'\n"
        "sim:fluid_box{ min = {0, 0}, max = {W, H} }\n"
        "sim:boundary_box{ min = {0, 0}, max = {W, H + 0.4}, layers = 2, open_top = true }\n"
        "local function y_of(t) if t <= t0 then return y_top elseif t >= t1 then return y_end end\n"
        "  local s = (t - t0) / (t1 - t0); return y_top + (y_end - y_top) * (3 * s * s - 2 * s * s * s) end\n"
        "local b = rigid.body{ name = 'plunger', shape = 'box', size = {w, h}, density = 500, position = {W / 2, y_top},\n"
        "  kinematic = function(t) return { position = {W / 2, y_of(t)} } end }\n"
        "sim:pipeline{ 'neighbours', 'sph.density', { 'wcsph.pressure', speed_of_sound = 20 }, 'gravity',\n"
        "  { 'wcsph.viscosity', kind = 'artificial', alpha = 0.1 }, { 'rigid.viscosity', alpha = 0.05, speed_of_sound = 20 },\n"
        "  'wcsph.pressure_force', 'rigid.force', 'integrate', 'rigid.step' }\n"
        "local function surface(s)\n"
        "  local col, top, cnt = {}, 0, 0\n"
        "  for i = 1, s:count 'fluid' do local x, y = s:get('fluid', 'x', i)\n"
        "    if (x > 1.5 * d and x < W / 2 - w / 2 - 2 * d) or (x < W - 1.5 * d and x > W / 2 + w / 2 + 2 * d) then\n"
        "      local k = math.floor(x / d); if not col[k] or y > col[k] then col[k] = y end end end\n"
        "  for _, y in pairs(col) do top = top + y; cnt = cnt + 1 end\n"
        "  return top / cnt + d / 2\n"
        "end\n"
        "local before, nb, after, na = 0, 0, 0, 0\n"
        "sim:on_frame(function(s, st)\n"
        "  local sf = surface(s)\n"
        "  if st.time > t0 - 0.25 and st.time <= t0 then before = before + sf; nb = nb + 1 end\n"
        "  if st.time > seconds - 1 then after = after + sf; na = na + 1 end\n"
        "end)\n"
        "sim:run{ end_time = seconds, fps = 20, dt_max = 0.002, out = 'o' }\n"
        "before, after = before / nb, after / na\n"
        "assert(math.abs(b:state().position[2] - y_end) < 1e-9, 'the body should end at its lowest point')\n"
        "local rise, expect = after - before, w * (after - (y_end - h / 2)) / W\n"
        "floe.log(string.format('surface %%.5f -> %%.5f m: rise %%.5f m, submerged area / tank width %%.5f m (%%+.2f%%%%)',\n"
        "  before, after, rise, expect, 100 * (rise / expect - 1)))\n"
        "assert(math.abs(rise / expect - 1) < 0.05, string.format('rise %%.5f m, expected %%.5f m within 5%%%%', rise, expect))\n"),
        0, "%s", sc_err);
}
