/* Ice on a dynamic rigid body (issue 17 with the rigid module): the ice the
 * freeze module grows on a body and freeze.carry moves with it is named to
 * the rigid module by rigid.attach{}; its mass, centre and inertia join the
 * body's, and the fluid's pressure on it pushes the body. Small 3D scenes
 * (a few hundred particles): seconds on 2 shared cores. */
#include "cl_fixture.h"
#include "scene_fixture.h"

TestSuite(rigid_ice, .init = sc_setup, .fini = sc_teardown, .timeout = FLOE_TIMEOUT(600));

/* A free box spinning in zero gravity (no fluid forces: no solver, no
 * rigid.force) through a slab of still water that freezes onto it. The
 * water stopped when it froze, so the box with its ice keeps its angular
 * momentum L = I w about the common centre of mass and its momentum
 * (zero): L is computed here from the box's own inertia and each ice
 * particle where the frame has it, not from the module's sums. Checked
 * every frame: the attached mass is the ice's (to 1e-6), L within 1e-4 of
 * L0 (ODE's gyroscopic step; measured 3.9e-5), the common centre of mass
 * at rest (it jumps when ice joins, to the mean of the body's and the
 * ice's, but never moves); at the end the spin has dropped by more than 10% (the ice's
 * inertia is there, not only its bookkeeping). */
static void spinning(const char *backend)
{
    floe_scene_opts o = sc_opts();
    o.backend = backend;
    int rc = sc_run(&o,
        SC_HEAD "local sim = floe.sim{ dim = 3, spacing = 0.02, gravity = {0, 0, 0},\n"
        "  domain = { min = {-0.4, -0.3, -0.4}, max = {0.4, 0.3, 0.4} } }\n"
        "sim:load{ 'sph', 'freeze' }\n"
        "local rigid = sim:load 'rigid'\n"
        "local b = rigid.body{ name = 'box', shape = 'box', size = {0.24, 0.1, 0.12}, density = 150,\n"
        "  position = {0, 0, 0}, angular_velocity = {0.3, 3, 0} }\n"
        "sim:boundary_set{ name = 'ice' }\n"
        "rigid.attach{ set = 'ice' }\n"
        "sim:fluid_box{ min = {0.09, -0.04, -0.2}, max = {0.19, 0.04, 0.2} }\n"
        "sim:pipeline{ 'neighbours', 'sph.density',\n"
        "  { 'freeze.film', cold = 'bodies', alpha = 200 }, 'freeze.direction',\n"
        "  { 'freeze.transition', glaze = 2, icicle = 1e6, fr = 'none' }, 'integrate', 'rigid.step',\n"
        "  'freeze.carry' }\n"
        "local function L_of(s)\n"
        "  local q = b:state()\n"
        "  local c, w, I0 = q.centre_of_mass, q.angular_velocity, q.inertia\n"
        "  local a, bq, cq, dq = q.quaternion[1], q.quaternion[2], q.quaternion[3], q.quaternion[4]\n"
        "  local R = { { 1 - 2 * (cq * cq + dq * dq), 2 * (bq * cq - a * dq), 2 * (bq * dq + a * cq) },\n"
        "              { 2 * (bq * cq + a * dq), 1 - 2 * (bq * bq + dq * dq), 2 * (cq * dq - a * bq) },\n"
        "              { 2 * (bq * dq - a * cq), 2 * (cq * dq + a * bq), 1 - 2 * (bq * bq + cq * cq) } }\n"
        "  local I = {}\n"
        "  for i = 1, 3 do I[i] = {} for j = 1, 3 do local v = 0\n"
        "    for k = 1, 3 do for l = 1, 3 do v = v + R[i][k] * I0[k][l] * R[j][l] end end; I[i][j] = v end end\n"
        "  local function point(m, r)\n"
        "    local r2 = r[1] ^ 2 + r[2] ^ 2 + r[3] ^ 2\n"
        "    for i = 1, 3 do for j = 1, 3 do I[i][j] = I[i][j] + m * ((i == j and r2 or 0) - r[i] * r[j]) end end\n"
        "  end\n"
        "  point(q.mass, { q.position[1] - c[1], q.position[2] - c[2], q.position[3] - c[3] })\n"
        "  local mice, n = 0, 0\n"
        "  for i = 1, s:count 'ice' do\n"
        "    if s:get('ice', 'ice_body', i) == 1 then\n"
        "      local x, y, z = s:get('ice', 'x', i); local m = s:get('ice', 'm', i)\n"
        "      point(m, { x - c[1], y - c[2], z - c[3] }); mice = mice + m; n = n + 1 end end\n"
        "  local L = {}\n"
        "  for i = 1, 3 do L[i] = I[i][1] * w[1] + I[i][2] * w[2] + I[i][3] * w[3] end\n"
        "  return L, q, mice, n\n"
        "end\n"
        "local L0, q0 = L_of(sim)\n"
        "local n0 = math.sqrt(L0[1] ^ 2 + L0[2] ^ 2 + L0[3] ^ 2)\n"
        "local worst, wmax, most, cmove = 0, 0, 0, 0\n"
        "sim:on_frame(function(s, st)\n"
        "  local L, q, mice, n = L_of(s)\n"
        "  assert(n == q.attached, 'attached ' .. q.attached .. ', ice on the box ' .. n)\n"
        "  assert(math.abs(q.attached_mass - mice) <= 1e-6 * mice, 'attached mass ' .. q.attached_mass .. ' vs ' .. mice)\n"
        "  worst = math.max(worst, math.sqrt((L[1] - L0[1]) ^ 2 + (L[2] - L0[2]) ^ 2 + (L[3] - L0[3]) ^ 2) / n0)\n"
        "  local c, v, w = q.centre_of_mass, q.velocity, q.angular_velocity\n"
        "  local r = { c[1] - q.position[1], c[2] - q.position[2], c[3] - q.position[3] }\n"
        "  local u = { v[1] + w[2] * r[3] - w[3] * r[2], v[2] + w[3] * r[1] - w[1] * r[3], v[3] + w[1] * r[2] - w[2] * r[1] }\n"
        "  cmove = math.max(cmove, math.sqrt(u[1] ^ 2 + u[2] ^ 2 + u[3] ^ 2))\n"
        "  most = math.max(most, n)\n"
        "end)\n"
        "sim:run{ end_time = 0.6, fps = 20, dt = 0.002, out = 'o' }\n"
        "local L, q, mice, n = L_of(sim)\n"
        "local w0 = math.sqrt(q0.angular_velocity[1] ^ 2 + q0.angular_velocity[2] ^ 2 + q0.angular_velocity[3] ^ 2)\n"
        "local w1 = math.sqrt(q.angular_velocity[1] ^ 2 + q.angular_velocity[2] ^ 2 + q.angular_velocity[3] ^ 2)\n"
        "floe.log(string.format('spinning box (%%.4f kg) with %%d ice particles (%%.4f kg): |w| %%.4f -> %%.4f rad/s, worst |L - L0| / |L0| = %%.3g, speed of the centre of mass at most %%.3g m/s',\n"
        "  q.mass, n, mice, w0, w1, worst, cmove))\n"
        "assert(n >= 20 and mice > 0.1 * q.mass, 'too little ice to matter: ' .. n)\n"
        "assert(w1 < 0.9 * w0, 'the spin did not slow: ' .. w0 .. ' -> ' .. w1)\n"
        "assert(worst < 1e-4, 'angular momentum not kept: ' .. worst)\n"
        "assert(cmove < 1e-6, 'the centre of mass moves at ' .. cmove .. ' m/s')\n");
    cr_assert_eq(rc, 0, "%s", sc_err);
}

Test(rigid_ice, spinning_body_keeps_its_angular_momentum_as_ice_grows_on_it) { spinning("cpu"); }

/* the same with the freezing stages and the carrying on the device (the
 * attached mass read back to the host each step) */
Test(rigid_ice, spinning_body_keeps_its_angular_momentum_on_opencl)
{
    need_opencl();
    spinning("opencl");
}

/* The fluid's forces on the ice reach the body: Newton's third law, step
 * by step, as test_rigid's third_law_per_step but in 3D with a cold free
 * sphere on which the blob that hits it freezes. In zero gravity, without
 * walls, the fluid's total force sum_i m_i a_i after the pressure (its
 * internal forces cancel; the sphere and its ice are its only boundaries)
 * must be minus the force the module gives the sphere, to 1e-5 of it, on
 * every step they touch, also once the water presses on ice rather than on
 * the sphere's own particles (without rigid.attach the ice's share is
 * missing: the check fails). */
static void third_law_with_ice(const char *backend)
{
    floe_scene_opts o = sc_opts();
    o.backend = backend;
    int rc = sc_run(&o,
        SC_HEAD "local sim = floe.sim{ dim = 3, spacing = 0.02, gravity = {0, 0, 0}, domain = { min = {-1, -1, -1}, max = {1, 1, 1} } }\n"
        "sim:load{ 'sph', 'wcsph', 'freeze' }\n"
        "local rigid = sim:load 'rigid'\n"
        "sim:fluid_box{ min = {-0.26, -0.06, -0.06}, max = {-0.1, 0.06, 0.06}, velocity = {1.5, 0.2, 0} }\n"
        "local b = rigid.body{ name = 'ball', shape = 'sphere', radius = 0.08, density = 800, position = {0.03, 0, 0} }\n"
        "sim:boundary_set{ name = 'ice' }\n"
        "rigid.attach{ set = 'ice' }\n"
        "local worst, touched, iced = 0, 0, 0\n"
        "sim:pipeline{ 'neighbours', 'sph.density', { 'wcsph.pressure', speed_of_sound = 20 }, 'gravity',\n"
        "  'wcsph.pressure_force', 'rigid.force',\n"
        "  function(s)\n"
        "    local f = { 0, 0, 0 }\n"
        "    for i = 1, s:count 'fluid' do local m = s:get('fluid', 'm', i); local a = { s:get('fluid', 'a', i) }\n"
        "      for d = 1, 3 do f[d] = f[d] + m * a[d] end end\n"
        "    local q = b:state()\n"
        "    local F = q.force\n"
        "    local n = math.sqrt(F[1]^2 + F[2]^2 + F[3]^2)\n"
        "    if n > 1e-3 then touched = touched + 1; if q.attached >= 10 then iced = iced + 1 end\n"
        "      worst = math.max(worst, math.sqrt((f[1] + F[1])^2 + (f[2] + F[2])^2 + (f[3] + F[3])^2) / n) end\n"
        "  end,\n"
        "  { 'freeze.film', cold = 'bodies', alpha = 500 }, 'freeze.direction',\n"
        "  { 'freeze.transition', glaze = 20, icicle = 1e6, fr = 'none' }, 'integrate', 'rigid.step', 'freeze.carry' }\n"
        "sim:run{ end_time = 0.1, fps = 10, dt = 0.0005, out = 'law' }\n"
        "local q = b:state()\n"
        "floe.log(string.format('third law with ice: %%d steps in contact, %%d of them with 10 or more ice particles on the ball (%%d at the end, %%.4f kg), worst |F_fluid + F_body| / |F_body| = %%.3g',\n"
        "  touched, iced, q.attached, q.attached_mass, worst))\n"
        "assert(iced > 20, 'the blob must press on ice (' .. iced .. ' steps)')\n"
        "assert(worst < 1e-5, 'third law broken: ' .. worst)\n");
    cr_assert_eq(rc, 0, "%s", sc_err);
}

Test(rigid_ice, fluid_pressure_on_the_ice_pushes_the_body) { third_law_with_ice("cpu"); }

/* the same on the device: the freezing stages, the ice's growth and its
 * carrying there, the ice's share of the forces summed on the host */
Test(rigid_ice, fluid_pressure_on_the_ice_pushes_the_body_on_opencl)
{
    need_opencl();
    third_law_with_ice("opencl");
}

/* The collision shape stays on the body: a light box on the floor of a
 * tank (ODE's walls) gets a heavy cap of ice from water poured on it, which
 * moves the centre of mass ODE integrates up by centimetres; the box's own
 * bottom must still rest on the floor (within d/2), not sink by that
 * shift. */
Test(rigid_ice, a_box_capped_with_ice_still_rests_on_the_floor)
{
    floe_scene_opts o = sc_opts();
    int rc = sc_run(&o,
        SC_HEAD "local d = 0.02\n"
        "local sim = floe.sim{ dim = 3, spacing = d, gravity = {0, -9.81, 0}, domain = { min = {-0.1, -0.1, -0.1}, max = {0.5, 0.6, 0.5} } }\n"
        "sim:load{ 'sph', 'iisph', 'freeze' }\n"
        "local rigid = sim:load 'rigid'\n"
        "local b = rigid.body{ name = 'box', shape = 'box', size = {0.2, 0.1, 0.2}, density = 200, position = {0.2, 0.05, 0.2} }\n"
        "rigid.walls{ min = {0, 0, 0}, max = {0.4, 0.5, 0.4}, open_top = true }\n"
        "rigid.settings{ restitution = 0 }\n"
        "sim:boundary_box{ min = {0, 0, 0}, max = {0.4, 0.5, 0.4}, layers = 2, open_top = true, set = 'tank' }\n"
        "sim:boundary_set{ name = 'ice' }\n"
        "rigid.attach{ set = 'ice' }\n"
        "sim:fluid_box{ min = {0.12, 0.12, 0.12}, max = {0.28, 0.2, 0.28} }\n"
        "sim:pipeline{ 'neighbours', 'sph.density', 'gravity', 'iisph.solve', { 'rigid.force', solver = 'iisph' },\n"
        "  { 'freeze.film', cold = 'bodies', alpha = 500 }, 'freeze.direction',\n"
        "  { 'freeze.transition', glaze = 2, icicle = 4, fr = 'none' }, 'integrate', 'rigid.step', 'freeze.carry' }\n"
        "sim:run{ end_time = 0.6, fps = 10, dt = 0.002, out = 'o' }\n"
        "local q = b:state()\n"
        "local shift = q.centre_of_mass[2] - q.position[2]\n"
        "local bottom = q.position[2] - 0.05\n"
        "floe.log(string.format('box %%.3f kg with %%d ice particles (%%.3f kg): centre of mass %%.4f m above the box centre, box bottom at %%.4f m',\n"
        "  q.mass, q.attached, q.attached_mass, shift, bottom))\n"
        "assert(q.attached_mass > q.mass and shift > d, 'the ice must move the centre of mass up by more than d: ' .. shift)\n"
        "assert(math.abs(bottom) < d / 2, 'the box bottom is ' .. bottom .. ' m off the floor')\n");
    cr_assert_eq(rc, 0, "%s", sc_err);
}

/* Joints hold the body, not its centre of mass: a plank on a hinge
 * through its centre, water poured on one end freezes there and stacks up
 * (fr = none), and the plank swings as a pendulum under the ice's weight.
 * Asserted every frame once the ice is on it (all 90 particles, 0.72 kg):
 * the plank's centre stays on the hinge (within 1e-3 m; with the hinge's
 * anchor left relative to ODE's body it would follow the centre of mass,
 * 9 cm off), and the energy m g y + M v^2 / 2 + w.I w / 2 of plank and
 * ice, with I from the plank's inertia and each ice particle where the
 * frame has it, stays within 1% of its first value over a swing of more
 * than 90 degrees. */
Test(rigid_ice, a_hinged_plank_swings_under_its_ice)
{
    floe_scene_opts o = sc_opts();
    int rc = sc_run(&o,
        SC_HEAD "local d = 0.02\n"
        "local sim = floe.sim{ dim = 3, spacing = d, gravity = {0, -9.81, 0}, domain = { min = {-0.1, -0.1, -0.1}, max = {0.7, 0.7, 0.3} } }\n"
        "sim:load{ 'sph', 'iisph', 'viscosity', 'freeze' }\n"
        "local rigid = sim:load 'rigid'\n"
        "local plank = rigid.body{ name = 'plank', shape = 'box', size = {0.44, 0.04, 0.12}, density = 300, position = {0.3, 0.3, 0.1} }\n"
        "rigid.hinge{ body = plank, anchor = {0.3, 0.3, 0.1}, axis = {0, 0, 1} }\n"
        "sim:boundary_box{ min = {0, 0, 0}, max = {0.6, 0.6, 0.2}, layers = 2, open_top = true, set = 'tank' }\n"
        "sim:boundary_set{ name = 'ice' }\n"
        "rigid.attach{ set = 'ice' }\n"
        "local n0 = sim:fluid_box{ min = {0.44, 0.34, 0.05}, max = {0.5, 0.46, 0.15}, velocity = {0, -0.5, 0} }\n"
        "sim:pipeline{ 'neighbours', 'sph.density', 'gravity', { 'viscosity.kim', boundary_beta0 = 1 }, 'iisph.solve',\n"
        "  { 'rigid.force', solver = 'iisph' }, { 'freeze.film', cold = 'bodies', alpha = 200 }, 'freeze.direction',\n"
        "  { 'freeze.transition', glaze = 5, icicle = 10, fr = 'none' }, 'integrate', 'rigid.step', 'freeze.carry' }\n"
        "local function energy(s)\n"
        "  local q = plank:state()\n"
        "  local c, w, I0 = q.centre_of_mass, q.angular_velocity, q.inertia\n"
        "  local a, bq, cq, dq = q.quaternion[1], q.quaternion[2], q.quaternion[3], q.quaternion[4]\n"
        "  local R = { { 1 - 2 * (cq * cq + dq * dq), 2 * (bq * cq - a * dq), 2 * (bq * dq + a * cq) },\n"
        "              { 2 * (bq * cq + a * dq), 1 - 2 * (bq * bq + dq * dq), 2 * (cq * dq - a * bq) },\n"
        "              { 2 * (bq * dq - a * cq), 2 * (cq * dq + a * bq), 1 - 2 * (bq * bq + cq * cq) } }\n"
        "  local I = {}\n"
        "  for i = 1, 3 do I[i] = {} for j = 1, 3 do local v = 0\n"
        "    for k = 1, 3 do for l = 1, 3 do v = v + R[i][k] * I0[k][l] * R[j][l] end end; I[i][j] = v end end\n"
        "  local function point(m, r)\n"
        "    local r2 = r[1] ^ 2 + r[2] ^ 2 + r[3] ^ 2\n"
        "    for i = 1, 3 do for j = 1, 3 do I[i][j] = I[i][j] + m * ((i == j and r2 or 0) - r[i] * r[j]) end end\n"
        "  end\n"
        "  point(q.mass, { q.position[1] - c[1], q.position[2] - c[2], q.position[3] - c[3] })\n"
        "  for i = 1, s:count 'ice' do\n"
        "    local x, y, z = s:get('ice', 'x', i)\n"
        "    point(s:get('ice', 'm', i), { x - c[1], y - c[2], z - c[3] }) end\n"
        "  local M = q.mass + q.attached_mass\n"
        "  local r = { c[1] - q.position[1], c[2] - q.position[2], c[3] - q.position[3] }\n"
        "  local v = { q.velocity[1] + w[2] * r[3] - w[3] * r[2], q.velocity[2] + w[3] * r[1] - w[1] * r[3], q.velocity[3] + w[1] * r[2] - w[2] * r[1] }\n"
        "  local rot = 0\n"
        "  for i = 1, 3 do for j = 1, 3 do rot = rot + w[i] * I[i][j] * w[j] end end\n"
        "  return M * 9.81 * c[2] + 0.5 * M * (v[1] ^ 2 + v[2] ^ 2 + v[3] ^ 2) + 0.5 * rot, q\n"
        "end\n"
        "local E0, worst, off, th0, th1 = nil, 0, 0, nil, nil\n"
        "sim:on_frame(function(s, st)\n"
        "  local q = plank:state()\n"
        "  if q.attached < n0 then return end\n"
        "  local E = energy(s)\n"
        "  local th = math.deg(2 * math.atan(q.quaternion[4], q.quaternion[1]))\n"
        "  if not E0 then E0, th0 = E, th end\n"
        "  th1 = th\n"
        "  worst = math.max(worst, math.abs(E - E0) / math.abs(E0))\n"
        "  off = math.max(off, math.sqrt((q.position[1] - 0.3) ^ 2 + (q.position[2] - 0.3) ^ 2 + (q.position[3] - 0.1) ^ 2))\n"
        "end)\n"
        "sim:run{ end_time = 0.45, fps = 20, dt = 0.002, out = 'o' }\n"
        "local q = plank:state()\n"
        "local c = q.centre_of_mass\n"
        "floe.log(string.format('plank %%.3f kg with %%d ice particles (%%.3f kg), centre of mass %%.3f m from the hinge: swung from %%.1f to %%.1f deg, worst |E - E0| / |E0| = %%.3g, centre off the hinge by %%.3g m',\n"
        "  q.mass, q.attached, q.attached_mass, math.sqrt((c[1] - 0.3) ^ 2 + (c[2] - 0.3) ^ 2), th0 or 0, th1 or 0, worst, off))\n"
        "assert(E0 and q.attached == n0, 'the poured water must freeze on the plank: ' .. q.attached .. ' of ' .. n0)\n"
        "assert(math.abs(th1 - th0) > 90, 'the plank did not swing: ' .. th0 .. ' -> ' .. th1)\n"
        "assert(off < 1e-3, 'the centre left the hinge by ' .. off .. ' m')\n"
        "assert(worst < 0.01, 'energy not kept: ' .. worst)\n");
    cr_assert_eq(rc, 0, "%s", sc_err);
}

/* Bad input: a set that is not there fails the step naming it; a key that
 * is not a name, or an unknown key, fails the scene line */
Test(rigid_ice, attach_refuses_what_is_not_there)
{
    floe_scene_opts o = sc_opts();
    const char *head = SC_HEAD "local sim = floe.sim{ dim = 3, spacing = 0.05, gravity = {0, -9.81, 0}, domain = { min = {-1, -1, -1}, max = {1, 1, 1} } }\n"
                               "sim:load{ 'sph', 'wcsph' }\n"
                               "local rigid = sim:load 'rigid'\n"
                               "rigid.body{ name = 'box', shape = 'box', size = {0.2, 0.2, 0.2}, density = 500, position = {0, 0, 0} }\n";
    char scene[2048];
    snprintf(scene, sizeof scene, "%s%s", head,
             "rigid.attach{ set = 'icee' }\n"
             "sim:pipeline{ 'neighbours', 'gravity', 'integrate', 'rigid.step' }\n"
             "sim:run{ frames = 1, fps = 10, dt = 0.01, out = 'o' }\n");
    cr_assert_neq(sc_run(&o, "%s", scene), 0);
    sc_expect_err("rigid.attach: no boundary set 'icee'");
    snprintf(scene, sizeof scene, "%s%s", head, "rigid.attach{ set = 5 }\n");
    cr_assert_neq(sc_run(&o, "%s", scene), 0);
    sc_expect_err("rigid.attach: 'set' must be a name");
    snprintf(scene, sizeof scene, "%s%s", head, "rigid.attach{ sett = 'ice' }\n");
    cr_assert_neq(sc_run(&o, "%s", scene), 0);
    sc_expect_err("sett");
}
