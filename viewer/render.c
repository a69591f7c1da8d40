/* floe view: particles as shaded sphere impostors (positions and the colour
 * attribute in shader storage buffers, one point sprite per particle sized
 * to the sphere's projected diameter, the sphere cut out and shaded per
 * fragment),
 * meshes with their normals, an orbit camera. OpenGL 4.3 core through
 * libepoxy. */
#include "render.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

const float vw_background[3] = {0.12f, 0.12f, 0.14f};

/* one point sprite per particle: its size is the sphere's projected
 * diameter in pixels */
static const char particle_vs_head[] =
    "#version 430 core\n"
    "layout(std430, binding = 0) readonly buffer Pos { float pos[]; };\n"
    "layout(std430, binding = 1) readonly buffer Val { float val[]; };\n"
    "uniform mat4 view, proj;\n"
    "uniform float radius, lo, inv_range, viewport_h;\n"
    "uniform int use_val, stride;\n"
    "uniform vec4 flat_color;\n"
    "flat out vec3 base;\n";

/* the colour once per particle, not per fragment */
static const char particle_vs_main[] =
    "void main() {\n"
    "  int i = gl_VertexID * stride;\n"
    "  vec4 vc = view * vec4(pos[3 * i], pos[3 * i + 1], pos[3 * i + 2], 1.0);\n"
    "  base = use_val != 0 ? viridis((val[i] - lo) * inv_range) : flat_color.rgb;\n"
    "  gl_Position = proj * vc;\n"
    "  gl_PointSize = max(1.0, 2.0 * radius * proj[1][1] * 0.5 * viewport_h / max(-vc.z, 1e-6));\n"
    "}\n";

/* the brightest point of a sphere (its normal along the light) has the
 * colour map's colour itself: shade 1. No depth is written per fragment
 * (the sphere's centre depth): early depth tests keep software OpenGL fast. */
static const char particle_fs[] =
    "#version 430 core\n"
    "flat in vec3 base;\n"
    "uniform vec4 flat_color;\n"
    "out vec4 color;\n"
    "void main() {\n"
    "  vec2 uv = vec2(2.0 * gl_PointCoord.x - 1.0, 1.0 - 2.0 * gl_PointCoord.y);\n"
    "  float r2 = dot(uv, uv);\n"
    "  if (r2 > 1.0) discard;\n"
    "  vec3 n = vec3(uv, sqrt(1.0 - r2));\n"
    "  const vec3 L = normalize(vec3(0.3, 0.5, 1.0));\n"
    "  float shade = 0.35 + 0.65 * max(dot(n, L), 0.0);\n"
    "  color = vec4(base * shade, flat_color.a);\n"
    "}\n";

static const char mesh_vs[] =
    "#version 430 core\n"
    "layout(location = 0) in vec3 p;\n"
    "layout(location = 1) in vec3 n;\n"
    "uniform mat4 view, proj;\n"
    "out vec3 vn;\n"
    "void main() {\n"
    "  vn = mat3(view) * n;\n"
    "  gl_Position = proj * view * vec4(p, 1.0);\n"
    "}\n";

static const char mesh_fs[] =
    "#version 430 core\n"
    "in vec3 vn;\n"
    "uniform vec3 base;\n"
    "out vec4 color;\n"
    "void main() {\n"
    "  vec3 L = normalize(vec3(0.3, 0.5, 1.0));\n"
    "  float shade = 0.3 + 0.7 * abs(dot(normalize(vn), L));\n" /* two-sided */
    "  color = vec4(base * shade, 1.0);\n"
    "}\n";

static GLuint compile(GLenum kind, const char *const *src, int nsrc, char *err, size_t errlen)
{
    GLuint s = glCreateShader(kind);
    glShaderSource(s, nsrc, src, NULL);
    glCompileShader(s);
    GLint ok = 0;
    glGetShaderiv(s, GL_COMPILE_STATUS, &ok);
    if (!ok) {
        char log[2048] = "";
        glGetShaderInfoLog(s, sizeof log, NULL, log);
        snprintf(err, errlen, "shader: %s", log);
        glDeleteShader(s);
        return 0;
    }
    return s;
}

static GLuint program(const char *const *vs, int nvs, const char *const *fs, int nfs, char *err, size_t errlen)
{
    GLuint v = compile(GL_VERTEX_SHADER, vs, nvs, err, errlen);
    GLuint f = v ? compile(GL_FRAGMENT_SHADER, fs, nfs, err, errlen) : 0;
    if (!f) {
        if (v)
            glDeleteShader(v);
        return 0;
    }
    GLuint p = glCreateProgram();
    glAttachShader(p, v);
    glAttachShader(p, f);
    glLinkProgram(p);
    glDeleteShader(v);
    glDeleteShader(f);
    GLint ok = 0;
    glGetProgramiv(p, GL_LINK_STATUS, &ok);
    if (!ok) {
        char log[2048] = "";
        glGetProgramInfoLog(p, sizeof log, NULL, log);
        snprintf(err, errlen, "shader link: %s", log);
        glDeleteProgram(p);
        return 0;
    }
    return p;
}

int vw_render_init(vw_renderer *r, char *err, size_t errlen)
{
    memset(r, 0, sizeof *r);
    const char *pvs[] = {particle_vs_head, vw_viridis_glsl, particle_vs_main};
    const char *pfs[] = {particle_fs};
    const char *mvs[] = {mesh_vs}, *mfs[] = {mesh_fs};
    r->particles = program(pvs, 3, pfs, 1, err, errlen);
    r->mesh = r->particles ? program(mvs, 1, mfs, 1, err, errlen) : 0;
    if (!r->mesh)
        return -1;
    glGenVertexArrays(1, &r->vao); /* the particles need none, but core profile draws need one bound */
    return 0;
}

void vw_render_free(vw_renderer *r)
{
    if (r->particles)
        glDeleteProgram(r->particles);
    if (r->mesh)
        glDeleteProgram(r->mesh);
    if (r->vao)
        glDeleteVertexArrays(1, &r->vao);
    memset(r, 0, sizeof *r);
}

void vw_gpu_free(vw_gpu_frame *g)
{
    for (int i = 0; i < g->nclouds; i++) {
        glDeleteBuffers(1, &g->c[i].pos);
        glDeleteBuffers(1, &g->c[i].val);
    }
    for (int i = 0; i < g->nmeshes; i++) {
        glDeleteVertexArrays(1, &g->m[i].vao);
        glDeleteBuffers(1, &g->m[i].vbo);
        glDeleteBuffers(1, &g->m[i].ebo);
    }
    memset(g, 0, sizeof *g);
}

/* a colour per mesh name: water blue for surfaces and carpets, earth for a
 * terrain, else from the name */
static void mesh_color(const char *name, float c[3])
{
    if (strstr(name, "surface") || strstr(name, "water") || strstr(name, "fluid") || strstr(name, "carpet")) {
        c[0] = 0.30f, c[1] = 0.55f, c[2] = 0.90f;
        return;
    }
    if (strstr(name, "terrain") || strstr(name, "ground")) {
        c[0] = 0.62f, c[1] = 0.55f, c[2] = 0.42f;
        return;
    }
    unsigned h = 2166136261u;
    for (const char *s = name; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    static const float pal[6][3] = {{0.80f, 0.55f, 0.35f}, {0.60f, 0.75f, 0.45f}, {0.85f, 0.75f, 0.45f},
                                    {0.70f, 0.50f, 0.70f}, {0.55f, 0.65f, 0.75f}, {0.75f, 0.45f, 0.40f}};
    memcpy(c, pal[h % 6], sizeof pal[0]);
}

void vw_gpu_upload(vw_gpu_frame *g, const vw_frame *f, const char *attr)
{
    vw_gpu_free(g);
    g->spacing = f->spacing;
    for (int i = 0; i < f->nclouds; i++) {
        const vw_cloud *c = &f->clouds[i];
        vw_gpu_cloud *gc = &g->c[g->nclouds++];
        gc->n = c->n;
        gc->boundary = c->boundary;
        glGenBuffers(1, &gc->pos);
        glBindBuffer(GL_SHADER_STORAGE_BUFFER, gc->pos);
        glBufferData(GL_SHADER_STORAGE_BUFFER, (GLsizeiptr)(sizeof(float) * 3 * (c->n ? c->n : 1)), c->x, GL_STATIC_DRAW);
        const float *val = NULL;
        for (int k = 0; attr && k < c->nattr; k++)
            if (!strcmp(c->attr_name[k], attr))
                val = c->attr[k];
        gc->has_val = val != NULL;
        glGenBuffers(1, &gc->val);
        glBindBuffer(GL_SHADER_STORAGE_BUFFER, gc->val);
        glBufferData(GL_SHADER_STORAGE_BUFFER, (GLsizeiptr)(sizeof(float) * (val && c->n ? c->n : 1)), val, GL_STATIC_DRAW);
    }
    glBindBuffer(GL_SHADER_STORAGE_BUFFER, 0);
    for (int i = 0; i < f->nmeshes; i++) {
        const vw_mesh *m = &f->meshes[i];
        vw_gpu_mesh *gm = &g->m[g->nmeshes++];
        mesh_color(m->name, gm->color);
        gm->nt = m->nt;
        glGenVertexArrays(1, &gm->vao);
        glBindVertexArray(gm->vao);
        glGenBuffers(1, &gm->vbo);
        glBindBuffer(GL_ARRAY_BUFFER, gm->vbo);
        size_t bytes = sizeof(float) * 3 * m->nv;
        glBufferData(GL_ARRAY_BUFFER, (GLsizeiptr)(2 * bytes), NULL, GL_STATIC_DRAW);
        glBufferSubData(GL_ARRAY_BUFFER, 0, (GLsizeiptr)bytes, m->pos);
        glBufferSubData(GL_ARRAY_BUFFER, (GLintptr)bytes, (GLsizeiptr)bytes, m->nrm);
        glEnableVertexAttribArray(0);
        glVertexAttribPointer(0, 3, GL_FLOAT, GL_FALSE, 0, (void *)0);
        glEnableVertexAttribArray(1);
        glVertexAttribPointer(1, 3, GL_FLOAT, GL_FALSE, 0, (void *)bytes);
        glGenBuffers(1, &gm->ebo);
        glBindBuffer(GL_ELEMENT_ARRAY_BUFFER, gm->ebo);
        glBufferData(GL_ELEMENT_ARRAY_BUFFER, (GLsizeiptr)(sizeof(uint32_t) * 3 * m->nt), m->tri, GL_STATIC_DRAW);
        glBindVertexArray(0);
    }
}

static void mat_mul(float out[16], const float a[16], const float b[16])
{
    float r[16];
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) {
            float s = 0;
            for (int k = 0; k < 4; k++)
                s += a[k * 4 + j] * b[i * 4 + k];
            r[i * 4 + j] = s;
        }
    memcpy(out, r, sizeof r);
}

void vw_camera_matrices(const vw_camera *c, float aspect, float view[16], float proj[16])
{
    float eye[3] = {c->target[0] + c->dist * cosf(c->pitch) * sinf(c->yaw), c->target[1] + c->dist * sinf(c->pitch),
                    c->target[2] + c->dist * cosf(c->pitch) * cosf(c->yaw)};
    float f[3] = {c->target[0] - eye[0], c->target[1] - eye[1], c->target[2] - eye[2]};
    float fl = sqrtf(f[0] * f[0] + f[1] * f[1] + f[2] * f[2]);
    for (int k = 0; k < 3; k++)
        f[k] /= fl;
    float up[3] = {0, 1, 0};
    float s[3] = {f[1] * up[2] - f[2] * up[1], f[2] * up[0] - f[0] * up[2], f[0] * up[1] - f[1] * up[0]};
    float sl = sqrtf(s[0] * s[0] + s[1] * s[1] + s[2] * s[2]);
    for (int k = 0; k < 3; k++)
        s[k] /= sl;
    float u[3] = {s[1] * f[2] - s[2] * f[1], s[2] * f[0] - s[0] * f[2], s[0] * f[1] - s[1] * f[0]};
    float v[16] = {s[0], u[0], -f[0], 0, s[1], u[1], -f[1], 0, s[2], u[2], -f[2], 0,
                   -(s[0] * eye[0] + s[1] * eye[1] + s[2] * eye[2]), -(u[0] * eye[0] + u[1] * eye[1] + u[2] * eye[2]),
                   f[0] * eye[0] + f[1] * eye[1] + f[2] * eye[2], 1};
    memcpy(view, v, sizeof v);
    float zn = c->dist * 0.01f, zf = c->dist * 20.0f, t = 1.0f / tanf(0.5f * c->fov);
    float p[16] = {t / aspect, 0, 0, 0, 0, t, 0, 0, 0, 0, (zf + zn) / (zn - zf), -1, 0, 0, 2 * zf * zn / (zn - zf), 0};
    memcpy(proj, p, sizeof p);
}

void vw_camera_frame(vw_camera *c, const float lo[3], const float hi[3], int dim, float aspect)
{
    float r = 0;
    for (int k = 0; k < 3; k++) {
        c->target[k] = 0.5f * (lo[k] + hi[k]);
        r += 0.25f * (hi[k] - lo[k]) * (hi[k] - lo[k]);
    }
    r = sqrtf(r);
    if (!(r > 0))
        r = 1;
    c->fov = 0.7f; /* 40 degrees */
    if (dim == 2) {
        c->yaw = c->pitch = 0;
        float hx = 0.5f * (hi[0] - lo[0]), hy = 0.5f * (hi[1] - lo[1]);
        /* height or width, whichever fills the pane first */
        float need = fmaxf(hy, hx / aspect);
        c->dist = 1.2f * (need > 0 ? need : r) / tanf(0.5f * c->fov);
    } else {
        c->yaw = 0.45f;
        c->pitch = 0.35f;
        float half = 0.5f * c->fov; /* the narrower of the two angles of view */
        if (aspect < 1)
            half = atanf(tanf(half) * aspect);
        c->dist = 1.05f * r / sinf(half);
    }
}

void vw_render_pane(const vw_renderer *r, const vw_gpu_frame *g, const vw_camera *c, int x, int y, int w, int h,
                    const vw_draw_opts *o, float mvp[16])
{
    float view[16], proj[16];
    vw_camera_matrices(c, (float)w / (float)(h > 0 ? h : 1), view, proj);
    if (mvp)
        mat_mul(mvp, proj, view);
    glViewport(x, y, w, h);
    glEnable(GL_SCISSOR_TEST);
    glScissor(x, y, w, h);
    glClearColor(vw_background[0], vw_background[1], vw_background[2], 1);
    glClearDepth(1.0);
    glDepthMask(GL_TRUE);
    glClear(GL_COLOR_BUFFER_BIT | GL_DEPTH_BUFFER_BIT);
    glEnable(GL_DEPTH_TEST);
    glDepthFunc(GL_LESS);
    glDisable(GL_CULL_FACE);
    glDisable(GL_BLEND);
    if (o->meshes) {
        glUseProgram(r->mesh);
        glUniformMatrix4fv(glGetUniformLocation(r->mesh, "view"), 1, GL_FALSE, view);
        glUniformMatrix4fv(glGetUniformLocation(r->mesh, "proj"), 1, GL_FALSE, proj);
        for (int i = 0; i < g->nmeshes; i++) {
            glUniform3fv(glGetUniformLocation(r->mesh, "base"), 1, g->m[i].color);
            glBindVertexArray(g->m[i].vao);
            glDrawElements(GL_TRIANGLES, (GLsizei)(3 * g->m[i].nt), GL_UNSIGNED_INT, 0);
        }
    }
    float radius = o->radius > 0 ? o->radius : g->spacing > 0 ? 0.5f * g->spacing : 0.01f;
    glUseProgram(r->particles);
    glBindVertexArray(r->vao);
    glUniformMatrix4fv(glGetUniformLocation(r->particles, "view"), 1, GL_FALSE, view);
    glUniformMatrix4fv(glGetUniformLocation(r->particles, "proj"), 1, GL_FALSE, proj);
    glUniform1f(glGetUniformLocation(r->particles, "viewport_h"), (float)h);
    glEnable(GL_PROGRAM_POINT_SIZE);
    float range = o->hi - o->lo;
    glUniform1f(glGetUniformLocation(r->particles, "lo"), o->lo);
    glUniform1f(glGetUniformLocation(r->particles, "inv_range"), range > 0 ? 1.0f / range : 0.0f);
    GLint use_val = glGetUniformLocation(r->particles, "use_val"), col = glGetUniformLocation(r->particles, "flat_color");
    GLint rad = glGetUniformLocation(r->particles, "radius"), str = glGetUniformLocation(r->particles, "stride");
    /* fluid first (opaque), then the walls (faint: blended, no depth written) */
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1) {
            if (o->walls == VW_WALLS_HIDDEN)
                break;
            if (o->walls == VW_WALLS_FAINT) {
                glEnable(GL_BLEND);
                glBlendFunc(GL_SRC_ALPHA, GL_ONE_MINUS_SRC_ALPHA);
                glDepthMask(GL_FALSE);
            }
        }
        for (int i = 0; i < g->nclouds; i++) {
            const vw_gpu_cloud *gc = &g->c[i];
            if (gc->boundary != pass || gc->n == 0 || (!pass && !o->particles))
                continue;
            int colour = !pass && gc->has_val && o->attr;
            glUniform1i(use_val, colour);
            /* faint walls: smaller dots (a quarter of the pixels to blend) */
            glUniform1f(rad, pass && o->walls == VW_WALLS_FAINT ? 0.6f * radius : radius);
            if (pass)
                glUniform4f(col, 0.75f, 0.75f, 0.78f, o->walls == VW_WALLS_FAINT ? 0.2f : 1.0f);
            else
                glUniform4f(col, 0.35f, 0.6f, 0.95f, 1.0f);
            glBindBufferBase(GL_SHADER_STORAGE_BUFFER, 0, gc->pos);
            glBindBufferBase(GL_SHADER_STORAGE_BUFFER, 1, gc->val);
            /* faint walls of many particles: every third one (walls are
             * sampled two or three layers deep): context, at a third of the cost */
            int stride = pass && o->walls == VW_WALLS_FAINT && gc->n > 20000 ? 3 : 1;
            glUniform1i(str, stride);
            glDrawArrays(GL_POINTS, 0, (GLsizei)((gc->n + (uint32_t)stride - 1) / (uint32_t)stride));
        }
    }
    glDepthMask(GL_TRUE);
    glDisable(GL_BLEND);
    glDisable(GL_SCISSOR_TEST);
    glBindVertexArray(0);
    glUseProgram(0);
}
