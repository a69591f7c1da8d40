/* The freezing module from a Lua scene: sim:boundary_set, the ice written
 * with every frame (ids and masses that add up with the water's), the ice
 * surface and the pictures (docs/freezing.md, docs/lua-api.md). */
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
