/* Progress display (internal). */
#ifndef FLOE_PROGRESS_H
#define FLOE_PROGRESS_H

#include <stdint.h>

typedef struct progress {
    int total, enabled, tty, last_len;
} progress;

void progress_start(progress *p, int total, int enabled);
void progress_update(progress *p, int frame, double sim_time, uint64_t steps, double wall_s);
void progress_end(progress *p);

#endif
