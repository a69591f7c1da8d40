/* Large buffers (internal): 64-byte aligned memory that the kernel may back
 * with transparent huge pages.
 *
 * The search streams tens of megabytes a step (neighbour rows, cell tables,
 * a wall's slots). In 4 KiB pages that is thousands of pages, more than the
 * data TLB reaches, and every miss costs a page walk (a nested one in a
 * virtual machine). A buffer of at least FLOE_BIG_MIN bytes is therefore
 * aligned to 2 MiB and advised MADV_HUGEPAGE: with the system's THP mode
 * "madvise" (Debian's default) or "always" it gets 2 MiB pages; with
 * "never" the advice is ignored and nothing else changes. Free with free(). */
#ifndef FLOE_BIGMEM_H
#define FLOE_BIGMEM_H

#include <stddef.h>
#include <stdlib.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif

#define FLOE_BIG_PAGE ((size_t)2 << 20)
#define FLOE_BIG_MIN FLOE_BIG_PAGE

/* bytes rounded up to a multiple of 64 (at least 64), 64-byte aligned;
 * contents undefined; NULL without memory */
static inline void *floe_big_alloc(size_t bytes)
{
    if (bytes > ((size_t)-1) - FLOE_BIG_PAGE)
        return NULL;
    bytes = bytes ? (bytes + 63) / 64 * 64 : 64;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (bytes >= FLOE_BIG_MIN) {
        const size_t n = (bytes + FLOE_BIG_PAGE - 1) / FLOE_BIG_PAGE * FLOE_BIG_PAGE;
        void *p = aligned_alloc(FLOE_BIG_PAGE, n);
        if (p)
            (void)madvise(p, n, MADV_HUGEPAGE); /* advice only: failure changes nothing */
        return p;
    }
#endif
    return aligned_alloc(64, bytes);
}

#endif
