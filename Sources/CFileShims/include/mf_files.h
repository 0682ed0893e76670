// MediaFarm: renames that can never replace a file. GPL-2.0-or-later.
#ifndef MF_FILES_H
#define MF_FILES_H

/// Renames `from` to `to` only if nothing is at `to`: renameat2(RENAME_NOREPLACE), atomic. Where the file
/// system does not support that flag (EINVAL, ENOSYS), a hard link to `to` (which fails when `to` exists)
/// followed by unlinking `from`. 0, or -errno (-EEXIST: `to` exists and was left untouched).
int mf_rename_noreplace(const char *from, const char *to);

/// Swaps `a` and `b` in one step (renameat2(RENAME_EXCHANGE)): both must exist; neither is ever missing
/// to a reader. 0, or -errno (-EINVAL where the file system cannot).
int mf_rename_exchange(const char *a, const char *b);

#endif
