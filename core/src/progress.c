/* Progress display: a bar with ETA on a terminal, plain lines otherwise. */
#include "progress.h"

#include <stdio.h>
#include <unistd.h>

void progress_start(progress *p, int total, int enabled)
{
    p->total = total;
    p->enabled = enabled;
    p->tty = isatty(fileno(stderr));
    p->last_len = 0;
}

static void fmt_time(double s, char *buf, size_t len)
{
    if (s < 0 || s > 1e7)
        snprintf(buf, len, "--:--");
    else if (s >= 3600)
        snprintf(buf, len, "%d:%02d:%02d", (int)s / 3600, ((int)s / 60) % 60, (int)s % 60);
    else
        snprintf(buf, len, "%d:%02d", (int)s / 60, (int)s % 60);
}

void progress_update(progress *p, int frame, double sim_time, uint64_t steps, double wall_s)
{
    if (!p->enabled)
        return;
    double frac = p->total > 0 ? (double)frame / p->total : 1.0;
    char eta[32], el[32];
    fmt_time(frac > 0 ? wall_s * (1 - frac) / frac : -1, eta, sizeof eta);
    fmt_time(wall_s, el, sizeof el);
    if (p->tty) {
        char bar[31];
        int fill = (int)(frac * 30 + 0.5);
        for (int i = 0; i < 30; i++)
            bar[i] = i < fill ? '#' : '.';
        bar[30] = 0;
        fprintf(stderr, "\r[%s] %3d%% frame %d/%d t=%.3fs steps=%llu elapsed %s ETA %s ", bar, (int)(frac * 100),
                frame, p->total, sim_time, (unsigned long long)steps, el, eta);
        fflush(stderr);
    } else {
        fprintf(stderr, "frame %d/%d t=%.4f s steps=%llu elapsed %s eta %s\n", frame, p->total, sim_time,
                (unsigned long long)steps, el, eta);
    }
}

void progress_end(progress *p)
{
    if (p->enabled && p->tty)
        fputc('\n', stderr);
}
