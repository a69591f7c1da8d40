/* The rigid module's face in scenes (ABI 1.9 lua_open):
 *
 *   local rigid = sim:load "rigid"
 *   local b = rigid.body{ name = "crate", shape = "box", size = {0.2, 0.2, 0.2}, density = 500,
 *                         position = {...}, rotation = {rx, ry, rz}, velocity = {...},
 *                         angular_velocity = {...}, kinematic = function(t) return {position = ...} end,
 *                         fixed = false }
 *   rigid.body{ name = "bunny", file = "bunny.obj", scale = 2, rotation = ..., translation = ...,
 *               position = {...}, mass = 3 }       -- a mesh (the placement keys of sim:boundary_mesh)
 *   rigid.walls{ min = {...}, max = {...}, open_top = true }
 *   rigid.hinge{ body = b, anchor = {...}, axis = {...}, to = other }
 *   rigid.settings{ friction = 0.5, restitution = 0.1, iterations = 50 }
 *   rigid.attach{ set = "ice", body = "ice_body", r0 = "ice_r0" }  -- particles riding on bodies (attach.c)
 *   b:state() / rigid.state("crate")  -> position, quaternion, velocity, angular_velocity,
 *                                        force, torque, mass, volume, inertia, particles,
 *                                        attached_mass, attached, centre_of_mass
 * docs/lua-api.md has the keys; every one is checked and errors name the
 * function (and, for meshes, the file). */
#include "rigid.h"

#include <floe/lua_args.h>
#include <floe/mesh.h>

#include <lauxlib.h>
#include <lua.h>

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STATE(L) ((rigid_state *)lua_touserdata(L, lua_upvalueindex(1)))

/* luaL_error with the whole printf format (lua_pushfstring has no %u, %g) */
static int lerr(lua_State *L, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int lerr(lua_State *L, const char *fmt, ...)
{
    char buf[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return luaL_error(L, "%s", buf);
}

/* the kit's table checks (<floe/lua_args.h>, which sim:boundary_mesh's use too) */
#define only_keys floe_lua_only_keys
#define num floe_lua_num

/* the value at idx as a vector of `dim` (2 or 3) finite numbers; z = 0 when 2 */
static void vec_at(lua_State *L, int idx, const char *fn, const char *what, int dim, double out[3])
{
    idx = lua_absindex(L, idx);
    const int n = lua_type(L, idx) == LUA_TTABLE ? (int)lua_rawlen(L, idx) : -1;
    if (!(n == 3 || (dim == 2 && n == 2)))
        lerr(L, "%s: '%s' must be a vector of %s numbers", fn, what, dim == 2 ? "2 or 3" : "3");
    out[2] = 0.0;
    for (int k = 0; k < n; k++) {
        if (lua_rawgeti(L, idx, k + 1) != LUA_TNUMBER || !isfinite(lua_tonumber(L, -1)))
            lerr(L, "%s: '%s' must be a vector of finite numbers", fn, what);
        out[k] = lua_tonumber(L, -1);
        lua_pop(L, 1);
    }
}

static int vec(lua_State *L, int t, const char *fn, const char *key, int dim, double out[3])
{
    if (lua_getfield(L, t, key) == LUA_TNIL) {
        lua_pop(L, 1);
        return 0;
    }
    vec_at(L, -1, fn, key, dim, out);
    lua_pop(L, 1);
    return 1;
}

static int boolean(lua_State *L, int t, const char *fn, const char *key)
{
    int ty = lua_getfield(L, t, key);
    if (ty != LUA_TNIL && ty != LUA_TBOOLEAN)
        lerr(L, "%s: '%s' must be true or false (got %s)", fn, key, luaL_typename(L, -1));
    int v = lua_toboolean(L, -1);
    lua_pop(L, 1);
    return v;
}

static void push_vec(lua_State *L, const double *v, int n, const char *key)
{
    lua_createtable(L, n, 0);
    for (int k = 0; k < n; k++) {
        lua_pushnumber(L, v[k]);
        lua_rawseti(L, -2, k + 1);
    }
    lua_setfield(L, -2, key);
}

static int find_body(rigid_state *s, const char *name)
{
    for (int k = 0; k < s->nb; k++)
        if (!strcmp(s->b[k].name, name))
            return k;
    return -1;
}

/* a body argument: a handle table (its id) or a name */
static int body_arg(lua_State *L, rigid_state *s, int idx, const char *fn)
{
    idx = lua_absindex(L, idx);
    int k = -1;
    if (lua_type(L, idx) == LUA_TTABLE) {
        lua_getfield(L, idx, "name");
        if (lua_type(L, -1) == LUA_TSTRING)
            k = find_body(s, lua_tostring(L, -1));
        lua_pop(L, 1);
    } else if (lua_type(L, idx) == LUA_TSTRING) {
        k = find_body(s, lua_tostring(L, idx));
        if (k < 0)
            lerr(L, "%s: no rigid body named '%s'", fn, lua_tostring(L, idx));
    }
    if (k < 0)
        lerr(L, "%s: a body (what rigid.body returned, or its name) expected", fn);
    return k;
}

/* ---- rigid.state ------------------------------------------------------------ */

static int push_state(lua_State *L, rigid_state *s, int k)
{
    if (rigid_cl_current(s)) /* the OpenCL path's step, finished */
        return luaL_error(L, "rigid: the bodies' forces could not be read from the device (see the message above)");
    const rigid_body *b = &s->b[k];
    lua_createtable(L, 0, 12);
    lua_pushstring(L, b->name);
    lua_setfield(L, -2, "name");
    lua_pushinteger(L, k + 1);
    lua_setfield(L, -2, "id");
    push_vec(L, b->x, 3, "position");
    push_vec(L, b->q, 4, "quaternion");
    push_vec(L, b->v, 3, "velocity");
    push_vec(L, b->w, 3, "angular_velocity");
    push_vec(L, b->F, 3, "force");
    push_vec(L, b->T, 3, "torque");
    lua_pushnumber(L, b->mass);
    lua_setfield(L, -2, "mass");
    lua_pushnumber(L, b->volume);
    lua_setfield(L, -2, "volume");
    lua_createtable(L, 3, 0);
    for (int i = 0; i < 3; i++) {
        lua_createtable(L, 3, 0);
        for (int j = 0; j < 3; j++) {
            lua_pushnumber(L, b->inertia[i][j]);
            lua_rawseti(L, -2, j + 1);
        }
        lua_rawseti(L, -2, i + 1);
    }
    lua_setfield(L, -2, "inertia");
    lua_pushinteger(L, b->count);
    lua_setfield(L, -2, "particles");
    /* what rides on it (rigid.attach): mass, count, centre of mass of both */
    lua_pushnumber(L, b->att_m);
    lua_setfield(L, -2, "attached_mass");
    lua_pushinteger(L, b->att_n);
    lua_setfield(L, -2, "attached");
    double R[3][3], cm[3];
    rigid_quat_rot(b->q, R);
    for (int d = 0; d < 3; d++)
        cm[d] = b->x[d] + R[d][0] * b->att_c[0] + R[d][1] * b->att_c[1] + R[d][2] * b->att_c[2];
    push_vec(L, cm, 3, "centre_of_mass");
    return 1;
}

static int l_state(lua_State *L)
{
    rigid_state *s = STATE(L);
    return push_state(L, s, body_arg(L, s, 1, "rigid.state"));
}

/* b:state() */
static int l_handle_state(lua_State *L)
{
    rigid_state *s = STATE(L);
    return push_state(L, s, body_arg(L, s, 1, "body:state"));
}

static const char *floe_ctx_message(rigid_state *s)
{
    (void)s;
    return "the body could not be added (see the message above)";
}

/* Remove the fluid particles whose centres lie inside a box or sphere body
 * (its true surface grown by d/2): a body placed in the water displaces it. */
static int carve_fluid(rigid_state *s, const rigid_body *b)
{
    floe_fluid f[FLOE_MAX_SETS];
    int nf, st;
    if ((st = floe_fluid_sets(api, s->ctx, f, &nf, NULL)) != FLOE_OK)
        return st;
    const double d = api->sim(s->ctx)->spacing, dim = api->sim(s->ctx)->dim;
    double R[3][3];
    rigid_quat_rot(b->q, R);
    for (int q = 0; q < nf; q++) {
        const uint32_t n = f[q].info.n;
        const float *x = api->attr(s->ctx, f[q].set, "x", FLOE_VEC3);
        if (!n || !x)
            continue;
        uint8_t *keep = malloc(n);
        if (!keep)
            return api->fail(s->ctx, FLOE_ERR_NOMEM, "out of memory");
        uint32_t gone = 0;
        for (uint32_t i = 0; i < n; i++) {
            double r[3], l[3];
            for (int k = 0; k < 3; k++)
                r[k] = x[3 * i + k] - b->x[k];
            for (int k = 0; k < 3; k++) /* body frame: R^T r */
                l[k] = R[0][k] * r[0] + R[1][k] * r[1] + R[2][k] * r[2];
            int in;
            if (b->shape == RIGID_BOX) {
                in = 1;
                for (int k = 0; k < dim; k++)
                    in &= fabs(l[k]) < b->half[k] + 0.25 * d;
            } else
                in = l[0] * l[0] + l[1] * l[1] + l[2] * l[2] < (b->radius + 0.25 * d) * (b->radius + 0.25 * d);
            keep[i] = !in;
            gone += (uint32_t)in;
        }
        if (gone)
            st = api->set_compact(s->ctx, f[q].set, keep);
        free(keep);
        if (st)
            return st;
    }
    return FLOE_OK;
}

/* ---- rigid.body ------------------------------------------------------------- */

static rigid_body *new_body(lua_State *L, rigid_state *s, const char *fn)
{
    if (s->nb == s->cap) {
        int cap = s->cap ? 2 * s->cap : 8;
        rigid_body *nb = realloc(s->b, (size_t)cap * sizeof *nb);
        if (!nb)
            lerr(L, "%s: out of memory", fn);
        s->b = nb, s->cap = cap;
    }
    rigid_body *b = &s->b[s->nb];
    memset(b, 0, sizeof *b);
    b->lua_fn = LUA_NOREF;
    b->q[0] = 1.0;
    return b;
}

/* the mesh of a `file` body, moved so that its centre is the origin (the
 * body frame); vol, c and C its moments before the move */
static floe_mesh *mesh_body(lua_State *L, rigid_state *s, rigid_body *b, const char *fn, double c[3], double C[3][3])
{
    floe_mesh *m = api->lua_mesh(s->ctx, L, 1, fn);
    if (m->open_edges || m->nonmanifold_edges || m->misoriented_edges) {
        char file[1024];
        snprintf(file, sizeof file, "%s", m->file);
        const unsigned o = m->open_edges, nm = m->nonmanifold_edges, mo = m->misoriented_edges;
        api->mesh_destroy(m);
        lerr(L,
                   "%s: %s: the mesh is not closed (%u boundary edges, %u edges of more than two triangles, %u "
                   "misoriented): a body needs a closed surface for its volume and mass",
                   fn, file, o, nm, mo);
    }
    if (rigid_mesh_moments(m->x, m->tri, m->ntris, &b->volume, c, C)) {
        char file[1024];
        snprintf(file, sizeof file, "%s", m->file);
        api->mesh_destroy(m);
        lerr(L, "%s: %s: the closed mesh encloses no volume", fn, file);
    }
    for (uint32_t v = 0; v < m->nverts; v++)
        for (int d = 0; d < 3; d++)
            m->x[3 * v + d] -= (float)c[d];
    for (int d = 0; d < 3; d++) {
        m->min[d] -= (float)c[d];
        m->max[d] -= (float)c[d];
    }
    b->mx = malloc((size_t)m->nverts * 3 * sizeof(float));
    b->mtri = malloc((size_t)m->ntris * 3 * sizeof(uint32_t));
    if (!b->mx || !b->mtri) {
        api->mesh_destroy(m);
        lerr(L, "%s: out of memory", fn);
    }
    memcpy(b->mx, m->x, (size_t)m->nverts * 3 * sizeof(float));
    memcpy(b->mtri, m->tri, (size_t)m->ntris * 3 * sizeof(uint32_t));
    b->nv = m->nverts, b->nt = m->ntris;
    return m;
}

static int l_body(lua_State *L)
{
    static const char *const KEYS[] = {"name", "shape", "size", "radius", "file", "object", "scale", "rotation",
                                       "translation", "position", "density", "mass", "velocity", "angular_velocity",
                                       "kinematic", "fixed", "carve", "hold", NULL};
    const char *fn = "rigid.body";
    rigid_state *s = STATE(L);
    floe_ctx *ctx = s->ctx;
    const floe_sim_info *si = api->sim(ctx);
    const int dim = si->dim;
    const double d = si->spacing;
    luaL_checktype(L, 1, LUA_TTABLE);
    only_keys(L, 1, fn, KEYS);

    char name[RIGID_NAME];
    lua_getfield(L, 1, "name");
    if (lua_isnil(L, -1))
        snprintf(name, sizeof name, "body%d", s->nb + 1);
    else if (lua_type(L, -1) != LUA_TSTRING || lua_rawlen(L, -1) == 0 || lua_rawlen(L, -1) >= RIGID_NAME)
        return lerr(L, "%s: 'name' must be a string of 1 to %d characters", fn, RIGID_NAME - 1);
    else {
        const char *nm = lua_tostring(L, -1);
        for (const char *c = nm; *c; c++)
            if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '_' ||
                  *c == '-'))
                return lerr(L, "%s: name '%s': letters, digits, '_' and '-' only (it names files)", fn, nm);
        snprintf(name, sizeof name, "%s", nm);
    }
    lua_pop(L, 1);
    if (find_body(s, name) >= 0)
        return lerr(L, "%s: a body named '%s' exists already", fn, name);

    lua_getfield(L, 1, "file");
    const int has_file = !lua_isnil(L, -1);
    lua_pop(L, 1);
    lua_getfield(L, 1, "shape");
    const char *shape = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
    if (!lua_isnil(L, -1) && !shape)
        return lerr(L, "%s: 'shape' must be \"box\", \"sphere\" or \"mesh\"", fn);
    int kind = has_file ? RIGID_MESH : 0;
    if (shape) {
        kind = !strcmp(shape, "box") ? RIGID_BOX : !strcmp(shape, "sphere") ? RIGID_SPHERE
             : !strcmp(shape, "mesh") ? RIGID_MESH : -1;
        if (kind < 0)
            return lerr(L, "%s: unknown shape '%s' (box, sphere, or mesh with a file)", fn, shape);
    }
    lua_pop(L, 1);
    if (!kind)
        return lerr(L, "%s: '%s' needs a shape (\"box\", \"sphere\") or a mesh 'file'", fn, name);
    if (kind == RIGID_MESH && !has_file)
        return lerr(L, "%s: a mesh body needs 'file'", fn);
    if (kind == RIGID_MESH && dim != 3)
        return lerr(L, "%s: mesh bodies need a 3D sim (dim = 3)", fn);

    /* density or mass: exactly one, positive */
    lua_getfield(L, 1, "density");
    lua_getfield(L, 1, "mass");
    const int has_rho = !lua_isnil(L, -2), has_mass = !lua_isnil(L, -1);
    lua_pop(L, 2);
    if (has_rho == has_mass)
        return lerr(L, "%s: '%s' needs either 'density' (kg/m^%d) or 'mass' (kg), not %s", fn, name, dim,
                          has_rho ? "both" : "neither");
    const double rho = num(L, 1, fn, "density", 0.0), mass = num(L, 1, fn, "mass", 0.0);
    if (has_rho && !(rho > 0.0))
        return lerr(L, "%s: '%s': 'density' must be positive (got %f)", fn, name, rho);
    if (has_mass && !(mass > 0.0))
        return lerr(L, "%s: '%s': 'mass' must be positive (got %f)", fn, name, mass);

    double x[3] = {0, 0, 0}, q[4] = {1, 0, 0, 0}, v[3] = {0, 0, 0}, w[3] = {0, 0, 0};
    const int has_pos = vec(L, 1, fn, "position", dim, x);
    vec(L, 1, fn, "velocity", dim, v);
    if (dim == 3)
        vec(L, 1, fn, "angular_velocity", 3, w);
    else
        w[2] = num(L, 1, fn, "angular_velocity", 0.0);
    if (kind != RIGID_MESH) {
        static const char *const mesh_only[] = {"file", "object", "scale", "translation", NULL};
        for (const char *const *k = mesh_only; *k; k++) {
            lua_getfield(L, 1, *k);
            if (!lua_isnil(L, -1))
                return lerr(L, "%s: '%s' belongs to mesh bodies (a 'file')", fn, *k);
            lua_pop(L, 1);
        }
        if (dim == 3) {
            double deg[3];
            if (vec(L, 1, fn, "rotation", 3, deg))
                rigid_euler_quat(deg, q);
        } else {
            const double a = num(L, 1, fn, "rotation", 0.0) * M_PI / 360.0; /* degrees about z */
            q[0] = cos(a), q[3] = sin(a);
        }
    }
    int motion = RIGID_DYNAMIC;
    if (boolean(L, 1, fn, "fixed"))
        motion = RIGID_FIXED;
    lua_getfield(L, 1, "kinematic");
    if (!lua_isnil(L, -1)) {
        if (!lua_isfunction(L, -1))
            return lerr(L, "%s: 'kinematic' must be a function of time returning { position = ..., "
                                 "rotation = ... }", fn);
        if (motion == RIGID_FIXED)
            return lerr(L, "%s: a body is either 'fixed' or 'kinematic'", fn);
        motion = RIGID_KINEMATIC;
    }
    lua_pop(L, 1);

    const double hold = num(L, 1, fn, "hold", 0.0);
    if (hold < 0.0)
        return lerr(L, "%s: 'hold' (seconds the body is held still) must not be negative", fn);
    rigid_body *b = new_body(L, s, fn);
    snprintf(b->name, sizeof b->name, "%s", name);
    b->hold = hold;
    b->shape = kind;
    b->motion = motion;
    float *px = NULL;
    uint32_t n = 0;
    int st = FLOE_OK;
    double c[3] = {0, 0, 0}, C[3][3];
    if (kind == RIGID_BOX) {
        double size[3] = {0, 0, 0}, half[3];
        if (!vec(L, 1, fn, "size", dim, size))
            return lerr(L, "%s: a box needs 'size' = {%s}", fn, dim == 3 ? "sx, sy, sz" : "sx, sy");
        for (int k = 0; k < dim; k++)
            if (!(size[k] >= 2.0 * d))
                return lerr(L, "%s: '%s': every side of a box must be at least two particle spacings (%g m), "
                                     "got %g", fn, name, 2.0 * d, size[k]);
        for (int k = 0; k < 3; k++)
            half[k] = 0.5 * size[k];
        b->volume = dim == 3 ? size[0] * size[1] * size[2] : size[0] * size[1];
        st = rigid_shape_box(s, b, half, &px, &n);
    } else if (kind == RIGID_SPHERE) {
        const double r = num(L, 1, fn, "radius", 0.0);
        if (!(r >= d))
            return lerr(L, "%s: '%s': a sphere needs a 'radius' of at least one particle spacing (%g m)", fn,
                              name, d);
        b->volume = dim == 3 ? 4.0 / 3.0 * M_PI * r * r * r : M_PI * r * r;
        st = rigid_shape_sphere(s, b, r, &px, &n);
    } else {
        floe_mesh *m = mesh_body(L, s, b, fn, c, C);
        if (!has_pos)
            memcpy(x, c, sizeof x);
        if ((st = rigid_body_set(s)) == FLOE_OK)
            st = rigid_shape_mesh_inset(s, b, &px, &n, m);
        api->mesh_destroy(m);
    }
    if (st) {
        free(b->mx), free(b->mtri), free(px);
        return lerr(L, "%s: '%s': %s", fn, name, "could not make its particles");
    }
    b->mass = has_mass ? mass : rho * b->volume;
    b->density = b->mass / b->volume;
    /* inertia about the centre in the body frame */
    if (kind == RIGID_MESH) {
        double Cc[3][3]; /* about the centre: the mesh was moved there */
        const double zero[3] = {0, 0, 0};
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++)
                Cc[i][j] = C[i][j] - b->volume * c[i] * c[j];
        rigid_inertia(b->mass, b->volume, zero, Cc, b->inertia);
    } else if (kind == RIGID_BOX && dim == 3) {
        double cb[3], Cb[3][3], vb;
        rigid_mesh_moments(b->mx, b->mtri, b->nt, &vb, cb, Cb);
        rigid_inertia(b->mass, vb, cb, Cb, b->inertia);
    } else if (kind == RIGID_BOX) { /* 2D, per unit depth: I_zz = m (a^2 + b^2) / 12 */
        const double a = 2 * b->half[0], h = 2 * b->half[1];
        b->inertia[0][0] = b->mass * h * h / 12.0;
        b->inertia[1][1] = b->mass * a * a / 12.0;
        b->inertia[2][2] = b->mass * (a * a + h * h) / 12.0;
    } else {
        const double r = b->radius, k = dim == 3 ? 0.4 : 0.5;
        b->inertia[0][0] = b->inertia[1][1] = b->inertia[2][2] = k * b->mass * r * r;
        if (dim == 2)
            b->inertia[0][0] = b->inertia[1][1] = 0.25 * b->mass * r * r;
    }
    if (motion == RIGID_KINEMATIC) {
        lua_getfield(L, 1, "kinematic");
        b->lua_fn = luaL_ref(L, LUA_REGISTRYINDEX);
    }
    memcpy(b->x, x, sizeof b->x);
    memcpy(b->q, q, sizeof b->q);
    memcpy(b->v, v, sizeof b->v);
    memcpy(b->w, w, sizeof b->w);
    s->nb++;
    st = rigid_body_particles(s, b, px, n);
    free(px);
    if (!st)
        st = rigid_engine_add(s, b, x, q, v, w);
    if (!st && motion == RIGID_KINEMATIC) { /* its pose at the current time */
        double kx[3], kq[4];
        st = rigid_kinematic_pose(s, b, api->sim(ctx)->time, kx, kq);
        if (!st) {
            memcpy(b->x, kx, sizeof kx);
            memcpy(b->q, kq, sizeof kq);
            dBodySetPosition(b->body, kx[0], kx[1], kx[2]);
            const dQuaternion dq = {kq[0], kq[1], kq[2], kq[3]};
            dBodySetQuaternion(b->body, dq);
        }
    }
    if (!st)
        st = rigid_place_particles(s);
    lua_getfield(L, 1, "carve");
    const int carve = lua_isnil(L, -1) || lua_toboolean(L, -1);
    lua_pop(L, 1);
    if (!st && carve && kind != RIGID_MESH)
        st = carve_fluid(s, b);
    if (st)
        return lerr(L, "%s: '%s': %s", fn, name, floe_ctx_message(s));
    /* the handle: { name = ..., id = ..., state = function } */
    lua_createtable(L, 0, 3);
    lua_pushstring(L, b->name);
    lua_setfield(L, -2, "name");
    lua_pushinteger(L, s->nb);
    lua_setfield(L, -2, "id");
    lua_pushlightuserdata(L, s);
    lua_pushcclosure(L, l_handle_state, 1);
    lua_setfield(L, -2, "state");
    return 1;
}

/* the pose a kinematic body's function gives for time t */
int rigid_kinematic_pose(rigid_state *s, rigid_body *b, double t, double x[3], double q[4])
{
    lua_State *L = s->L;
    const int top = lua_gettop(L), dim = api->sim(s->ctx)->dim;
    lua_rawgeti(L, LUA_REGISTRYINDEX, b->lua_fn);
    lua_pushnumber(L, t);
    if (lua_pcall(L, 1, 1, 0) != LUA_OK) {
        int st = api->fail(s->ctx, FLOE_ERR_ARG, "rigid body '%s': its kinematic function failed at t = %g: %s",
                           b->name, t, lua_tostring(L, -1));
        lua_settop(L, top);
        return st;
    }
    if (lua_type(L, -1) != LUA_TTABLE) {
        lua_settop(L, top);
        return api->fail(s->ctx, FLOE_ERR_ARG, "rigid body '%s': its kinematic function must return a table "
                                               "{ position = ..., rotation = ... } (t = %g)", b->name, t);
    }
    const int r = lua_gettop(L);
    memcpy(x, b->x, 3 * sizeof *x);
    memcpy(q, b->q, 4 * sizeof *q);
    int ok = 1;
    for (int pass = 0; pass < 2 && ok; pass++) {
        const char *key = pass ? "rotation" : "position";
        lua_getfield(L, r, key);
        if (!lua_isnil(L, -1)) {
            double vv[3] = {0, 0, 0};
            const int want = pass && dim == 2 ? 1 : (dim == 3 ? 3 : 2);
            if (want == 1 && lua_type(L, -1) == LUA_TNUMBER)
                vv[0] = lua_tonumber(L, -1);
            else if (lua_type(L, -1) == LUA_TTABLE && ((int)lua_rawlen(L, -1) == want || (int)lua_rawlen(L, -1) == 3)) {
                for (int k = 0; k < (int)lua_rawlen(L, -1); k++) {
                    lua_rawgeti(L, -1, k + 1);
                    vv[k] = lua_tonumber(L, -1);
                    ok &= lua_type(L, -1) == LUA_TNUMBER && isfinite(vv[k]);
                    lua_pop(L, 1);
                }
            } else
                ok = 0;
            if (ok && !pass)
                memcpy(x, vv, sizeof vv);
            else if (ok && dim == 3)
                rigid_euler_quat(vv, q);
            else if (ok) {
                const double a = (lua_type(L, -1) == LUA_TNUMBER ? vv[0] : vv[2]) * M_PI / 360.0;
                q[0] = cos(a), q[1] = q[2] = 0, q[3] = sin(a);
            }
        }
        lua_pop(L, 1);
    }
    lua_settop(L, top);
    if (!ok)
        return api->fail(s->ctx, FLOE_ERR_ARG, "rigid body '%s': its kinematic function returned a bad position or "
                                               "rotation at t = %g (vectors of finite numbers; degrees)", b->name, t);
    return FLOE_OK;
}

/* ---- rigid.walls, rigid.hinge, rigid.settings ---------------------------------- */

static int l_walls(lua_State *L)
{
    static const char *const KEYS[] = {"min", "max", "open_top", NULL};
    const char *fn = "rigid.walls";
    rigid_state *s = STATE(L);
    const int dim = api->sim(s->ctx)->dim;
    luaL_checktype(L, 1, LUA_TTABLE);
    only_keys(L, 1, fn, KEYS);
    double lo[3], hi[3];
    if (!vec(L, 1, fn, "min", dim, lo) || !vec(L, 1, fn, "max", dim, hi))
        return lerr(L, "%s: 'min' and 'max' are required", fn);
    for (int k = 0; k < dim; k++)
        if (!(hi[k] > lo[k]))
            return lerr(L, "%s: max must exceed min on every axis", fn);
    rigid_walls(s, lo, hi, boolean(L, 1, fn, "open_top"));
    return 0;
}

static int l_hinge(lua_State *L)
{
    static const char *const KEYS[] = {"body", "to", "anchor", "axis", NULL};
    const char *fn = "rigid.hinge";
    rigid_state *s = STATE(L);
    luaL_checktype(L, 1, LUA_TTABLE);
    only_keys(L, 1, fn, KEYS);
    lua_getfield(L, 1, "body");
    const int a = body_arg(L, s, -1, fn);
    lua_pop(L, 1);
    int b = -1;
    if (lua_getfield(L, 1, "to") != LUA_TNIL)
        b = body_arg(L, s, -1, fn);
    lua_pop(L, 1);
    if (b == a)
        return lerr(L, "%s: a body cannot be hinged to itself", fn);
    double anchor[3], axis[3] = {0, 0, 1};
    if (!vec(L, 1, fn, "anchor", 3, anchor))
        return lerr(L, "%s: 'anchor' = {x, y, z} is required", fn);
    vec(L, 1, fn, "axis", 3, axis);
    if (!(fabs(axis[0]) + fabs(axis[1]) + fabs(axis[2]) > 0))
        return lerr(L, "%s: 'axis' must not be zero", fn);
    if (s->b[a].motion != RIGID_DYNAMIC)
        return lerr(L, "%s: '%s' is not a dynamic body", fn, s->b[a].name);
    if (rigid_hinge(s, a, b, anchor, axis))
        return lerr(L, "%s: %s", fn, "out of memory");
    return 0;
}

/* rigid.fix{ body = a, to = b }: glued in their present poses (one
 * compound body: a paddle wheel's paddles); without `to`, to the world */
static int l_fix(lua_State *L)
{
    static const char *const KEYS[] = {"body", "to", NULL};
    const char *fn = "rigid.fix";
    rigid_state *s = STATE(L);
    luaL_checktype(L, 1, LUA_TTABLE);
    only_keys(L, 1, fn, KEYS);
    lua_getfield(L, 1, "body");
    const int a = body_arg(L, s, -1, fn);
    lua_pop(L, 1);
    int b = -1;
    if (lua_getfield(L, 1, "to") != LUA_TNIL)
        b = body_arg(L, s, -1, fn);
    lua_pop(L, 1);
    if (b == a)
        return lerr(L, "%s: a body cannot be fixed to itself", fn);
    if (s->b[a].motion != RIGID_DYNAMIC)
        return lerr(L, "%s: '%s' is not a dynamic body", fn, s->b[a].name);
    if (rigid_fix(s, a, b))
        return lerr(L, "%s: %s", fn, "out of memory");
    return 0;
}

static int l_settings(lua_State *L)
{
    static const char *const KEYS[] = {"friction", "restitution", "iterations", "contact_erp", "contact_cfm", NULL};
    const char *fn = "rigid.settings";
    rigid_state *s = STATE(L);
    luaL_checktype(L, 1, LUA_TTABLE);
    only_keys(L, 1, fn, KEYS);
    const double mu = num(L, 1, fn, "friction", s->friction), e = num(L, 1, fn, "restitution", s->restitution);
    const double it = num(L, 1, fn, "iterations", s->iterations);
    const double erp = num(L, 1, fn, "contact_erp", s->contact_erp), cfm = num(L, 1, fn, "contact_cfm", s->contact_cfm);
    if (mu < 0 || e < 0 || e > 1 || it < 1 || it > 10000 || it != floor(it) || erp < 0 || erp > 1 || cfm < 0)
        return lerr(L, "%s: friction >= 0, restitution in [0, 1], iterations an integer in [1, 10000], "
                             "contact_erp in [0, 1], contact_cfm >= 0", fn);
    s->friction = mu, s->restitution = e, s->iterations = (int)it, s->contact_erp = erp, s->contact_cfm = cfm;
    return 0;
}

/* rigid.attach{ set = "ice", body = "ice_body", r0 = "ice_r0" }: the
 * particles of a boundary set that ride on the bodies (attach.c) */
static int l_attach(lua_State *L)
{
    static const char *const KEYS[] = {"set", "body", "r0", NULL};
    const char *fn = "rigid.attach";
    rigid_state *s = STATE(L);
    luaL_checktype(L, 1, LUA_TTABLE);
    only_keys(L, 1, fn, KEYS);
    const char *v[3] = {"ice", "ice_body", "ice_r0"};
    for (int k = 0; k < 3; k++) {
        const int ty = lua_getfield(L, 1, KEYS[k]);
        if (ty != LUA_TNIL && ty != LUA_TSTRING)
            return lerr(L, "%s: '%s' must be a name (got %s)", fn, KEYS[k], luaL_typename(L, -1));
        if (ty == LUA_TSTRING)
            v[k] = lua_tostring(L, -1);
    }
    if (rigid_attach_config(s, v[0], v[1], v[2]))
        return lerr(L, "%s: set, body and r0 must be names of 1 to %d characters", fn, RIGID_NAME - 1);
    lua_pop(L, 3);
    return 0;
}

static int l_bodies(lua_State *L)
{
    rigid_state *s = STATE(L);
    lua_createtable(L, s->nb, 0);
    for (int k = 0; k < s->nb; k++) {
        lua_pushstring(L, s->b[k].name);
        lua_rawseti(L, -2, k + 1);
    }
    return 1;
}

int rigid_lua_open(void *state, floe_ctx *ctx, void *Lv)
{
    lua_State *L = Lv;
    rigid_state *s = state;
    s->L = L;
    s->ctx = ctx;
    static const luaL_Reg fns[] = {{"body", l_body},         {"state", l_state},   {"walls", l_walls},
                                   {"hinge", l_hinge}, {"fix", l_fix},       {"settings", l_settings}, {"bodies", l_bodies}, {"attach", l_attach},
                                   {NULL, NULL}};
    lua_createtable(L, 0, 6);
    lua_pushlightuserdata(L, s);
    luaL_setfuncs(L, fns, 1);
    return 1;
}
