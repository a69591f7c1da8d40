/* Frame writers (PLY, VTK), atomic files, the run record and YAML presets. */
#include <criterion/criterion.h>

#include "io.h"
#include "ply_read.h"
#include "record.h"
#include "lua_floe.h"

#include <dirent.h>
#include <errno.h>
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- fixture: a fresh temp folder per test ------------------------------- */

static char tmpdir[256];

static void mk_tmp(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/floe_test_io.XXXXXX");
    cr_assert_not_null(mkdtemp(tmpdir), "mkdtemp: %s", strerror(errno));
}

static void rm_tree(const char *p)
{
    struct stat st;
    if (lstat(p, &st) != 0)
        return;
    if (S_ISDIR(st.st_mode)) {
        DIR *d = opendir(p);
        if (d) {
            struct dirent *e;
            while ((e = readdir(d))) {
                if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                    continue;
                char sub[1024];
                snprintf(sub, sizeof sub, "%s/%s", p, e->d_name);
                rm_tree(sub);
            }
            closedir(d);
        }
        rmdir(p);
    } else {
        unlink(p);
    }
}

static void rm_tmp(void)
{
    if (tmpdir[0])
        rm_tree(tmpdir);
}

TestSuite(io, .init = mk_tmp, .fini = rm_tmp);

static void tpath(char *buf, size_t len, const char *name)
{
    snprintf(buf, len, "%s/%s", tmpdir, name);
}

/* Names in a folder (without . and ..), sorted, joined by '|'. */
static void list_dir(const char *dir, char *out, size_t len)
{
    char names[64][256];
    int n = 0;
    DIR *d = opendir(dir);
    cr_assert_not_null(d);
    struct dirent *e;
    while ((e = readdir(d)) && n < 64) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        snprintf(names[n++], 256, "%s", e->d_name);
    }
    closedir(d);
    for (int i = 0; i < n; i++) /* insertion sort */
        for (int j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
            char t[256];
            memcpy(t, names[j], 256);
            memcpy(names[j], names[j - 1], 256);
            memcpy(names[j - 1], t, 256);
        }
    out[0] = '\0';
    for (int i = 0; i < n; i++) {
        if (i)
            strncat(out, "|", len - strlen(out) - 1);
        strncat(out, names[i], len - strlen(out) - 1);
    }
}

static unsigned char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "open %s: %s", path, strerror(errno));
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc((size_t)n + 1);
    cr_assert_not_null(b);
    cr_assert_eq(fread(b, 1, (size_t)n, f), (size_t)n);
    b[n] = 0;
    fclose(f);
    *len = (size_t)n;
    return b;
}

static void spit(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "open %s: %s", path, strerror(errno));
    cr_assert_eq(fwrite(data, 1, len, f), len);
    cr_assert_eq(fclose(f), 0);
}

static void spit_str(const char *path, const char *s)
{
    spit(path, s, strlen(s));
}

static int exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* Particle data with awkward floats (negative zero, denormal, large). */
#define NP 1000
static float px[3 * NP], pv[3 * NP], prho[NP];
static int32_t pid[NP];
static uint32_t pflag[NP];

static void fill_particles(void)
{
    for (int i = 0; i < NP; i++) {
        for (int k = 0; k < 3; k++) {
            px[3 * i + k] = (float)(i * 0.37 - 100.0 + k * 1e-3) * (k == 2 ? -1.f : 1.f);
            pv[3 * i + k] = (float)sin(i * 0.1 + k) * 3.25f;
        }
        prho[i] = 1000.f + (float)i / 7.f;
        pid[i] = i * 3 - 1500;
        pflag[i] = (uint32_t)i * 4000000u;
    }
    px[0] = -0.f;
    pv[1] = 1e-40f; /* denormal */
    prho[2] = 3.4e38f;
}

/* ---- PLY ----------------------------------------------------------------- */

static void check_prop(const char *path, const char *prop, const float *src, int stride, int off)
{
    uint32_t n = 0;
    float *got = NULL;
    cr_assert_eq(ply_read_property(path, prop, &n, &got), 0, "read %s", prop);
    cr_assert_eq(n, NP);
    for (int i = 0; i < NP; i++) {
        float want = src[(size_t)stride * i + off];
        cr_assert_eq(memcmp(&got[i], &want, 4), 0, "%s[%d]: %.9g != %.9g", prop, i, got[i], want);
    }
    free(got);
}

Test(io, ply_roundtrip)
{
    fill_particles();
    char path[512];
    tpath(path, sizeof path, "frame_0001.ply");
    io_column cols[] = {{"v", FLOE_VEC3, pv}, {"rho", FLOE_F32, prho}};
    cr_assert_eq(io_write_ply(path, NP, px, cols, 2), 0);

    size_t len;
    unsigned char *b = slurp(path, &len);
    const char *hdr = "ply\n"
                      "format binary_little_endian 1.0\n"
                      "comment written by Floe\n"
                      "element vertex 1000\n"
                      "property float x\n"
                      "property float y\n"
                      "property float z\n"
                      "property float v_x\n"
                      "property float v_y\n"
                      "property float v_z\n"
                      "property float rho\n"
                      "end_header\n";
    size_t hl = strlen(hdr);
    cr_assert(len >= hl);
    cr_assert_eq(memcmp(b, hdr, hl), 0, "header:\n%.*s", (int)hl, (const char *)b);
    cr_assert_eq(len, hl + (size_t)NP * 7 * 4);
    /* little-endian on disk whatever the host: record 1, first field y... */
    uint32_t u;
    memcpy(&u, &px[3], 4);
    const unsigned char *r1 = b + hl + 7 * 4;
    cr_assert_eq((uint32_t)r1[0] | (uint32_t)r1[1] << 8 | (uint32_t)r1[2] << 16 | (uint32_t)r1[3] << 24, u);
    free(b);

    check_prop(path, "x", px, 3, 0);
    check_prop(path, "y", px, 3, 1);
    check_prop(path, "z", px, 3, 2);
    check_prop(path, "v_x", pv, 3, 0);
    check_prop(path, "v_y", pv, 3, 1);
    check_prop(path, "v_z", pv, 3, 2);
    check_prop(path, "rho", prho, 1, 0);

    uint32_t n = 7;
    float *got = (float *)1;
    cr_assert_eq(ply_read_property(path, "nope", &n, &got), -1);
    cr_assert_null(got);
    cr_assert_eq(n, 0);
}

Test(io, ply_int_columns)
{
    fill_particles();
    char path[512];
    tpath(path, sizeof path, "ints.ply");
    io_column cols[] = {{"id", FLOE_I32, pid}, {"flag", FLOE_U32, pflag}};
    cr_assert_eq(io_write_ply(path, NP, px, cols, 2), 0);
    size_t len;
    unsigned char *b = slurp(path, &len);
    cr_assert_not_null(strstr((char *)b, "property float z\nproperty int id\nproperty uint flag\nend_header\n"));
    free(b);
    uint32_t n;
    float *got;
    cr_assert_eq(ply_read_property(path, "id", &n, &got), 0);
    cr_assert_eq(n, NP);
    for (int i = 0; i < NP; i++)
        cr_assert_eq(got[i], (float)pid[i]);
    free(got);
    cr_assert_eq(ply_read_property(path, "flag", &n, &got), 0);
    for (int i = 0; i < NP; i++)
        cr_assert_eq(got[i], (float)pflag[i]);
    free(got);
}

Test(io, ply_empty_and_bad_args)
{
    char path[512];
    tpath(path, sizeof path, "empty.ply");
    cr_assert_eq(io_write_ply(path, 0, NULL, NULL, 0), 0);
    uint32_t n = 5;
    float *got = NULL;
    cr_assert_eq(ply_read_property(path, "x", &n, &got), 0);
    cr_assert_eq(n, 0);
    free(got);

    float x[3] = {1, 2, 3};
    io_column bad[] = {{"has space", FLOE_F32, x}};
    tpath(path, sizeof path, "bad.ply");
    cr_assert_eq(io_write_ply(path, 1, x, bad, 1), -1);
    cr_assert(!exists(path));
    char names[1024];
    list_dir(tmpdir, names, sizeof names);
    cr_assert_str_eq(names, "empty.ply");
}

Test(io, ply_malformed_headers)
{
    static const char *const bad[] = {
        "",
        "plyx\n",
        "ply\nformat ascii 1.0\nelement vertex 1\nproperty float x\nend_header\n1\n",
        "ply\nformat binary_big_endian 1.0\nelement vertex 1\nproperty float x\nend_header\nAAAA",
        "ply\nformat binary_little_endian 1.0\nelement vertex 1\nproperty float x\n",       /* no end */
        "ply\nformat binary_little_endian 1.0\nelement vertex 1\nproperty float x\nend_header", /* no \n */
        "ply\nformat binary_little_endian 1.0\nelement vertex 2\nproperty float x\nend_header\nAAAA", /* short */
        "ply\nformat binary_little_endian 1.0\nelement vertex 4294967295\nproperty float x\nend_header\nAAAA",
        "ply\nformat binary_little_endian 1.0\nelement vertex 99999999999\nproperty float x\nend_header\n",
        "ply\nformat binary_little_endian 1.0\nelement vertex -1\nproperty float x\nend_header\n",
        "ply\nformat binary_little_endian 1.0\nelement vertex\nproperty float x\nend_header\n",
        "ply\nformat binary_little_endian 1.0\nproperty float x\nelement vertex 1\nend_header\nAAAA",
        "ply\nformat binary_little_endian 1.0\nelement vertex 1\nproperty list uchar int x\nend_header\nAAAAA",
        "ply\nformat binary_little_endian 1.0\nelement vertex 1\nproperty quad x\nend_header\nAAAA",
        "ply\nformat binary_little_endian 1.0\nelement vertex 1\nproperty float\nend_header\nAAAA",
        "ply\nformat binary_little_endian 1.0\nelement vertex 1\nproperty double x\nend_header\nAAAAAAAA",
        "ply\nformat binary_little_endian 1.0\nelement vertex 1\nproperty float x\nproperty float x\nend_header\nAAAAAAAA",
        "ply\nelement vertex 1\nproperty float x\nend_header\nAAAA",
        "ply\nformat binary_little_endian 1.0\nbogus line\nelement vertex 1\nproperty float x\nend_header\nAAAA",
        "ply\nformat binary_little_endian 1.0\nelement vertex 1\nelement vertex 1\nproperty float x\nend_header\nAAAA",
        "ply\nformat binary_little_endian 1.0\nelement face 1000000\nproperty int a\nelement vertex 1\n"
        "property float x\nend_header\nAAAA",
    };
    char path[512];
    tpath(path, sizeof path, "bad.ply");
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        spit_str(path, bad[i]);
        uint32_t n = 3;
        float *got = (float *)1;
        cr_assert_eq(ply_read_property(path, "x", &n, &got), -1, "case %zu accepted", i);
        cr_assert_null(got);
    }
    /* a header line far too long, and a NUL in the header */
    char big[5000];
    memset(big, 'c', sizeof big);
    memcpy(big, "ply\ncomment ", 12);
    big[sizeof big - 1] = '\n';
    spit(path, big, sizeof big);
    uint32_t n;
    float *got;
    cr_assert_eq(ply_read_property(path, "x", &n, &got), -1);
    spit(path, "ply\n\0ormat binary_little_endian 1.0\n", 37);
    cr_assert_eq(ply_read_property(path, "x", &n, &got), -1);
    /* a missing file */
    tpath(path, sizeof path, "missing.ply");
    cr_assert_eq(ply_read_property(path, "x", &n, &got), -1);
}

Test(io, ply_reader_skips_other_elements)
{
    /* an element before "vertex", comments, other scalar types and CRLF */
    char path[512];
    tpath(path, sizeof path, "other.ply");
    const char *hdr = "ply\r\nformat binary_little_endian 1.0\r\ncomment hi\r\nelement cam 2\r\n"
                      "property double a\r\nproperty uchar b\r\nelement vertex 2\r\nproperty short s\r\n"
                      "property float x\r\nproperty int i\r\nend_header\r\n";
    unsigned char buf[512];
    size_t hl = strlen(hdr);
    memcpy(buf, hdr, hl);
    memset(buf + hl, 0xee, 18); /* 2 * (8 + 1) */
    unsigned char *p = buf + hl + 18;
    /* vertex 0: s=0x0102, x=1.5f (0x3fc00000), i=-2 */
    const unsigned char v0[] = {2, 1, 0, 0, 0xc0, 0x3f, 0xfe, 0xff, 0xff, 0xff};
    const unsigned char v1[] = {0, 0, 0, 0, 0x20, 0xc1, 7, 0, 0, 0}; /* x=-10 */
    memcpy(p, v0, 10);
    memcpy(p + 10, v1, 10);
    spit(path, buf, hl + 18 + 20);
    uint32_t n;
    float *got;
    cr_assert_eq(ply_read_property(path, "x", &n, &got), 0);
    cr_assert_eq(n, 2);
    cr_assert_eq(got[0], 1.5f);
    cr_assert_eq(got[1], -10.f);
    free(got);
    cr_assert_eq(ply_read_property(path, "i", &n, &got), 0);
    cr_assert_eq(got[0], -2.f);
    cr_assert_eq(got[1], 7.f);
    free(got);
    cr_assert_eq(ply_read_property(path, "s", &n, &got), -1); /* short: not supported */
}

/* ---- VTK ----------------------------------------------------------------- */

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static uint32_t fbits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

Test(io, vtk_layout_and_size)
{
    fill_particles();
    const uint32_t n = 37;
    char path[512];
    tpath(path, sizeof path, "frame.vtk");
    io_column cols[] = {{"rho", FLOE_F32, prho}, {"v", FLOE_VEC3, pv}, {"id", FLOE_I32, pid}, {"flag", FLOE_U32, pflag}};
    cr_assert_eq(io_write_vtk(path, n, px, cols, 4), 0);

    size_t len;
    unsigned char *b = slurp(path, &len);
    const char *h1 = "# vtk DataFile Version 3.0\nFloe particles\nBINARY\nDATASET POLYDATA\nPOINTS 37 float\n";
    const char *h2 = "VERTICES 37 74\n";
    const char *h3 = "POINT_DATA 37\n";
    const char *c1 = "SCALARS rho float 1\nLOOKUP_TABLE default\n";
    const char *c2 = "VECTORS v float\n";
    const char *c3 = "SCALARS id int 1\nLOOKUP_TABLE default\n";
    const char *c4 = "SCALARS flag int 1\nLOOKUP_TABLE default\n";
    size_t want = strlen(h1) + 12 * n + 1 + strlen(h2) + 8 * n + 1 + strlen(h3) + strlen(c1) + 4 * n + 1 +
                  strlen(c2) + 12 * n + 1 + strlen(c3) + 4 * n + 1 + strlen(c4) + 4 * n + 1;
    cr_assert_eq(len, want, "size %zu, expected %zu", len, want);

    size_t o = 0;
    cr_assert_eq(memcmp(b + o, h1, strlen(h1)), 0);
    o += strlen(h1);
    for (uint32_t i = 0; i < 3 * n; i++)
        cr_assert_eq(be32(b + o + 4 * i), fbits(px[i]), "point word %u", i);
    o += 12 * n;
    cr_assert_eq(b[o++], '\n');
    cr_assert_eq(memcmp(b + o, h2, strlen(h2)), 0);
    o += strlen(h2);
    for (uint32_t i = 0; i < n; i++) {
        cr_assert_eq(be32(b + o + 8 * i), 1u);
        cr_assert_eq(be32(b + o + 8 * i + 4), i);
    }
    o += 8 * n;
    cr_assert_eq(b[o++], '\n');
    cr_assert_eq(memcmp(b + o, h3, strlen(h3)), 0);
    o += strlen(h3);
    cr_assert_eq(memcmp(b + o, c1, strlen(c1)), 0);
    o += strlen(c1);
    for (uint32_t i = 0; i < n; i++)
        cr_assert_eq(be32(b + o + 4 * i), fbits(prho[i]));
    o += 4 * n;
    cr_assert_eq(b[o++], '\n');
    cr_assert_eq(memcmp(b + o, c2, strlen(c2)), 0);
    o += strlen(c2);
    for (uint32_t i = 0; i < 3 * n; i++)
        cr_assert_eq(be32(b + o + 4 * i), fbits(pv[i]));
    o += 12 * n;
    cr_assert_eq(b[o++], '\n');
    cr_assert_eq(memcmp(b + o, c3, strlen(c3)), 0);
    o += strlen(c3);
    for (uint32_t i = 0; i < n; i++)
        cr_assert_eq(be32(b + o + 4 * i), (uint32_t)pid[i]);
    o += 4 * n;
    cr_assert_eq(b[o++], '\n');
    cr_assert_eq(memcmp(b + o, c4, strlen(c4)), 0);
    o += strlen(c4);
    for (uint32_t i = 0; i < n; i++)
        cr_assert_eq(be32(b + o + 4 * i), pflag[i]);
    o += 4 * n;
    cr_assert_eq(b[o++], '\n');
    cr_assert_eq(o, len);
    free(b);

    char names[1024];
    list_dir(tmpdir, names, sizeof names);
    cr_assert_str_eq(names, "frame.vtk");

    /* no particles: points only (VTK's reader fails on "VERTICES 0 0") */
    tpath(path, sizeof path, "empty.vtk");
    io_column none[] = {{"rho", FLOE_F32, NULL}};
    cr_assert_eq(io_write_vtk(path, 0, NULL, none, 1), 0);
    b = slurp(path, &len);
    cr_assert_str_eq((char *)b, "# vtk DataFile Version 3.0\nFloe particles\nBINARY\nDATASET POLYDATA\nPOINTS 0 float\n");
    free(b);
}

Test(io, vtk_large_spans_chunks)
{
    /* more points than one write buffer holds */
    const uint32_t n = 70000;
    float *x = malloc(sizeof(float) * 3 * n);
    cr_assert_not_null(x);
    for (uint32_t i = 0; i < 3 * n; i++)
        x[i] = (float)i * 0.5f;
    char path[512];
    tpath(path, sizeof path, "big.vtk");
    cr_assert_eq(io_write_vtk(path, n, x, NULL, 0), 0);
    size_t len;
    unsigned char *b = slurp(path, &len);
    size_t h1 = strlen("# vtk DataFile Version 3.0\nFloe particles\nBINARY\nDATASET POLYDATA\nPOINTS 70000 float\n");
    size_t want = h1 + 12 * (size_t)n + 1 + strlen("VERTICES 70000 140000\n") + 8 * (size_t)n + 1 +
                  strlen("POINT_DATA 70000\n");
    cr_assert_eq(len, want);
    for (uint32_t i = 0; i < 3 * n; i += 997)
        cr_assert_eq(be32(b + h1 + 4 * (size_t)i), fbits(x[i]));
    size_t vo = h1 + 12 * (size_t)n + 1 + strlen("VERTICES 70000 140000\n");
    cr_assert_eq(be32(b + vo + 8 * (size_t)(n - 1) + 4), n - 1);
    free(b);
    free(x);
}

/* ---- atomic files -------------------------------------------------------- */

Test(io, atomic_commit_leaves_no_temp)
{
    fill_particles();
    char path[512];
    tpath(path, sizeof path, "a.ply");
    io_column cols[] = {{"rho", FLOE_F32, prho}};
    cr_assert_eq(io_write_ply(path, NP, px, cols, 1), 0);
    cr_assert_eq(io_write_ply(path, 10, px, cols, 1), 0); /* replace */
    tpath(path, sizeof path, "a.vtk");
    cr_assert_eq(io_write_vtk(path, NP, px, cols, 1), 0);
    char names[1024];
    list_dir(tmpdir, names, sizeof names);
    cr_assert_str_eq(names, "a.ply|a.vtk");
    uint32_t n;
    float *got;
    tpath(path, sizeof path, "a.ply");
    cr_assert_eq(ply_read_property(path, "rho", &n, &got), 0);
    cr_assert_eq(n, 10);
    free(got);

    /* by hand: the temp name while open, the final name after commit */
    io_atomic a;
    tpath(path, sizeof path, "t.txt");
    cr_assert_eq(io_atomic_open(&a, path), 0);
    char tmpname[512];
    snprintf(tmpname, sizeof tmpname, "%s/.t.txt.tmp.%ld", tmpdir, (long)getpid());
    cr_assert_str_eq(a.tmp, tmpname);
    cr_assert(exists(tmpname));
    cr_assert(!exists(path));
    fputs("hello\n", a.f);
    cr_assert_eq(io_atomic_commit(&a), 0);
    cr_assert(!exists(tmpname));
    size_t len;
    unsigned char *b = slurp(path, &len);
    cr_assert_str_eq((char *)b, "hello\n");
    free(b);
    cr_assert_eq(io_atomic_commit(&a), -1); /* already committed */
    io_atomic_abort(&a);                    /* harmless */
    cr_assert(exists(path));
}

Test(io, atomic_abort_keeps_old_file)
{
    char path[512];
    tpath(path, sizeof path, "keep.yaml");
    const char old[] = "old: content\n\0binary\xff";
    spit(path, old, sizeof old);
    io_atomic a;
    cr_assert_eq(io_atomic_open(&a, path), 0);
    for (int i = 0; i < 10000; i++)
        fputs("half-written junk\n", a.f);
    fflush(a.f);
    io_atomic_abort(&a);
    cr_assert_null(a.f);
    size_t len;
    unsigned char *b = slurp(path, &len);
    cr_assert_eq(len, sizeof old);
    cr_assert_eq(memcmp(b, old, sizeof old), 0);
    free(b);
    char names[1024];
    list_dir(tmpdir, names, sizeof names);
    cr_assert_str_eq(names, "keep.yaml");
}

Test(io, atomic_missing_directory)
{
    fill_particles();
    char path[512];
    tpath(path, sizeof path, "nope/frame.ply");
    io_column cols[] = {{"rho", FLOE_F32, prho}};
    cr_assert_eq(io_write_ply(path, NP, px, cols, 1), -1);
    cr_assert_eq(io_write_vtk(path, NP, px, cols, 1), -1);
    io_atomic a;
    cr_assert_eq(io_atomic_open(&a, path), -1);
    cr_assert_eq(errno, ENOENT);
    cr_assert_null(a.f);
    io_atomic_abort(&a); /* harmless after a failed open */
    floe_record r;
    memset(&r, 0, sizeof r);
    r.status = "running";
    tpath(path, sizeof path, "nope/record.yaml");
    cr_assert_eq(rec_write(path, &r), -1);
    char names[1024];
    list_dir(tmpdir, names, sizeof names);
    cr_assert_str_eq(names, "");
    /* a folder as the target: the rename fails, nothing is left behind */
    tpath(path, sizeof path, "adir");
    cr_assert_eq(mkdir(path, 0777), 0);
    cr_assert_eq(io_write_ply(path, NP, px, cols, 1), -1);
    list_dir(tmpdir, names, sizeof names);
    cr_assert_str_eq(names, "adir");
}

Test(io, mkdirs_nested)
{
    char path[512], p2[512];
    tpath(path, sizeof path, "a/b//c/d/");
    cr_assert_eq(io_mkdirs(path), 0);
    tpath(p2, sizeof p2, "a/b/c/d");
    struct stat st;
    cr_assert_eq(stat(p2, &st), 0);
    cr_assert(S_ISDIR(st.st_mode));
    cr_assert_eq(io_mkdirs(p2), 0); /* already there */
    cr_assert_eq(io_mkdirs(tmpdir), 0);
    tpath(path, sizeof path, "a/b/c/d/f.ply");
    float x[3] = {1, 2, 3};
    cr_assert_eq(io_write_ply(path, 1, x, NULL, 0), 0);
    tpath(p2, sizeof p2, "a/b/c/d/f.ply/sub");
    cr_assert_eq(io_mkdirs(p2), -1); /* a file in the way */
    cr_assert_eq(io_mkdirs(""), -1);
}

/* ---- run record ---------------------------------------------------------- */

static lua_State *new_lua(void)
{
    lua_State *L = luaL_newstate();
    cr_assert_not_null(L);
    return L;
}

/* t[key] on the table at the top, pushed; returns its Lua type. */
static int get(lua_State *L, const char *key)
{
    return lua_getfield(L, -1, key);
}

static double getnum(lua_State *L, const char *key)
{
    cr_assert_eq(get(L, key), LUA_TNUMBER, "%s is not a number", key);
    double v = lua_tonumber(L, -1);
    lua_pop(L, 1);
    return v;
}

static lua_Integer getint(lua_State *L, const char *key)
{
    cr_assert_eq(get(L, key), LUA_TNUMBER, "%s is not a number", key);
    cr_assert(lua_isinteger(L, -1), "%s is not an integer", key);
    lua_Integer v = lua_tointeger(L, -1);
    lua_pop(L, 1);
    return v;
}

static void checkstr(lua_State *L, const char *key, const char *want)
{
    cr_assert_eq(get(L, key), LUA_TSTRING, "%s is not a string", key);
    cr_assert_str_eq(lua_tostring(L, -1), want, "%s", key);
    lua_pop(L, 1);
}

static floe_record sample_record(rec_frame fr[2])
{
    floe_record r;
    memset(&r, 0, sizeof r);
    r.floe_version = "0.1.0";
    r.scene_path = "scenes/dam break.lua";
    r.scene_hash = "0123456789"; /* would read as a number if left plain */
    r.started = "2024-05-01T12:00:00Z";
    r.backend = "cpu";
    r.threads = 2;
    r.dim = 3;
    r.spacing = 0.025;
    r.support = 0.05;
    r.dt_fixed = 0;
    r.cfl = 0.4;
    r.fps = 30;
    r.nmodules = 1;
    r.modules[0] = (rec_module){"wcsph", "1.2.0", "/usr/lib/floe/wcsph.so"};
    r.nstages = 3;
    r.stages[0].name = "neighbours";
    r.stages[1].name = "wcsph.pressure";
    r.stages[1].nparams = 3;
    r.stages[1].param_name[0] = "stiffness";
    snprintf(r.stages[1].param_value[0], 64, "1000");
    r.stages[1].param_name[1] = "gamma";
    snprintf(r.stages[1].param_value[1], 64, "7");
    r.stages[1].param_name[2] = "mode";
    snprintf(r.stages[1].param_value[2], 64, "tait");
    r.stages[2].name = "neighbours"; /* twice in the pipeline */
    memset(fr, 0, 2 * sizeof *fr);
    for (int i = 0; i < 2; i++) {
        fr[i].st.frame = i + 1;
        fr[i].st.time = (i + 1) / 30.0;
        fr[i].st.steps = (uint64_t)(17 + i);
        fr[i].st.dt_min = 1e-4;
        fr[i].st.dt_max = 2.5e-3;
        fr[i].st.particles = 12345;
        fr[i].st.max_speed = 1.5 + i;
        fr[i].st.density_err_avg = 0.001;
        fr[i].st.density_err_max = 0.0125;
        fr[i].st.kinetic = 12.75;
        fr[i].st.potential = -3.5e6;
        fr[i].st.wall_s = 0.5;
        fr[i].stage_ms[0] = 1.25;
        fr[i].stage_ms[1] = 10.5 + i;
        fr[i].stage_ms[2] = 0.75;
        fr[i].nstats = 1;
        fr[i].stats[0] = (rec_stat){"iisph.iterations", 3.5, 7};
    }
    r.nframes = 2;
    r.frames = fr;
    r.status = "finished";
    r.message = NULL;
    return r;
}

Test(io, record_roundtrip)
{
    rec_frame fr[2];
    floe_record r = sample_record(fr);
    char path[512];
    tpath(path, sizeof path, "record.yaml");
    cr_assert_eq(rec_write(path, &r), 0);
    r.status = "interrupted"; /* rewrite in place */
    cr_assert_eq(rec_write(path, &r), 0);
    char names[1024];
    list_dir(tmpdir, names, sizeof names);
    cr_assert_str_eq(names, "record.yaml");

    lua_State *L = new_lua();
    char err[512];
    int rc = yaml_push_file(L, path, err, sizeof err);
    size_t len;
    unsigned char *text = slurp(path, &len);
    cr_assert_eq(rc, 0, "%s\n%s", err, text);
    cr_assert_eq(lua_gettop(L), 1);
    cr_assert_eq(lua_type(L, 1), LUA_TTABLE);

    cr_assert_eq(get(L, "floe"), LUA_TTABLE);
    checkstr(L, "version", "0.1.0");
    lua_pop(L, 1);
    cr_assert_eq(get(L, "scene"), LUA_TTABLE);
    checkstr(L, "path", "scenes/dam break.lua");
    checkstr(L, "hash", "0123456789");
    lua_pop(L, 1);
    checkstr(L, "started", "2024-05-01T12:00:00Z");
    checkstr(L, "backend", "cpu");
    cr_assert_eq(getint(L, "threads"), 2);
    cr_assert_eq(getint(L, "dim"), 3);
    cr_assert_eq(getnum(L, "spacing"), 0.025);
    cr_assert_eq(getnum(L, "support"), 0.05);
    cr_assert_eq(getint(L, "fps"), 30);
    cr_assert_eq(get(L, "time_step"), LUA_TTABLE);
    checkstr(L, "mode", "adaptive");
    cr_assert_eq(getnum(L, "cfl"), 0.4);
    lua_pop(L, 1);
    cr_assert_eq(get(L, "modules"), LUA_TTABLE);
    cr_assert_eq(lua_rawlen(L, -1), 1);
    lua_rawgeti(L, -1, 1);
    checkstr(L, "name", "wcsph");
    checkstr(L, "version", "1.2.0");
    checkstr(L, "path", "/usr/lib/floe/wcsph.so");
    lua_pop(L, 2);
    cr_assert_eq(get(L, "pipeline"), LUA_TTABLE);
    cr_assert_eq(lua_rawlen(L, -1), 3);
    lua_rawgeti(L, -1, 2);
    checkstr(L, "stage", "wcsph.pressure");
    cr_assert_eq(get(L, "params"), LUA_TTABLE);
    cr_assert_eq(getint(L, "stiffness"), 1000);
    cr_assert_eq(getint(L, "gamma"), 7);
    checkstr(L, "mode", "tait");
    lua_pop(L, 3);
    checkstr(L, "status", "interrupted");
    cr_assert_eq(get(L, "message"), LUA_TNIL);
    lua_pop(L, 1);

    cr_assert_eq(get(L, "frames"), LUA_TTABLE);
    cr_assert_eq(lua_rawlen(L, -1), 2);
    for (int i = 0; i < 2; i++) {
        lua_rawgeti(L, -1, i + 1);
        cr_assert_eq(lua_type(L, -1), LUA_TTABLE);
        cr_assert_eq(getint(L, "frame"), i + 1);
        cr_assert_eq(getint(L, "steps"), 17 + i);
        cr_assert_eq(getint(L, "particles"), 12345);
        cr_assert_float_eq(getnum(L, "time"), (i + 1) / 30.0, 1e-9);
        cr_assert_eq(getnum(L, "dt_min"), 1e-4);
        cr_assert_eq(getnum(L, "dt_max"), 2.5e-3);
        cr_assert_eq(getnum(L, "max_speed"), 1.5 + i);
        cr_assert_eq(getnum(L, "density_error_avg"), 0.001);
        cr_assert_eq(getnum(L, "density_error_max"), 0.0125);
        cr_assert_eq(getnum(L, "kinetic_energy"), 12.75);
        cr_assert_eq(getnum(L, "potential_energy"), -3.5e6);
        cr_assert_eq(getnum(L, "wall_s"), 0.5);
        cr_assert_eq(get(L, "stage_ms"), LUA_TTABLE);
        cr_assert_eq(getnum(L, "neighbours"), 1.25);
        cr_assert_eq(getnum(L, "wcsph.pressure"), 10.5 + i);
        cr_assert_eq(getnum(L, "neighbours#2"), 0.75);
        lua_pop(L, 1);
        cr_assert_eq(get(L, "stats"), LUA_TTABLE);
        cr_assert_eq(get(L, "iisph.iterations"), LUA_TTABLE);
        cr_assert_eq(getnum(L, "mean"), 3.5);
        cr_assert_eq(getint(L, "max"), 7);
        lua_pop(L, 3);
    }
    lua_pop(L, 2);
    cr_assert_eq(lua_gettop(L), 0);
    lua_close(L);

    /* the layout: a block mapping with one flow line per frame */
    cr_assert_not_null(strstr((char *)text, "\nstatus: interrupted\n"), "%s", text);
    cr_assert_not_null(strstr((char *)text, "\nframes:\n- {frame: 1, time: 0.0333333333, steps: 17, "), "%s", text);
    cr_assert_not_null(strstr((char *)text, "stats: {iisph.iterations: {mean: 3.5, max: 7}}}\n"), "%s", text);
    cr_assert_not_null(strstr((char *)text, "\nthreads: 2\n"));
    cr_assert_not_null(strstr((char *)text, "\"0123456789\""));
    free(text);
}

Test(io, record_nan_message_and_empty)
{
    rec_frame fr[2];
    floe_record r = sample_record(fr);
    fr[1].st.max_speed = NAN;
    fr[1].st.kinetic = INFINITY;
    fr[1].st.potential = -INFINITY;
    r.status = "blowup";
    r.message = "particle 12: x = nan\n  at step 3: \"bad\" # not a comment";
    r.scene_hash = "true";
    r.dt_fixed = 0.001;
    char path[512];
    tpath(path, sizeof path, "record.yaml");
    cr_assert_eq(rec_write(path, &r), 0);

    lua_State *L = new_lua();
    char err[512];
    cr_assert_eq(yaml_push_file(L, path, err, sizeof err), 0, "%s", err);
    checkstr(L, "status", "blowup");
    checkstr(L, "message", r.message);
    cr_assert_eq(get(L, "scene"), LUA_TTABLE);
    checkstr(L, "hash", "true");
    lua_pop(L, 1);
    cr_assert_eq(get(L, "time_step"), LUA_TTABLE);
    checkstr(L, "mode", "fixed");
    cr_assert_eq(getnum(L, "dt"), 0.001);
    lua_pop(L, 1);
    cr_assert_eq(get(L, "frames"), LUA_TTABLE);
    lua_rawgeti(L, -1, 2);
    cr_assert(isnan(getnum(L, "max_speed")));
    cr_assert_eq(getnum(L, "kinetic_energy"), INFINITY);
    cr_assert_eq(getnum(L, "potential_energy"), -INFINITY);
    lua_pop(L, 3);
    cr_assert_eq(lua_gettop(L), 0);

    /* nothing yet: an empty frames list, null strings */
    floe_record e;
    memset(&e, 0, sizeof e);
    e.status = "running";
    cr_assert_eq(rec_write(path, &e), 0);
    cr_assert_eq(yaml_push_file(L, path, err, sizeof err), 0, "%s", err);
    checkstr(L, "status", "running");
    cr_assert_eq(get(L, "frames"), LUA_TTABLE);
    cr_assert_eq(lua_rawlen(L, -1), 0);
    lua_pop(L, 1);
    cr_assert_eq(get(L, "modules"), LUA_TTABLE);
    cr_assert_eq(lua_rawlen(L, -1), 0);
    lua_pop(L, 1);
    cr_assert_eq(get(L, "scene"), LUA_TTABLE);
    cr_assert_eq(get(L, "path"), LUA_TNIL);
    lua_pop(L, 3);
    cr_assert_eq(lua_gettop(L), 0);
    lua_close(L);
}

/* ---- YAML presets -------------------------------------------------------- */

Test(io, yaml_preset_types)
{
    char path[512];
    tpath(path, sizeof path, "water.yaml");
    spit_str(path, "# a preset\n"
                   "water: {density: 1000, viscosity: 0.01, name: \"water\", tags: [a, b], on: yes}\n"
                   "other:\n"
                   "  big: 12345678901234\n"
                   "  neg: -2.5e-3\n"
                   "  quoted: '42'\n"
                   "  off: no\n"
                   "  t: True\n"
                   "  nothing: ~\n"
                   "  empty:\n"
                   "  text: hello world\n"
                   "  inf: .inf\n"
                   "  nan: nan\n"
                   "  version: 1.2.3\n"
                   "  hex: 0x10\n"
                   "  list:\n"
                   "    - 1\n"
                   "    - null\n"
                   "    - [x, {k: 2}]\n");
    lua_State *L = new_lua();
    lua_pushinteger(L, 99); /* something below: must stay */
    char err[512] = "unchanged";
    cr_assert_eq(yaml_push_file(L, path, err, sizeof err), 0, "%s", err);
    cr_assert_eq(lua_gettop(L), 2);
    cr_assert_eq(lua_type(L, -1), LUA_TTABLE);

    cr_assert_eq(get(L, "water"), LUA_TTABLE);
    cr_assert_eq(getint(L, "density"), 1000);
    cr_assert_eq(get(L, "viscosity"), LUA_TNUMBER);
    cr_assert(!lua_isinteger(L, -1));
    cr_assert_eq(lua_tonumber(L, -1), 0.01);
    lua_pop(L, 1);
    checkstr(L, "name", "water");
    cr_assert_eq(get(L, "on"), LUA_TBOOLEAN);
    cr_assert_eq(lua_toboolean(L, -1), 1);
    lua_pop(L, 1);
    cr_assert_eq(get(L, "tags"), LUA_TTABLE);
    cr_assert_eq(lua_rawlen(L, -1), 2);
    cr_assert_eq(lua_rawgeti(L, -1, 1), LUA_TSTRING);
    cr_assert_str_eq(lua_tostring(L, -1), "a");
    lua_pop(L, 1);
    cr_assert_eq(lua_rawgeti(L, -1, 2), LUA_TSTRING);
    cr_assert_str_eq(lua_tostring(L, -1), "b");
    lua_pop(L, 3);

    cr_assert_eq(get(L, "other"), LUA_TTABLE);
    cr_assert_eq(getint(L, "big"), 12345678901234LL);
    cr_assert_eq(getnum(L, "neg"), -2.5e-3);
    checkstr(L, "quoted", "42");
    cr_assert_eq(get(L, "off"), LUA_TBOOLEAN);
    cr_assert_eq(lua_toboolean(L, -1), 0);
    lua_pop(L, 1);
    cr_assert_eq(get(L, "t"), LUA_TBOOLEAN);
    cr_assert_eq(lua_toboolean(L, -1), 1);
    lua_pop(L, 1);
    cr_assert_eq(get(L, "nothing"), LUA_TNIL);
    lua_pop(L, 1);
    cr_assert_eq(get(L, "empty"), LUA_TNIL);
    lua_pop(L, 1);
    checkstr(L, "text", "hello world");
    cr_assert_eq(getnum(L, "inf"), INFINITY);
    checkstr(L, "nan", "nan");
    checkstr(L, "version", "1.2.3");
    checkstr(L, "hex", "0x10");
    cr_assert_eq(get(L, "list"), LUA_TTABLE);
    cr_assert_eq(lua_rawgeti(L, -1, 1), LUA_TNUMBER);
    cr_assert_eq(lua_tointeger(L, -1), 1);
    lua_pop(L, 1);
    cr_assert_eq(lua_rawgeti(L, -1, 2), LUA_TNIL);
    lua_pop(L, 1);
    cr_assert_eq(lua_rawgeti(L, -1, 3), LUA_TTABLE);
    cr_assert_eq(lua_rawgeti(L, -1, 1), LUA_TSTRING);
    cr_assert_str_eq(lua_tostring(L, -1), "x");
    lua_pop(L, 1);
    cr_assert_eq(lua_rawgeti(L, -1, 2), LUA_TTABLE);
    cr_assert_eq(getint(L, "k"), 2);
    lua_pop(L, 4);

    /* count keys of other: nothing/empty left out */
    int keys = 0;
    get(L, "other");
    lua_pushnil(L);
    while (lua_next(L, -2)) {
        keys++;
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
    cr_assert_eq(keys, 11);

    lua_pop(L, 1);
    cr_assert_eq(lua_gettop(L), 1);
    cr_assert_eq(lua_tointeger(L, 1), 99);
    lua_close(L);
}

/* Parse a file that must fail; the stack is checked to stay as it was. */
static void expect_error(const char *name, const char *text, const char *want_pos, const char *want_msg)
{
    char path[512];
    tpath(path, sizeof path, name);
    if (text)
        spit_str(path, text);
    lua_State *L = new_lua();
    lua_pushboolean(L, 1);
    char err[512] = "";
    cr_assert_eq(yaml_push_file(L, path, err, sizeof err), -1, "%s parsed", name);
    cr_assert_eq(lua_gettop(L), 1, "stack not balanced for %s", name);
    char want[600];
    snprintf(want, sizeof want, "%s%s", path, want_pos);
    cr_assert_eq(strncmp(err, want, strlen(want)), 0, "error \"%s\", expected prefix \"%s\"", err, want);
    if (want_msg)
        cr_assert_not_null(strstr(err, want_msg), "error \"%s\" lacks \"%s\"", err, want_msg);
    lua_close(L);
}

Test(io, yaml_malformed)
{
    expect_error("flow.yaml", "a: [1, 2\n", ":2:1: ", "did not find expected ',' or ']'");
    expect_error("flow2.yaml", "name: x\nlist: [1, 2\nother: {a: 1\n", ":3:6: ", "did not find expected ',' or ']'");
    expect_error("indent.yaml", "x: 1\na:\n  b: 1\n c: 2\n", ":4:2: ", "did not find expected key");
    expect_error("tab.yaml", "a:\n\tb: 1\n", ":2:1: ", NULL);
    expect_error("dup.yaml", "a: 1\nb:\n  c: 1\n  c: 2\n", ":4:3: ", "duplicate key 'c'");
    expect_error("dupnull.yaml", "a:\na: 1\n", ":2:1: ", "duplicate key 'a'");
    expect_error("alias.yaml", "a: &x 1\nb: *x\n", ":2:4: ", "aliases");
    expect_error("key.yaml", "? [1, 2]\n: v\n", ":1:3: ", "mapping keys must be scalars");
    expect_error("docs.yaml", "a: 1\n---\nb: 2\n", ":2:1: ", "more than one YAML document");
    expect_error("utf8.yaml", "a: 1\nb: x\xff\n", ":2:5: ", "invalid leading UTF-8 octet");
}

Test(io, yaml_depth_limit)
{
    char text[400];
    size_t k = 0;
    for (int i = 0; i < 100; i++)
        text[k++] = '[';
    for (int i = 0; i < 100; i++)
        text[k++] = ']';
    text[k++] = '\n';
    text[k] = '\0';
    expect_error("deep.yaml", text, ":1:65: ", "nesting deeper than 64");

    /* 64 levels are fine */
    k = 0;
    for (int i = 0; i < 64; i++)
        text[k++] = '[';
    text[k++] = '7';
    for (int i = 0; i < 64; i++)
        text[k++] = ']';
    text[k++] = '\n';
    text[k] = '\0';
    char path[512];
    tpath(path, sizeof path, "ok.yaml");
    spit_str(path, text);
    lua_State *L = new_lua();
    char err[512];
    cr_assert_eq(yaml_push_file(L, path, err, sizeof err), 0, "%s", err);
    for (int i = 0; i < 64; i++) {
        cr_assert_eq(lua_type(L, -1), LUA_TTABLE);
        lua_rawgeti(L, -1, 1);
    }
    cr_assert_eq(lua_tointeger(L, -1), 7);
    lua_close(L);
}

Test(io, yaml_missing_and_empty)
{
    char path[512];
    tpath(path, sizeof path, "missing.yaml");
    lua_State *L = new_lua();
    char err[512];
    cr_assert_eq(yaml_push_file(L, path, err, sizeof err), -1);
    cr_assert_eq(lua_gettop(L), 0);
    char want[600];
    snprintf(want, sizeof want, "%s: cannot open: %s", path, strerror(ENOENT));
    cr_assert_str_eq(err, want);

    tpath(path, sizeof path, "empty.yaml");
    spit_str(path, "# only a comment\n");
    cr_assert_eq(yaml_push_file(L, path, err, sizeof err), 0, "%s", err);
    cr_assert_eq(lua_gettop(L), 1);
    cr_assert(lua_isnil(L, 1));
    lua_pop(L, 1);

    tpath(path, sizeof path, "scalar.yaml");
    spit_str(path, "--- 2.5\n...\n");
    cr_assert_eq(yaml_push_file(L, path, err, sizeof err), 0, "%s", err);
    cr_assert_eq(lua_tonumber(L, -1), 2.5);
    lua_pop(L, 1);

    /* a tiny error buffer truncates and does not overflow */
    char small[8];
    tpath(path, sizeof path, "missing.yaml");
    cr_assert_eq(yaml_push_file(L, path, small, sizeof small), -1);
    cr_assert_eq(strlen(small), 7);
    lua_close(L);
}
