/* Verlet lists (core/src/nb_verlet.c): the neighbours stage with a skin
 * gives, at every step of a violent 2D dam break, the neighbour sets within
 * the support radius that a search from scratch gives (compared by id, for
 * the fluid in itself and in the walls), through deletes, additions,
 * reorders and a teleported particle; the kernel sums of the cut rows are
 * the row sums; and the run's positions equal those of building every
 * step within float-order tolerance. */
#include "sim_fixture.h"

#include "ctx.h"
#include "floe/module.h"
#include "neighbours.h"

typedef struct check {
    floe_set fluid, bnd;
    long steps, pairs, mismatches, sums_checked, sums_bad;
    nb_sorted ref_sort;
    nb_list ref;
} check;

static int cmp_u32(const void *a, const void *b)
{
    const uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* the lists of fluid in target against a build from scratch, as sets of ids */
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
    const int same = pq == pt;
    cr_assert_eq(nb_sort(&c->ref_sort, &ctx->nbgrid, xt, pt->n), 0);
    cr_assert_eq(nb_build(&c->ref, &ctx->nbgrid, xq, pq->n, &c->ref_sort, xt, ctx->info.support, same), 0);
    cr_assert_eq(nl->n, pq->n);
    const floe_kernel k = floe_kernel_make(ctx->info.dim, ctx->info.support);
    const attr *wa = pset_attr(pt, pt->kind == FLOE_SET_FLUID ? "m" : "V");
    /* the kernel sums as the neighbours stage left them (this host stage
     * counts as one that may move particles: api->neighbours hides them) */
    const int t = (int)(pt - ctx->sets);
    const float *wsum = ctx->ksums_wanted && pq->ksum_ok[t] ? pq->ksum[t] : NULL;
    uint32_t a[1024], b[1024];
    for (uint32_t i = 0; i < pq->n; i++) {
        const uint32_t na = nl->count[i], nb = c->ref.count[i];
        cr_assert(na < 1024 && nb < 1024);
        for (uint32_t q = 0; q < na; q++) {
            const uint32_t j = nl->idx[(size_t)i * nl->stride + q];
            a[q] = idt ? idt[j] : j;
        }
        for (uint32_t q = 0; q < nb; q++) {
            const uint32_t j = c->ref.idx[(size_t)i * c->ref.stride + q];
            b[q] = idt ? idt[j] : j;
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
        if (wsum && wa) { /* the kernel sum of the row, in double */
            const float *w = wa->data;
            double s = 0;
            for (uint32_t q = 0; q < na; q++) {
                const uint32_t j = nl->idx[(size_t)i * nl->stride + q];
                const double dx = xq[3 * i] - xt[3 * j], dy = xq[3 * i + 1] - xt[3 * j + 1];
                s += w[j] * floe_w_hat(k.inv_H, (float)(dx * dx + dy * dy));
            }
            c->sums_checked++;
            if (fabs(wsum[i] - s) > 1e-5 * fabs(s) + 1e-7)
                c->sums_bad++;
        }
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

/* a 2D column of water 0.4 x 0.8 m falling into a 1.6 m tank */
static fixture dam(float d, double skin, check *c)
{
    const float tank[3] = {1.6f, 1.0f, 0}, water[3] = {0.4f, 0.8f, 0};
    fixture f = fixture_tank(2, d, tank, water, 1);
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

/* delete every 23rd particle (by id), then append three copies of the first
 * particles a little above them */
static void delete_and_add(floe_ctx *ctx, floe_set s, int round)
{
    pset *p = ctx_set(ctx, s);
    const uint32_t *id = pset_attr(p, "id")->data;
    uint8_t *keep = malloc(p->n);
    for (uint32_t i = 0; i < p->n; i++)
        keep[i] = (id[i] + (uint32_t)round) % 23 != 0;
    cr_assert_eq(ctx_set_compact(ctx, s, keep), FLOE_OK);
    free(keep);
    const uint32_t n = p->n;
    cr_assert_eq(ctx_set_resize(ctx, s, n + 3), FLOE_OK);
    for (int a = 0; a < p->nattrs; a++) {
        attr *at = &p->attrs[a];
        const size_t es = floe_type_size(at->type);
        for (uint32_t k = 0; k < 3; k++)
            memcpy((char *)at->data + (n + k) * es, (char *)at->data + k * es, es);
    }
    float *x = pset_attr(p, "x")->data;
    uint32_t *idw = pset_attr(p, "id")->data;
    for (uint32_t k = 0; k < 3; k++) {
        x[3 * (n + k) + 1] += 0.9f;
        idw[n + k] = p->next_id++;
    }
}

Test(verlet, neighbour_sets_equal_a_search_from_scratch_every_step)
{
    check c = {0};
    fixture f = dam(0.02f, 0.3, &c);
    for (int step = 1; step <= 2400; step++) {
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
        if (step == 1111) { /* a particle moved far without telling anyone */
            float *x = floe_attr(f.ctx, f.fluid, "x", FLOE_VEC3);
            x[3 * 7] += 0.5f;
            x[3 * 7 + 1] += 0.05f;
        }
        cr_assert_eq(floe_step(f.ctx, DT), FLOE_OK, "step %d: %s", step, floe_ctx_error(f.ctx));
    }
    const nb_verlet *v = &f.ctx->verlet;
    cr_log_info("2400 steps: %llu list builds, %ld pairs checked, %ld kernel sums", (unsigned long long)v->builds,
                c.pairs, c.sums_checked);
    cr_expect_eq(c.mismatches, 0, "%ld rows differ from a search from scratch", c.mismatches);
    cr_expect_eq(c.sums_bad, 0, "%ld of %ld kernel sums differ from the rows' sums", c.sums_bad, c.sums_checked);
#if defined(__AVX2__)
    /* the core sums the rows while it builds them on AVX2 builds only
     * (neighbours.c): there the sums must have been checked */
    cr_expect_gt(c.sums_checked, 0, "the density stage asks for kernel sums: they must be checked");
#else
    cr_expect_eq(c.sums_checked, 0, "kernel sums on a build without AVX2");
#endif
    cr_expect_eq(c.steps, 2400);
    /* the lists were reused most steps (else this tests nothing), and
     * rebuilt more often than the forced rebuilds (reorders, changes) */
    cr_expect_lt(v->builds, 2400 / 3, "%llu builds in 2400 steps", (unsigned long long)v->builds);
    cr_expect_gt(v->builds, 2400 / 10 + 12, "%llu builds in 2400 steps: the displacement rule never fired?",
                 (unsigned long long)v->builds);
    nb_sorted_free(&c.ref_sort);
    nb_list_free(&c.ref);
    floe_ctx_destroy(f.ctx);
}

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
 * against building every step from positions one float step apart (c):
 * the flow is chaotic, so any difference in the last bit grows (about 5x
 * every 0.025 s here); the skin must part the runs no faster than a
 * difference in the last bit of the positions does. */
Test(verlet, positions_equal_building_every_step_to_float_order)
{
    fixture a = dam(0.02f, 0.0, NULL), b = dam(0.02f, 0.2, NULL), c = dam(0.02f, 0.0, NULL);
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
    cr_expect_lt(b.ctx->verlet.builds, 400 / 2, "%llu builds", (unsigned long long)b.ctx->verlet.builds);
    floe_ctx_destroy(a.ctx);
    floe_ctx_destroy(b.ctx);
    floe_ctx_destroy(c.ctx);
}
