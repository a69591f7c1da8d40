/* The particles a freezing stage works on, and moving frozen particles
 * from the fluid sets to the ice set. */
#include "freeze.h"

#include <omp.h>
#include <stdlib.h>
#include <string.h>

static int grow(void **p, size_t *cap, size_t n, size_t es)
{
    if (n <= *cap)
        return 0;
    size_t c = n + n / 4 + 64;
    void *q = realloc(*p, c * es);
    if (!q)
        return -1;
    *p = q;
    *cap = c;
    return 0;
}

static int check_names(floe_ctx *ctx, const char *list)
{
    for (const char *c = list; *c;) {
        const char *comma = strchr(c, ',');
        size_t cl = comma ? (size_t)(comma - c) : strlen(c);
        char name[128];
        if (cl == 0 || cl >= sizeof name)
            return api->fail(ctx, FLOE_ERR_ARG, "cold = \"%s\": empty or too long set name", list);
        memcpy(name, c, cl);
        name[cl] = 0;
        floe_set set = api->set_find(ctx, name);
        floe_set_info in;
        if (!set.id || api->set_info(ctx, set, &in) != FLOE_OK)
            return api->fail(ctx, FLOE_ERR_ARG, "cold = \"%s\": no particle set named '%s'", list, name);
        if (in.kind != FLOE_SET_BOUNDARY)
            return api->fail(ctx, FLOE_ERR_ARG, "cold = \"%s\": '%s' is a fluid set, not a solid", list, name);
        c = comma ? comma + 1 : c + cl;
    }
    return FLOE_OK;
}

int fz_resolve(floe_ctx *ctx, fz_state *s, const char *cold, const char *ice)
{
    fz_parts *p = &s->p;
    const floe_sim_info *si = api->sim(ctx);
    if (si->periodic)
        return api->fail(ctx, FLOE_ERR_ARG, "freezing needs a domain without periodic axes");
    int nt = omp_get_max_threads();
    if (nt > s->nthreads) {
        uint32_t **qb = realloc(s->qbuf, (size_t)nt * sizeof *qb);
        if (!qb)
            return api->fail(ctx, FLOE_ERR_NOMEM, "out of memory");
        s->qbuf = qb;
        uint32_t *qc = realloc(s->qcap, (size_t)nt * sizeof *qc);
        if (!qc)
            return api->fail(ctx, FLOE_ERR_NOMEM, "out of memory");
        s->qcap = qc;
        for (int t = s->nthreads; t < nt; t++)
            qb[t] = NULL, qc[t] = 0;
        s->nthreads = nt;
    }
    /* the ice set */
    p->ice = api->set_find(ctx, ice);
    floe_set_info ii;
    if (!p->ice.id || api->set_info(ctx, p->ice, &ii) != FLOE_OK)
        return api->fail(ctx, FLOE_ERR_ARG,
                         "no particle set named '%s' for the ice (make it with sim:boundary_set{ name = \"%s\" })",
                         ice, ice);
    if (ii.kind != FLOE_SET_BOUNDARY)
        return api->fail(ctx, FLOE_ERR_ARG, "ice set '%s' is a fluid set: it must be a boundary set", ice);
    if (cold[0] && floe_name_listed(cold, ice))
        return api->fail(ctx, FLOE_ERR_ARG, "cold = \"%s\" names the ice set '%s'", cold, ice);
    int rc = check_names(ctx, cold);
    if (rc)
        return rc;
    /* fluid */
    floe_set sets[FLOE_MAX_SETS];
    int ns = api->set_list(ctx, FLOE_SET_FLUID, sets, FLOE_MAX_SETS);
    p->nfs = 0;
    p->nf = 0;
    p->foff[0] = 0;
    for (int k = 0; k < ns && k < FLOE_MAX_SETS; k++) {
        floe_set_info in;
        if (api->set_info(ctx, sets[k], &in) != FLOE_OK)
            return api->fail(ctx, FLOE_ERR, "fluid set %d: no info", k);
        if (!(in.rest_density > 0))
            return api->fail(ctx, FLOE_ERR_ARG, "fluid set '%s': rest density must be > 0", in.name);
        p->fset[p->nfs] = sets[k];
        p->frho[p->nfs] = in.rest_density;
        p->fn[p->nfs] = in.n;
        p->nf += in.n;
        p->foff[++p->nfs] = p->nf;
    }
    /* frost: cold solids, then the ice */
    ns = api->set_list(ctx, FLOE_SET_BOUNDARY, sets, FLOE_MAX_SETS);
    p->nbs = 0;
    p->nb = 0;
    p->nice = 0;
    p->boff[0] = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int k = 0; k < ns && k < FLOE_MAX_SETS; k++) {
            floe_set_info in;
            if (api->set_info(ctx, sets[k], &in) != FLOE_OK)
                return api->fail(ctx, FLOE_ERR, "boundary set %d: no info", k);
            int is_ice = sets[k].id == p->ice.id;
            if (pass == 0 && (is_ice || (cold[0] && !floe_name_listed(cold, in.name))))
                continue;
            if (pass == 1 && !is_ice)
                continue;
            p->bset[p->nbs] = sets[k];
            p->bn[p->nbs] = in.n;
            p->nb += in.n;
            p->boff[++p->nbs] = p->nb;
            if (is_ice)
                p->nice = in.n;
        }
    return FLOE_OK;
}

int fz_copy_fluid(floe_ctx *ctx, fz_state *s)
{
    fz_parts *p = &s->p;
    if (p->nf > p->capf) {
        size_t c = p->nf + p->nf / 4 + 64;
        size_t c3 = 0, c1 = 0, c3b = 0;
        if (grow((void **)&p->xf, &c3, 3 * c, sizeof(float)) || grow((void **)&p->vf, &c3b, 3 * c, sizeof(float)) ||
            grow((void **)&p->mf, &c1, c, sizeof(float)))
            return api->fail(ctx, FLOE_ERR_NOMEM, "out of memory for %u fluid particles", p->nf);
        p->capf = c;
    }
    for (int k = 0; k < p->nfs; k++) {
        int st = FLOE_OK;
        floe_set_info in;
        api->set_info(ctx, p->fset[k], &in);
        const float *x = floe_need(api, ctx, p->fset[k], in.name, "x", FLOE_VEC3, &st);
        const float *v = floe_need(api, ctx, p->fset[k], in.name, "v", FLOE_VEC3, &st);
        const float *m = floe_need(api, ctx, p->fset[k], in.name, "m", FLOE_F32, &st);
        if (st)
            return st;
        if (!p->fn[k])  /* an empty set (all frozen): no rows, maybe no arrays yet */
            continue;
        memcpy(p->xf + 3 * (size_t)p->foff[k], x, 3 * sizeof(float) * p->fn[k]);
        memcpy(p->vf + 3 * (size_t)p->foff[k], v, 3 * sizeof(float) * p->fn[k]);
        memcpy(p->mf + p->foff[k], m, sizeof(float) * p->fn[k]);
    }
    return FLOE_OK;
}

int fz_gather(floe_ctx *ctx, fz_state *s, const char *cold, const char *ice)
{
    int rc = fz_resolve(ctx, s, cold, ice);
    if (!rc)
        rc = fz_copy_fluid(ctx, s);
    if (rc)
        return rc;
    fz_parts *p = &s->p;
    if (p->nb > p->capb) {
        size_t c = p->nb + p->nb / 4 + 64;
        size_t c3 = 0, c1 = 0;
        if (grow((void **)&p->xb, &c3, 3 * c, sizeof(float)) || grow((void **)&p->Vb, &c1, c, sizeof(float)))
            return api->fail(ctx, FLOE_ERR_NOMEM, "out of memory for %u solid and ice particles", p->nb);
        p->capb = c;
    }
    for (int k = 0; k < p->nbs; k++) {
        if (!p->bn[k])
            continue;
        int st = FLOE_OK;
        floe_set_info in;
        api->set_info(ctx, p->bset[k], &in);
        const float *x = floe_need(api, ctx, p->bset[k], in.name, "x", FLOE_VEC3, &st);
        const float *V = floe_need(api, ctx, p->bset[k], in.name, "V", FLOE_F32, &st);
        if (st)
            return st;
        memcpy(p->xb + 3 * (size_t)p->boff[k], x, 3 * sizeof(float) * p->bn[k]);
        memcpy(p->Vb + p->boff[k], V, sizeof(float) * p->bn[k]);
    }
    const float H = api->sim(ctx)->support;
    if (cg_build(&s->gf, p->xf, p->nf, H) || cg_build(&s->gb, p->xb, p->nb, H))
        return api->fail(ctx, FLOE_ERR_NOMEM, "out of memory for the cell lists");
    return FLOE_OK;
}

uint32_t *fz_qbuf(fz_state *s, uint32_t n)
{
    int t = omp_get_thread_num();
    if (n > s->qcap[t]) {
        uint32_t c = n + n / 2 + 256;
        uint32_t *b = realloc(s->qbuf[t], (size_t)c * sizeof *b);
        if (!b)
            return NULL;
        s->qbuf[t] = b;
        s->qcap[t] = c;
    }
    return s->qbuf[t];
}

const uint32_t *fz_query(fz_state *s, const cgrid *g, const float p[3], float r, uint32_t self, uint32_t *m)
{
    uint32_t *b = fz_qbuf(s, 256);
    if (!b)
        return *m = 0, NULL;
    int t = omp_get_thread_num();
    uint32_t n = cg_query(g, p, r, self, b, s->qcap[t]);
    if (n > s->qcap[t]) {
        if (!(b = fz_qbuf(s, n)))
            return *m = 0, NULL;
        n = cg_query(g, p, r, self, b, s->qcap[t]);
    }
    *m = n;
    return b;
}

long fz_move_to_ice(floe_ctx *ctx, fz_state *s, const uint8_t *freeze, const float *dir, const int32_t *kind,
                    const float *h)
{
    fz_parts *p = &s->p;
    uint32_t k = 0;
    for (uint32_t j = 0; j < p->nf; j++)
        k += freeze[j] != 0;
    if (!k)
        return 0;
    floe_set_info ii;
    if (api->set_info(ctx, p->ice, &ii) != FLOE_OK)
        return api->fail(ctx, FLOE_ERR, "the ice set has gone");
    const uint32_t base = ii.n;
    int rc = api->set_resize(ctx, p->ice, base + k);
    if (rc)
        return rc;
    int st = FLOE_OK;
    float *xi = fz_attr(ctx, p->ice, ii.name, "x", FLOE_VEC3, &st);
    float *mi = fz_attr(ctx, p->ice, ii.name, "m", FLOE_F32, &st);
    uint32_t *idi = fz_attr(ctx, p->ice, ii.name, "id", FLOE_U32, &st);
    float *di = fz_attr(ctx, p->ice, ii.name, "ice_dir", FLOE_VEC3, &st);
    int32_t *ki = fz_attr(ctx, p->ice, ii.name, "ice_kind", FLOE_I32, &st);
    float *ti = fz_attr(ctx, p->ice, ii.name, "ice_time", FLOE_F32, &st);
    float *hi = h ? fz_attr(ctx, p->ice, ii.name, "h", FLOE_F32, &st) : NULL;
    float *gi = api->attr(ctx, p->ice, "Gamma", FLOE_F32); /* with freeze.film only */
    float *Vi = fz_attr(ctx, p->ice, ii.name, "V", FLOE_F32, &st);
    if (st)
        return st;
    const float now = (float)(api->sim(ctx)->time + api->sim(ctx)->dt);
    uint32_t w = base;
    uint8_t *keep = malloc(p->nf ? p->nf : 1);
    if (!keep)
        return api->fail(ctx, FLOE_ERR_NOMEM, "out of memory");
    for (int f = 0; f < p->nfs && !st; f++) {
        floe_set_info in;
        api->set_info(ctx, p->fset[f], &in);
        const uint32_t *id = fz_attr(ctx, p->fset[f], in.name, "id", FLOE_U32, &st);
        if (st)
            break;
        for (uint32_t i = 0; i < p->fn[f]; i++) {
            uint32_t j = p->foff[f] + i;
            keep[j] = !freeze[j];
            if (!freeze[j])
                continue;
            memcpy(&xi[3 * (size_t)w], &p->xf[3 * (size_t)j], 3 * sizeof(float));
            mi[w] = p->mf[j];
            Vi[w] = p->mf[j] / p->frho[f]; /* its own volume, m / rho0 */
            if (gi)
                gi[w] = p->mf[j]; /* it was water: its film is full (Gamma_max) */
            idi[w] = id[i];
            if (dir)
                memcpy(&di[3 * (size_t)w], &dir[3 * (size_t)j], 3 * sizeof(float));
            ki[w] = kind[j];
            ti[w] = now;
            if (hi)
                hi[w] = h[j];
            w++;
        }
    }
    for (int f = 0; f < p->nfs && !st; f++)
        if (p->fn[f] && (st = api->set_compact(ctx, p->fset[f], keep + p->foff[f])) == FLOE_OK) {
            floe_set_info in;
            api->set_info(ctx, p->fset[f], &in);
            p->fn[f] = in.n;
        }
    free(keep);
    return st ? st : (long)k;
}
