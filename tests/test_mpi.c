/* Domain decomposition over MPI (docs/mpi.md): `mpirun --oversubscribe -np
 * 2|4 floe run` against one process on a small 2D dam break (WCSPH and
 * IISPH, 800 particles, 0.2 s: about 2000 WCSPH steps): the joined frames
 * hold the same ids and the same attributes as one process's, sorted by id
 * (positions within 1e-5 relative; they come out equal, the lists being in
 * id order on both sides); mass and momentum of every frame are one
 * process's; a rank killed ends the run with a message naming it and
 * leaves valid frames; a stage that declares it cannot run decomposed is
 * refused. Skipped, with a message, where Floe was built without MPI or
 * mpirun is missing. */
#include "scene_fixture.h"

#include "ply_read.h"

#include <math.h>

TestSuite(mpi, .init = sc_setup, .fini = sc_teardown, .timeout = FLOE_TIMEOUT(600));

/* ranks write into their own folders: one output root per run */
#define SCENE                                                                                           \
    SC_HEAD "local solver = floe.param('solver', 'wcsph')\n"                                            \
            "local seconds = floe.param('seconds', 0.2)\n"                                              \
            "local a, d = 0.1, 0.005\n"                                                                 \
            "local sim = floe.sim{ dim = 2, spacing = d, gravity = { 0, -9.81 },\n"                     \
            "  domain = { min = { -4 * d, -4 * d }, max = { 4 * a + 4 * d, 3 * a } } }\n"               \
            "sim:load{ 'sph', 'wcsph', 'iisph', 'dfsph', 'tension' }\n"                                            \
            "sim:fluid_box{ min = { 0, 0 }, max = { a, 2 * a }, density = 1000 }\n"                     \
            "sim:boundary_box{ min = { 0, 0 }, max = { 4 * a, 2.5 * a }, layers = 2, open_top = true }\n" \
            "local nb = { 'neighbours', order = floe.param('order', 'id') }\n"                          \
            "if solver == 'wcsph' then\n"                                                               \
            "  sim:pipeline{ nb, 'sph.density', { 'wcsph.pressure', speed_of_sound = 20 }, 'gravity',\n"  \
            "    { 'wcsph.viscosity', kind = 'artificial', alpha = 0.02 }, 'wcsph.pressure_force', 'integrate' }\n" \
            "elseif solver == 'tension' then\n"                                                         \
            "  sim:pipeline{ nb, 'sph.density', { 'wcsph.pressure', speed_of_sound = 20 }, 'gravity',\n"  \
            "    { 'wcsph.viscosity', kind = 'artificial', alpha = 0.02 }, { 'tension.he', kappa = 0.5 },\n" \
            "    { 'tension.akinci', gamma = 0.5 }, 'wcsph.pressure_force', 'integrate' }\n"              \
            "elseif solver == 'ref' then\n"                                                             \
            "  sim:pipeline{ nb, 'sph.density', { 'wcsph.pressure', speed_of_sound = 20 }, 'gravity',\n"  \
            "    { 'wcsph.pressure_force', xsph = 0.01 }, 'integrate' }\n"                               \
            "elseif solver == 'delta' then\n"                                                           \
            "  sim:pipeline{ nb, { 'wcsph.continuity', delta = 0.1 }, { 'wcsph.pressure', speed_of_sound = 20 },\n" \
            "    'gravity', { 'wcsph.viscosity', kind = 'artificial', alpha = 0.02 },\n"                    \
            "    { 'wcsph.pressure_force', walls = floe.param('walls', 'mirror'), gradient_correction = true },\n" \
            "    'integrate' }\n"                                                                          \
            "elseif solver == 'dfsph' then\n"                                                           \
            "  sim:pipeline{ nb, 'sph.density', 'gravity', 'dfsph.solve', 'integrate' }\n"              \
            "else\n"                                                                                    \
            "  sim:pipeline{ nb, 'sph.density', 'gravity', 'iisph.solve', 'integrate' }\n"              \
            "end\n"                                                                                     \
            "sim:run{ end_time = seconds, fps = 50, out = 'run', attributes = { 'id', 'v', 'rho', 'p', 'm' },\n"   \
            "  formats = floe.param('vtk', 0) == 1 and { 'ply', 'vtk' } or { 'ply' } }\n"

/* the same in 3D: 1500 particles, a 0.4 x 0.6 x 0.4 m block at spacing 4 cm */
#define SCENE3                                                                                          \
    SC_HEAD "local solver = floe.param('solver', 'wcsph')\n"                                            \
            "local d = 0.04\n"                                                                          \
            "local sim = floe.sim{ dim = 3, spacing = d, gravity = { 0, -9.81, 0 },\n"                  \
            "  domain = { min = { -0.2, -0.2, -0.2 }, max = { 1.8, 1.2, 0.6 } } }\n"                    \
            "sim:load{ 'sph', 'wcsph', 'iisph' }\n"                                                     \
            "sim:fluid_box{ min = { 0, 0, 0 }, max = { 0.4, 0.6, 0.4 }, density = 1000 }\n"             \
            "sim:boundary_box{ min = { 0, 0, 0 }, max = { 1.6, 1.0, 0.4 }, layers = 2, open_top = true }\n" \
            "local nb = { 'neighbours', order = 'id' }\n"                                               \
            "if solver == 'wcsph' then\n"                                                               \
            "  sim:pipeline{ nb, 'sph.density', { 'wcsph.pressure', speed_of_sound = 30 }, 'gravity',\n"  \
            "    { 'wcsph.viscosity', kind = 'artificial', alpha = 0.02 }, 'wcsph.pressure_force', 'integrate' }\n" \
            "else\n"                                                                                    \
            "  sim:pipeline{ nb, 'sph.density', 'gravity', 'iisph.solve', 'integrate' }\n"              \
            "end\n"                                                                                     \
            "sim:run{ end_time = 0.2, fps = 25, out = 'run', attributes = { 'id', 'v', 'rho', 'p', 'm' } }\n"

static int have_mpi(void)
{
    if (!FLOE_TEST_HAVE_MPI) {
        cr_skip_test("Floe was built without MPI (libopenmpi-dev missing, or -Dmpi=disabled): the MPI tests are skipped");
        return 0;
    }
    if (system("command -v mpirun >/dev/null 2>&1") != 0) {
        cr_skip_test("mpirun is not on PATH (openmpi-bin missing): the MPI tests are skipped");
        return 0;
    }
    return 1;
}

/* Under the address sanitizer the ranks' leak check is off: Open MPI's
 * own allocations (libmpi and the plugins it loads and unloads, which
 * LeakSanitizer cannot name for a suppression) are still held at exit.
 * Floe's own leaks are checked by the one-process runs of every other
 * suite. */
#define MPI_ENV "ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 "

/* `floe verb scene.lua` (run or bench) into sc_tmp/<out> on `ranks`
 * processes (0: plain floe, no mpirun); stdout and stderr into
 * sc_tmp/<out>.log; the exit status */
static int floe_ranks(const char *verb, int ranks, const char *out, const char *sets)
{
    char cmd[4096];
    const char *floe = FLOE_TEST_BUILD_ROOT "/core/floe";
    if (ranks == 0)
        snprintf(cmd, sizeof cmd, "cd %s && %s %s scene.lua --out %s --quiet --threads 1 %s > %s.log 2>&1", sc_tmp,
                 floe, verb, out, sets, out);
    else
        snprintf(cmd, sizeof cmd,
                 "cd %s && " MPI_ENV "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 "
                 "mpirun --oversubscribe --bind-to none -np %d %s %s scene.lua --out %s --quiet --threads 1 %s > "
                 "%s.log 2>&1",
                 sc_tmp, ranks, floe, verb, out, sets, out);
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}
static int run_ranks(int ranks, const char *out, const char *sets) { return floe_ranks("run", ranks, out, sets); }

static void write_scene_text(const char *text)
{
    FILE *f = fopen(sc_scene, "w");
    cr_assert_not_null(f);
    fputs(text, f);
    fclose(f);
}
static void write_scene(void) { write_scene_text(SCENE); }

/* one frame's particles, sorted by id */
typedef struct frame {
    uint32_t n;
    float *id, *x, *y, *z, *vx, *vy, *vz, *rho, *p, *m;
} frame;

static int read_frame(const char *dir, int k, frame *fr, int *sorted)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s/fluid.%04d.ply", sc_tmp, dir, k);
    const char *props[] = {"id", "x", "y", "z", "v_x", "v_y", "v_z", "rho", "p", "m"};
    float **dst[] = {&fr->id, &fr->x, &fr->y, &fr->z, &fr->vx, &fr->vy, &fr->vz, &fr->rho, &fr->p, &fr->m};
    memset(fr, 0, sizeof *fr);
    for (int c = 0; c < 10; c++) {
        uint32_t n = 0;
        if (ply_read_property(path, props[c], &n, dst[c]) != 0)
            return -1;
        fr->n = n;
    }
    *sorted = 1;
    for (uint32_t i = 1; i < fr->n; i++)
        *sorted &= fr->id[i - 1] < fr->id[i];
    /* sort by id (ids are below 2^24: exact in a float) */
    uint32_t *ord = malloc(fr->n * sizeof *ord);
    for (uint32_t i = 0; i < fr->n; i++)
        ord[i] = i;
    for (uint32_t i = 1; i < fr->n; i++) { /* insertion sort: frames of 800 */
        uint32_t v = ord[i], j = i;
        for (; j > 0 && fr->id[ord[j - 1]] > fr->id[v]; j--)
            ord[j] = ord[j - 1];
        ord[j] = v;
    }
    for (int c = 0; c < 10; c++) {
        float *s = *dst[c], *t = malloc(fr->n * sizeof *t);
        for (uint32_t i = 0; i < fr->n; i++)
            t[i] = s[ord[i]];
        free(s);
        *dst[c] = t;
    }
    free(ord);
    return 0;
}

static void free_frame(frame *fr)
{
    free(fr->id), free(fr->x), free(fr->y), free(fr->z), free(fr->vx), free(fr->vy), free(fr->vz);
    free(fr->rho), free(fr->p), free(fr->m);
}

/* the decomposed frames against one process's: same ids (each once),
 * positions within tol relative, mass and momentum; returns the largest
 * relative position difference over all frames */
static double compare_runs(const char *one, const char *many, int frames, double tol, int exact_attrs)
{
    double worst = 0;
    for (int k = 0; k <= frames; k++) {
        frame a, b;
        int sa, sb;
        cr_assert_eq(read_frame(one, k, &a, &sa), 0, "frame %d of %s unreadable", k, one);
        cr_assert_eq(read_frame(many, k, &b, &sb), 0, "frame %d of %s unreadable", k, many);
        cr_assert(sb, "%s frame %d: the joined frame is not sorted by id", many, k);
        cr_assert(!sc_exists("%s/%s/fluid.%04d.r0.part", sc_tmp, many, k) &&
                      !sc_exists("%s/%s/fluid.%04d.r1.part", sc_tmp, many, k),
                  "%s frame %d: the ranks' parts were left after the join", many, k);
        cr_assert_eq(a.n, b.n, "%s frame %d: %u particles, one process has %u", many, k, b.n, a.n);
        double xmax = 0, dmax = 0, mass_a = 0, mass_b = 0, mom_a[3] = {0, 0, 0}, mom_b[3] = {0, 0, 0};
        for (uint32_t i = 0; i < a.n; i++) {
            cr_assert_eq(a.id[i], b.id[i], "%s frame %d: id %g where one process has %g (a particle lost or doubled)",
                         many, k, b.id[i], a.id[i]);
            if (i > 0)
                cr_assert(b.id[i] != b.id[i - 1], "%s frame %d: id %g twice", many, k, b.id[i]);
            xmax = fmax(xmax, fmax(fabs(a.x[i]), fmax(fabs(a.y[i]), fabs(a.z[i]))));
            dmax = fmax(dmax, fmax(fabs(a.x[i] - b.x[i]), fmax(fabs(a.y[i] - b.y[i]), fabs(a.z[i] - b.z[i]))));
            mass_a += a.m[i], mass_b += b.m[i];
            mom_a[0] += a.m[i] * a.vx[i], mom_a[1] += a.m[i] * a.vy[i], mom_a[2] += a.m[i] * a.vz[i];
            mom_b[0] += b.m[i] * b.vx[i], mom_b[1] += b.m[i] * b.vy[i], mom_b[2] += b.m[i] * b.vz[i];
            if (exact_attrs)
                cr_assert(a.vx[i] == b.vx[i] && a.vy[i] == b.vy[i] && a.vz[i] == b.vz[i] && a.rho[i] == b.rho[i] &&
                              a.p[i] == b.p[i],
                          "%s frame %d, id %g: v, rho or p differ from one process's", many, k, a.id[i]);
        }
        const double rel = xmax > 0 ? dmax / xmax : dmax; /* an empty frame: 0 */
        worst = fmax(worst, rel);
        cr_assert(rel <= tol, "%s frame %d: positions differ by %g relative (limit %g)", many, k, rel, tol);
        cr_assert(fabs(mass_a - mass_b) <= 1e-12 * mass_a, "%s frame %d: mass %.17g, one process %.17g", many, k,
                  mass_b, mass_a);
        const double pscale = fmax(1e-9, mass_a * 2.0); /* |v| of a few m/s */
        cr_assert(fabs(mom_a[0] - mom_b[0]) <= tol * pscale && fabs(mom_a[1] - mom_b[1]) <= tol * pscale &&
                      fabs(mom_a[2] - mom_b[2]) <= tol * pscale,
                  "%s frame %d: momentum (%g, %g, %g), one process (%g, %g, %g)", many, k, mom_b[0], mom_b[1], mom_b[2],
                  mom_a[0], mom_a[1], mom_a[2]);
        free_frame(&a), free_frame(&b);
    }
    return worst;
}

/* a legacy VTK frame (binary, big-endian) as io_vtk.c writes it: its
 * arrays (POINTS, then each POINT_DATA array) as host words */
typedef struct vtk_frame {
    uint32_t n;
    int na, comps[12];
    char name[12][64];
    uint32_t *w[12];
} vtk_frame;

static uint32_t be_word(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void read_vtk(const char *path, vtk_frame *v)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s missing", path);
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *d = malloc((size_t)len + 1);
    cr_assert_eq(fread(d, 1, (size_t)len, f), (size_t)len);
    fclose(f);
    d[len] = 0;
    memset(v, 0, sizeof *v);
    long pos = 0;
    char line[256];
#define LINE()                                                                  \
    do {                                                                        \
        long e = pos;                                                           \
        while (e < len && d[e] != '\n')                                         \
            e++;                                                                \
        snprintf(line, sizeof line, "%.*s", (int)(e - pos), (const char *)d + pos); \
        pos = e + 1;                                                            \
    } while (0)
    for (int k = 0; k < 4; k++)
        LINE();
    LINE();
    cr_assert_eq(sscanf(line, "POINTS %u float", &v->n), 1, "%s: '%s'", path, line);
    for (int kind = 0; pos < len && v->na < 12; kind = 1) {
        int comps = 3;
        if (kind) {
            LINE();
            if (!strncmp(line, "VERTICES", 8)) {
                pos += 8 * (long)v->n + 1;
                LINE(); /* POINT_DATA n */
                continue;
            }
            char type[16];
            if (sscanf(line, "SCALARS %63s %15s", v->name[v->na], type) == 2) {
                comps = 1;
                LINE(); /* LOOKUP_TABLE default */
            } else
                cr_assert_eq(sscanf(line, "VECTORS %63s", v->name[v->na]), 1, "%s: '%s'", path, line);
        } else
            snprintf(v->name[0], sizeof v->name[0], "POINTS");
        cr_assert(pos + 4L * comps * v->n <= len, "%s: array %s cut short", path, v->name[v->na]);
        v->comps[v->na] = comps;
        v->w[v->na] = malloc(4 * (size_t)comps * v->n + 4);
        for (size_t k = 0; k < (size_t)comps * v->n; k++)
            v->w[v->na][k] = be_word(d + pos + 4 * k);
        pos += 4L * comps * v->n + 1;
        v->na++;
    }
#undef LINE
    free(d);
}

static const uint32_t *vtk_ids;
static int by_vtk_id(const void *a, const void *b)
{
    uint32_t u = vtk_ids[*(const uint32_t *)a], w = vtk_ids[*(const uint32_t *)b];
    return u < w ? -1 : u > w;
}

/* the joined VTK frames hold one process's arrays, bit for bit, once both
 * are sorted by id (one process writes in memory order) */
static void compare_vtk(const char *one, const char *many, int frames)
{
    for (int k = 0; k <= frames; k++) {
        vtk_frame a, b;
        char pa[1024], pb[1024];
        snprintf(pa, sizeof pa, "%s/%s/fluid.%04d.vtk", sc_tmp, one, k);
        snprintf(pb, sizeof pb, "%s/%s/fluid.%04d.vtk", sc_tmp, many, k);
        read_vtk(pa, &a);
        read_vtk(pb, &b);
        cr_assert(a.n == b.n && a.na == b.na, "%s: %u particles, %d arrays; one process %u, %d", pb, b.n, b.na, a.n,
                  a.na);
        int id = -1;
        for (int c = 0; c < a.na; c++)
            id = strcmp(a.name[c], "id") ? id : c;
        cr_assert(id >= 0, "%s: no id array", pa);
        uint32_t *oa = malloc(4 * (size_t)a.n + 4), *ob = malloc(4 * (size_t)a.n + 4);
        for (uint32_t i = 0; i < a.n; i++)
            oa[i] = ob[i] = i;
        vtk_ids = a.w[id];
        qsort(oa, a.n, 4, by_vtk_id);
        vtk_ids = b.w[id];
        qsort(ob, b.n, 4, by_vtk_id);
        for (uint32_t i = 1; i < b.n; i++)
            cr_assert(b.w[id][i - 1] < b.w[id][i], "%s: not sorted by id", pb);
        for (int c = 0; c < a.na; c++) {
            cr_assert_str_eq(a.name[c], b.name[c]);
            for (uint32_t i = 0; i < a.n; i++)
                cr_assert(!memcmp(a.w[c] + (size_t)a.comps[c] * oa[i], b.w[c] + (size_t)b.comps[c] * ob[i],
                                  4 * (size_t)a.comps[c]),
                          "%s: array %s of id %u differs from one process's", pb, a.name[c], a.w[id][oa[i]]);
        }
        for (int c = 0; c < a.na; c++)
            free(a.w[c]), free(b.w[c]);
        free(oa), free(ob);
    }
}

Test(mpi, wcsph_on_2_and_4_ranks_gives_the_frames_of_one_process)
{
    if (!have_mpi())
        return;
    write_scene();
    cr_assert_eq(run_ranks(0, "one", "--set vtk=1"), 0, "%s", sc_slurp("%s/one.log", sc_tmp));
    cr_assert_eq(run_ranks(2, "two", "--set vtk=1"), 0, "%s", sc_slurp("%s/two.log", sc_tmp));
    cr_assert_eq(run_ranks(4, "four", ""), 0, "%s", sc_slurp("%s/four.log", sc_tmp));
    /* 10 frames of 0.02 s: about 2000 steps, the front reaching the far wall */
    double w2 = compare_runs("one", "two", 10, 1e-5, 1);
    double w4 = compare_runs("one", "four", 10, 1e-5, 1);
    compare_vtk("one", "two", 10); /* the join's other format */
    cr_log_info("wcsph: largest relative position difference, 2 ranks %g, 4 ranks %g", w2, w4);
    /* the run record: one entry per rank and frame, and the steps of one process */
    char *rec = sc_slurp("%s/four/run.yaml", sc_tmp), *rec1 = sc_slurp("%s/one/run.yaml", sc_tmp);
    cr_assert(strstr(rec, "ranks: [{particles: ") != NULL, "no per-rank timings in run.yaml:\n%.2000s", rec);
    const char *s4 = strstr(rec, "frame: 10,"), *s1 = strstr(rec1, "frame: 10,");
    cr_assert(s4 && s1);
    cr_assert(strncmp(strstr(s4, "steps:"), strstr(s1, "steps:"), 12) == 0, "the steps differ:\n%.200s\n%.200s", s4,
              s1);
    free(rec), free(rec1);
}

/* the scene with a probe of each kind: points (at their own rate), water
 * height gauges, the front (min_neighbours) and the walls' force */
static void write_scene_with_probes(void)
{
    const char *text = SCENE, *run = strstr(text, "sim:run{");
    cr_assert_not_null(run);
    FILE *f = fopen(sc_scene, "w");
    cr_assert_not_null(f);
    fwrite(text, 1, (size_t)(run - text), f);
    fputs("sim:probe{ name = 'pts', points = { {0.05, 0.05}, {0.2, 0.012}, {0.35, 0.012} }, attributes = {'p', 'v'},\n"
          "  rate = 500 }\n"
          "sim:probe{ name = 'gauges', kind = 'height', points = { {0.05, 0}, {0.2, 0}, {0.38, 0} } }\n"
          "sim:probe{ name = 'front', kind = 'front', axis = 'x', min_neighbours = 2 }\n"
          "sim:probe{ name = 'walls', kind = 'force', set = 'boundary' }\n",
          f);
    fputs(run, f);
    fclose(f);
}

/* two probe tables of one scene, value by value: the same rows and
 * columns, numbers within rel relative (the ranks' sums add in another
 * order); returns the rows compared */
static int compare_tables(const char *one, const char *many, const char *name, double rel)
{
    char *a = sc_slurp("%s/%s/%s.probe.csv", sc_tmp, one, name), *b = sc_slurp("%s/%s/%s.probe.csv", sc_tmp, many, name);
    cr_assert(a && b, "%s.probe.csv missing in %s or %s", name, one, many);
    const char *ea = strchr(a, '\n'), *eb = strchr(b, '\n');
    cr_assert(ea && eb && ea - a == eb - b && !strncmp(a, b, (size_t)(ea - a)), "%s: headers differ:\n%s\n%s", name, a,
              b);
    int rows = 0;
    const char *pa = ea + 1, *pb = eb + 1;
    while (*pa || *pb) {
        cr_assert(*pa && *pb, "%s: %s has %s rows than one process", name, many, *pa ? "fewer" : "more");
        for (int col = 0;; col++) {
            char *qa, *qb;
            const double va = strtod(pa, &qa), vb = strtod(pb, &qb);
            cr_assert(qa != pa && qb != pb, "%s row %d col %d unreadable", name, rows + 1, col);
            cr_assert((isnan(va) && isnan(vb)) || fabs(va - vb) <= rel * fmax(fabs(va), fabs(vb)) + 1e-12,
                      "%s row %d col %d: %.9g on %s, %.9g in one process", name, rows + 1, col, vb, many, va);
            pa = qa, pb = qb;
            cr_assert_eq(*pa, *pb, "%s row %d: the columns differ", name, rows + 1);
            if (*pa == '\n')
                break;
            pa++, pb++;
        }
        pa++, pb++, rows++;
    }
    free(a), free(b);
    return rows;
}

/* Probes under MPI: each rank sums over its own particles and the sums are
 * added over the ranks; the tables of 2 ranks (slabs) and 4 (2 x 2 boxes)
 * are one process's (the frames being one process's to the bit: the
 * lists in id order). */
Test(mpi, probes_on_2_and_4_ranks_read_what_one_process_reads)
{
    if (!have_mpi())
        return;
    write_scene_with_probes();
    const char *sets = "--set seconds=0.1";
    cr_assert_eq(run_ranks(0, "one", sets), 0, "%s", sc_slurp("%s/one.log", sc_tmp));
    cr_assert_eq(run_ranks(2, "two", sets), 0, "%s", sc_slurp("%s/two.log", sc_tmp));
    cr_assert_eq(run_ranks(4, "four", sets), 0, "%s", sc_slurp("%s/four.log", sc_tmp));
    compare_runs("one", "four", 5, 1e-5, 1);
    const char *names[] = {"pts", "gauges", "front", "walls"};
    const int rows_expected[] = {51, 6, 6, 6}; /* 500 a second for 0.1 s and frame 0; 5 frames and frame 0 */
    for (int k = 0; k < 4; k++) {
        int r2 = compare_tables("one", "two", names[k], 1e-7), r4 = compare_tables("one", "four", names[k], 1e-7);
        cr_assert(r2 == rows_expected[k] && r4 == rows_expected[k], "%s: %d and %d rows, expected %d", names[k], r2,
                  r4, rows_expected[k]);
    }
    /* the front moved across the cuts (at x = 0.05 at the start: the fluid's median) */
    char *front = sc_slurp("%s/one/front.probe.csv", sc_tmp);
    const char *last = front + strlen(front) - 2;
    while (last > front && *last != '\n')
        last--;
    double t, x;
    cr_assert_eq(sscanf(last + 1, "%lf,%lf", &t, &x), 2, "%s", front);
    cr_assert(x > 0.15, "the front at %g by t = %g: the test meant it well past the first cut (x = 0.05)", x, t);
    cr_assert(!sc_exists("%s/two/probes.csv.tmp", sc_tmp));
    free(front);
}

static void count_device(const char *line, void *u);

static double mesh_gap(const char *one, const char *many, const char *file, uint32_t min_vertices);

/* a river on a sloping terrain: a source, a sink, terrain.collide with the
 * wet map's friction, and the per-frame wet map and carpet */
#define SCENE_RIVER                                                                                     \
    SC_HEAD "local sim = floe.sim{ dim = 3, spacing = 0.02, domain = { min = {0, -0.1, 0}, max = {1.5, 1, 0.6} } }\n" \
            "sim:load{ 'sph', 'wcsph', 'terrain' }\n"                                                   \
            "sim:terrain{ height = function(x, z) return 0.4 - 0.2 * x + 0.05 * math.abs(z - 0.3) end,\n" \
            "  cell = 0.05, size = {31, 13} }\n"                                                        \
            "sim:source{ centre = {0.15, 0.45, 0.3}, direction = {1, -0.2, 0}, radius = 0.05, speed = 1 }\n" \
            "sim:sink{ min = {1.2, -0.1, 0}, max = {1.5, 1, 0.6} }\n"                                   \
            "sim:pipeline{ { 'neighbours', order = 'id' }, 'sph.density', { 'wcsph.pressure', speed_of_sound = 15 },\n" \
            "  'gravity', { 'wcsph.viscosity', kind = 'artificial', alpha = 0.05 }, 'wcsph.pressure_force', 'integrate',\n" \
            "  { 'terrain.collide', restitution = 0.1, friction = 0.3, wet_friction = 0.05 }, 'emit',\n" \
            "  'terrain.output', { 'terrain.carpet', cell = 1, radius = 1.5 } }\n"                       \
            "sim:run{ frames = 10, fps = 20, out = 'run', attributes = { 'id', 'v', 'rho', 'p', 'm' } }\n"

/* 1 when two files hold the same bytes */
static int same_file(const char *a, const char *b)
{
    FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
    int same = fa && fb;
    while (same) {
        int ca = fgetc(fa), cb = fgetc(fb);
        same = ca == cb;
        if (ca == EOF || cb == EOF)
            break;
    }
    if (fa)
        fclose(fa);
    if (fb)
        fclose(fb);
    return same;
}

/* Rivers under MPI: terrain.collide on each rank's particles, the samples
 * any rank's water touched added over the ranks (the wet map, whose
 * friction every collision reads, stays one process's on every rank); the
 * wet map and the carpet (per frame, gathered) written by rank 0 */
Test(mpi, a_river_on_terrain_on_2_and_4_ranks_gives_the_frames_of_one_process)
{
    if (!have_mpi())
        return;
    write_scene_text(SCENE_RIVER);
    cr_assert_eq(run_ranks(0, "one", ""), 0, "%s", sc_slurp("%s/one.log", sc_tmp));
    cr_assert_eq(run_ranks(2, "two", ""), 0, "%s", sc_slurp("%s/two.log", sc_tmp));
    cr_assert_eq(run_ranks(4, "four", ""), 0, "%s", sc_slurp("%s/four.log", sc_tmp));
    compare_runs("one", "two", 10, 1e-5, 1);
    compare_runs("one", "four", 10, 1e-5, 1);
    const char *many[] = {"two", "four"};
    for (int r = 0; r < 2; r++)
        for (int k = 0; k <= 10; k++) {
            char a[1024], b[1024];
            snprintf(a, sizeof a, "%s/one/wet.%04d.png", sc_tmp, k);
            snprintf(b, sizeof b, "%s/%s/wet.%04d.png", sc_tmp, many[r], k);
            cr_assert(same_file(a, b), "%s: the wet map of frame %d is not one process's", many[r], k);
            snprintf(a, sizeof a, "carpet.%04d.ply", k);
            const double gap = k ? mesh_gap("one", many[r], a, 10) : 0;
            cr_assert(gap < 1e-5, "%s: the carpet of frame %d differs by %g m", many[r], k, gap);
        }
}

/* the 3D dam break with both surfacers (per-frame stages that need every
 * particle: serial and per_frame) */
#define SCENE_SURFACE                                                                                   \
    SC_HEAD "local sim = floe.sim{ dim = 3, spacing = 0.04, gravity = { 0, -9.81, 0 },\n"               \
            "  domain = { min = { -0.2, -0.2, -0.2 }, max = { 1.8, 1.2, 0.6 } } }\n"                    \
            "sim:load{ 'sph', 'wcsph', 'surface' }\n"                                                   \
            "sim:fluid_box{ min = { 0, 0, 0 }, max = { 0.4, 0.6, 0.4 }, density = 1000 }\n"             \
            "sim:boundary_box{ min = { 0, 0, 0 }, max = { 1.6, 1.0, 0.4 }, layers = 2, open_top = true }\n" \
            "sim:pipeline{ { 'neighbours', order = 'id' }, 'sph.density', { 'wcsph.pressure', speed_of_sound = 30 },\n" \
            "  'gravity', { 'wcsph.viscosity', kind = 'artificial', alpha = 0.02 }, 'wcsph.pressure_force', 'integrate',\n" \
            "  { 'surface.mc', format = 'ply' }, { 'surface.anisotropic', name = 'aniso', format = 'ply' } }\n" \
            "sim:run{ end_time = 0.2, fps = 25, out = 'run', attributes = { 'id', 'v', 'rho', 'p', 'm' } }\n"

/* the largest distance between the vertices of two meshes of the same
 * vertex count (in order), at least min_vertices of them */
static double mesh_gap(const char *one, const char *many, const char *file, uint32_t min_vertices)
{
    char a[1024], b[1024];
    snprintf(a, sizeof a, "%s/%s/%s", sc_tmp, one, file);
    snprintf(b, sizeof b, "%s/%s/%s", sc_tmp, many, file);
    double worst = 0;
    for (int c = 0; c < 3; c++) {
        static const char *const axis[] = {"x", "y", "z"};
        uint32_t na = 0, nb = 0;
        float *va = NULL, *vb = NULL;
        cr_assert_eq(ply_read_property(a, axis[c], &na, &va), 0, "%s unreadable", a);
        cr_assert_eq(ply_read_property(b, axis[c], &nb, &vb), 0, "%s unreadable", b);
        cr_assert(na == nb && na >= min_vertices, "%s: %u vertices on %s, %u in one process", file, nb, many, na);
        for (uint32_t i = 0; i < na; i++)
            worst = fmax(worst, fabs((double)va[i] - vb[i]));
        free(va), free(vb);
    }
    return worst;
}

/* Per-frame stages that need every particle run on rank 0 over every
 * rank's particles (gathered for the frame): the surfacers' meshes are one
 * process's, their vertices within float rounding (the colour field adds
 * in another order) */
Test(mpi, surfacers_on_2_and_4_ranks_give_the_meshes_of_one_process)
{
    if (!have_mpi())
        return;
    write_scene_text(SCENE_SURFACE);
    cr_assert_eq(run_ranks(0, "one", ""), 0, "%s", sc_slurp("%s/one.log", sc_tmp));
    cr_assert_eq(run_ranks(2, "two", ""), 0, "%s", sc_slurp("%s/two.log", sc_tmp));
    cr_assert_eq(run_ranks(4, "four", ""), 0, "%s", sc_slurp("%s/four.log", sc_tmp));
    compare_runs("one", "two", 5, 1e-5, 1); /* the frames, as ever: the gather leaves the sets as they were */
    compare_runs("one", "four", 5, 1e-5, 1);
    double worst = 0;
    for (int k = 0; k <= 5; k++) {
        char mc[64], an[64];
        snprintf(mc, sizeof mc, "surface.%04d.ply", k);
        snprintf(an, sizeof an, "aniso.%04d.ply", k);
        worst = fmax(worst, fmax(mesh_gap("one", "two", mc, 1000), mesh_gap("one", "four", mc, 1000)));
        worst = fmax(worst, fmax(mesh_gap("one", "two", an, 1000), mesh_gap("one", "four", an, 1000)));
    }
    cr_log_info("surfacers: vertices within %g m of one process's on 2 and 4 ranks", worst);
    cr_assert(worst < 1e-5, "the meshes differ by %g m", worst);
    cr_assert(!sc_exists("%s/two/surface.0005.ply.tmp", sc_tmp));
}


/* a box dropped tilted into a 2D tank of water: the rigid module's
 * stages under MPI */
#define SCENE_RIGID                                                                                     \
    SC_HEAD "local d, W, H = 0.01, 0.8, 0.2\n"                                                          \
            "local sim = floe.sim{ dim = 2, spacing = d, gravity = {0, -9.81},\n"                       \
            "  domain = { min = {-0.05, -0.05}, max = {W + 0.05, 0.6} } }\n"                            \
            "sim:load{ 'sph', 'wcsph' }\n"                                                              \
            "local rigid = sim:load 'rigid'\n"                                                          \
            "sim:fluid_box{ min = {0, 0}, max = {W, H} }\n"                                             \
            "sim:boundary_box{ min = {0, 0}, max = {W, H + 0.3}, layers = 2, open_top = true }\n"       \
            "rigid.body{ name = 'box', shape = 'box', size = {0.2, 0.08}, density = 500,\n"             \
            "  position = {0.3, H + 0.1}, rotation = 20 }\n"                                            \
            "rigid.walls{ min = {0, 0}, max = {W, H + 0.3}, open_top = true }\n"                        \
            "sim:pipeline{ { 'neighbours', order = 'id' }, 'sph.density', { 'wcsph.pressure', speed_of_sound = 20 },\n" \
            "  'gravity', { 'wcsph.viscosity', kind = 'artificial', alpha = 0.05 }, { 'rigid.viscosity', alpha = 0.05 },\n" \
            "  'wcsph.pressure_force', 'rigid.force', 'integrate', 'rigid.step', 'rigid.output' }\n"    \
            "sim:run{ end_time = 0.3, fps = 20, out = 'run', attributes = { 'id', 'v', 'rho', 'p', 'm' } }\n"

/* the body's position (x, y) in bodies.csv at each of its rows */
static int body_track(const char *dir, double *xy, int cap)
{
    char *csv = sc_slurp("%s/%s/bodies.csv", sc_tmp, dir);
    cr_assert_not_null(csv, "%s: no bodies.csv", dir);
    int rows = 0;
    for (const char *l = strchr(csv, '\n'); l && l[1] && rows < cap; l = strchr(l + 1, '\n')) {
        double t, x, y;
        int id;
        char name[32];
        if (sscanf(l + 1, "%lf,%d,%31[^,],%lf,%lf", &t, &id, name, &x, &y) == 5)
            xy[2 * rows] = x, xy[2 * rows + 1] = y, rows++;
    }
    free(csv);
    return rows;
}

/* Rigid bodies under MPI: each rank sums the fluid's forces of its own
 * particles, the sums are added over the ranks, and every rank steps the
 * same bodies; rank 0 writes the bodies' files. The sums add in another
 * order, so the track is held to 1e-4 m (not bitwise) over 0.3 s. */
Test(mpi, a_rigid_body_on_2_and_4_ranks_moves_as_in_one_process)
{
    if (!have_mpi())
        return;
    write_scene_text(SCENE_RIGID);
    cr_assert_eq(run_ranks(0, "one", ""), 0, "%s", sc_slurp("%s/one.log", sc_tmp));
    cr_assert_eq(run_ranks(2, "two", ""), 0, "%s", sc_slurp("%s/two.log", sc_tmp));
    cr_assert_eq(run_ranks(4, "four", ""), 0, "%s", sc_slurp("%s/four.log", sc_tmp));
    double a[64], b[64];
    const int na = body_track("one", a, 32);
    cr_assert(na == 7, "one process: %d rows of bodies.csv (7 expected)", na);
    cr_assert(a[2 * 6 + 1] < a[1] - 0.05, "the box was meant to fall into the water: y %g -> %g", a[1], a[13]);
    const char *many[] = {"two", "four"};
    for (int r = 0; r < 2; r++) {
        cr_assert_eq(body_track(many[r], b, 32), na, "%s: another row count in bodies.csv", many[r]);
        double worst = 0;
        for (int k = 0; k < 2 * na; k++)
            worst = fmax(worst, fabs(a[k] - b[k]));
        cr_log_info("rigid: the box's track on %s ranks within %g m of one process's", many[r], worst);
        cr_assert(worst < 1e-4, "%s: the box's track differs by %g m", many[r], worst);
        cr_assert(sc_exists("%s/%s/box.0006.obj", sc_tmp, many[r]));
        /* ids each once, mass; the splash amplifies the sums' rounding: a few mm by 0.3 s */
        compare_runs("one", many[r], 6, 1e-2, 0);
    }
    /* GPU ranks: the module's device pass sums the owned particles' pairs
     * (a ghost's device rows are not empty) */
    int devices = 0;
    if (floe_cl_devices(count_device, &devices) <= 0 || devices == 0) {
        cr_log_info("rigid: no OpenCL device, the GPU-rank part is skipped");
        return;
    }
    cr_assert_eq(run_ranks(0, "cl_one", "--backend opencl"), 0, "%s", sc_slurp("%s/cl_one.log", sc_tmp));
    cr_assert_eq(run_ranks(2, "cl_two", "--backend opencl"), 0, "%s", sc_slurp("%s/cl_two.log", sc_tmp));
    cr_assert_eq(body_track("cl_one", a, 32), na);
    cr_assert_eq(body_track("cl_two", b, 32), na);
    double worst = 0;
    for (int k = 0; k < 2 * na; k++)
        worst = fmax(worst, fabs(a[k] - b[k]));
    cr_log_info("rigid: the box's track on 2 GPU ranks within %g m of one process's on the device", worst);
    cr_assert(worst < 1e-4, "GPU ranks: the box's track differs by %g m", worst);
}

/* a channel periodic along x (48 spacings long, 12 deep) on a floor, the
 * water pushed along x: particles cross the periodic faces */
#define SCENE_PERIODIC                                                                                  \
    SC_HEAD "local d = 0.005\n"                                                                         \
            "local L, Lx = 12 * d, 48 * d\n"                                                            \
            "local sim = floe.sim{ dim = 2, spacing = d, gravity = { 2, -9.81 }, periodic = { 'x' },\n"  \
            "  domain = { min = { 0, -4 * d }, max = { Lx, L + 6 * d } } }\n"                           \
            "sim:load{ 'sph', 'wcsph' }\n"                                                              \
            "sim:fluid_box{ min = { 0, 0 }, max = { Lx, L }, density = 1000, velocity = { 0.5, 0 } }\n" \
            "sim:boundary_solid_box{ min = { 0, -2 * d }, max = { Lx, 0 }, set = 'walls' }\n"           \
            "sim:pipeline{ { 'neighbours', order = 'id' }, 'sph.density', { 'wcsph.pressure', speed_of_sound = 10 },\n" \
            "  'gravity', { 'wcsph.viscosity', kind = 'artificial', alpha = 0.05 }, 'wcsph.pressure_force', 'integrate' }\n" \
            "sim:probe{ name = 'profile', points = { { Lx / 2, L / 4 }, { 0.2 * d, L / 2 } }, attributes = { 'v' } }\n" \
            "sim:run{ end_time = 0.3, fps = 20, out = 'run', attributes = { 'id', 'v', 'rho', 'p', 'm' } }\n"

/* Periodic domains under MPI: the end boxes along a periodic axis are
 * partners across it, the particles near the domain's periodic faces are
 * ghosts there (at their own positions: the search takes the shortest
 * distance across the face, over the whole axis) */
Test(mpi, a_periodic_channel_on_2_and_3_slabs_and_2x2_boxes_gives_the_frames_of_one_process)
{
    if (!have_mpi())
        return;
    write_scene_text(SCENE_PERIODIC);
    cr_assert_eq(run_ranks(0, "one", ""), 0, "%s", sc_slurp("%s/one.log", sc_tmp));
    cr_assert_eq(run_ranks(2, "two", ""), 0, "%s", sc_slurp("%s/two.log", sc_tmp));
    cr_assert_eq(run_ranks(3, "three", "--decomp slabs"), 0, "%s", sc_slurp("%s/three.log", sc_tmp));
    cr_assert_eq(run_ranks(4, "boxes", "--decomp boxes"), 0, "%s", sc_slurp("%s/boxes.log", sc_tmp));
    char *log = sc_slurp("%s/three.log", sc_tmp);
    cr_assert(strstr(log, "rank 0 of 3") && strstr(strstr(log, "rank 0 of 3"), "2 partners"),
              "the first of 3 slabs has the last as a partner across the periodic face:\n%s", log);
    free(log);
    const char *many[] = {"two", "three", "boxes"};
    for (int r = 0; r < 3; r++) {
        compare_runs("one", many[r], 6, 0.0, 1);
        cr_assert_eq(compare_tables("one", many[r], "profile", 1e-7), 7);
    }
    /* the water crossed the periodic faces: some particle's x decreased by
     * wrapping (0.5 m/s for 0.3 s moves every particle 0.15 m at least) */
    frame a, b;
    int sa, sb;
    cr_assert_eq(read_frame("one", 0, &a, &sa), 0);
    cr_assert_eq(read_frame("one", 6, &b, &sb), 0);
    int wrapped = 0;
    for (uint32_t i = 0; i < a.n && i < b.n; i++)
        wrapped += b.x[i] < a.x[i];
    cr_assert(wrapped > 100, "only %d particles crossed the periodic face", wrapped);
    free_frame(&a), free_frame(&b);
    /* GPU ranks (a set against itself walks sorted slots on the device
     * when an axis is periodic: every row is built there) */
    int devices = 0;
    if (floe_cl_devices(count_device, &devices) <= 0 || devices == 0)
        return;
    cr_assert_eq(run_ranks(0, "cl_one", "--backend opencl"), 0, "%s", sc_slurp("%s/cl_one.log", sc_tmp));
    cr_assert_eq(run_ranks(3, "cl_three", "--backend opencl --decomp slabs"), 0, "%s",
                 sc_slurp("%s/cl_three.log", sc_tmp));
    compare_runs("cl_one", "cl_three", 6, 0.0, 1);
}

/* the 2D WCSPH dam break, 10 frames, a checkpoint every `ck` frames */
#define SCENE_CKPT                                                                                      \
    SC_HEAD "local a, d = 0.1, 0.005\n"                                                                 \
            "local sim = floe.sim{ dim = 2, spacing = d, gravity = { 0, -9.81 },\n"                     \
            "  domain = { min = { -4 * d, -4 * d }, max = { 4 * a + 4 * d, 3 * a } } }\n"               \
            "sim:load{ 'sph', 'wcsph' }\n"                                                              \
            "sim:fluid_box{ min = { 0, 0 }, max = { a, 2 * a }, density = 1000 }\n"                     \
            "sim:boundary_box{ min = { 0, 0 }, max = { 4 * a, 2.5 * a }, layers = 2, open_top = true }\n" \
            "sim:pipeline{ { 'neighbours', order = 'id' }, 'sph.density', { 'wcsph.pressure', speed_of_sound = 20 },\n" \
            "  'gravity', { 'wcsph.viscosity', kind = 'artificial', alpha = 0.02 }, 'wcsph.pressure_force', 'integrate' }\n" \
            "sim:run{ frames = 10, fps = 50, out = 'run', attributes = { 'id', 'v', 'rho', 'p', 'm' },\n"  \
            "  checkpoint_every = floe.param('ck', 0) }\n"

/* Checkpoints under MPI: each rank writes its own file into the run
 * folder and reads it back on --resume with the same rank count */
Test(mpi, a_run_on_2_ranks_resumes_from_its_checkpoints)
{
    if (!have_mpi())
        return;
    write_scene_text(SCENE_CKPT);
    cr_assert_eq(run_ranks(2, "full", ""), 0, "%s", sc_slurp("%s/full.log", sc_tmp));
    cr_assert_eq(run_ranks(2, "part", "--frames 5 --set ck=2"), 0, "%s", sc_slurp("%s/part.log", sc_tmp));
    cr_assert(sc_exists("%s/part/checkpoint.floe", sc_tmp) && sc_exists("%s/part/checkpoint.r1.floe", sc_tmp));
    /* one process cannot resume the checkpoint of two */
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "cd %s && %s/core/floe run scene.lua --resume part --set ck=2 --quiet > one.log 2>&1",
             sc_tmp, FLOE_TEST_BUILD_ROOT);
    cr_assert_neq(system(cmd), 0);
    char *one = sc_slurp("%s/one.log", sc_tmp);
    cr_assert(strstr(one, "holds the checkpoint of a run on more processes than this one") != NULL, "%s", one);
    free(one);
    /* run_ranks passes --out; the resume names the folder itself */
    snprintf(cmd, sizeof cmd,
             "cd %s && " MPI_ENV "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "
             "OMPI_MCA_rmaps_base_oversubscribe=1 mpirun --oversubscribe --bind-to none -np 2 %s/core/floe run "
             "scene.lua --resume part --set ck=2 --quiet --threads 1 > resume.log 2>&1",
             sc_tmp, FLOE_TEST_BUILD_ROOT);
    cr_assert_eq(system(cmd), 0, "%s", sc_slurp("%s/resume.log", sc_tmp));
    char *log = sc_slurp("%s/resume.log", sc_tmp);
    cr_assert(strstr(log, "floe: error") == NULL, "%s", log);
    free(log);
    /* the resumed run's frames are the uninterrupted run's, to the bit */
    compare_runs("full", "part", 10, 0.0, 1);
    cr_assert(!sc_exists("%s/part/fluid.0010.r1.part", sc_tmp));
}

/* fluid made at set-up and between two runs: each rank holds a share of
 * the set-up's particles (logged before the first run), and a particle
 * added between runs is held by one rank */
#define SCENE_TWO_RUNS                                                                                  \
    SC_HEAD "local d = 0.005\n"                                                                         \
            "local sim = floe.sim{ dim = 2, spacing = d, gravity = { 0, -9.81 },\n"                     \
            "  domain = { min = { -4 * d, -4 * d }, max = { 0.4 + 4 * d, 0.3 } } }\n"                   \
            "sim:load{ 'sph', 'wcsph' }\n"                                                              \
            "local n = sim:fluid_box{ min = { 0, 0 }, max = { 0.1, 0.2 }, density = 1000 }\n"           \
            "floe.log(string.format('set-up: %d made, %d held', n, sim:count 'fluid'))\n"               \
            "floe.log(string.format('set-up total %d', sim:reduce('sum', sim:count 'fluid')))\n"         \
            "sim:boundary_box{ min = { 0, 0 }, max = { 0.4, 0.25 }, layers = 2, open_top = true }\n"    \
            "sim:pipeline{ { 'neighbours', order = 'id' }, 'sph.density', { 'wcsph.pressure', speed_of_sound = 20 },\n" \
            "  'gravity', { 'wcsph.viscosity', kind = 'artificial', alpha = 0.02 }, 'wcsph.pressure_force', 'integrate' }\n" \
            "local attrs = { 'id', 'v', 'rho', 'p', 'm' }\n"                                            \
            "sim:run{ end_time = 0.04, fps = 50, out = 'run', attributes = attrs }\n"                   \
            "local k = sim:fluid_box{ min = { 0.25, 0.1 }, max = { 0.3, 0.15 }, density = 1000 }\n"     \
            "floe.log(string.format('between: %d made, %d held', k, sim:count 'fluid'))\n"             \
            "local most, least = sim:reduce('max', sim:count 'fluid'), sim:reduce('min', sim:count 'fluid')\n" \
            "floe.log(string.format('between total %d, most %d, least %d', sim:reduce('sum', sim:count 'fluid'), most, least))\n" \
            "sim:run{ end_time = 0.14, fps = 50, out = 'run', attributes = attrs }\n"

/* the numbers of the log's lines "<what>: M made, H held", summed over the
 * ranks (H) and the count of such lines */
static int held(const char *log, const char *what, unsigned *made, unsigned *sum)
{
    int lines = 0;
    *sum = 0;
    char key[64];
    snprintf(key, sizeof key, "%s: ", what);
    for (const char *l = strstr(log, key); l; l = strstr(l + 1, key)) {
        unsigned m, h;
        if (sscanf(l + strlen(key), "%u made, %u held", &m, &h) == 2)
            *made = m, *sum += h, lines++;
    }
    return lines;
}

Test(mpi, the_set_up_is_shared_out_and_fluid_added_between_runs_is_held_once)
{
    if (!have_mpi())
        return;
    write_scene_text(SCENE_TWO_RUNS);
    cr_assert_eq(run_ranks(0, "one", ""), 0, "%s", sc_slurp("%s/one.log", sc_tmp));
    cr_assert_eq(run_ranks(2, "two", ""), 0, "%s", sc_slurp("%s/two.log", sc_tmp));
    cr_assert_eq(run_ranks(4, "four", ""), 0, "%s", sc_slurp("%s/four.log", sc_tmp));
    /* 3 frames of the first run, 8 of the second (its first numbered 3):
     * same ids, each once, the same values */
    compare_runs("one", "two", 10, 1e-5, 1);
    compare_runs("one", "four", 10, 1e-5, 1);
    const char *runs[] = {"one", "two", "four"};
    const int ranks[] = {1, 2, 4};
    for (int r = 0; r < 3; r++) {
        char *log = sc_slurp("%s/%s.log", sc_tmp, runs[r]);
        unsigned made = 0, sum = 0;
        cr_assert_eq(held(log, "set-up", &made, &sum), ranks[r], "%s", log);
        cr_assert(made == 800 && sum == 800, "%s: set-up made %u, the ranks held %u in all", runs[r], made, sum);
        /* no rank held the set-up's fluid whole: each about its share */
        for (const char *l = strstr(log, "set-up: "); l && ranks[r] > 1; l = strstr(l + 1, "set-up: ")) {
            unsigned m, h;
            cr_assert_eq(sscanf(l, "set-up: %u made, %u held", &m, &h), 2);
            cr_assert(h == 800u / (unsigned)ranks[r], "%s: a rank held %u of 800 at set-up", runs[r], h);
        }
        cr_assert_eq(held(log, "between", &made, &sum), ranks[r]);
        cr_assert(made == 100 && sum == 900, "%s: between the runs %u made, the ranks held %u in all (900 expected)",
                  runs[r], made, sum);
        /* sim:reduce: every rank logs the sums over all of them */
        int lines = 0;
        for (const char *l = strstr(log, "set-up total "); l; l = strstr(l + 1, "set-up total "), lines++)
            cr_assert(strncmp(l, "set-up total 800\n", 17) == 0, "%s: %.40s", runs[r], l);
        cr_assert_eq(lines, ranks[r], "%s: %d set-up total lines", runs[r], lines);
        for (const char *l = strstr(log, "between total "); l; l = strstr(l + 1, "between total ")) {
            unsigned t = 0, most = 0, least = 0;
            cr_assert_eq(sscanf(l, "between total %u, most %u, least %u", &t, &most, &least), 3);
            cr_assert(t == 900 && most >= least && (ranks[r] > 1 || most == 900), "%s: %.60s", runs[r], l);
        }
        free(log);
    }
}

/* a source above the block, straddling the first cut, and a sink on the
 * floor at the far end, in the step's "emit" stage */
#define SCENE_EMIT                                                                                       \
    SC_HEAD "local d = 0.005\n"                                                                         \
            "local sim = floe.sim{ dim = 2, spacing = d, gravity = { 0, -9.81 },\n"                     \
            "  domain = { min = { -4 * d, -4 * d }, max = { 0.4 + 4 * d, 0.3 } } }\n"                   \
            "sim:load{ 'sph', 'wcsph' }\n"                                                              \
            "sim:fluid_box{ min = { 0, 0 }, max = { 0.1, 0.1 }, density = 1000 }\n"                     \
            "sim:boundary_box{ min = { 0, 0 }, max = { 0.4, 0.25 }, layers = 2, open_top = true }\n"    \
            "sim:source{ centre = { 0.05, 0.2 }, direction = { 0, -1 }, radius = 0.02, speed = 1 }\n"   \
            "sim:sink{ min = { 0.25, 0 }, max = { 0.4, 0.1 } }\n"                                       \
            "local steps = { { 'neighbours', order = 'id' }, 'sph.density', { 'wcsph.pressure', speed_of_sound = 20 },\n" \
            "  'gravity', { 'wcsph.viscosity', kind = 'artificial', alpha = 0.02 }, 'wcsph.pressure_force',\n" \
            "  'integrate', 'emit' }\n"                                                                \
            "if floe.param('tail', 0) == 1 then steps[#steps + 1] = 'sph.density' end\n"               \
            "sim:pipeline(steps)\n"                                                                     \
            "sim:on_frame(function(s, st) local f = s:flow()\n"                                             \
            "  floe.log(string.format('flow %d: %d %d %.9g', st.frame, f.emitted, f.removed, f.mass_out)) end)\n" \
            "sim:run{ end_time = 0.2, fps = 50, out = 'run', attributes = { 'id', 'v', 'rho', 'p', 'm' } }\n"

/* the log's "flow" line of frame k (the first, of any rank) */
static void flow_line(const char *log, int k, char *out, size_t cap)
{
    char key[32];
    snprintf(key, sizeof key, "flow %d:", k);
    const char *l = strstr(log, key);
    cr_assert_not_null(l, "no '%s' line in\n%.3000s", key, log);
    size_t n = strcspn(l, "\n");
    snprintf(out, cap, "%.*s", (int)(n < cap ? n : cap - 1), l);
}

/* Sources and sinks under MPI: every rank emits what one process emits
 * and keeps what falls in its box; each rank's sinks remove its own
 * particles, the counts added over the ranks */
Test(mpi, sources_and_sinks_on_2_and_4_ranks_give_the_frames_of_one_process)
{
    if (!have_mpi())
        return;
    write_scene_text(SCENE_EMIT);
    cr_assert_eq(run_ranks(0, "one", ""), 0, "%s", sc_slurp("%s/one.log", sc_tmp));
    cr_assert_eq(run_ranks(2, "two", ""), 0, "%s", sc_slurp("%s/two.log", sc_tmp));
    cr_assert_eq(run_ranks(4, "four", ""), 0, "%s", sc_slurp("%s/four.log", sc_tmp));
    compare_runs("one", "two", 10, 1e-5, 1); /* ids each once, as one process's; positions, v, rho, p equal */
    compare_runs("one", "four", 10, 1e-5, 1);
    char *l1 = sc_slurp("%s/one.log", sc_tmp), *l2 = sc_slurp("%s/two.log", sc_tmp), *l4 = sc_slurp("%s/four.log", sc_tmp);
    for (int k = 1; k <= 10; k++) {
        char a[128], b[128], c[128];
        flow_line(l1, k, a, sizeof a), flow_line(l2, k, b, sizeof b), flow_line(l4, k, c, sizeof c);
        cr_assert(!strcmp(a, b) && !strcmp(a, c), "sim:flow() differs: '%s' in one process, '%s' and '%s'", a, b, c);
    }
    unsigned emitted = 0, removed = 0;
    char last[128];
    flow_line(l1, 10, last, sizeof last);
    cr_assert_eq(sscanf(last, "flow 10: %u %u", &emitted, &removed), 2, "%s", last);
    cr_assert(emitted > 100 && removed > 10, "the case meant to emit and remove particles: %s", last);
    free(l1), free(l2), free(l4);
    /* a stage that reads other particles' values after "emit" in the step
     * (their ghosts are gone) ends the run, naming "emit" */
    cr_assert_neq(run_ranks(2, "late", "--set tail=1"), 0);
    char *late = sc_slurp("%s/late.log", sc_tmp);
    cr_assert(strstr(late, "a stage after 'emit' in the step reads other particles' values") != NULL, "%s", late);
    free(late);
}

/* 4 ranks as 2 x 2 boxes (the default for this tank: the least cut area)
 * and as 4 slabs: each rank talks to its neighbouring boxes only, also
 * across a corner */
Test(mpi, wcsph_on_4_ranks_as_2x2_boxes_and_as_slabs_gives_the_frames_of_one_process)
{
    if (!have_mpi())
        return;
    write_scene();
    cr_assert_eq(run_ranks(0, "one", ""), 0, "%s", sc_slurp("%s/one.log", sc_tmp));
    cr_assert_eq(run_ranks(4, "boxes", "--decomp boxes"), 0, "%s", sc_slurp("%s/boxes.log", sc_tmp));
    cr_assert_eq(run_ranks(4, "slabs", "--decomp slabs --balance 2"), 0, "%s", sc_slurp("%s/slabs.log", sc_tmp));
    char *lb = sc_slurp("%s/boxes.log", sc_tmp), *ls = sc_slurp("%s/slabs.log", sc_tmp);
    cr_assert(strstr(lb, "mpi: 2x2 boxes (x, y)") || strstr(lb, "mpi: 2x2 boxes (y, x)"), "not 2x2 boxes:\n%s", lb);
    cr_assert(strstr(ls, "mpi: 4 slabs along x"), "not 4 slabs:\n%s", ls);
    /* in 2 x 2 boxes each rank has the other three as partners (one across a corner) */
    cr_assert(strstr(lb, "3 partners"), "%s", lb);
    /* each slab's neighbour search covers its box and a margin, not the
     * whole domain (the frames below are still one process's, bit for bit) */
    int windows = 0;
    for (const char *q = ls; (q = strstr(q, "its neighbour search over ")); q++) {
        unsigned long long cells = 0, total = 0;
        cr_assert_eq(sscanf(q, "its neighbour search over %llu of the domain's %llu cells", &cells, &total), 2);
        cr_assert(cells > 0 && cells <= total, "%s", ls);
        windows += cells < total;
    }
    cr_assert_eq(windows, 4, "every slab's search should be cut to its box:\n%s", ls);
    /* one exchange of ghosts a step: rho before wcsph.pressure; its p is
     * computed on the ghosts too (.pointwise), and wcsph.pressure_force
     * reads a ghost's a never (FLOE_OWN) */
    int ranks_logged = 0;
    for (const char *q = ls; (q = strstr(q, "halos ")); q++) {
        double ms, mpi, per_step;
        if (sscanf(q, "halos %lf (mpi %lf, %lf a step)", &ms, &mpi, &per_step) != 3)
            continue;
        cr_assert_float_eq(per_step, 1.0, 1e-9, "halo refreshes a step: %g\n%s", per_step, ls);
        ranks_logged++;
    }
    cr_assert_eq(ranks_logged, 4, "%s", ls);
    /* each rank's search window fitted to its fluid at the first rebuild,
     * and again as the fluid spread (docs/mpi.md, "The search window"):
     * the last slab's, which the front runs into, more than once; the
     * frames below are still one process's */
    int refits[4] = {-1, -1, -1, -1};
    for (const char *q = ls; (q = strstr(q, "mpi: rank ")); q++) {
        int r = -1;
        const char *f = strstr(q, "search window fitted ");
        if (sscanf(q, "mpi: rank %d, ms per step", &r) == 1 && r >= 0 && r < 4 && f)
            cr_assert_eq(sscanf(f, "search window fitted %d times", &refits[r]), 1, "%s", f);
    }
    for (int r = 0; r < 4; r++)
        cr_assert(refits[r] >= 1, "rank %d fitted its window %d times:\n%s", r, refits[r], ls);
    cr_assert(refits[3] >= 2, "the last slab fitted its window %d times:\n%s", refits[3], ls);
    free(lb), free(ls);
    double wb = compare_runs("one", "boxes", 10, 1e-5, 1);
    double ws = compare_runs("one", "slabs", 10, 1e-5, 1);
    cr_log_info("wcsph: largest relative position difference, 2x2 boxes %g, 4 slabs %g", wb, ws);
}

/* the reference bench's step (no viscosity stage between the pressure
 * and its force): the core splits wcsph.pressure_force around the one
 * refresh (floe_stage_desc.rows): the owned particles whose neighbours are
 * all owned first, while rho travels, then the rest and the ghosts' p. The
 * frames stay one process's to the bit, on 2 and 4 ranks and on 2 x 2
 * boxes */
Test(mpi, a_force_split_around_the_refresh_gives_the_frames_of_one_process)
{
    if (!have_mpi())
        return;
    write_scene();
    const char *sets = "--set solver=ref --set seconds=0.1";
    cr_assert_eq(run_ranks(0, "one", sets), 0, "%s", sc_slurp("%s/one.log", sc_tmp));
    char opts[256];
    snprintf(opts, sizeof opts, "%s --decomp slabs", sets);
    cr_assert_eq(run_ranks(2, "two", opts), 0, "%s", sc_slurp("%s/two.log", sc_tmp));
    cr_assert_eq(run_ranks(4, "four", opts), 0, "%s", sc_slurp("%s/four.log", sc_tmp));
    snprintf(opts, sizeof opts, "%s --decomp boxes", sets);
    cr_assert_eq(run_ranks(4, "boxes", opts), 0, "%s", sc_slurp("%s/boxes.log", sc_tmp));
    const char *runs[] = {"two", "four", "boxes"};
    for (int r = 0; r < 3; r++) {
        char *log = sc_slurp("%s/%s.log", sc_tmp, runs[r]);
        int ranks_logged = 0;
        for (const char *q = log; (q = strstr(q, "halos ")); q++) {
            double ms, mpi, per_step, split;
            if (sscanf(q, "halos %lf (mpi %lf, %lf a step, %lf overlapped)", &ms, &mpi, &per_step, &split) != 4)
                continue;
            cr_assert_float_eq(per_step, 1.0, 1e-9, "%s: refreshes a step %g\n%s", runs[r], per_step, log);
            cr_assert_float_eq(split, 1.0, 1e-9, "%s: refreshes overlapped a step %g\n%s", runs[r], split, log);
            ranks_logged++;
        }
        cr_assert_eq(ranks_logged, r ? 4 : 2, "%s", log);
        free(log);
        const double w = compare_runs("one", runs[r], 5, 0.0, 1);
        cr_log_info("reference step, %s: largest relative position difference %g", runs[r], w);
    }
}

/* delta-SPH (wcsph.continuity{delta}: its second walk reads the
 * neighbours' renormalised density gradients, the ghosts' from their
 * owners through api->halo) with the gradient correction: one process's
 * frames to the bit on 2 ranks; Adami's wall pressure (a wall particle's
 * sums reach beyond the ghosts) is refused by name */
Test(mpi, delta_sph_on_2_ranks_gives_the_frames_of_one_process_and_adami_walls_are_refused)
{
    if (!have_mpi())
        return;
    write_scene();
    const char *sets = "--set solver=delta --set seconds=0.1";
    cr_assert_eq(run_ranks(0, "one", sets), 0, "%s", sc_slurp("%s/one.log", sc_tmp));
    cr_assert_eq(run_ranks(2, "two", sets), 0, "%s", sc_slurp("%s/two.log", sc_tmp));
    const double w = compare_runs("one", "two", 5, 0.0, 1);
    cr_log_info("delta-SPH on 2 ranks: largest relative position difference %g", w);
    cr_assert_neq(run_ranks(2, "adami", "--set solver=delta --set seconds=0.1 --set walls=extrapolated"), 0);
    char *log = sc_slurp("%s/adami.log", sc_tmp);
    cr_assert(strstr(log, "stage 'wcsph.pressure_force' failed") &&
                  strstr(log, "walls = \"extrapolated\" does not run under MPI"),
              "%s", log);
    free(log);
}

/* a block moving at 30 m/s with no force on it, cut into 4 slabs 0.1 m
 * wide, then into 3 x 2 boxes on 6 ranks (steps of 5 ms: 0.15 m a step):
 * its particles cross more than the next slab or box in one step, reach
 * owners that are not partners, and are passed on through the ranks
 * between (no collective a step decides it):
 * every id once in every frame, and the positions one process's to the bit
 * (integrate alone moves them; a particle on the way has its density
 * summed without all its neighbours, so rho is not compared) */
#define SCENE_FAST                                                                                   \
    SC_HEAD "local sim = floe.sim{ dim = 2, spacing = 0.01, gravity = { 0, 0 },\n"                     \
            "  domain = { min = { -0.1, -0.1 }, max = { 2.1, 0.3 } } }\n"                              \
            "sim:load{ 'sph', 'wcsph' }\n"                                                             \
            "sim:fluid_box{ min = { 0, 0 }, max = { 0.4, 0.2 }, density = 1000, velocity = { 30, 0 } }\n" \
            "sim:pipeline{ { 'neighbours', order = 'id' }, 'sph.density', 'wcsph.pressure', 'integrate' }\n" \
            "sim:run{ end_time = 0.05, fps = 100, dt = 0.005, out = 'run', attributes = { 'id', 'v', 'rho', 'p', 'm' } }\n"

Test(mpi, a_particle_that_crosses_more_than_a_slab_in_a_step_is_passed_on_to_its_owner)
{
    if (!have_mpi())
        return;
    write_scene_text(SCENE_FAST);
    cr_assert_eq(run_ranks(0, "one", ""), 0, "%s", sc_slurp("%s/one.log", sc_tmp));
    cr_assert_eq(run_ranks(4, "four", "--decomp slabs --balance 0"), 0, "%s", sc_slurp("%s/four.log", sc_tmp));
    char *log = sc_slurp("%s/four.log", sc_tmp);
    cr_assert(strstr(log, "crossed more than a neighbouring box in one step") && strstr(log, "passed on through rank"),
              "no particle was passed on:\n%s", log);
    cr_assert(!strstr(log, "it stays here"), "%s", log);
    free(log);
    compare_runs("one", "four", 5, 0.0, 0);
    /* the same over 6 ranks as 3 x 2 boxes (x cut at the block's
     * quantiles, 0.13 m apart, then y within each piece) */
    cr_assert_eq(run_ranks(6, "boxes", "--decomp boxes --balance 0"), 0, "%s", sc_slurp("%s/boxes.log", sc_tmp));
    log = sc_slurp("%s/boxes.log", sc_tmp);
    cr_assert(strstr(log, "3x2 boxes") && strstr(log, "passed on through rank") && !strstr(log, "it stays here"),
              "%s", log);
    free(log);
    compare_runs("one", "boxes", 5, 0.0, 0);
}

/* a slab's partners are the slabs within the support radius: on 4 slabs
 * along a wide tank the end ranks talk to one rank, not three. The lists
 * in memory order (order = "index", the default): the same particles, the
 * floats within rounding of one process's (sums in another order) */
Test(mpi, slabs_talk_to_their_neighbours_only)
{
    if (!have_mpi())
        return;
    write_scene();
    const char *sets = "--set seconds=0.02 --set order=index";
    cr_assert_eq(run_ranks(0, "one", sets), 0, "%s", sc_slurp("%s/one.log", sc_tmp));
    char s4[256];
    snprintf(s4, sizeof s4, "--decomp slabs %s", sets);
    cr_assert_eq(run_ranks(4, "slabs", s4), 0, "%s", sc_slurp("%s/slabs.log", sc_tmp));
    double w = compare_runs("one", "slabs", 1, 1e-4, 0); /* 201 steps */
    cr_log_info("order = index, 4 slabs: largest relative position difference %g", w);
    char *l = sc_slurp("%s/slabs.log", sc_tmp);
    for (int r = 0; r < 4; r++) {
        char key[64];
        snprintf(key, sizeof key, "mpi: rank %d of 4 ", r);
        const char *k = strstr(l, key);
        cr_assert(k, "no line for rank %d:\n%s", r, l);
        const char *e = strchr(k, '\n'), *pt = strstr(k, " partners");
        cr_assert(pt && (!e || pt < e), "%s", l);
        while (pt > k && pt[-1] != ' ')
            pt--;
        int np = atoi(pt);
        cr_assert_eq(np, r == 0 || r == 3 ? 1 : 2, "rank %d has %d partners:\n%s", r, np, l);
    }
    /* the run's breakdown per rank (docs/mpi.md) */
    cr_assert(strstr(l, "mpi: rank 3, ms per step: "), "%s", l);
    free(l);
}

/* each rank's "rebuilt at X% of the steps" (docs/mpi.md, "A step"); the
 * ranks must agree: they rebuild together */
static double rebuilt_percent(const char *log, int ranks)
{
    double pc = -1;
    int seen = 0;
    for (const char *q = log; (q = strstr(q, "rebuilt at ")); q++) {
        double v;
        cr_assert_eq(sscanf(q, "rebuilt at %lf%%", &v), 1, "%s", log);
        cr_assert(pc < 0 || v == pc, "the ranks rebuilt at different steps (%g%% and %g%%):\n%s", pc, v, log);
        pc = v, seen++;
    }
    cr_assert_eq(seen, ranks, "%s", log);
    return pc;
}

/* The ghost lists kept between rebuilds (--mpi-skin, docs/mpi.md): ghosts
 * within H + skin, a migration and new lists only when some particle moved
 * more than skin / 2 since the last ones. Every neighbour within H is then
 * at hand at every step: the frames of 4 slabs and of 2 x 2 boxes are one
 * process's to the bit without a skin (every step rebuilt), with the
 * default 0.5 H and with 1 H, and the wider the skin, the fewer the
 * rebuilds. A skin outside [0, 1] is refused. */
Test(mpi, ghost_lists_kept_between_rebuilds_give_the_frames_of_one_process)
{
    if (!have_mpi())
        return;
    write_scene();
    const char *sets = "--set seconds=0.1";
    cr_assert_eq(run_ranks(0, "one", sets), 0, "%s", sc_slurp("%s/one.log", sc_tmp));
    const char *skin[] = {"0", "0.5", "1"};
    double pc[3];
    for (int k = 0; k < 3; k++) {
        char opts[256], name[32];
        snprintf(name, sizeof name, "slabs%d", k);
        snprintf(opts, sizeof opts, "%s --decomp slabs --mpi-skin %s", sets, skin[k]);
        cr_assert_eq(run_ranks(4, name, opts), 0, "%s", sc_slurp("%s/%s.log", sc_tmp, name));
        char *log = sc_slurp("%s/%s.log", sc_tmp, name);
        pc[k] = rebuilt_percent(log, 4);
        free(log);
        compare_runs("one", name, 5, 0.0, 1);
        snprintf(name, sizeof name, "boxes%d", k);
        snprintf(opts, sizeof opts, "%s --decomp boxes --mpi-skin %s", sets, skin[k]);
        cr_assert_eq(run_ranks(4, name, opts), 0, "%s", sc_slurp("%s/%s.log", sc_tmp, name));
        compare_runs("one", name, 5, 0.0, 1);
    }
    cr_log_info("rebuilt at %g%%, %g%%, %g%% of the steps with a skin of 0, 0.5 and 1 H", pc[0], pc[1], pc[2]);
    cr_assert_eq(pc[0], 100.0);
    cr_assert(pc[1] < 50 && pc[1] > 0 && pc[2] < pc[1], "rebuilt at %g%%, %g%%, %g%%", pc[0], pc[1], pc[2]);
    cr_assert_neq(run_ranks(2, "bad", "--mpi-skin 1.5"), 0);
    char *bad = sc_slurp("%s/bad.log", sc_tmp);
    cr_assert(strstr(bad, "--mpi-skin '1.5': expected a number in [0, 1]"), "%s", bad);
    free(bad);
}

Test(mpi, iisph_on_2_and_4_ranks_gives_the_frames_of_one_process)
{
    if (!have_mpi())
        return;
    write_scene();
    cr_assert_eq(run_ranks(0, "one", "--set solver=iisph"), 0, "%s", sc_slurp("%s/one.log", sc_tmp));
    cr_assert_eq(run_ranks(2, "two", "--set solver=iisph"), 0, "%s", sc_slurp("%s/two.log", sc_tmp));
    cr_assert_eq(run_ranks(4, "four", "--set solver=iisph"), 0, "%s", sc_slurp("%s/four.log", sc_tmp));
    /* IISPH's tolerance: its iterations stop on an average density error
     * summed over ranks, whose last bits depend on the order of the sum
     * (1e-3 relative, test_iisph's bound between its C and OpenCL paths) */
    double w2 = compare_runs("one", "two", 10, 1e-3, 0);
    double w4 = compare_runs("one", "four", 10, 1e-3, 0);
    cr_log_info("iisph: largest relative position difference, 2 ranks %g, 4 ranks %g", w2, w4);
}

Test(mpi, dam_break_3d_on_4_ranks_gives_the_frames_of_one_process)
{
    if (!have_mpi())
        return;
    write_scene_text(SCENE3);
    cr_assert_eq(run_ranks(0, "one", ""), 0, "%s", sc_slurp("%s/one.log", sc_tmp));
    cr_assert_eq(run_ranks(4, "four", "--decomp boxes"), 0, "%s", sc_slurp("%s/four.log", sc_tmp));
    cr_assert_eq(run_ranks(0, "one_iisph", "--set solver=iisph"), 0, "%s", sc_slurp("%s/one_iisph.log", sc_tmp));
    cr_assert_eq(run_ranks(4, "four_iisph", "--set solver=iisph"), 0, "%s", sc_slurp("%s/four_iisph.log", sc_tmp));
    double w = compare_runs("one", "four", 5, 1e-5, 1); /* 382 steps */
    double wi = compare_runs("one_iisph", "four_iisph", 5, 1e-3, 0);
    cr_log_info("3D: largest relative position difference on 4 ranks, wcsph %g, iisph %g", w, wi);
}

Test(mpi, dfsph_on_2_ranks_gives_the_frames_of_one_process)
{
    if (!have_mpi())
        return;
    write_scene();
    cr_assert_eq(run_ranks(0, "one", "--set solver=dfsph"), 0, "%s", sc_slurp("%s/one.log", sc_tmp));
    cr_assert_eq(run_ranks(2, "two", "--set solver=dfsph"), 0, "%s", sc_slurp("%s/two.log", sc_tmp));
    /* 334 steps; particles thrown over the tank's wall leave the domain and
     * are deleted on both sides (the decomposition at the step's end) */
    double w = compare_runs("one", "two", 10, 1e-3, 0);
    cr_log_info("dfsph: largest relative position difference, 2 ranks %g", w);
}

/* tension's stages read, within one call, colours, gradients and normals
 * they computed: their halo calls between the passes */
Test(mpi, surface_tension_on_3_ranks_gives_the_frames_of_one_process)
{
    if (!have_mpi())
        return;
    write_scene();
    const char *sets = "--set solver=tension --set seconds=0.1";
    cr_assert_eq(run_ranks(0, "one", sets), 0, "%s", sc_slurp("%s/one.log", sc_tmp));
    cr_assert_eq(run_ranks(3, "three", sets), 0, "%s", sc_slurp("%s/three.log", sc_tmp));
    double w = compare_runs("one", "three", 5, 1e-5, 1); /* 1005 steps */
    cr_log_info("tension: largest relative position difference, 3 ranks %g", w);
}

static void count_device(const char *line, void *u)
{
    (void)line;
    ++*(int *)u;
}

/* GPU ranks (docs/mpi.md): --backend opencl on 2 ranks, each rank its
 * device by local rank (here both PoCL's one CPU device), the halos
 * through host memory, against one process on the same device. The lists
 * are in id order on both sides (the device's cell sort too), so WCSPH,
 * IISPH and DFSPH come out bitwise equal (measured); the two implicit
 * solvers are held to their 1e-3 as on the cpu backend (their
 * per-work-group error sums are added over ranks in another order, which
 * may move a stopping iteration). Surface tension (its device passes
 * exchange colour, gradient and normals through api->halo on device
 * buffers) on 3 ranks: bitwise. */
Test(mpi, opencl_ranks_give_the_frames_of_one_process_on_the_device)
{
    if (!have_mpi())
        return;
    int devices = 0;
    if (floe_cl_devices(count_device, &devices) <= 0 || devices == 0) {
        cr_skip_test("no OpenCL platform or device found: the GPU-rank test is skipped");
        return;
    }
    write_scene();
    const char *runs[][2] = {{"wcsph", "--backend opencl --set seconds=0.06"},
                             {"iisph", "--backend opencl --set solver=iisph"},
                             {"dfsph", "--backend opencl --set solver=dfsph"},
                             {"tension", "--backend opencl --set solver=tension --set seconds=0.04"}};
    const int frames[] = {3, 10, 10, 2}, ranks[] = {2, 2, 2, 3};
    double worst[4];
    for (int k = 0; k < 4; k++) {
        char one[64], two[64];
        snprintf(one, sizeof one, "cl_one_%s", runs[k][0]);
        snprintf(two, sizeof two, "cl_two_%s", runs[k][0]);
        cr_assert_eq(run_ranks(0, one, runs[k][1]), 0, "%s", sc_slurp("%s/%s.log", sc_tmp, one));
        cr_assert_eq(run_ranks(ranks[k], two, runs[k][1]), 0, "%s", sc_slurp("%s/%s.log", sc_tmp, two));
        char *log = sc_slurp("%s/%s.log", sc_tmp, two);
        cr_assert(strstr(log, "floe: error") == NULL, "%s", log);
        free(log);
        const int exact = k == 0 || k == 3;
        worst[k] = compare_runs(one, two, frames[k], exact ? 0.0 : 1e-3, exact);
    }
    cr_log_info("opencl: largest relative position difference wcsph %g, iisph %g, dfsph %g (2 ranks), tension %g "
                "(3 ranks)", worst[0], worst[1], worst[2], worst[3]);
}

/* the pid a rank logged ("mpi: rank R of N (pid P)"), 0 if not yet */
static long rank_pid(const char *log, int rank)
{
    char *s = sc_slurp("%s", log), key[64];
    snprintf(key, sizeof key, "mpi: rank %d of ", rank);
    const char *k = strstr(s, key);
    long pid = 0;
    if (k && (k = strstr(k, "(pid ")))
        pid = strtol(k + 5, NULL, 10);
    free(s);
    return pid;
}

/* each rank's "device copies a step: X MB to the device, Y MB back" and
 * its owned particles (the breakdown's "N owned") */
static void bus_figures(const char *log, int ranks, double up[], double down[], double owned[])
{
    int seen = 0;
    for (const char *q = log; (q = strstr(q, "mpi: rank ")); q++) {
        int r, len = 0;
        double u, w;
        if (sscanf(q, "mpi: rank %d, device copies a step: %lf MB to the device, %lf MB back", &r, &u, &w) == 3) {
            cr_assert(r >= 0 && r < ranks, "%s", log);
            up[r] = u, down[r] = w, seen++;
        } else if (sscanf(q, "mpi: rank %d%n", &r, &len) == 1 && !strncmp(q + len, ", ms per step:", 14)) {
            const char *e = strchr(q, '\n'), *o = strstr(q, " owned");
            cr_assert(o && (!e || o < e) && r >= 0 && r < ranks, "%s", log);
            while (o > q && o[-1] != ' ')
                o--;
            owned[r] = atof(o);
        }
    }
    cr_assert_eq(seen, ranks, "%s", log);
}

/* GPU ranks (docs/mpi.md, "GPU ranks"): the device copies stay the truth
 * and only what crosses between ranks crosses the bus, at a rebuild (the
 * device selects the particles outside the box and near its faces, their
 * positions come back, the leavers' and the ghosts' rows are gathered
 * there, the leavers squeezed out there) and between rebuilds (the
 * ghosts' rows; the skin's test and the count of particles outside the
 * domain on the device). Each rank copies each way, a step,
 * under half of one copy of its particles (at least 52 bytes a particle:
 * x, v, a, rho, p, m, id), with and without the skin (measured: 0.21 to
 * 0.41 of it in this small 2D case, where the ghosts are a quarter of a
 * rank's particles); until these changes it copied its whole set back and
 * up again every step. The frames are one process's on the device to the
 * bit. */
Test(mpi, gpu_ranks_move_only_the_rows_that_cross)
{
    if (!have_mpi())
        return;
    int devices = 0;
    if (floe_cl_devices(count_device, &devices) <= 0 || devices == 0) {
        cr_skip_test("no OpenCL platform or device found: the GPU-rank test is skipped");
        return;
    }
    write_scene();
    const char *sets = "--backend opencl --set seconds=0.06";
    cr_assert_eq(run_ranks(0, "one", sets), 0, "%s", sc_slurp("%s/one.log", sc_tmp));
    const char *skin[] = {"0", "0.5"};
    for (int k = 0; k < 2; k++) {
        char name[32], opts[256];
        double up[2], down[2], owned[2] = {0, 0};
        snprintf(name, sizeof name, "skin%d", k);
        snprintf(opts, sizeof opts, "%s --mpi-skin %s", sets, skin[k]);
        cr_assert_eq(run_ranks(2, name, opts), 0, "%s", sc_slurp("%s/%s.log", sc_tmp, name));
        char *log = sc_slurp("%s/%s.log", sc_tmp, name);
        bus_figures(log, 2, up, down, owned);
        const double pc = rebuilt_percent(log, 2);
        cr_assert(k ? pc < 50 : pc == 100, "rebuilt at %g%% with a skin of %s", pc, skin[k]);
        for (int r = 0; r < 2; r++) {
            const double set_mb = 52e-6 * owned[r];
            cr_log_info("skin %s, rank %d: %g MB up, %g MB back a step; one copy of its %g particles %g MB", skin[k], r,
                        up[r], down[r], owned[r], set_mb);
            cr_assert(owned[r] > 100 && up[r] > 0 && down[r] > 0, "%s", log);
            cr_assert(up[r] < 0.5 * set_mb && down[r] < 0.5 * set_mb, "skin %s, rank %d: %g MB up, %g back a step\n%s",
                      skin[k], r, up[r], down[r], log);
        }
        free(log);
        compare_runs("one", name, 3, 0.0, 1);
    }
}

Test(mpi, a_rank_killed_ends_the_run_naming_it_and_the_frames_stay_valid)
{
    if (!have_mpi())
        return;
    write_scene();
    char cmd[2048], log[512];
    snprintf(log, sizeof log, "%s/kill.log", sc_tmp);
    snprintf(cmd, sizeof cmd,
             "cd %s && " MPI_ENV "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 exec mpirun --oversubscribe --bind-to "
             "none -np 2 %s run scene.lua --out kill --quiet --threads 1 --set seconds=20 > kill.log 2>&1",
             sc_tmp, FLOE_TEST_BUILD_ROOT "/core/floe");
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(97);
    }
    long victim = 0;
    for (double t = 0; t < 120 && !victim; t += 0.05, sc_sleep(0.05))
        victim = rank_pid(log, 1);
    cr_assert(victim > 0, "rank 1 never logged its pid:\n%s", sc_slurp("%s", log));
    for (double t = 0; t < 120 && !sc_exists("%s/kill/fluid.0002.ply", sc_tmp); t += 0.05)
        sc_sleep(0.05);
    cr_assert(sc_exists("%s/kill/fluid.0002.ply", sc_tmp), "frame 2 never written:\n%s", sc_slurp("%s", log));
    cr_assert_eq(kill((pid_t)victim, SIGKILL), 0);
    int st = sc_wait(pid);
    char *text = sc_slurp("%s", log);
    cr_assert_neq(st, 0, "mpirun exited 0 after a rank was killed:\n%s", text);
    cr_assert(strstr(text, "rank 1") != NULL, "the message does not name rank 1:\n%s", text);
    free(text);
    /* every frame written is whole: 800 particles, each id once */
    int k = 0;
    for (; sc_exists("%s/kill/fluid.%04d.ply", sc_tmp, k); k++) {
        frame fr;
        int sorted;
        cr_assert_eq(read_frame("kill", k, &fr, &sorted), 0, "frame %d unreadable after the kill", k);
        cr_assert(fr.n <= 800u && fr.n >= 790u, "frame %d: %u particles", k, fr.n);
        cr_assert(sorted, "frame %d not sorted by id", k);
        free_frame(&fr);
    }
    cr_assert_geq(k, 3);
    cr_assert(!sc_exists("%s/kill/fluid.%04d.ply.tmp", sc_tmp, k));
}

Test(mpi, a_stage_that_cannot_run_decomposed_is_refused_by_name)
{
    if (!have_mpi())
        return;
    FILE *f = fopen(sc_scene, "w");
    cr_assert_not_null(f);
    fputs(SC_HEAD "local sim = floe.sim{ dim = 2, spacing = 0.01, domain = { min = { 0, 0 }, max = { 1, 1 } } }\n"
                  "sim:load{ 'flip' }\n"
                  "sim:fluid_box{ min = { 0.1, 0.1 }, max = { 0.3, 0.3 } }\n"
                  "sim:pipeline{ 'gravity', 'flip.splat', 'flip.grid', 'flip.advect' }\n"
                  "sim:run{ frames = 1, out = 'run' }\n",
          f);
    fclose(f);
    int st = run_ranks(2, "refused", "");
    char *text = sc_slurp("%s/refused.log", sc_tmp);
    cr_assert_neq(st, 0, "%s", text);
    cr_assert(strstr(text, "stage 'flip.splat' declares it cannot run on a part of the particles") != NULL, "%s", text);
    free(text);
}

/* The balance weighs a particle by its neighbour pairs: 2 ranks, a dense
 * block (about 11 neighbours a particle) on the left and as many particles
 * spread 3 spacings apart (none) on the right, nothing moving. The first
 * cuts even out the counts (the cut just right of the block); after frame
 * 1 the work is uneven (the block's rank holds about 19 against 8 a
 * particle) and the cut moves into the block; by counts nothing moves. */
#define SPREAD                                                                                          \
    SC_HEAD "local d = 0.005\n"                                                                         \
            "local sim = floe.sim{ dim = 2, spacing = d, gravity = { 0, 0 },\n"                         \
            "  domain = { min = { -0.05, -0.05 }, max = { 0.6, 0.4 } } }\n"                             \
            "sim:load{ 'sph' }\n"                                                                       \
            "sim:fluid_box{ min = { 0, 0 }, max = { 20 * d, 20 * d } }\n"                               \
            "for i = 0, 19 do for j = 0, 19 do\n"                                                       \
            "  local x, y = 0.2 + 3 * d * i, 3 * d * j\n"                                               \
            "  sim:fluid_box{ min = { x, y }, max = { x + d, y + d } }\n"                               \
            "end end\n"                                                                                 \
            "sim:pipeline{ 'neighbours', 'sph.density', 'integrate' }\n"                                \
            "sim:run{ end_time = 0.06, fps = 50, dt = 0.001, out = 'run', attributes = { 'id' } }\n"

Test(mpi, the_balance_evens_out_neighbour_pairs_not_counts)
{
    if (!have_mpi())
        return;
    write_scene_text(SPREAD);
    cr_assert_eq(run_ranks(2, "pairs", "--decomp slabs --balance 1"), 0, "%s", sc_slurp("%s/pairs.log", sc_tmp));
    cr_assert_eq(run_ranks(2, "count", "--decomp slabs --balance 1 --balance-by count"), 0, "%s",
                 sc_slurp("%s/count.log", sc_tmp));
    char *lp = sc_slurp("%s/pairs.log", sc_tmp), *lc = sc_slurp("%s/count.log", sc_tmp);
    const char *q = strstr(lp, "mpi: load balance after frame 1: the busiest rank held ");
    cr_assert_not_null(q, "no balance after frame 1:\n%s", lp);
    double held = 0, cut = 0;
    cr_assert_eq(sscanf(q, "mpi: load balance after frame 1: the busiest rank held %lf%% of the mean work "
                           "(neighbour pairs); cuts moved to %lf", &held, &cut), 2, "%s", q);
    /* 400 x (8 + ~11) against 400 x 8: the block's rank holds ~140% */
    cr_assert(held > 130 && held < 150, "held %g%%", held);
    /* even work: 5,400 of the block's ~7,600 on the left, about 71% of the
     * block's 20 columns of 0.005 m (14 columns: x = 0.07) */
    cr_assert(cut > 0.06 && cut < 0.08, "cut at %g", cut);
    /* then the block's columns (3.5% of the work each) leave the ranks at
     * 102%: no later balance moves the cut, or logs (it used to log the
     * same cut at every check, and to migrate every particle) */
    cr_assert_null(strstr(lp, "load balance after frame 2"), "%s", lp);
    cr_assert_null(strstr(lp, "load balance after frame 3"), "%s", lp);
    /* by counts the first cuts were already even: no move */
    cr_assert_null(strstr(lc, "load balance after"), "%s", lc);
    free(lp), free(lc);
}

/* `floe bench --all-ranks`: each rank prints its own summary and stage
 * times, its lines beginning "rank R: " */
Test(mpi, bench_all_ranks_prints_every_ranks_stage_times)
{
    if (!have_mpi())
        return;
    write_scene();
    const int st = floe_ranks("bench", 2, "bench", "--set seconds=0.04 --all-ranks");
    char *log = sc_slurp("%s/bench.log", sc_tmp);
    cr_assert_eq(st, 0, "%s", log);
    for (int r = 0; r < 2; r++) {
        char want[64];
        snprintf(want, sizeof want, "rank %d: scene.lua: ", r);
        cr_assert_not_null(strstr(log, want), "no summary of rank %d:\n%s", r, log);
        snprintf(want, sizeof want, "rank %d:     wcsph.pressure_force ", r);
        cr_assert_not_null(strstr(log, want), "no stage times of rank %d:\n%s", r, log);
    }
    free(log);
}
