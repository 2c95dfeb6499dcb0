/* fuzz_reader - arbitrary bytes into the particle-file parser: it must
 * return a status (and on success a consistent, valid particle set), never
 * read outside the buffer (the input is copied into an allocation of exactly
 * its size, so AddressSanitizer sees any overread), never leak. */
#include "nsearch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size ? size : 1);
    if (!text)
        abort();
    if (size)
        memcpy(text, data, size);
    ns_particle_file file;
    ns_error err;
    ns_status s = ns_particle_file_parse(text, size, &file, &err);
    if (s == NS_OK) {
        ns_particles p = {file.n, file.pos, file.radius, 1.0f};
        if (file.columns != 0 && file.columns != 3 && file.columns != 4)
            abort();
        if ((file.columns == 4) != (file.radius != NULL) && file.n > 0)
            abort();
        if (ns_particles_validate(&p, &err) != NS_OK) /* parsed values are valid ones */
            abort();
        for (size_t k = 0; k < file.n; k++)
            if (ns_particle_file_line(text, size, k) == 0)
                abort();
        if (ns_particle_file_line(text, size, file.n) != 0)
            abort();
    } else if (s != NS_ERR_INVALID_INPUT && s != NS_ERR_OUT_OF_MEMORY && s != NS_ERR_TOO_LARGE) {
        abort();
    } else if (err.status != s || err.message[0] == '\0') {
        abort();
    }
    ns_particle_file_free(&file);
    free(text);
    return 0;
}
