/* atomic_file.c - see atomic_file.h. */
#define _DEFAULT_SOURCE /* mkstemp */

#include "atomic_file.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

bool atomic_temp_name(const char *target, char *temp, size_t size)
{
    const char *slash = strrchr(target, '/');
    const char *base = slash ? slash + 1 : target;
    int dir_len = slash ? (int)(slash - target + 1) : 0;
    int base_len = (int)strlen(base);
    if (base_len > 200)
        base_len = 200;
    int len = snprintf(temp, size, "%.*s.%.*s.tmp.XXXXXX", dir_len, target, base_len, base);
    return len >= 0 && (size_t)len < size;
}

FILE *atomic_file_open(atomic_file *a, const char *target)
{
    a->f = NULL;
    a->temp[0] = 0;
    if (strlen(target) >= sizeof a->target ||
        !atomic_temp_name(target, a->temp, sizeof a->temp)) {
        errno = ENAMETOOLONG;
        return NULL;
    }
    strcpy(a->target, target);
    int fd = mkstemp(a->temp);
    if (fd < 0) {
        a->temp[0] = 0;
        return NULL;
    }
    /* mkstemp makes it 0600; a new file gets what the umask allows */
    mode_t mask = umask(0);
    umask(mask);
    fchmod(fd, 0666 & ~mask);
    a->f = fdopen(fd, "wb");
    if (!a->f) {
        int saved = errno;
        close(fd);
        unlink(a->temp);
        a->temp[0] = 0;
        errno = saved;
    }
    return a->f;
}

bool atomic_file_commit(atomic_file *a)
{
    if (!a->temp[0])
        return false;
    bool ok = true;
    int saved = 0;
    if (a->f) {
        ok = !ferror(a->f);
        saved = ok ? 0 : EIO;
        if (fclose(a->f) != 0 && ok) {
            ok = false;
            saved = errno;
        }
        a->f = NULL;
    }
    if (ok && rename(a->temp, a->target) != 0) {
        ok = false;
        saved = errno;
    }
    if (!ok) {
        unlink(a->temp);
        errno = saved;
    }
    a->temp[0] = 0;
    return ok;
}

void atomic_file_discard(atomic_file *a)
{
    if (a->f)
        fclose(a->f);
    a->f = NULL;
    if (a->temp[0])
        unlink(a->temp);
    a->temp[0] = 0;
}
