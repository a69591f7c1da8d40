/* A body pushed into still water (test_rigid_float, test_dfsph): a plate
 * 0.3 x 0.1 m, a kinematic body of the rigid module, pushed down at 1 m/s
 * from just above a 2D tank's water (0.8 m wide, 0.3 m deep, d = 2 cm)
 * until its bottom is 0.1 m above the floor. The water in the three
 * spacings under the plate, every 10 ms while it moves: its mean and
 * largest density against rho0 within the given limits, and at least 300
 * samples. A pressure solve whose predicted density takes the body's
 * particles as at rest lets the plate compress the water by its whole
 * approach of each step. The format's arguments: the solver's module, its
 * stages between gravity and integrate, the mean's and the largest's limit
 * (relative). */
#ifndef FLOE_TEST_PLUNGER_SCENE_H
#define FLOE_TEST_PLUNGER_SCENE_H

#include "scene_fixture.h"

#define PLUNGER_SCENE                                                                                              \
    SC_HEAD "local d, W, H, w, h, speed = 0.02, 0.8, 0.3, 0.3, 0.1, 1.0\n"                                         \
    "local y0, t0 = H + h / 2 + 0.01, 0.3\n"                                                                       \
    "local sim = floe.sim{ dim = 2, spacing = d, gravity = {0, -9.81}, domain = { min = {-0.1, -0.1}, max = {W + "  \
    "0.1, 1.5} } }\n"                                                                                              \
    "sim:load{ 'sph', '%s' }\n"                                                                                    \
    "local rigid = sim:load 'rigid'\n"                                                                             \
    "sim:fluid_box{ min = {0, 0}, max = {W, H} }\n"                                                                \
    "sim:boundary_box{ min = {0, 0}, max = {W, H + 0.6}, layers = 2, open_top = true }\n"                          \
    "local function y_of(t) if t <= t0 then return y0 end return math.max(y0 - speed * (t - t0), 0.1 + h / 2) end\n" \
    "rigid.body{ name = 'plate', shape = 'box', size = {w, h}, density = 500, position = {W / 2, y0},\n"           \
    "  kinematic = function(t) return { position = {W / 2, y_of(t)} } end }\n"                                     \
    "sim:pipeline{ 'neighbours', 'sph.density', 'gravity', %s, 'integrate', 'rigid.step' }\n"                       \
    "local sum, n, mx = 0, 0, 0\n"                                                                                 \
    "sim:on_frame(function(s, st)\n"                                                                               \
    "  if st.time <= t0 + 0.05 or y_of(st.time) <= 0.1 + h / 2 then return end\n"                                  \
    "  local yb = y_of(st.time) - h / 2\n"                                                                         \
    "  for i = 1, s:count 'fluid' do local x, y = s:get('fluid', 'x', i)\n"                                        \
    "    if math.abs(x - W / 2) < w / 2 and y < yb and y > yb - 3 * d then\n"                                      \
    "      local r = s:get('fluid', 'rho', i) / 1000 - 1\n"                                                        \
    "      sum, n, mx = sum + r, n + 1, math.max(mx, r) end end\n"                                                 \
    "end)\n"                                                                                                       \
    "sim:run{ end_time = t0 + 0.5, fps = 100, dt_max = 0.002, out = 'o' }\n"                                       \
    "local lm, lx = %g, %g\n"                                                                                      \
    "floe.log(string.format('under the plate: mean %%.4f%%%%, largest %%.4f%%%% (%%d samples)', 100 * sum / n, "     \
    "100 * mx, n))\n"                                                                                              \
    "assert(n > 300, 'samples under the plate: ' .. n)\n"                                                          \
    "assert(sum / n < lm, string.format('water under the plate compressed by %%.3f%%%% on average', 100 * sum / n))\n" \
    "assert(mx < lx, string.format('water under the plate compressed by %%.3f%%%% at most', 100 * mx))\n"

#endif
