/* The freezing module from a Lua scene: sim:boundary_set, the ice written
 * with every frame (ids and masses that add up with the water's), the ice
 * surface and the pictures (docs/freezing.md, docs/lua-api.md). */
#include "cl_fixture.h"
#include "ply_read.h"
#include "scene_fixture.h"

TestSuite(freeze_scene, .init = sc_setup, .fini = sc_teardown);

#define SCENE                                                                                                   \
    SC_HEAD                                                                                                     \
    "local sim = floe.sim{ dim = 3, spacing = 0.02, gravity = {0, -9.81, 0},\n"                               \
    "  domain = { min = {-0.1, -0.1, -0.1}, max = {0.5, 0.6, 0.5} } }\n"                                      \
    "sim:load{ 'sph', 'iisph', 'viscosity', 'freeze', 'surface' }\n"                                                   \
    "sim:boundary_solid_box{ min = {0.1, 0.1, 0.1}, max = {0.3, 0.14, 0.3}, set = 'plate' }\n"                \
    "sim:boundary_box{ min = {0, 0, 0}, max = {0.4, 0.5, 0.4}, layers = 2, set = 'tank' }\n"                  \
    "assert(sim:boundary_set{ name = 'ice' } == 0)\n"                                                           \
    "sim:fluid_box{ min = {0.12, 0.16, 0.12}, max = {0.28, 0.26, 0.28}, velocity = {0, -0.5, 0} }\n"           \
    "sim:pipeline{ 'neighbours', 'sph.density', 'gravity',\n"                                                 \
    "  { 'viscosity.kim', boundary_beta0 = 1 }, 'iisph.solve',\n"                                              \
    "  { 'freeze.film', cold = 'plate', alpha = 60 }, 'freeze.direction',\n"                                    \
    "  { 'freeze.transition', glaze = 5, icicle = 20, fr = 'rescaled' }, 'integrate',\n"                        \
    "  { 'surface.anisotropic', sets = 'ice', name = 'ice_surface', format = 'obj' },\n"                       \
    "  { 'freeze.picture', eye = {0.8, 0.6, 0.8}, target = {0.2, 0.15, 0.2}, width = 64, height = 48,\n"       \
    "    solids = 'plate' } }\n"                                                                                \
    "sim:run{ frames = 6, fps = 25, dt = 0.002, out = 'o', name = 'water',\n"                                    \
    "  attributes = { 'v', 'id', 'm', 'ice_kind', 'ice_time' } }\n"

static uint32_t column(const char *file, const char *prop, float **out)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", sc_out, file);
    uint32_t n = 0;
    cr_assert_eq(ply_read_property(path, prop, &n, out), 0, "%s: no %s (%s)", path, prop, strerror(errno));
    return n;
}

Test(freeze_scene, ice_frames_add_up_with_the_water)
{
    floe_scene_opts o = sc_opts();
    cr_assert_eq(sc_run(&o, SCENE), 0, "%s", sc_err);
    float *m0 = NULL;
    const uint32_t n0 = column("water.0000.ply", "m", &m0);
    double mass0 = 0;
    for (uint32_t i = 0; i < n0; i++)
        mass0 += m0[i];
    uint32_t last = 0;
    for (int f = 0; f <= 6; f++) {
        char name[400];
        float *mw = NULL, *mi = NULL, *idw = NULL, *idi = NULL;
        snprintf(name, sizeof name, "water.%04d.ply", f);
        uint32_t nw = column(name, "m", &mw);
        column(name, "id", &idw);
        snprintf(name, sizeof name, "ice.%04d.ply", f);
        uint32_t ni = column(name, "m", &mi);
        column(name, "id", &idi);
        cr_assert_eq(nw + ni, n0, "frame %d: %u water + %u ice", f, nw, ni);
        double mass = 0;
        for (uint32_t i = 0; i < nw; i++)
            mass += mw[i];
        for (uint32_t i = 0; i < ni; i++)
            mass += mi[i];
        cr_assert_eq(mass, mass0, "frame %d: mass %.17g, initially %.17g", f, mass, mass0);
        char *seen = calloc(n0, 1);
        for (uint32_t i = 0; i < nw + ni; i++) {
            uint32_t id = (uint32_t)(i < nw ? idw[i] : idi[i - nw]);
            cr_assert_lt(id, n0);
            cr_assert_eq(seen[id], 0, "frame %d: id %u twice", f, id);
            seen[id] = 1;
        }
        free(seen);
        last = ni;
        free(mw), free(mi), free(idw), free(idi);
        snprintf(name, sizeof name, "%s/picture.%04d.png", sc_out, f);
        FILE *p = fopen(name, "rb");
        cr_assert_not_null(p, "no %s", name);
        unsigned char sig[8];
        cr_assert_eq(fread(sig, 1, 8, p), 8);
        fclose(p);
        cr_assert_eq(memcmp(sig, "\x89PNG\r\n\x1a\n", 8), 0, "%s is not a PNG", name);
        cr_assert(sc_exists("%s/ice_surface.%04d.obj", sc_out, f));
    }
    cr_assert_gt(last, 10, "only %u ice particles at the end", last);
    free(m0);
}

Test(freeze_scene, boundary_set_refuses_a_fluid_set_and_unknown_keys)
{
    floe_scene_opts o = sc_opts();
    cr_assert_neq(sc_run(&o, SC_HEAD SC_SIM "sim:fluid_box{ min = {0, 0, 0}, max = {0.2, 0.2, 0.2} }\n"
                                            "sim:boundary_set{ name = 'fluid' }\n"),
                  0);
    sc_expect_err("set 'fluid' is a fluid set");
    cr_assert_neq(sc_run(&o, SC_HEAD SC_SIM "sim:boundary_set{ nmae = 'ice' }\n"), 0);
    sc_expect_err("nmae");
}

/* Ice on a moving body moves with it (freeze.carry): a cold box of the
 * rigid module, kinematic (sliding 0.25 m/s along x and turning 90 deg/s
 * about y), under falling water that freezes on it (fr = none: whatever the
 * flow). In every frame each ice particle attached to the box is at
 * c(t) + R_y(theta(t)) ice_r0 (the box's pose from its own Lua function)
 * within 1e-4 m, and the ice frozen by the second frame has moved with the
 * box by the last (the box's centre 7.5 cm, a quarter turn less 27 deg). */
#define CARRY                                                                                                   \
    SC_HEAD                                                                                                     \
    "local sim = floe.sim{ dim = 3, spacing = 0.02, gravity = {0, -9.81, 0},\n"                               \
    "  domain = { min = {-0.1, -0.1, -0.1}, max = {0.7, 0.6, 0.5} } }\n"                                      \
    "sim:load{ 'sph', 'iisph', 'viscosity', 'freeze' }\n"                                                       \
    "local rigid = sim:load 'rigid'\n"                                                                        \
    "rigid.body{ name = 'box', shape = 'box', size = {0.16, 0.08, 0.16}, density = 900,\n"                     \
    "  position = {0.2, 0.15, 0.2},\n"                                                                         \
    "  kinematic = function(t) return { position = {0.2 + 0.25 * t, 0.15, 0.2}, rotation = {0, 90 * t, 0} } end }\n" \
    "sim:boundary_box{ min = {0, 0, 0}, max = {0.6, 0.5, 0.4}, layers = 2, set = 'tank' }\n"                  \
    "assert(sim:boundary_set{ name = 'ice' } == 0)\n"                                                           \
    "sim:fluid_box{ min = {0.14, 0.22, 0.14}, max = {0.26, 0.3, 0.26}, velocity = {0, -0.5, 0} }\n"            \
    "sim:pipeline{ 'neighbours', 'sph.density', 'gravity',\n"                                                 \
    "  { 'viscosity.kim', boundary_beta0 = 1 }, 'iisph.solve',\n"                                              \
    "  { 'freeze.film', cold = 'bodies', alpha = 60 }, 'freeze.direction',\n"                                   \
    "  { 'freeze.transition', glaze = 5, icicle = 20, fr = 'none' }, 'integrate', 'rigid.step',\n"             \
    "  'freeze.carry' }\n"                                                                                      \
    "sim:run{ frames = 8, fps = 20, dt = 0.002, out = 'o', name = 'water',\n"                                    \
    "  attributes = { 'id', 'ice_body', 'ice_r0', 'ice_kind' } }\n"

static void carried(const char *backend)
{
    floe_scene_opts o = sc_opts();
    o.backend = backend;
    cr_assert_eq(sc_run(&o, CARRY), 0, "%s", sc_err);
    float *x2 = NULL, *y2 = NULL, *z2 = NULL, *id2 = NULL;
    char name[64];
    snprintf(name, sizeof name, "ice.%04d.ply", 2);
    const uint32_t n2 = column(name, "x", &x2);
    column(name, "y", &y2);
    column(name, "z", &z2);
    column(name, "id", &id2);
    uint32_t attached_last = 0, icicles = 0;
    double worst = 0, moved_min = 1e9;
    for (int f = 1; f <= 8; f++) {
        snprintf(name, sizeof name, "ice.%04d.ply", f);
        float *x = NULL, *y = NULL, *z = NULL, *kb = NULL, *rx = NULL, *ry = NULL, *rz = NULL, *id = NULL, *k = NULL;
        const uint32_t n = column(name, "x", &x);
        column(name, "y", &y), column(name, "z", &z), column(name, "ice_body", &kb), column(name, "id", &id);
        column(name, "ice_r0_x", &rx), column(name, "ice_r0_y", &ry), column(name, "ice_r0_z", &rz);
        column(name, "ice_kind", &k);
        const double t = f / 20.0, th = M_PI / 2 * t, c[3] = {0.2 + 0.25 * t, 0.15, 0.2};
        uint32_t attached = 0;
        for (uint32_t i = 0; i < n; i++) {
            cr_assert(kb[i] == 1 || kb[i] == -1, "frame %d, ice %u: ice_body %g", f, i, kb[i]);
            if (kb[i] != 1)
                continue;
            attached++;
            icicles += f == 8 && k[i] == 2;
            const double e[3] = {c[0] + cos(th) * rx[i] + sin(th) * rz[i], c[1] + ry[i],
                                 c[2] - sin(th) * rx[i] + cos(th) * rz[i]};
            const double d = sqrt((x[i] - e[0]) * (x[i] - e[0]) + (y[i] - e[1]) * (y[i] - e[1]) +
                                  (z[i] - e[2]) * (z[i] - e[2]));
            worst = fmax(worst, d);
            cr_assert_lt(d, 1e-4, "frame %d, ice id %g: %.3g m from where the box carries it", f, id[i], d);
            if (f == 8)
                for (uint32_t j = 0; j < n2; j++)
                    if (id2[j] == id[i]) {
                        const double m = sqrt((x[i] - x2[j]) * (x[i] - x2[j]) + (y[i] - y2[j]) * (y[i] - y2[j]) +
                                              (z[i] - z2[j]) * (z[i] - z2[j]));
                        moved_min = fmin(moved_min, m);
                    }
        }
        if (f == 8)
            attached_last = attached;
        free(x), free(y), free(z), free(kb), free(rx), free(ry), free(rz), free(id), free(k);
    }
    cr_log_info("%s: %u ice particles on the box at 0.4 s (%u of them icicles, %u ice at 0.1 s), worst %.3g m from "
                "the box's pose; the ice of 0.1 s moved at least %.3f m",
                backend, attached_last, icicles, n2, worst, moved_min);
    cr_assert_gt(attached_last, 10, "only %u ice particles on the box", attached_last);
    cr_assert_gt(n2, 3, "only %u ice particles at 0.1 s", n2);
    cr_assert_gt(moved_min, 0.02, "ice of 0.1 s moved only %.3f m with the box", moved_min);
    free(x2), free(y2), free(z2), free(id2);
}

Test(freeze_scene, ice_on_a_moving_body_moves_with_it) { carried("cpu"); }

/* the same on the device (freeze.carry's run_cl: the poses from sums on the
 * device, the ice attached and placed there) */
Test(freeze_scene, ice_on_a_moving_body_moves_with_it_on_opencl)
{
    need_opencl();
    carried("opencl");
}

/* freeze.carry without the bodies' set, or with bodies that carry no r0:
 * the step fails naming the set */
Test(freeze_scene, carry_without_bodies_is_an_error)
{
    floe_scene_opts o = sc_opts();
    cr_assert_neq(sc_run(&o, SC_HEAD SC_SIM "sim:load{ 'freeze' }\n"
                                            "sim:fluid_box{ min = {0, 0, 0}, max = {0.3, 0.3, 0.3} }\n"
                                            "sim:boundary_set{ name = 'ice' }\n"
                                            "sim:pipeline{ 'freeze.carry' }\n"
                                            "sim:run{ frames = 1, fps = 10, dt = 0.01, out = 'o' }\n"),
                  0);
    sc_expect_err("no boundary set 'bodies' of moving bodies");
    o.force = 1;
    cr_assert_neq(sc_run(&o, SC_HEAD SC_SIM "sim:load{ 'freeze' }\n"
                                            "sim:fluid_box{ min = {0, 0, 0}, max = {0.3, 0.3, 0.3} }\n"
                                            "sim:boundary_solid_box{ min = {0, -0.3, 0}, max = {0.3, -0.1, 0.3}, set = 'slab' }\n"
                                            "sim:boundary_set{ name = 'ice' }\n"
                                            "sim:pipeline{ { 'freeze.carry', bodies = 'slab' } }\n"
                                            "sim:run{ frames = 1, fps = 10, dt = 0.01, out = 'o' }\n"),
                  0);
    sc_expect_err("set 'slab' has no vec3 attribute 'r0'");
}

/* The direction check on all the new ice, in its ledge scene
 * (scenes/icicle_ledge.lua's set-up, freezing.ledge: Kim's whole Algorithm
 * 1 water, He tension and air pressure, d = 1 cm, 1.2 s), pooled over
 * three pushes (0.28, 0.30, 0.31 m/s; one run is chaotic): the mean growth
 * direction (ice_dir) of every ice particle, glaze and icicle, is at least
 * 0.7 downward, and the lowest ice ends below the ledge's underside
 * (y = 0.30 m). With freeze.transition's min_froude = 0 (growth directions
 * from flow as slow as 2 cm/s, the noise of water resting on the ledge)
 * the resting water freezes layer on layer upward: the same pooled figure
 * is below 0.3 (docs/freezing.md has the runs). */
#define LEDGE_RUNS                                                                                              \
    SC_HEAD                                                                                                     \
    "local freezing = require 'floe.freezing'\n"                                                              \
    "local function pooled(mf)\n"                                                                             \
    "  local sx, sy, sz, n, lows = 0, 0, 0, 0, 0\n"                                                           \
    "  for k, push in ipairs { 0.28, 0.30, 0.31 } do\n"                                                       \
    "    local sim, ledge = freezing.ledge{ spacing = 0.01, model = 'kim', speed = push, min_froude = mf,\n"   \
    "                                       surface = false, pictures = false }\n"                              \
    "    sim:run{ end_time = 1.2, fps = 5, dt = 0.002, out = string.format('r%%d_%%g', k, mf), name = 'water' }\n" \
    "    local r = freezing.ledge_stats(sim, ledge.max[1])\n"                                                   \
    "    for i = 1, sim:count 'ice' do local x, y, z = sim:get('ice', 'ice_dir', i); sx, sy, sz = sx + x, sy + y, sz + z end\n" \
    "    n = n + r.ice; lows = lows + r.low / 3\n"                                                              \
    "    floe.log(string.format('min_froude %%g, push %%.2f: %%d water, %%d ice (%%d glaze, %%d icicle), all the ice %%.3f down, lowest %%.3f m',\n" \
    "      mf, push, r.water, r.ice, r.kinds[1], r.kinds[2], r.all_down, r.low))\n"                               \
    "  end\n"                                                                                                   \
    "  local down = -sy / math.sqrt(sx * sx + sy * sy + sz * sz)\n"                                            \
    "  floe.log(string.format('min_froude %%g pooled: %%d ice, mean growth direction %%.3f down, mean lowest ice %%.3f m', mf, n, down, lows))\n" \
    "  return down, lows, n\n"                                                                                  \
    "end\n"                                                                                                     \
    "local down, low, n = pooled(0.5)\n"                                                                        \
    "assert(n >= 150, 'too little ice to judge: ' .. n)\n"                                                      \
    "assert(down >= 0.7, string.format('all the new ice grew %%.3f downward (at least 0.7)', down))\n"          \
    "assert(low < 0.30 - 0.05, string.format('mean lowest ice %%.3f m: not 5 cm below the underside', low))\n"  \
    "local down0 = pooled(0)\n"                                                                                 \
    "assert(down0 < 0.3, string.format('min_froude = 0: all the ice %%.3f down, expected upward growth', down0))\n"

Test(freeze_scene, all_new_ice_on_the_ledge_grows_downward, .timeout = FLOE_TIMEOUT(600))
{
    floe_scene_opts o = sc_opts();
    o.threads = 1;
    cr_assert_eq(sc_run(&o, LEDGE_RUNS), 0, "%s", sc_err);
}
