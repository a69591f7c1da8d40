/* Verlet lists on the OpenCL backend (core/src/opencl/verlet.c): the
 * neighbours stage with a skin gives, at every step of a violent 2D dam
 * break and of a 3D one, the neighbour sets within the support radius that
 * a search from scratch on the host gives (compared by id, for the fluid
 * in itself and in the walls), through deletes, additions, a reversed order
 * and a teleported particle, also where every build for displacement is
 * found only when the step's displacements are settled (the stages run on
 * the cut lists run again), with either cut (in build order, or in place:
 * FLOE_CL_VERLET_CUT=swap); the lists were reused on most steps and
 * rebuilt by the displacement rule; and the run's positions equal those of
 * building every step within float-order tolerance. */
#include "cl_fixture.h"
#include "sim_fixture.h"

#include "ctx.h"
#include "floe/module.h"
#include "neighbours.h"

#define KV_F(n, x) ((floe_param_kv){(n), FLOE_PARAM_FLOAT, {.f = (x)}})
#define KV_S(n, x) ((floe_param_kv){(n), FLOE_PARAM_STRING, {.s = (x)}})

typedef struct check {
    floe_set fluid, bnd;
    long steps, pairs, mismatches, near;
    nb_sorted ref_sort;
    nb_list ref;
} check;

static int cmp_u32(const void *a, const void *b)
{
    const uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* pairs within a few float steps of the support radius: the device and the
 * host may round their distances differently (contracted multiply-adds) */
static int borderline(const float *xq, uint32_t i, const float *xt, uint32_t j, int dim, float h)
{
    double d2 = 0;
    for (int k = 0; k < dim; k++) {
        const double d = (double)xt[3 * j + k] - xq[3 * i + k];
        d2 += d * d;
    }
    return fabs(d2 - (double)h * h) < 1e-6 * (double)h * h;
}

/* the lists of fluid in target (the device's, copied to the host) against
 * a build from scratch, as sets of ids */
static void compare_target(floe_ctx *ctx, check *c, floe_set target)
{
    const floe_api *api = floe_core_api();
    const floe_nlist *nl = api->neighbours(ctx, c->fluid, target);
    cr_assert_not_null(nl);
    pset *pq = ctx_set(ctx, c->fluid), *pt = ctx_set(ctx, target);
    const float *xq = pset_attr(pq, "x")->data, *xt = pset_attr(pt, "x")->data;
    const uint32_t *idq = pset_attr(pq, "id")->data;
    const attr *ida = pset_attr(pt, "id");
    const uint32_t *idt = ida ? ida->data : NULL; /* the walls never move: their index */
    const int same = pq == pt, dim = ctx->info.dim;
    const float h = ctx->info.support;
    cr_assert_eq(nb_sort(&c->ref_sort, &ctx->nbgrid, xt, pt->n), 0);
    cr_assert_eq(nb_build(&c->ref, &ctx->nbgrid, xq, pq->n, &c->ref_sort, xt, h, same), 0);
    cr_assert_eq(nl->n, pq->n);
    uint32_t a[1024], b[1024];
    for (uint32_t i = 0; i < pq->n; i++) {
        uint32_t na = 0, nb = 0;
        cr_assert(nl->count[i] < 1024 && c->ref.count[i] < 1024);
        for (uint32_t q = 0; q < nl->count[i]; q++) {
            const uint32_t j = nl->idx[(size_t)i * nl->stride + q];
            if (borderline(xq, i, xt, j, dim, h))
                c->near++;
            else
                a[na++] = idt ? idt[j] : j;
        }
        for (uint32_t q = 0; q < c->ref.count[i]; q++) {
            const uint32_t j = c->ref.idx[(size_t)i * c->ref.stride + q];
            if (!borderline(xq, i, xt, j, dim, h))
                b[nb++] = idt ? idt[j] : j;
        }
        qsort(a, na, sizeof a[0], cmp_u32);
        qsort(b, nb, sizeof b[0], cmp_u32);
        if (na != nb || memcmp(a, b, na * sizeof a[0])) {
            if (c->mismatches < 5)
                cr_log_error("step %ld: particle id %u has %u neighbours in '%s', a search from scratch %u", c->steps,
                             idq[i], na, pt->name, nb);
            c->mismatches++;
        }
        c->pairs += na;
    }
}

static int check_stage(const floe_stage_call *call)
{
    check *c = call->user;
    compare_target(call->ctx, c, c->fluid);
    compare_target(call->ctx, c, c->bnd);
    c->steps++;
    return FLOE_OK;
}

/* a column of water 0.4 x 0.8 (x 0.2) m falling into a 1.6 m tank on the
 * OpenCL backend; c: the lists checked after the neighbours stage */
static fixture dam(int dim, float d, double skin, check *c)
{
    setenv("FLOE_MODULE_PATH", FLOE_TEST_BUILD_ROOT "/modules", 1);
    const float tank[3] = {1.6f, 1.0f, dim == 3 ? 0.2f : 0.0f}, water[3] = {0.4f, 0.8f, dim == 3 ? 0.2f : 0.0f};
    floe_sim_def def = floe_sim_default_def();
    def.dim = dim;
    def.spacing = d;
    def.threads = 2;
    def.backend = "opencl";
    for (int k = 0; k < 3; k++) {
        def.domain_min[k] = -4 * d;
        def.domain_max[k] = tank[k] + 4 * d + (k == 1 ? tank[1] : 0);
    }
    char err[1024];
    fixture f;
    f.ctx = floe_ctx_create(&def, err, sizeof err);
    cr_assert_not_null(f.ctx, "%s", err);
    f.fluid = floe_set_create(f.ctx, "fluid", FLOE_SET_FLUID, 1000);
    f.bnd = floe_set_create(f.ctx, "boundary", FLOE_SET_BOUNDARY, 0);
    float zero[3] = {0, 0, 0};
    cr_assert(floe_fill_box(f.ctx, f.fluid, zero, water, NULL) > 0);
    cr_assert(floe_boundary_box(f.ctx, f.bnd, zero, tank, 2, FLOE_OPEN_TOP) > 0);
    cr_assert_eq(floe_module_load(f.ctx, "wcsph"), FLOE_OK, "%s", floe_ctx_error(f.ctx));
    cr_assert_eq(floe_module_load(f.ctx, "sph"), FLOE_OK, "%s", floe_ctx_error(f.ctx));
    floe_param_kv nk[] = {KV_F("skin", skin)};
    fixture_add(&f, "neighbours", 1, nk);
    if (c) {
        c->fluid = f.fluid;
        c->bnd = f.bnd;
        cr_assert_eq(floe_pipeline_add_fn(f.ctx, "check", check_stage, c), FLOE_OK);
    }
    fixture_add(&f, "sph.density", 0, NULL);
    floe_param_kv pk[] = {KV_F("speed_of_sound", 30)};
    fixture_add(&f, "wcsph.pressure", 1, pk);
    fixture_add(&f, "gravity", 0, NULL);
    floe_param_kv vk[] = {KV_S("kind", "artificial"), KV_F("alpha", 0.02)};
    fixture_add(&f, "wcsph.viscosity", 2, vk);
    fixture_add(&f, "wcsph.pressure_force", 0, NULL);
    fixture_add(&f, "integrate", 0, NULL);
    return f;
}

#define DT 2.5e-4

/* the neighbour updates that built the lists (the stage's statistic
 * `name`, summed over the steps) */
static double stat_sum(floe_ctx *ctx, const char *name, double *updates)
{
    for (int k = 0; k < ctx->nstats; k++)
        if (!strcmp(ctx->stats[k].name, name)) {
            *updates = (double)ctx->stats[k].count;
            return ctx->stats[k].sum;
        }
    *updates = 0;
    return 0;
}

static double rebuilt(floe_ctx *ctx, double *updates) { return stat_sum(ctx, "neighbours.rebuilt", updates); }

/* delete every 23rd particle (by id), then append three copies of the first
 * particles a little above them */
static void delete_and_add(floe_ctx *ctx, floe_set s, int round)
{
    const uint32_t n0 = floe_set_size(ctx, s);
    pset *p = ctx_set(ctx, s);
    const uint32_t *id = floe_attr(ctx, s, "id", FLOE_U32);
    uint8_t *keep = malloc(n0);
    for (uint32_t i = 0; i < n0; i++)
        keep[i] = (id[i] + (uint32_t)round) % 23 != 0;
    cr_assert_eq(ctx_set_compact(ctx, s, keep), FLOE_OK);
    free(keep);
    const uint32_t n = p->n;
    cr_assert_eq(ctx_set_resize(ctx, s, n + 3), FLOE_OK);
    for (int a = 0; a < p->nattrs; a++) {
        attr *at = &p->attrs[a];
        void *data = floe_attr(ctx, s, at->name, at->type);
        const size_t es = floe_type_size(at->type);
        for (uint32_t k = 0; k < 3; k++)
            memcpy((char *)data + (n + k) * es, (char *)data + k * es, es);
    }
    float *x = floe_attr(ctx, s, "x", FLOE_VEC3);
    uint32_t *idw = floe_attr(ctx, s, "id", FLOE_U32);
    for (uint32_t k = 0; k < 3; k++) {
        x[3 * (n + k) + 1] += 0.9f;
        idw[n + k] = p->next_id++;
    }
}

/* late: the builds decided only by the settled displacements of each step
 * (FLOE_CL_VERLET_PREDICT=0), so every build for displacement comes after
 * the stages ran on the cut lists, which then run again */
static void sets_equal_cut(int dim, float d, int steps, int late, const char *cut)
{
    need_opencl();
    check c = {0};
    if (late)
        setenv("FLOE_CL_VERLET_PREDICT", "0", 1);
    if (cut)
        setenv("FLOE_CL_VERLET_CUT", cut, 1);
    fixture f = dam(dim, d, 0.3, &c);
    unsetenv("FLOE_CL_VERLET_PREDICT");
    unsetenv("FLOE_CL_VERLET_CUT");
    for (int step = 1; step <= steps; step++) {
        if (step % 400 == 0) /* particles deleted and added between steps */
            delete_and_add(f.ctx, f.fluid, step / 400);
        if (step % 500 == 250) { /* an order reversed */
            const uint32_t n = floe_set_size(f.ctx, f.fluid);
            uint32_t *perm = malloc(n * sizeof *perm);
            for (uint32_t i = 0; i < n; i++)
                perm[i] = n - 1 - i;
            cr_assert_eq(floe_set_reorder(f.ctx, f.fluid, perm), FLOE_OK);
            free(perm);
        }
        if (step == steps / 2 + 11) { /* a particle moved far without telling anyone */
            float *x = floe_attr(f.ctx, f.fluid, "x", FLOE_VEC3);
            x[3 * 7] += 0.5f;
            x[3 * 7 + 1] += 0.05f;
        }
        cr_assert_eq(floe_step(f.ctx, DT), FLOE_OK, "step %d: %s", step, floe_ctx_error(f.ctx));
    }
    double updates, late_updates, builds = rebuilt(f.ctx, &updates);
    const double late_builds = stat_sum(f.ctx, "neighbours.rebuilt_late", &late_updates);
    cr_log_info("%dD, %d steps: %.0f list builds (%.0f late) in %.0f updates, %ld pairs checked (%ld within 1e-6 of "
                "the support, not compared)", dim, steps, builds, late_builds, updates, c.pairs, c.near);
    if (late)
        cr_expect_gt(late_builds, steps / 400 * 2 + 6, "%.0f late builds: the settled displacements never built",
                     late_builds);
    cr_expect_eq(c.mismatches, 0, "%ld rows differ from a search from scratch", c.mismatches);
    cr_expect_eq(c.steps, steps);
    cr_expect_eq(updates, steps, "the device stage's statistic: %.0f updates in %d steps", updates, steps);
    /* the lists were reused most steps (else this tests nothing), and
     * rebuilt more often than the forced rebuilds (changes) */
    cr_expect_lt(builds, steps / 3, "%.0f builds in %d steps", builds, steps);
    cr_expect_gt(builds, steps / 400 * 2 + 6, "%.0f builds in %d steps: the displacement rule never fired?",
                 builds, steps);
    nb_sorted_free(&c.ref_sort);
    nb_list_free(&c.ref);
    floe_ctx_destroy(f.ctx);
}

static void sets_equal(int dim, float d, int steps, int late) { sets_equal_cut(dim, d, steps, late, NULL); }

Test(verlet_cl, neighbour_sets_equal_a_search_from_scratch_every_step_2d) { sets_equal(2, 0.02f, 1600, 0); }

/* the cut in place (FLOE_CL_VERLET_CUT=swap), both ways of building */
Test(verlet_cl, neighbour_sets_equal_with_the_cut_in_place)
{
    sets_equal_cut(2, 0.02f, 600, 0, "swap");
    sets_equal_cut(2, 0.02f, 600, 1, "swap");
}

Test(verlet_cl, neighbour_sets_equal_a_search_from_scratch_every_step_3d) { sets_equal(3, 0.04f, 400, 0); }

Test(verlet_cl, neighbour_sets_equal_with_every_build_found_late) { sets_equal(2, 0.02f, 1200, 1); }

/* mean distance between the particles of two runs, matched by id */
static double mean_apart(fixture *a, fixture *b)
{
    const uint32_t n = floe_set_size(a->ctx, a->fluid);
    cr_assert_eq(n, floe_set_size(b->ctx, b->fluid));
    const float *xa = floe_attr(a->ctx, a->fluid, "x", FLOE_VEC3), *xb = floe_attr(b->ctx, b->fluid, "x", FLOE_VEC3);
    const uint32_t *ia = floe_attr(a->ctx, a->fluid, "id", FLOE_U32);
    const uint32_t *ib = floe_attr(b->ctx, b->fluid, "id", FLOE_U32);
    uint32_t *at = malloc(n * sizeof *at);
    for (uint32_t i = 0; i < n; i++)
        at[ia[i]] = i;
    double mean = 0;
    for (uint32_t i = 0; i < n; i++) {
        const uint32_t j = at[ib[i]];
        mean += hypot(xa[3 * j] - xb[3 * i], xa[3 * j + 1] - xb[3 * i + 1]) / n;
    }
    free(at);
    return mean;
}

/* Building every step (a) against a skin of 0.2 support radii (b), and
 * against building every step from positions one float step apart (c),
 * all on the device: the flow is chaotic, so any difference in the last
 * bit grows; the skin must part the runs no faster than a difference in
 * the last bit of the positions does. */
Test(verlet_cl, positions_equal_building_every_step_to_float_order)
{
    need_opencl();
    fixture a = dam(2, 0.02f, 0.0, NULL), b = dam(2, 0.02f, 0.2, NULL), c = dam(2, 0.02f, 0.0, NULL);
    float *xc = floe_attr(c.ctx, c.fluid, "x", FLOE_VEC3);
    for (uint32_t i = 0; i < 3 * floe_set_size(c.ctx, c.fluid); i++)
        xc[i] = nextafterf(xc[i], INFINITY);
    for (int step = 1; step <= 400; step++) {
        cr_assert_eq(floe_step(a.ctx, DT), FLOE_OK, "%s", floe_ctx_error(a.ctx));
        cr_assert_eq(floe_step(b.ctx, DT), FLOE_OK, "%s", floe_ctx_error(b.ctx));
        cr_assert_eq(floe_step(c.ctx, DT), FLOE_OK, "%s", floe_ctx_error(c.ctx));
        if (step % 100 == 0) {
            const double ab = mean_apart(&a, &b), ac = mean_apart(&a, &c);
            cr_log_info("step %d: skin 0.2 %.3g m, last bit %.3g m from building every step", step, ab, ac);
            cr_expect_lt(ab, 10 * ac + 1e-9, "step %d: the skin parts the runs by %g m, a last bit by %g m", step,
                         ab, ac);
            cr_expect_lt(ab, 1e-3 * 0.02 * (step / 100) * (step / 100), "step %d: %g m apart", step, ab);
        }
    }
    double updates, builds = rebuilt(b.ctx, &updates);
    cr_expect_lt(builds, 400 / 2, "%.0f builds", builds);
    floe_ctx_destroy(a.ctx);
    floe_ctx_destroy(b.ctx);
    floe_ctx_destroy(c.ctx);
}
