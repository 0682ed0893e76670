// MediaFarm: renames that can never replace a file. GPL-2.0-or-later.
#define _GNU_SOURCE
#include "mf_files.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif

int mf_rename_noreplace(const char *from, const char *to) {
    if (syscall(SYS_renameat2, AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE) == 0) return 0;
    int error = errno;
    if (error != EINVAL && error != ENOSYS) return -error;
    // The file system has no RENAME_NOREPLACE: link (never replaces), then drop the old name.
    if (link(from, to) != 0) return -errno;
    if (unlink(from) != 0) {
        error = errno;
        unlink(to);
        return -error;
    }
    return 0;
}

int mf_rename_exchange(const char *a, const char *b) {
    if (syscall(SYS_renameat2, AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE) == 0) return 0;
    return -errno;
}
