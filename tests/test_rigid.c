/* The rigid module (issue 15 items 3-6): mass properties from closed
 * meshes, ODE's integration and resting contact, Newton's third law of the
 * coupling, per-frame output and the scene's bad input. Small scenes (a
 * few hundred particles, 2D or coarse 3D): seconds on 2 shared cores. The
 * floating checks (Archimedes, stability, displacement) are in
 * docs/rigid.md with their commands. */
#include "mesh_fixture.h"
#include "scene_fixture.h"

#include <math.h>

TestSuite(rigid, .init = sc_setup, .fini = sc_teardown, .timeout = FLOE_TIMEOUT(300));

/* Box and bunny: mass = rho V, the box's inertia m (b^2 + c^2) / 12 from
 * its 12 triangles, the bunny's volume as floe.mesh_info measures it, its
 * inertia tensor symmetric with positive principal moments obeying the
 * triangle inequality; checked in the scene (an assert fails the run). */
Test(rigid, mass_properties_of_box_and_bunny)
{
    floe_scene_opts o = sc_opts();
    const char *bunny = model("bunny_10k.obj");
    int rc = sc_run(&o,
        SC_HEAD "local sim = floe.sim{ dim = 3, spacing = 0.02, gravity = {0, 0, 0}, domain = { min = {-1, -1, -1}, max = {1, 1, 1} } }\n"
        "local rigid = sim:load 'rigid'\n"
        "local b = rigid.body{ name = 'crate', shape = 'box', size = {0.2, 0.4, 0.6}, density = 500, position = {0, 0, 0} }\n"
        "local q = b:state()\n"
        "local m = 500 * 0.2 * 0.4 * 0.6\n"
        "assert(math.abs(q.mass - m) < 1e-6 * m, 'box mass ' .. q.mass)\n"
        "local I = q.inertia\n"
        "local function near(a, e, what) assert(math.abs(a - e) < 1e-6 * math.abs(m), what .. ' ' .. a .. ' vs ' .. e) end\n"
        "near(I[1][1], m * (0.16 + 0.36) / 12, 'Ixx') near(I[2][2], m * (0.04 + 0.36) / 12, 'Iyy')\n"
        "near(I[3][3], m * (0.04 + 0.16) / 12, 'Izz') near(I[1][2], 0, 'Ixy') near(I[1][3], 0, 'Ixz')\n"
        "assert(q.particles > 0)\n"
        "local info = floe.mesh_info{ file = '%s', scale = 2 }\n"
        "local r = rigid.body{ name = 'bunny', file = '%s', scale = 2, mass = 3 }\n"
        "local s = r:state()\n"
        "assert(math.abs(s.volume - info.volume) < 1e-6 * info.volume, 'bunny volume ' .. s.volume .. ' vs ' .. info.volume)\n"
        "assert(math.abs(s.mass - 3) < 1e-12)\n"
        "local J = s.inertia\n"
        "for i = 1, 3 do for j = 1, 3 do assert(math.abs(J[i][j] - J[j][i]) < 1e-12, 'symmetric') end end\n"
        "assert(J[1][1] > 0 and J[2][2] > 0 and J[3][3] > 0)\n"
        "assert(J[1][1] + J[2][2] >= J[3][3] and J[2][2] + J[3][3] >= J[1][1] and J[1][1] + J[3][3] >= J[2][2])\n"
        "-- the centre: the mesh's centre of volume, away from its bounding box's middle\n"
        "assert(s.position[2] > info.min[2] and s.position[2] < info.max[2])\n"
        "floe.log(string.format('bunny x2: volume %%.6g m^3, I diag %%.4g %%.4g %%.4g', s.volume, J[1][1], J[2][2], J[3][3]))\n",
        bunny, bunny);
    cr_assert_eq(rc, 0, "%s", sc_err);
}

/* No fluid: a box falls (symplectic Euler: y = y0 - g t (t + dt) / 2) and
 * comes to rest on the floor half-space: penetration below d/2, and from
 * then on no energy gain over 2 s. */
Test(rigid, falls_then_rests_on_the_floor)
{
    floe_scene_opts o = sc_opts();
    int rc = sc_run(&o,
        SC_HEAD "local sim = floe.sim{ dim = 3, spacing = 0.05, gravity = {0, -9.81, 0}, domain = { min = {-0.6, -0.1, -0.6}, max = {0.6, 1, 0.6} } }\n"
        "sim:load{ 'sph', 'wcsph' }\n"
        "local rigid = sim:load 'rigid'\n"
        "sim:fluid_box{ min = {0.4, 0.8, 0.4}, max = {0.5, 0.9, 0.5} }\n"
        "local b = rigid.body{ name = 'crate', shape = 'box', size = {0.2, 0.2, 0.2}, density = 2000, position = {0, 0.5, 0} }\n"
        "rigid.walls{ min = {-0.5, 0, -0.5}, max = {0.5, 1, 0.5}, open_top = true }\n"
        "rigid.settings{ restitution = 0 }\n"
        "sim:pipeline{ 'neighbours', 'gravity', 'integrate', 'rigid.step', 'rigid.output' }\n"
        "local dt, t1 = 0.002, 0.2\n"
        "sim:run{ end_time = t1, fps = 5, dt = dt, out = 'fall' }\n"
        "local q = b:state()\n"
        "local exact = 0.5 - 9.81 * t1 * (t1 + dt) / 2\n"
        "assert(math.abs(q.position[2] - exact) < 1e-6, 'free fall ' .. q.position[2] .. ' vs ' .. exact)\n"
        "local emax = -1e30\n"
        "sim:on_frame(function(s, st) local p = b:state(); local e = p.mass * 9.81 * p.position[2] + 0.5 * p.mass * (p.velocity[1]^2 + p.velocity[2]^2 + p.velocity[3]^2)\n"
        "  local pen = 0.1 - p.position[2]\n"
        "  if st.time > 1 then assert(pen < 0.025, 'penetration ' .. pen) if emax > -1e30 then assert(e <= emax + 1e-6, 'energy gain ' .. e - emax) end emax = math.max(emax, e) end end)\n"
        "sim:run{ end_time = 3.2, fps = 10, dt = dt, out = 'fall' }\n"
        "local p = b:state()\n"
        "floe.log(string.format('resting: bottom at %%.5f m (d/2 = 0.025), speed %%.2e', p.position[2] - 0.1, math.abs(p.velocity[2])))\n");
    cr_assert_eq(rc, 0, "%s", sc_err);
    cr_assert(sc_exists("%s/crate.0005.obj", sc_out), "the body's mesh per frame");
    char *csv = sc_slurp("%s/bodies.csv", sc_out);
    cr_assert(strstr(csv, "t,id,name,x,y,z,qw,qx,qy,qz,vx,vy,vz,wx,wy,wz,Fx,Fy,Fz,Tx,Ty,Tz\n") == csv, "%.200s", csv);
    cr_assert(strstr(csv, ",1,crate,") != NULL);
    free(csv);
}

/* Newton's third law, pair by pair: without walls, a WCSPH blob moving
 * into a free sphere, in zero gravity or (gy < 0, for the extrapolated
 * boundary pressure's hydrostatic term) under gravity. Each step the
 * fluid's total force sum_i m_i (a_i - g) (its internal pressure forces
 * cancel) must equal minus the force the module gives the sphere, to 1e-5
 * of it, on every step the two touch (under gravity: with at least 10 N/m
 * on the sphere, as a_i - g in float resolves some 1e-4 N/m of the sum).
 * Checked in a Lua stage after rigid.force. */
static void third_law_g(const char *couple, double gy)
{
    floe_scene_opts o = sc_opts();
    int rc = sc_run(&o,
        SC_HEAD "local gy = %g\n"
        "local fmin = gy == 0 and 1e-3 or 10 -- under gravity the float a_i - g resolves some 1e-4 N/m of the sum\n"
        "local sim = floe.sim{ dim = 2, spacing = 0.02, gravity = {0, gy}, domain = { min = {-1, -1}, max = {1, 1} } }\n"
        "sim:load{ 'sph', 'wcsph' }\n"
        "local rigid = sim:load 'rigid'\n"
        "sim:fluid_box{ min = {-0.3, -0.1}, max = {-0.1, 0.1}, velocity = {2, 0.3} }\n"
        "local b = rigid.body{ name = 'ball', shape = 'sphere', radius = 0.08, density = 800, position = {0.05, 0} }\n"
        "local worst, touched = 0, 0\n"
        "sim:pipeline{ 'neighbours', 'sph.density', { 'wcsph.pressure', speed_of_sound = 20 }, 'gravity',\n"
        "  %s,\n"
        "  function(s)\n"
        "    local fx, fy = 0, 0\n"
        "    for i = 1, s:count 'fluid' do local m = s:get('fluid', 'm', i); local ax, ay = s:get('fluid', 'a', i); fx = fx + m * ax; fy = fy + m * (ay - gy) end\n"
        "    local F = b:state().force\n"
        "    local n = math.sqrt(F[1]^2 + F[2]^2)\n"
        "    if n > fmin then touched = touched + 1; worst = math.max(worst, math.sqrt((fx + F[1])^2 + (fy + F[2])^2) / n) end\n"
        "  end, 'integrate', 'rigid.step' }\n"
        "sim:run{ end_time = 0.1, fps = 10, dt = 0.0005, out = 'law' }\n"
        "floe.log(string.format('third law: %%d steps in contact, worst |F_fluid + F_body| / |F_body| = %%.3g', touched, worst))\n"
        "assert(touched > 20, 'the blob must hit the ball (' .. touched .. ' steps)')\n"
        "assert(worst < 1e-5, 'third law broken: ' .. worst)\n", gy, couple);
    cr_assert_eq(rc, 0, "%s", sc_err);
}

static void third_law(const char *couple) { third_law_g(couple, 0.0); }

Test(rigid, third_law_per_step)
{
    third_law("{ 'rigid.viscosity', alpha = 0.1, speed_of_sound = 20 }, 'wcsph.pressure_force', 'rigid.force'");
}

/* rigid.force{alpha}: the friction in the pressure's pass, the same law */
Test(rigid, third_law_per_step_one_pass)
{
    third_law("'wcsph.pressure_force', { 'rigid.force', alpha = 0.1, speed_of_sound = 20 }");
}

/* under gravity, the body's pressure extrapolated (wcsph's default) or
 * mirrored: the hydrostatic term the module adds to the fluid is the
 * opposite of the body's */
Test(rigid, third_law_per_step_extrapolated_under_gravity)
{
    third_law_g("'wcsph.pressure_force', { 'rigid.force', alpha = 0.1, speed_of_sound = 20 }", -9.81);
}

Test(rigid, third_law_per_step_mirrored_under_gravity)
{
    third_law_g("'wcsph.pressure_force', { 'rigid.force', alpha = 0.1, speed_of_sound = 20, boundary_pressure = 'mirror' }",
                -9.81);
}

/* the friction once: rigid.viscosity and rigid.force{alpha} together are refused */
Test(rigid, friction_in_two_stages_is_refused)
{
    floe_scene_opts o = sc_opts();
    int rc = sc_run(&o,
        SC_HEAD "local sim = floe.sim{ dim = 2, spacing = 0.02, gravity = {0, -9.81}, domain = { min = {-1, -1}, max = {1, 1} } }\n"
        "sim:load{ 'sph', 'wcsph' }\n"
        "local rigid = sim:load 'rigid'\n"
        "sim:fluid_box{ min = {-0.2, -0.2}, max = {0.2, 0} }\n"
        "rigid.body{ name = 'ball', shape = 'sphere', radius = 0.08, density = 500, position = {0, 0.04} }\n"
        "sim:pipeline{ 'neighbours', 'sph.density', { 'wcsph.pressure', speed_of_sound = 20 }, 'gravity',\n"
        "  { 'rigid.viscosity', alpha = 0.1 }, 'wcsph.pressure_force', { 'rigid.force', alpha = 0.1 },\n"
        "  'integrate', 'rigid.step' }\n"
        "sim:run{ frames = 1, fps = 100, dt = 0.001, out = 'twice' }\n");
    cr_assert_neq(rc, 0, "the scene should fail");
    cr_expect(strstr(sc_err, "keep one of the two") != NULL, "got:\n%s", sc_err);
}

/* Bad input: clear errors naming the file (and the line) and the problem. */
static void bad(const char *body, const char *want1, const char *want2)
{
    floe_scene_opts o = sc_opts();
    int rc = sc_run(&o, SC_HEAD "local sim = floe.sim{ dim = 3, spacing = 0.02, domain = { min = {-1, -1, -1}, max = {1, 1, 1} } }\n"
                                "local rigid = sim:load 'rigid'\n%s\n", body);
    cr_assert_neq(rc, 0, "should fail: %s", body);
    cr_expect(strstr(sc_err, want1) != NULL, "error should contain \"%s\", got:\n%s", want1, sc_err);
    if (want2)
        cr_expect(strstr(sc_err, want2) != NULL, "error should contain \"%s\", got:\n%s", want2, sc_err);
    cr_expect(strstr(sc_err, "scene.lua:4:") != NULL, "error should name the scene's line, got:\n%s", sc_err);
}

Test(rigid, bad_input)
{
    bad("rigid.body{ file = '/no/such/mesh.obj', density = 500 }", "/no/such/mesh.obj", "rigid.body");
    char junk[400];
    snprintf(junk, sizeof junk, "%s/junk.obj", sc_tmp);
    FILE *f = fopen(junk, "w");
    fputs("this is not a mesh\n\x01\x02\x03", f);
    fclose(f);
    char line[600];
    snprintf(line, sizeof line, "rigid.body{ file = '%s', density = 500 }", junk);
    bad(line, "junk.obj", NULL);
    snprintf(line, sizeof line, "rigid.body{ file = '%s', object = 'Teapot01', density = 500 }", TEAPOT);
    bad(line, "teapots.DAE", "not closed");
    bad("rigid.body{ shape = 'box', size = {0.2, 0.2, 0.2}, density = 0 }", "'density' must be positive", NULL);
    bad("rigid.body{ shape = 'box', size = {0.2, 0.2, 0.2}, mass = -1 }", "'mass' must be positive", NULL);
    bad("rigid.body{ shape = 'box', size = {0.2, 0.2, 0.2} }", "either 'density'", NULL);
    bad("rigid.body{ shape = 'box', size = {0.01, 0.2, 0.2}, density = 500 }", "two particle spacings", NULL);
    bad("rigid.body{ shape = 'cone', density = 500 }", "unknown shape 'cone'", NULL);
    bad("rigid.body{ shape = 'box', size = {0.2, 0.2, 0.2}, density = 500, colour = 1 }", "unknown key 'colour'", NULL);
    bad("rigid.hinge{ body = 'nobody', anchor = {0, 0, 0} }", "no rigid body named 'nobody'", NULL);
}
