// MediaFarm: starting worker processes with resource limits. GPL-2.0-or-later.
#ifndef MF_PROCESS_H
#define MF_PROCESS_H

#include <sys/types.h>

/// Resource limits of a child; 0 leaves a limit as inherited.
typedef struct {
    unsigned long long address_space_bytes;
    unsigned long long cpu_seconds;
    unsigned long long file_size_bytes;
} mf_process_limits;

/// Starts `path` with `argv` and `envp` (NULL-terminated), its stdin, stdout and stderr on the given
/// descriptors. The child runs in its own process group, has default signal handling and an empty
/// signal mask, gets `limits`, and is killed (SIGKILL) when the calling thread ends: call it from a thread
/// that outlives the child. Between fork and exec the child makes only async-signal-safe calls.
/// Returns the pid, or -errno when the program could not be started (exec's errno is reported back).
pid_t mf_spawn(const char *path, char *const argv[], char *const envp[],
               int stdin_fd, int stdout_fd, int stderr_fd, const mf_process_limits *limits);

/// pipe2(fds, O_CLOEXEC). Returns 0 or -errno.
int mf_pipe(int fds[2]);

/// waitpid that retries on EINTR. Returns the pid or -errno; `status` gets the raw wait status.
pid_t mf_wait(pid_t pid, int *status);

/// Raw wait status decoding (the macros Swift cannot import).
int mf_exited(int status);
int mf_exit_status(int status);
int mf_signaled(int status);
int mf_term_signal(int status);

#endif
