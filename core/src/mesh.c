/* Triangle meshes from files through assimp's C API: every mesh of the
 * scene (or of one named object), node transforms applied, triangulated,
 * vertices welded, then placed by the scene's scale, rotation and
 * translation. Topology, area and volume: mesh_topology.c. */
#include "mesh_internal.h"

#include <assimp/cimport.h>
#include <assimp/postprocess.h>
#include <assimp/scene.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* mesh_topology.c */
int mesh_topology(floe_mesh *m, char *err, size_t errlen);

floe_mesh_def floe_mesh_default_def(void)
{
    floe_mesh_def d;
    memset(&d, 0, sizeof d);
    for (int k = 0; k < 3; k++) {
        d.scale[k] = 1;
        d.rotation[k][k] = 1;
    }
    return d;
}

static void mat_mul3(const double a[3][3], const double b[3][3], double out[3][3])
{
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            out[i][j] = a[i][0] * b[0][j] + a[i][1] * b[1][j] + a[i][2] * b[2][j];
}

void floe_rotation_euler(float R[3][3], const float deg[3])
{
    double m[3][3][3], t[3][3], r[3][3];
    for (int a = 0; a < 3; a++) {
        double c = cos(deg[a] * M_PI / 180), s = sin(deg[a] * M_PI / 180);
        int i = (a + 1) % 3, j = (a + 2) % 3; /* the plane rotated about axis a */
        memset(m[a], 0, sizeof m[a]);
        m[a][a][a] = 1;
        m[a][i][i] = m[a][j][j] = c;
        m[a][i][j] = -s;
        m[a][j][i] = s;
    }
    mat_mul3(m[2], m[1], t);
    mat_mul3(t, m[0], r);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            R[i][j] = (float)r[i][j];
}

void floe_rotation_axis_angle(float R[3][3], const float axis[3], float deg)
{
    double len = sqrt((double)axis[0] * axis[0] + (double)axis[1] * axis[1] + (double)axis[2] * axis[2]);
    double u[3] = {axis[0] / len, axis[1] / len, axis[2] / len};
    double c = cos(deg * M_PI / 180), s = sin(deg * M_PI / 180);
    /* Rodrigues: R = c I + s [u]x + (1 - c) u u^T */
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            R[i][j] = (float)((i == j ? c : 0) + (1 - c) * u[i] * u[j]);
    R[0][1] -= (float)(s * u[2]);
    R[1][0] += (float)(s * u[2]);
    R[0][2] += (float)(s * u[1]);
    R[2][0] -= (float)(s * u[1]);
    R[1][2] -= (float)(s * u[0]);
    R[2][1] += (float)(s * u[0]);
}

/* ---- checks before reading --------------------------------------------- */

static int check_placement(const floe_mesh_def *def, char *err, size_t errlen)
{
    for (int k = 0; k < 3; k++) {
        if (!(def->scale[k] > 0) || !isfinite(def->scale[k])) {
            snprintf(err, errlen, "%s: scale must be positive and finite on every axis (axis %d: %g)", def->file,
                     k + 1, (double)def->scale[k]);
            return FLOE_ERR_ARG;
        }
        if (!isfinite(def->translation[k])) {
            snprintf(err, errlen, "%s: translation must be finite", def->file);
            return FLOE_ERR_ARG;
        }
    }
    /* R R^T = I within float rounding of a rotation built in double */
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            double dot = 0;
            for (int k = 0; k < 3; k++)
                dot += (double)def->rotation[i][k] * def->rotation[j][k];
            if (!(fabs(dot - (i == j)) < 1e-4)) {
                snprintf(err, errlen, "%s: rotation is not a rotation matrix (R R^T != I)", def->file);
                return FLOE_ERR_ARG;
            }
        }
    const float (*R)[3] = def->rotation;
    double det = R[0][0] * ((double)R[1][1] * R[2][2] - (double)R[1][2] * R[2][1]) -
                 R[0][1] * ((double)R[1][0] * R[2][2] - (double)R[1][2] * R[2][0]) +
                 R[0][2] * ((double)R[1][0] * R[2][1] - (double)R[1][1] * R[2][0]);
    if (det < 0) {
        snprintf(err, errlen, "%s: rotation is a reflection (det -1)", def->file);
        return FLOE_ERR_ARG;
    }
    return FLOE_OK;
}

static int check_file(const char *file, char *err, size_t errlen)
{
    struct stat st;
    FILE *f = NULL;
    if (stat(file, &st) != 0 || !(f = fopen(file, "rb"))) {
        snprintf(err, errlen, "%s: cannot read the mesh: %s", file, strerror(errno));
        return FLOE_ERR_IO;
    }
    fclose(f);
    if (S_ISDIR(st.st_mode))
        snprintf(err, errlen, "%s: is a directory, not a mesh file", file);
    else if (st.st_size == 0)
        snprintf(err, errlen, "%s: the file is empty", file);
    else if ((long long)st.st_size > FLOE_MESH_MAX_FILE_BYTES)
        snprintf(err, errlen, "%s: %lld bytes is more than the limit for a mesh file (%lld)", file,
                 (long long)st.st_size, (long long)FLOE_MESH_MAX_FILE_BYTES);
    else
        return FLOE_OK;
    return FLOE_ERR_IO;
}

/* ---- gathering the scene's triangles ----------------------------------- */

typedef struct gather {
    const struct aiScene *s;
    const char *object;
    int found;               /* the object was seen */
    uint64_t nv, nt;         /* counted, then filled */
    double *v;               /* 3 per vertex, in the file's frame */
    uint32_t *t;
    int bad_index;
} gather;

/* out = a * b for assimp's row-major 4x4 (a1..a4 is the first row) */
static void mat_mul4(const double a[16], const struct aiMatrix4x4 *bm, double out[16])
{
    const ai_real *b = &bm->a1;
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++)
            out[4 * i + j] = a[4 * i] * b[j] + a[4 * i + 1] * b[4 + j] + a[4 * i + 2] * b[8 + j] + a[4 * i + 3] * b[12 + j];
}

static void add_mesh(gather *g, const struct aiMesh *me, const double M[16])
{
    uint64_t base = g->nv;
    for (unsigned f = 0; f < me->mNumFaces; f++) {
        const struct aiFace *fc = &me->mFaces[f];
        if (fc->mNumIndices != 3)
            continue; /* points and lines */
        for (int k = 0; k < 3; k++) {
            if (fc->mIndices[k] >= me->mNumVertices)
                g->bad_index = 1;
            else if (g->t)
                g->t[3 * g->nt + k] = (uint32_t)(base + fc->mIndices[k]);
        }
        g->nt++;
    }
    for (unsigned i = 0; g->v && i < me->mNumVertices; i++) {
        const struct aiVector3D *p = &me->mVertices[i];
        for (int r = 0; r < 3; r++)
            g->v[3 * (base + i) + r] = M[4 * r] * p->x + M[4 * r + 1] * p->y + M[4 * r + 2] * p->z + M[4 * r + 3];
    }
    g->nv += me->mNumVertices;
}

/* Depth first over the node tree with the accumulated transform; `on`:
 * inside the chosen object (or no object chosen). */
static void walk(gather *g, const struct aiNode *n, const double parent[16], int on)
{
    double M[16];
    mat_mul4(parent, &n->mTransformation, M);
    if (!on && g->object && strcmp(n->mName.data, g->object) == 0)
        on = g->found = 1;
    for (unsigned i = 0; on && i < n->mNumMeshes; i++)
        if (n->mMeshes[i] < g->s->mNumMeshes)
            add_mesh(g, g->s->mMeshes[n->mMeshes[i]], M);
    for (unsigned c = 0; c < n->mNumChildren; c++)
        walk(g, n->mChildren[c], M, on);
}

static void walk_all(gather *g)
{
    static const double I[16] = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};
    g->nv = g->nt = 0;
    g->found = 0;
    walk(g, g->s->mRootNode, I, g->object == NULL);
}

/* ---- welding ----------------------------------------------------------- */

static uint64_t hash_pos(const float p[3])
{
    uint32_t b[3];
    memcpy(b, p, sizeof b);
    uint64_t h = 0xcbf29ce484222325ull;
    for (int k = 0; k < 3; k++)
        h = (h ^ b[k]) * 0x100000001b3ull * 0x9e3779b97f4a7c15ull;
    return h ^ (h >> 29);
}

/* Vertices at the same float position become one (across the file's
 * meshes, which assimp's JoinIdenticalVertices leaves apart); triangles
 * then naming a vertex twice are dropped, and only used vertices kept. */
static int weld(floe_mesh *m, const double *v, uint64_t nv, uint32_t *t, uint64_t nt)
{
    size_t cap = 16;
    while (cap < 2 * nv)
        cap *= 2;
    uint32_t *slot = malloc(cap * sizeof *slot), *remap = malloc(nv * sizeof *remap);
    float *x = malloc(nv * 3 * sizeof *x);
    if (!slot || !remap || !x) {
        free(slot), free(remap), free(x);
        return FLOE_ERR_NOMEM;
    }
    memset(slot, 0xff, cap * sizeof *slot);
    uint32_t n = 0;
    for (uint64_t i = 0; i < nv; i++) {
        float p[3];
        for (int k = 0; k < 3; k++)
            p[k] = (float)v[3 * i + k] + 0.0f; /* -0 == +0 */
        size_t h = hash_pos(p) & (cap - 1);
        while (slot[h] != UINT32_MAX && memcmp(x + 3 * (size_t)slot[h], p, sizeof p) != 0)
            h = (h + 1) & (cap - 1);
        if (slot[h] == UINT32_MAX) {
            slot[h] = n;
            memcpy(x + 3 * (size_t)n++, p, sizeof p);
        }
        remap[i] = slot[h];
    }
    free(slot);
    uint32_t kept = 0;
    for (uint64_t i = 0; i < nt; i++) {
        uint32_t a = remap[t[3 * i]], b = remap[t[3 * i + 1]], c = remap[t[3 * i + 2]];
        if (a == b || b == c || a == c)
            continue;
        t[3 * kept] = a, t[3 * kept + 1] = b, t[3 * kept + 2] = c;
        kept++;
    }
    m->dropped = (uint32_t)(nt - kept);
    /* keep the used vertices, in first-use order */
    float *xu = malloc(((size_t)n + 1) * 3 * sizeof *xu);
    if (!xu) {
        free(remap), free(x);
        return FLOE_ERR_NOMEM;
    }
    memset(remap, 0xff, n * sizeof *remap);
    uint32_t used = 0;
    for (uint64_t i = 0; i < 3 * (uint64_t)kept; i++) {
        if (remap[t[i]] == UINT32_MAX) {
            memcpy(xu + 3 * (size_t)used, x + 3 * (size_t)t[i], 3 * sizeof *x);
            remap[t[i]] = used++;
        }
        t[i] = remap[t[i]];
    }
    free(remap);
    free(x);
    m->x = xu;
    m->tri = t;
    m->nverts = used;
    m->ntris = kept;
    return FLOE_OK;
}

/* ---- placing ----------------------------------------------------------- */

/* x' = R (S x) + t in double, and the bounding box */
static void place(floe_mesh *m, const floe_mesh_def *def)
{
    for (int k = 0; k < 3; k++) {
        m->min[k] = INFINITY;
        m->max[k] = -INFINITY;
    }
    for (uint32_t i = 0; i < m->nverts; i++) {
        float *p = m->x + 3 * (size_t)i;
        double s[3] = {(double)def->scale[0] * p[0], (double)def->scale[1] * p[1], (double)def->scale[2] * p[2]};
        for (int r = 0; r < 3; r++) {
            p[r] = (float)(def->rotation[r][0] * s[0] + def->rotation[r][1] * s[1] + def->rotation[r][2] * s[2] +
                           def->translation[r]);
            m->min[r] = fminf(m->min[r], p[r]);
            m->max[r] = fmaxf(m->max[r], p[r]);
        }
    }
}

/* ---- loading ----------------------------------------------------------- */

static int read_scene(floe_mesh *m, const floe_mesh_def *def, const struct aiScene *s, char *err, size_t errlen)
{
    const char *file = def->file;
    uint64_t limit = def->max_triangles ? def->max_triangles : FLOE_MESH_MAX_TRIANGLES;
    gather g = {.s = s, .object = def->object};
    walk_all(&g);
    if (def->object && !g.found) {
        snprintf(err, errlen, "%s: no object named '%s' in the file", file, def->object);
        return FLOE_ERR_ARG;
    }
    if (g.nt == 0) {
        snprintf(err, errlen, "%s: no triangles in the file%s%s%s", file, def->object ? " (object '" : "",
                 def->object ? def->object : "", def->object ? "')" : "");
        return FLOE_ERR_ARG;
    }
    if (g.nt > limit || g.nv > 3 * limit) {
        snprintf(err, errlen, "%s: %llu triangles, %llu vertices: more than the limit of %llu triangles (and 3x as many "
                 "vertices) for a mesh", file, (unsigned long long)g.nt, (unsigned long long)g.nv,
                 (unsigned long long)limit);
        return FLOE_ERR_ARG;
    }
    g.v = malloc(g.nv * 3 * sizeof *g.v);
    g.t = malloc(g.nt * 3 * sizeof *g.t);
    if (!g.v || !g.t) {
        free(g.v), free(g.t);
        snprintf(err, errlen, "%s: out of memory reading %llu triangles", file, (unsigned long long)g.nt);
        return FLOE_ERR_NOMEM;
    }
    walk_all(&g);
    int rc = g.bad_index ? FLOE_ERR_ARG : weld(m, g.v, g.nv, g.t, g.nt);
    free(g.v);
    if (rc) {
        free(g.t);
        snprintf(err, errlen, rc == FLOE_ERR_ARG ? "%s: a face names a vertex the mesh does not have"
                                                 : "%s: out of memory welding the vertices", file);
        return rc;
    }
    if (m->ntris == 0) {
        snprintf(err, errlen, "%s: every triangle is degenerate (two corners at the same point)", file);
        return FLOE_ERR_ARG;
    }
    return FLOE_OK;
}

/* assimp's importers, in this process: the scene read into m (welded,
 * unplaced) or an error naming the file. */
static int import_direct(floe_mesh *m, const floe_mesh_def *def, char *err, size_t errlen)
{
    const struct aiScene *s = aiImportFile(def->file, aiProcess_Triangulate | aiProcess_JoinIdenticalVertices |
                                                          aiProcess_SortByPType | aiProcess_ValidateDataStructure);
    int rc = FLOE_ERR_ARG;
    if (!s || !s->mRootNode)
        snprintf(err, errlen, "%s: cannot read the mesh: %s", def->file, s ? "no scene in the file" : aiGetErrorString());
    else
        rc = read_scene(m, def, s, err, errlen);
    if (s)
        aiReleaseImport(s);
    return rc;
}

/* ---- crash isolation ---------------------------------------------------
 * Some of assimp's importers crash on malformed files (a truncated ASCII PLY
 * header with a NUL byte in it segfaults assimp 5.2's PLY reader: found by
 * `make fuzz`, kept in tests/fuzz/crashes/mesh/). A scene must get an error
 * naming the file instead, so the import runs in a forked child that sends
 * the welded mesh back through a pipe; a child that dies is reported as a
 * malformed file. FLOE_MESH_IN_PROCESS=1 imports in this process (for a
 * debugger). */

typedef struct import_head {
    int32_t rc;
    uint32_t nverts, ntris, dropped;
    char err[1024];
} import_head;

static int write_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n) {
        ssize_t k = write(fd, c, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        c += k, n -= (size_t)k;
    }
    return 0;
}

static int read_all(int fd, void *p, size_t n)
{
    char *c = p;
    while (n) {
        ssize_t k = read(fd, c, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        c += k, n -= (size_t)k;
    }
    return 0;
}

static void import_child(int fd, floe_mesh *m, const floe_mesh_def *def)
{
    import_head h;
    memset(&h, 0, sizeof h);
    h.rc = import_direct(m, def, h.err, sizeof h.err);
    h.nverts = h.rc ? 0 : m->nverts;
    h.ntris = h.rc ? 0 : m->ntris;
    h.dropped = m->dropped;
    int bad = write_all(fd, &h, sizeof h) ||
              (h.nverts && write_all(fd, m->x, (size_t)h.nverts * 3 * sizeof *m->x)) ||
              (h.ntris && write_all(fd, m->tri, (size_t)h.ntris * 3 * sizeof *m->tri));
    _exit(bad ? 2 : 0);
}

static void describe_death(int status, char *buf, size_t len)
{
    if (WIFSIGNALED(status))
        snprintf(buf, len, "killed by signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
    else if (WIFEXITED(status))
        snprintf(buf, len, "exited with status %d", WEXITSTATUS(status));
    else
        snprintf(buf, len, "stopped");
}

static int import_isolated(floe_mesh *m, const floe_mesh_def *def, char *err, size_t errlen)
{
    const char *env = getenv("FLOE_MESH_IN_PROCESS");
    if (env && env[0] == '1')
        return import_direct(m, def, err, errlen);
    int fd[2];
    if (pipe(fd) != 0) {
        snprintf(err, errlen, "%s: cannot read the mesh: pipe: %s", def->file, strerror(errno));
        return FLOE_ERR_IO;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        close(fd[0]), close(fd[1]);
        snprintf(err, errlen, "%s: cannot read the mesh: fork: %s", def->file, strerror(errno));
        return FLOE_ERR_IO;
    }
    if (pid == 0) {
        close(fd[0]);
        signal(SIGPIPE, SIG_IGN);
        import_child(fd[1], m, def);
    }
    close(fd[1]);
    import_head h;
    int rc = FLOE_OK;
    if (read_all(fd[0], &h, sizeof h) != 0)
        rc = -1;
    else if (h.rc) {
        h.err[sizeof h.err - 1] = 0;
        snprintf(err, errlen, "%s", h.err);
        rc = h.rc;
    } else {
        m->nverts = h.nverts, m->ntris = h.ntris, m->dropped = h.dropped;
        m->x = malloc((size_t)h.nverts * 3 * sizeof *m->x);
        m->tri = malloc((size_t)h.ntris * 3 * sizeof *m->tri);
        if (!m->x || !m->tri) {
            snprintf(err, errlen, "%s: out of memory reading %u triangles", def->file, h.ntris);
            rc = FLOE_ERR_NOMEM;
        } else if (read_all(fd[0], m->x, (size_t)h.nverts * 3 * sizeof *m->x) ||
                   read_all(fd[0], m->tri, (size_t)h.ntris * 3 * sizeof *m->tri))
            rc = -1;
    }
    close(fd[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (rc == -1) {
        char why[128];
        describe_death(status, why, sizeof why);
        snprintf(err, errlen, "%s: cannot read the mesh: the importer crashed on it (%s); the file is malformed "
                 "or uses a variant of its format that assimp mis-reads", def->file, why);
        rc = FLOE_ERR_ARG;
    }
    return rc;
}

floe_mesh *floe_mesh_load(const floe_mesh_def *def, char *err, size_t errlen)
{
    char dummy[8];
    if (!err || errlen == 0)
        err = dummy, errlen = sizeof dummy;
    if (!def || !def->file || !def->file[0]) {
        snprintf(err, errlen, "mesh: no file given");
        return NULL;
    }
    if (check_placement(def, err, errlen) || check_file(def->file, err, errlen))
        return NULL;
    floe_mesh *m = calloc(1, sizeof *m);
    if (!m) {
        snprintf(err, errlen, "%s: out of memory", def->file);
        return NULL;
    }
    snprintf(m->file, sizeof m->file, "%s", def->file);
    int rc = import_isolated(m, def, err, errlen);
    if (rc == FLOE_OK) {
        place(m, def);
        rc = mesh_topology(m, err, errlen);
        if (!rc && !(isfinite(m->min[0] + m->min[1] + m->min[2]) && isfinite(m->max[0] + m->max[1] + m->max[2]))) {
            snprintf(err, errlen, "%s: a vertex is not finite (NaN or infinite coordinates)", def->file);
            rc = FLOE_ERR_ARG;
        }
    }
    if (rc) {
        floe_mesh_destroy(m);
        return NULL;
    }
    return m;
}

void floe_mesh_destroy(floe_mesh *m)
{
    if (!m)
        return;
    free(m->x);
    free(m->tri);
    free(m);
}
