/* ODE's step on a host thread of the module's own (OpenCL path): started
 * at the end of rigid.step, joined by the body set's placer in the next
 * neighbours stage, so ODE works while the main thread launches the next
 * step's device work. One job at a time; the main thread touches no body
 * state and calls no ODE function between submit and join, so the results
 * are those of the same calls made in line (bit for bit). */
#include "rigid.h"

#include <pthread.h>
#include <stdlib.h>

struct rigid_thread {
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int job;                    /* 0 idle, 1 submitted, 2 done, -1 quit */
    int rc;
    int (*fn)(rigid_state *);
    rigid_state *s;
};

static void *loop(void *arg)
{
    rigid_thread *t = arg;
    dAllocateODEDataForThread(dAllocateMaskAll);
    pthread_mutex_lock(&t->mu);
    for (;;) {
        while (t->job != 1 && t->job != -1)
            pthread_cond_wait(&t->cv, &t->mu);
        if (t->job == -1)
            break;
        pthread_mutex_unlock(&t->mu);
        const int rc = t->fn(t->s);
        pthread_mutex_lock(&t->mu);
        t->rc = rc;
        t->job = 2;
        pthread_cond_broadcast(&t->cv);
    }
    pthread_mutex_unlock(&t->mu);
    dCleanupODEAllDataForThread();
    return NULL;
}

int rigid_thread_submit(rigid_state *s, int (*fn)(rigid_state *))
{
    rigid_thread *t = s->thread;
    if (!t) {
        if (!(t = calloc(1, sizeof *t)))
            return -1;
        pthread_mutex_init(&t->mu, NULL);
        pthread_cond_init(&t->cv, NULL);
        t->s = s;
        if (pthread_create(&t->th, NULL, loop, t)) {
            pthread_cond_destroy(&t->cv);
            pthread_mutex_destroy(&t->mu);
            free(t);
            return -1; /* the caller runs the job in line */
        }
        s->thread = t;
    }
    pthread_mutex_lock(&t->mu);
    t->fn = fn;
    t->job = 1;
    pthread_cond_broadcast(&t->cv);
    pthread_mutex_unlock(&t->mu);
    return 0;
}

int rigid_thread_join(rigid_state *s)
{
    rigid_thread *t = s->thread;
    if (!t)
        return FLOE_OK;
    pthread_mutex_lock(&t->mu);
    while (t->job == 1)
        pthread_cond_wait(&t->cv, &t->mu);
    const int rc = t->job == 2 ? t->rc : FLOE_OK;
    t->job = 0;
    pthread_mutex_unlock(&t->mu);
    return rc;
}

void rigid_thread_stop(rigid_state *s)
{
    rigid_thread *t = s->thread;
    if (!t)
        return;
    rigid_thread_join(s);
    pthread_mutex_lock(&t->mu);
    t->job = -1;
    pthread_cond_broadcast(&t->cv);
    pthread_mutex_unlock(&t->mu);
    pthread_join(t->th, NULL);
    pthread_cond_destroy(&t->cv);
    pthread_mutex_destroy(&t->mu);
    free(t);
    s->thread = NULL;
}
