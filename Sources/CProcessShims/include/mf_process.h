// MediaFarm: starting worker processes with resource limits. GPL-2.0-or-later.
#ifndef MF_PROCESS_H
#define MF_PROCESS_H

#include <sys/types.h>

/// Starts `path` with `argv` and `envp` (NULL-terminated), its stdin, stdout and stderr on the given
/// descriptors. The child runs in its own process group, has default signal handling and an empty
/// signal mask, gets the resource limits (address space, CPU seconds, file size; 0 leaves a limit as
/// inherited), and is killed (SIGKILL) when the calling thread ends: call it from a thread that
/// outlives the child. Between fork and exec the child makes only async-signal-safe calls.
/// Returns the pid, or -errno when the program could not be started (exec's errno is reported back).
pid_t mf_spawn(const char *path, char *const argv[], char *const envp[],
               int stdin_fd, int stdout_fd, int stderr_fd,
               unsigned long long address_space_bytes, unsigned long long cpu_seconds,
               unsigned long long file_size_bytes);

/// A pidfd for `pid` (close-on-exec), or -errno. Take it before the child can be reaped: then it
/// names that process and no other, whatever pids are reused later.
int mf_pidfd_open(pid_t pid);

/// Sends `sig` through a pidfd. 0, or -errno (-ESRCH: the process is gone).
int mf_pidfd_signal(int pidfd, int sig);

/// Waits up to `timeout_ms` (-1: forever) for the process to exit, without reaping it.
/// 1 exited, 0 still running, -errno on error.
int mf_pidfd_wait_exit(int pidfd, int timeout_ms);

/// Without a pidfd: whether child `pid` has exited (blocking until it does when `block`), without
/// reaping it (waitid with WNOWAIT). 1 exited, 0 still running, -errno on error.
int mf_wait_exit_nowait(pid_t pid, int block);

/// For `coordinator`, `batch`, `run`, `scan`, `inspect` and `loudness`: the read end of a pipe that
/// SIGTERM and SIGINT have written their number to since before main ran (one byte a signal), or -1 for
/// other commands. Read it from a thread of its own (reads block).
int mf_stop_signals_fd(void);

/// The same pipe for a program whose handler was not installed before main: installs it now (once; call
/// it from one thread). Its read end, or -1 when no pipe could be made.
int mf_stop_signals_install(void);

/// pipe2(fds, O_CLOEXEC). Returns 0 or -errno.
int mf_pipe(int fds[2]);

/// waitpid that retries on EINTR. Returns the pid or -errno; `status` gets the raw wait status.
pid_t mf_wait(pid_t pid, int *status);

/// Raw wait status decoding (the macros Swift cannot import).
int mf_exited(int status);
int mf_exit_status(int status);
int mf_signaled(int status);
int mf_term_signal(int status);

/// Gives freed heap memory back to the system (malloc_trim), before a worker measures its resident size.
void mf_trim_heap(void);

#endif
