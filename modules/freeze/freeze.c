/* The freezing module's descriptor: stages, parameters, attributes.
 * Kim 2020 Algorithm 1 after the water solver: freeze.film (eq. 25),
 * freeze.direction (eqs. 26-30), freeze.transition (eqs. 31-32); or
 * freeze.thermal, heat conduction with latent heat, on its own. */
#include "freeze.h"

#include <stdlib.h>

FLOE_MODULE_API_DEFINE;

/* short names for the kit's descriptor macros (<floe/module_desc.h>) */
#define PF FLOE_PARAM_F
#define PI_(n, d, lo, hi, doc_) FLOE_PARAM_I(n, d, lo, hi, "", doc_)
#define PS FLOE_PARAM_S
#define PB FLOE_PARAM_B
#define A FLOE_ATTR
#define COLD_DOC "cold solids: boundary sets, comma-separated (\"\" = every boundary set but the ice set)"
#define ICE_DOC "the boundary set that holds the ice (sim:boundary_set)"

static const floe_param_desc film_params[] = {
    PF("alpha", 20, 0, 1e6, "1/s", "film rate alpha of eq. 25: dGamma = alpha dt eta V_i sum_j m_j W_ij"),
    PS("cold", "", NULL, COLD_DOC),
    PS("ice", "ice", NULL, ICE_DOC),
    {0},
};
static const floe_attr_desc film_attrs[] = {
    A(FLOE_SET_FLUID, "x", FLOE_VEC3, FLOE_READ),
    A(FLOE_SET_FLUID, "m", FLOE_F32, FLOE_READ),
    A(FLOE_SET_BOUNDARY, "V", FLOE_F32, FLOE_READ),
    A(FLOE_SET_BOUNDARY, "Gamma", FLOE_F32, FLOE_READ | FLOE_WRITE),
    {0},
};

static const floe_param_desc dir_params[] = {
    PB("anisotropic", 1, "eqs. 27-30: anisotropic W_A from the fluid's covariance (false: the isotropic W)"),
    PF("max_stretch", 4, 1, 100, "", "eq. 30: largest ratio of the kernel's principal axes (Yu & Turk k_r)"),
    PI_("min_neighbours", 6, 0, 1000, "fluid particles with fewer fluid neighbours keep the isotropic kernel"),
    {0},
};
static const floe_attr_desc dir_attrs[] = {
    A(FLOE_SET_FLUID, "x", FLOE_VEC3, FLOE_READ),
    A(FLOE_SET_FLUID, "v", FLOE_VEC3, FLOE_READ),
    A(FLOE_SET_BOUNDARY, "gv", FLOE_VEC3, FLOE_WRITE | FLOE_OVERWRITE), /* m/s */
    {0},
};

static const floe_param_desc tr_params[] = {
    PF("glaze", 30, 0, 1e9, "kg/m^3", "gz_th: nucleation energy (eq. 32) against a cold solid above which water freezes"),
    PF("icicle", 45, 0, 1e9, "kg/m^3", "ic_th: nucleation energy (eq. 32) against ice above which water freezes"),
    PS("fr", "clamped", "rescaled|clamped|none",
       "eq. 31: (gv.u + 1) / 2 (the paper's rescale), max(gv.u, 0) (no growth against the flow), 1 (no direction)"),
    PF("min_speed", 0.02, 0, 1e3, "m/s",
       "flow slower than this (|gv|) gives no growth direction: gv.u = 0 in eq. 31 (0: every flow counts)"),
    PF("min_froude", 0.5, 0, 1e3, "",
       "nor does flow slower than this times sqrt(|g| d), the speed scale of the solver's own motion at spacing d "
       "(0: min_speed alone)"),
    {0},
};
static const floe_attr_desc tr_attrs[] = {
    A(FLOE_SET_FLUID, "x", FLOE_VEC3, FLOE_READ),
    A(FLOE_SET_FLUID, "m", FLOE_F32, FLOE_READ),
    A(FLOE_SET_FLUID, "id", FLOE_U32, FLOE_READ),
    A(FLOE_SET_BOUNDARY, "Gamma", FLOE_F32, FLOE_READ),
    A(FLOE_SET_BOUNDARY, "gv", FLOE_VEC3, FLOE_READ),
    A(FLOE_SET_BOUNDARY, "m", FLOE_F32, FLOE_WRITE),
    A(FLOE_SET_BOUNDARY, "id", FLOE_U32, FLOE_WRITE),
    A(FLOE_SET_BOUNDARY, "ice_dir", FLOE_VEC3, FLOE_WRITE),
    A(FLOE_SET_BOUNDARY, "ice_kind", FLOE_I32, FLOE_WRITE),
    A(FLOE_SET_BOUNDARY, "ice_time", FLOE_F32, FLOE_WRITE),
    {0},
};

static const floe_param_desc th_params[] = {
    PS("cold", "", NULL, COLD_DOC),
    PS("ice", "ice", NULL, ICE_DOC),
    PF("T_solid", -10, -273.15, 0, "C", "temperature the cold solids are held at"),
    PF("T_water", 0, 0, 100, "C", "temperature of the water when the stage first runs"),
    PF("k_water", 0.6, 1e-6, 1e4, "W/(m K)", "thermal conductivity of water"),
    PF("k_ice", 2.22, 1e-6, 1e4, "W/(m K)", "thermal conductivity of ice"),
    PF("k_solid", 2.22, 1e-6, 1e4, "W/(m K)", "thermal conductivity of the cold solids"),
    PF("c_water", 4186, 1, 1e6, "J/(kg K)", "specific heat of water"),
    PF("c_ice", 2100, 1, 1e6, "J/(kg K)", "specific heat of ice"),
    PF("latent", 334000, 1, 1e8, "J/kg", "latent heat of fusion"),
    {0},
};
static const floe_attr_desc th_attrs[] = {
    A(FLOE_SET_FLUID, "x", FLOE_VEC3, FLOE_READ),
    A(FLOE_SET_FLUID, "m", FLOE_F32, FLOE_READ),
    A(FLOE_SET_FLUID, "id", FLOE_U32, FLOE_READ),
    A(FLOE_SET_FLUID, "h", FLOE_F32, FLOE_READ | FLOE_WRITE),
    A(FLOE_SET_FLUID, "T", FLOE_F32, FLOE_WRITE),
    A(FLOE_SET_BOUNDARY, "V", FLOE_F32, FLOE_READ),
    A(FLOE_SET_BOUNDARY, "h", FLOE_F32, FLOE_READ | FLOE_WRITE),
    A(FLOE_SET_BOUNDARY, "T", FLOE_F32, FLOE_WRITE),
    A(FLOE_SET_BOUNDARY, "m", FLOE_F32, FLOE_WRITE),
    A(FLOE_SET_BOUNDARY, "id", FLOE_U32, FLOE_WRITE),
    A(FLOE_SET_BOUNDARY, "ice_dir", FLOE_VEC3, FLOE_WRITE),
    A(FLOE_SET_BOUNDARY, "ice_kind", FLOE_I32, FLOE_WRITE),
    A(FLOE_SET_BOUNDARY, "ice_time", FLOE_F32, FLOE_WRITE),
    {0},
};

static const floe_param_desc carry_params[] = {
    PS("ice", "ice", NULL, ICE_DOC),
    PS("bodies", "bodies", NULL,
       "the moving boundary set of the bodies: particles with 'body' (index) and 'r0' (position in the body frame), "
       "as the rigid module's"),
    {0},
};
static const floe_attr_desc carry_attrs[] = {
    /* and the ice's x (and v where a set has one): not declared, as the
     * bodies' x is rigid.step's and only the ice's changes here */
    A(FLOE_SET_BOUNDARY, "ice_body", FLOE_I32, FLOE_READ | FLOE_WRITE),
    A(FLOE_SET_BOUNDARY, "ice_r0", FLOE_VEC3, FLOE_READ | FLOE_WRITE),
    {0},
};

#define PV FLOE_PARAM_V
static const floe_param_desc pic_params[] = {
    PV("eye", 1, 0.8, 1.2, "m", "camera position"),
    PV("target", 0, 0.2, 0, "m", "point the camera looks at"),
    PF("fov", 40, 1, 170, "deg", "vertical field of view"),
    PI_("width", 640, 16, 8192, "image width in pixels"),
    PI_("height", 400, 16, 8192, "image height in pixels"),
    PS("solids", "", NULL, "boundary sets drawn as grey solids, comma-separated (the ice and the water always are)"),
    PS("ice", "ice", NULL, ICE_DOC),
    PS("name", "picture", NULL, "file base name: <name>.NNNN.png in the run's folder"),
    {0},
};

static const floe_stage_desc stages[] = {
    {FLOE_SIZED(floe_stage_desc), .serial = 1, .name = "film",
     .doc = "Kim 2020 eq. 25: the virtual water film Gamma of cold solid and ice particles, capped at one fluid "
            "particle's mass",
     .run = fz_film, .run_cl = fz_film_cl, .params = film_params, .attrs = film_attrs},
    {FLOE_SIZED(floe_stage_desc), .serial = 1, .name = "direction",
     .doc = "Kim 2020 eqs. 26-30: the fluid's anisotropic kernels (weighted covariance, eigen-decomposition) and "
            "the growth direction gv of solid and ice particles",
     .run = fz_direction, .run_cl = fz_direction_cl, .params = dir_params, .attrs = dir_attrs},
    {FLOE_SIZED(floe_stage_desc), .serial = 1, .name = "transition",
     .doc = "Kim 2020 eqs. 31-32: freezing coefficient and nucleation energy; water freezes to glaze (against a "
            "solid) or icicles (against ice) and moves to the ice set",
     .run = fz_transition, .run_cl = fz_transition_cl, .params = tr_params, .attrs = tr_attrs},
    {FLOE_SIZED(floe_stage_desc), .serial = 1, .name = "thermal",
     .doc = "heat conduction (Cleary & Monaghan 1999) between water, ice and cold solids with latent heat "
            "(enthalpy method); water that has given its latent heat moves to the ice set",
     .run = fz_thermal, .params = th_params, .attrs = th_attrs},
    {FLOE_SIZED(floe_stage_desc), .serial = 1, .name = "carry",
     .doc = "after the bodies moved (rigid.step): ice that grew on a moving body, or on ice attached to one, moves "
            "with it (its pose read from the body's particles)",
     .run = fz_carry, .run_cl = fz_carry_cl, .params = carry_params, .attrs = carry_attrs},
    {FLOE_SIZED(floe_stage_desc), .serial = 1, .name = "picture",
     .doc = "once a frame: a PNG of the water, the ice (glaze white, icicles cyan) and chosen solids as shaded "
            "spheres through a pinhole camera",
     .run = fz_picture, .params = pic_params, .per_frame = 1},
    {0},
};

static int fz_init(floe_ctx *ctx, void **state)
{
    (void)ctx;
    *state = calloc(1, sizeof(fz_state));
    return *state ? FLOE_OK : FLOE_ERR_NOMEM;
}

static void fz_fini(void *state)
{
    fz_state *s = state;
    if (!s)
        return;
    free(s->p.xf);
    free(s->p.vf);
    free(s->p.mf);
    free(s->p.xb);
    free(s->p.Vb);
    cg_free(&s->gf);
    cg_free(&s->gb);
    free(s->G);
    free(s->near);
    for (int t = 0; t < s->nthreads; t++)
        free(s->qbuf[t]);
    free(s->qbuf);
    free(s->qcap);
    free(s->carry_pose);
    free(s);
}

/* a checkpoint keeps whether the thermal stage has set the initial enthalpies */
static int fz_save(void *state, floe_state_io *out)
{
    int32_t v = ((fz_state *)state)->thermal_started;
    return out->write(out, &v, sizeof v) ? FLOE_ERR_IO : FLOE_OK;
}

static int fz_load(void *state, floe_state_io *in)
{
    int32_t v;
    if (in->read(in, &v, sizeof v))
        return FLOE_ERR_IO;
    ((fz_state *)state)->thermal_started = v != 0;
    return FLOE_OK;
}

FLOE_MODULE_DESC(freeze, .version = "1.0.0",
                 .summary = "Freezing water on cold solids: Kim 2020's film, anisotropic growth direction and "
                            "glaze/icicle phase change; or heat conduction with latent heat",
                 .stages = stages, .init = fz_init, .fini = fz_fini, .save = fz_save, .load = fz_load)
