/* The bodies' dynamics through the Open Dynamics Engine (ODE, C API):
 * integration (semi-implicit Euler, as the fluid's symplectic Euler),
 * body-body and body-wall contacts with Coulomb friction and restitution,
 * joints (hinges), kinematic bodies. Floe hands ODE the fluid's force and
 * torque on each body every step (rigid.force) and reads the poses back.
 *
 * Each body's ODE frame has its origin at the centre of mass (ODE needs the
 * centre there) and the world axes at the start (a box: its own axes);
 * collision shapes are the true surfaces: dBox, dSphere, dTriMesh. The
 * tank's walls are half-spaces (rigid.walls). A 2D sim keeps every body in
 * the plane z = 0 with a Plane2D joint. */
#include "rigid.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_CONTACTS 16

int rigid_engine_init(rigid_state *s)
{
    dInitODE2(0);
    s->world = dWorldCreate();
    s->space = dHashSpaceCreate(0);
    s->contacts = dJointGroupCreate(0);
    if (!s->world || !s->space || !s->contacts)
        return -1;
    s->friction = 0.5;
    s->restitution = 0.1;
    s->contact_erp = 0.2;
    s->contact_cfm = 1e-6;
    s->iterations = 50;
    dWorldSetContactSurfaceLayer(s->world, 0.0);
    /* overlaps are undone at most at 0.5 m/s: with the fluid's small steps
     * ERP alone would push an overlap of 1 cm apart at 100 m/s */
    dWorldSetContactMaxCorrectingVel(s->world, 0.5);
    return 0;
}

void rigid_engine_fini(rigid_state *s)
{
    for (int k = 0; k < s->nb; k++) {
        rigid_body *b = &s->b[k];
        if (b->geom)
            dGeomDestroy(b->geom);
        if (b->tmd)
            dGeomTriMeshDataDestroy(b->tmd);
        free(b->tm_verts);
        free(b->tm_idx);
    }
    for (int k = 0; k < s->nwalls; k++)
        dGeomDestroy(s->walls[k]);
    if (s->contacts)
        dJointGroupDestroy(s->contacts);
    if (s->space)
        dSpaceDestroy(s->space);
    if (s->world)
        dWorldDestroy(s->world);
    if (s->world)
        dCloseODE();
}

/* the body in ODE: mass and inertia about the centre, the collision shape,
 * the pose and velocity */
int rigid_engine_add(rigid_state *s, rigid_body *b, const double x[3], const double q[4], const double v[3],
                     const double w[3])
{
    const floe_sim_info *si = api->sim(s->ctx);
    b->body = dBodyCreate(s->world);
    dMass M;
    dMassSetZero(&M);
    const double(*I)[3] = b->inertia;
    dMassSetParameters(&M, b->mass, 0, 0, 0, I[0][0], I[1][1], I[2][2], I[0][1], I[0][2], I[1][2]);
    if (!dMassCheck(&M))
        return api->fail(s->ctx, FLOE_ERR_ARG, "rigid body '%s': ODE refuses its mass properties (mass %g)", b->name,
                         b->mass);
    dBodySetMass(b->body, &M);
    if (b->shape == RIGID_BOX) {
        const double dz = si->dim == 3 ? 2.0 * b->half[2] : 2.0 * si->spacing;
        b->geom = dCreateBox(s->space, 2.0 * b->half[0], 2.0 * b->half[1], dz);
    } else if (b->shape == RIGID_SPHERE)
        b->geom = dCreateSphere(s->space, b->radius);
    else {
        b->tm_verts = malloc((size_t)b->nv * 3 * sizeof(dReal));
        b->tm_idx = malloc((size_t)b->nt * 3 * sizeof(dTriIndex));
        if (!b->tm_verts || !b->tm_idx)
            return api->fail(s->ctx, FLOE_ERR_NOMEM, "out of memory");
        for (size_t k = 0; k < (size_t)b->nv * 3; k++)
            b->tm_verts[k] = b->mx[k];
        for (size_t k = 0; k < (size_t)b->nt * 3; k++)
            b->tm_idx[k] = (dTriIndex)b->mtri[k];
        b->tmd = dGeomTriMeshDataCreate();
        dGeomTriMeshDataBuildDouble(b->tmd, b->tm_verts, 3 * sizeof(dReal), (int)b->nv, b->tm_idx, (int)b->nt * 3,
                                    3 * sizeof(dTriIndex));
        b->geom = dCreateTriMesh(s->space, b->tmd, NULL, NULL, NULL);
    }
    dGeomSetBody(b->geom, b->body);
    dGeomSetData(b->geom, b);
    dBodySetPosition(b->body, x[0], x[1], x[2]);
    const dQuaternion dq = {q[0], q[1], q[2], q[3]};
    dBodySetQuaternion(b->body, dq);
    dBodySetLinearVel(b->body, v[0], v[1], v[2]);
    dBodySetAngularVel(b->body, w[0], w[1], w[2]);
    b->held = b->motion == RIGID_DYNAMIC && b->hold > api->sim(s->ctx)->time;
    if (b->motion != RIGID_DYNAMIC || b->held)
        dBodySetKinematic(b->body);
    if (si->dim == 2 && b->motion == RIGID_DYNAMIC) {
        dJointID j = dJointCreatePlane2D(s->world, 0);
        dJointAttach(j, b->body, 0);
    }
    dBodySetAutoDisableFlag(b->body, 0);
    dBodySetGyroscopicMode(b->body, 1);
    return FLOE_OK;
}

/* Half-spaces bounding [lo, hi] from outside (the floor, the sides; the
 * top unless open_top): the tank's inner faces, against which the bodies'
 * true surfaces collide. */
int rigid_walls(rigid_state *s, const double lo[3], const double hi[3], int open_top)
{
    const int dim = api->sim(s->ctx)->dim;
    for (int k = 0; k < s->nwalls; k++)
        dGeomDestroy(s->walls[k]);
    s->nwalls = 0;
    for (int a = 0; a < dim; a++)
        for (int side = 0; side < 2; side++) {
            if (a == 1 && side == 1 && open_top)
                continue;
            double n[3] = {0, 0, 0};
            n[a] = side ? -1.0 : 1.0;
            const double d = side ? -hi[a] : lo[a];
            s->walls[s->nwalls++] = dCreatePlane(s->space, n[0], n[1], n[2], d);
        }
    return FLOE_OK;
}

int rigid_hinge(rigid_state *s, int a, int b, const double anchor[3], const double axis[3])
{
    if (s->nj == s->jcap) {
        int cap = s->jcap ? 2 * s->jcap : 8;
        rigid_joint *j = realloc(s->j, (size_t)cap * sizeof *j);
        if (!j)
            return api->fail(s->ctx, FLOE_ERR_NOMEM, "out of memory");
        s->j = j, s->jcap = cap;
    }
    dJointID j = dJointCreateHinge(s->world, 0);
    dJointAttach(j, s->b[a].body, b >= 0 ? s->b[b].body : 0);
    dJointSetHingeAnchor(j, anchor[0], anchor[1], anchor[2]);
    dJointSetHingeAxis(j, axis[0], axis[1], axis[2]);
    s->j[s->nj++] = (rigid_joint){j, a, b};
    return FLOE_OK;
}

/* b = -1: to the world */
int rigid_fix(rigid_state *s, int a, int b)
{
    if (s->nj == s->jcap) {
        int cap = s->jcap ? 2 * s->jcap : 8;
        rigid_joint *j = realloc(s->j, (size_t)cap * sizeof *j);
        if (!j)
            return api->fail(s->ctx, FLOE_ERR_NOMEM, "out of memory");
        s->j = j, s->jcap = cap;
    }
    dJointID j = dJointCreateFixed(s->world, 0);
    dJointAttach(j, s->b[a].body, b >= 0 ? s->b[b].body : 0);
    dJointSetFixed(j);
    s->j[s->nj++] = (rigid_joint){j, a, b};
    return FLOE_OK;
}

static void near_cb(void *data, dGeomID g1, dGeomID g2)
{
    rigid_state *s = data;
    dBodyID b1 = dGeomGetBody(g1), b2 = dGeomGetBody(g2);
    if (b1 && b2 && dAreConnectedExcluding(b1, b2, dJointTypeContact))
        return;
    /* kinematic against kinematic or a wall: nothing to resolve */
    const int dyn1 = b1 && !dBodyIsKinematic(b1), dyn2 = b2 && !dBodyIsKinematic(b2);
    if (!dyn1 && !dyn2)
        return;
    dContact c[MAX_CONTACTS];
    const int n = dCollide(g1, g2, MAX_CONTACTS, &c[0].geom, sizeof(dContact));
    for (int i = 0; i < n; i++) {
        c[i].surface.mode = dContactBounce | dContactSoftERP | dContactSoftCFM | dContactApprox1;
        c[i].surface.mu = s->friction;
        c[i].surface.bounce = s->restitution;
        c[i].surface.bounce_vel = 0.05;
        c[i].surface.soft_erp = s->contact_erp;
        c[i].surface.soft_cfm = s->contact_cfm;
        dJointID j = dJointCreateContact(s->world, s->contacts, &c[i]);
        dJointAttach(j, b1, b2);
    }
}

/* the poses and velocities after ODE's step into the bodies' state */
void rigid_engine_read(rigid_state *s)
{
    const int dim = api->sim(s->ctx)->dim;
    for (int k = 0; k < s->nb; k++) {
        rigid_body *b = &s->b[k];
        const dReal *p = dBodyGetPosition(b->body), *q = dBodyGetQuaternion(b->body);
        const dReal *v = dBodyGetLinearVel(b->body), *w = dBodyGetAngularVel(b->body);
        for (int d = 0; d < 3; d++)
            b->x[d] = p[d], b->v[d] = v[d], b->w[d] = w[d];
        for (int d = 0; d < 4; d++)
            b->q[d] = q[d];
        if (dim == 2) { /* Plane2D holds the plane up to the solver's tolerance: made exact */
            b->x[2] = b->v[2] = b->w[0] = b->w[1] = 0.0;
            const double n = sqrt(b->q[0] * b->q[0] + b->q[3] * b->q[3]);
            b->q[0] /= n, b->q[1] = b->q[2] = 0.0, b->q[3] /= n;
            dBodySetPosition(b->body, b->x[0], b->x[1], 0.0);
            const dQuaternion dq = {b->q[0], 0.0, 0.0, b->q[3]};
            dBodySetQuaternion(b->body, dq);
            dBodySetLinearVel(b->body, b->v[0], b->v[1], 0.0);
            dBodySetAngularVel(b->body, 0.0, 0.0, b->w[2]);
        }
        rigid_attach_from_com(b); /* ODE's centre of mass to the body's own centre */
    }
}

/* One step of dt from time t, first half: kinematic poses for t + dt,
 * held bodies released, contacts (none of it needs the fluid's forces, so
 * the OpenCL path runs it while the device still computes them). */
int rigid_engine_collide(rigid_state *s, double t, double dt)
{
    const floe_sim_info *si = api->sim(s->ctx);
    dWorldSetGravity(s->world, si->gravity[0], si->gravity[1], si->gravity[2]);
    dWorldSetQuickStepNumIterations(s->world, s->iterations);
    dWorldSetERP(s->world, 0.2);
    dWorldSetCFM(s->world, 1e-9);
    s->step_dt = dt;
    for (int k = 0; k < s->nb; k++) {
        rigid_body *b = &s->b[k];
        b->push = 0;
        if (b->motion == RIGID_KINEMATIC) {
            double x[3], q[4];
            int st = rigid_kinematic_pose(s, b, t + dt, x, q);
            if (st)
                return st;
            /* the velocities that carry the pose at t to the one at t + dt */
            double v[3], w[3];
            for (int d = 0; d < 3; d++)
                v[d] = (x[d] - b->x[d]) / dt;
            /* dq = q_new conj(q_old) = (cos(a/2), sin(a/2) u): w = a u / dt */
            const double *p = b->q;
            double dq[4] = {q[0] * p[0] + q[1] * p[1] + q[2] * p[2] + q[3] * p[3],
                            -q[0] * p[1] + q[1] * p[0] - q[2] * p[3] + q[3] * p[2],
                            -q[0] * p[2] + q[1] * p[3] + q[2] * p[0] - q[3] * p[1],
                            -q[0] * p[3] - q[1] * p[2] + q[2] * p[1] + q[3] * p[0]};
            if (dq[0] < 0)
                for (int d = 0; d < 4; d++)
                    dq[d] = -dq[d];
            const double sn = sqrt(dq[1] * dq[1] + dq[2] * dq[2] + dq[3] * dq[3]);
            const double ang = 2.0 * atan2(sn, dq[0]);
            for (int d = 0; d < 3; d++)
                w[d] = sn > 1e-15 ? ang * dq[1 + d] / sn / dt : 0.0;
            dBodySetLinearVel(b->body, v[0], v[1], v[2]);
            dBodySetAngularVel(b->body, w[0], w[1], w[2]);
            b->kin_t = t + dt;
            memcpy(b->x, x, sizeof b->x); /* ODE moves it there with v, w; the pose is set exactly below */
            memcpy(b->q, q, sizeof b->q);
        } else if (b->held && t + dt < b->hold) {
            dBodySetLinearVel(b->body, 0, 0, 0);
            dBodySetAngularVel(b->body, 0, 0, 0);
        } else if (b->motion == RIGID_DYNAMIC) {
            if (b->held) { /* released: the fluid has settled around it */
                dBodySetDynamic(b->body);
                b->held = 0;
            }
            b->push = 1; /* the fluid's force and torque, in the second half */
        }
    }
    dSpaceCollide(s->space, s, near_cb);
    return FLOE_OK;
}

/* Second half: the fluid's forces on the dynamic bodies, ODE's step. */
void rigid_engine_solve(rigid_state *s)
{
    for (int k = 0; k < s->nb; k++) {
        rigid_body *b = &s->b[k];
        if (!b->push)
            continue;
        double T[3];
        rigid_attach_torque(b, T); /* about the centre of mass with attached particles */
        dBodyAddForce(b->body, b->F[0], b->F[1], b->F[2]);
        dBodyAddTorque(b->body, T[0], T[1], T[2]);
    }
    dWorldQuickStep(s->world, s->step_dt);
    dJointGroupEmpty(s->contacts);
    for (int k = 0; k < s->nb; k++) { /* kinematic bodies land on their function's pose exactly */
        rigid_body *b = &s->b[k];
        if (b->motion != RIGID_KINEMATIC)
            continue;
        dBodySetPosition(b->body, b->x[0], b->x[1], b->x[2]);
        const dQuaternion dq = {b->q[0], b->q[1], b->q[2], b->q[3]};
        dBodySetQuaternion(b->body, dq);
    }
    rigid_engine_read(s);
}

/* One step of dt from time t: kinematic poses for t + dt, the fluid's
 * forces, gravity, contacts, ODE's step. */
int rigid_engine_step(rigid_state *s, double t, double dt)
{
    int st = rigid_engine_collide(s, t, dt);
    if (!st)
        rigid_engine_solve(s);
    return st;
}
