/* Reading the CSV tables Floe writes (probes, compare and validate
 * reports) in tests: a header line of names, then rows of numbers. */
#ifndef FLOE_TEST_CSV_FIXTURE_H
#define FLOE_TEST_CSV_FIXTURE_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct csv_table {
    int ncols, nrows;
    char names[64][64];
    double *v;          /* nrows x ncols, row-major; nan where a cell is not a number */
    int ragged;         /* some row had another number of fields than the header */
} csv_table;

static inline int csv_split(char *line, char **f, int max)
{
    int n = 0;
    for (char *p = line; n < max;) {
        f[n++] = p;
        char *c = strchr(p, ',');
        if (!c)
            break;
        *c = '\0';
        p = c + 1;
    }
    return n;
}

/* Reads path; 0, or -1 when it cannot be opened or has no header. */
static inline int csv_read(const char *path, csv_table *t)
{
    memset(t, 0, sizeof *t);
    FILE *fp = fopen(path, "r");
    if (!fp)
        return -1;
    char line[65536];
    char *f[64];
    if (!fgets(line, sizeof line, fp)) {
        fclose(fp);
        return -1;
    }
    line[strcspn(line, "\r\n")] = '\0';
    t->ncols = csv_split(line, f, 64);
    for (int k = 0; k < t->ncols; k++)
        snprintf(t->names[k], sizeof t->names[k], "%s", f[k]);
    int cap = 64;
    t->v = malloc((size_t)cap * t->ncols * sizeof *t->v);
    while (fgets(line, sizeof line, fp)) {
        if (!strchr(line, '\n'))
            t->ragged = 1; /* a last line without its end */
        line[strcspn(line, "\r\n")] = '\0';
        int n = csv_split(line, f, 64);
        if (n != t->ncols) {
            t->ragged = 1;
            continue;
        }
        if (t->nrows == cap) {
            cap *= 2;
            t->v = realloc(t->v, (size_t)cap * t->ncols * sizeof *t->v);
        }
        for (int k = 0; k < n; k++) {
            char *end;
            double x = strtod(f[k], &end);
            t->v[(size_t)t->nrows * t->ncols + k] = end == f[k] ? NAN : x;
        }
        t->nrows++;
    }
    fclose(fp);
    return 0;
}

static inline int csv_col(const csv_table *t, const char *name)
{
    for (int k = 0; k < t->ncols; k++)
        if (!strcmp(t->names[k], name))
            return k;
    return -1;
}

static inline double csv_at(const csv_table *t, int row, int col) { return t->v[(size_t)row * t->ncols + col]; }

static inline void csv_free(csv_table *t)
{
    free(t->v);
    t->v = NULL;
}

#endif
