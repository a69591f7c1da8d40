/* libFuzzer entry point of one target (FUZZ_TARGET, targets.h). */
#include "targets.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    FUZZ_TARGET(data, size);
    return 0;
}
