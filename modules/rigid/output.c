/* Per frame, for Blender, Houdini and ParaView to play the bodies back:
 * each body's surface at its pose as NAME.NNNN.obj (numbered like the
 * particle frames) and bodies.csv, one line per body and frame:
 *   t, id, name, x, y, z, qw, qx, qy, qz, vx, vy, vz, wx, wy, wz, Fx, Fy, Fz, Tx, Ty, Tz
 * (F, T: the fluid's force and torque about the centre in the last step).
 * Both go through the core's out_write (atomic, under the run's folder);
 * the CSV is rewritten whole each frame, so it is complete after any frame. */
#include "rigid.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int csv_add(rigid_state *s, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        const size_t room = s->csv_cap - s->csv_len;
        const int n = vsnprintf(s->csv ? s->csv + s->csv_len : NULL, room, fmt, ap);
        va_end(ap);
        if (n < 0)
            return -1;
        if ((size_t)n < room) {
            s->csv_len += (size_t)n;
            return 0;
        }
        size_t cap = s->csv_cap ? 2 * s->csv_cap : 65536;
        while (cap < s->csv_len + (size_t)n + 1)
            cap *= 2;
        char *c = realloc(s->csv, cap);
        if (!c)
            return -1;
        s->csv = c, s->csv_cap = cap;
    }
}

static int write_obj(rigid_state *s, const rigid_body *b, int frame)
{
    double R[3][3];
    rigid_quat_rot(b->q, R);
    size_t cap = (size_t)b->nv * 72 + (size_t)b->nt * 40 + 256, len = 0;
    char *buf = malloc(cap);
    if (!buf)
        return api->fail(s->ctx, FLOE_ERR_NOMEM, "out of memory");
    len += (size_t)snprintf(buf, cap, "# Floe rigid body '%s', t = %.9g\no %s\n", b->name, api->sim(s->ctx)->time, b->name);
    for (uint32_t v = 0; v < b->nv; v++) {
        const float *p = b->mx + 3 * (size_t)v;
        double w[3];
        for (int d = 0; d < 3; d++)
            w[d] = b->x[d] + R[d][0] * p[0] + R[d][1] * p[1] + R[d][2] * p[2];
        len += (size_t)snprintf(buf + len, cap - len, "v %.7g %.7g %.7g\n", w[0], w[1], w[2]);
    }
    for (uint32_t t = 0; t < b->nt; t++) {
        const uint32_t *q = b->mtri + 3 * (size_t)t;
        len += (size_t)snprintf(buf + len, cap - len, "f %u %u %u\n", q[0] + 1, q[1] + 1, q[2] + 1);
    }
    char name[RIGID_NAME + 32];
    snprintf(name, sizeof name, "%s.%04d.obj", b->name, frame);
    int st = api->out_write(s->ctx, name, buf, len);
    free(buf);
    return st;
}

int rigid_write_frame(rigid_state *s)
{
    const floe_sim_info *si = api->sim(s->ctx);
    const int frame = si->frame;
    for (int k = 0; k < s->nb; k++) {
        int st = write_obj(s, &s->b[k], frame);
        if (st)
            return st;
    }
    if (frame <= s->csv_frame) { /* a run continuing in the folder: keep what is there */
        s->csv_len = 0;
    }
    if (s->csv_len == 0 && csv_add(s, "t,id,name,x,y,z,qw,qx,qy,qz,vx,vy,vz,wx,wy,wz,Fx,Fy,Fz,Tx,Ty,Tz\n"))
        return api->fail(s->ctx, FLOE_ERR_NOMEM, "out of memory");
    for (int k = 0; k < s->nb; k++) {
        const rigid_body *b = &s->b[k];
        if (csv_add(s, "%.9g,%d,%s,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,"
                       "%.9g,%.9g,%.9g\n",
                    si->time, k + 1, b->name, b->x[0], b->x[1], b->x[2], b->q[0], b->q[1], b->q[2], b->q[3], b->v[0],
                    b->v[1], b->v[2], b->w[0], b->w[1], b->w[2], b->F[0], b->F[1], b->F[2], b->T[0], b->T[1], b->T[2]))
            return api->fail(s->ctx, FLOE_ERR_NOMEM, "out of memory");
    }
    s->csv_frame = frame;
    return api->out_write(s->ctx, "bodies.csv", s->csv, s->csv_len);
}
