// MediaFarm: starting worker processes with resource limits. GPL-2.0-or-later.
#define _GNU_SOURCE
#include "mf_process.h"

#include <errno.h>
#include <poll.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static void mf_child_fail(int fd, int error) {
    ssize_t ignored = write(fd, &error, sizeof error);
    (void)ignored;
    _exit(127);
}

static void mf_set_limit(int resource, unsigned long long value) {
    if (value == 0) return;
    struct rlimit limit = { (rlim_t)value, (rlim_t)value };
    setrlimit(resource, &limit);
}

pid_t mf_spawn(const char *path, char *const argv[], char *const envp[],
               int stdin_fd, int stdout_fd, int stderr_fd,
               unsigned long long address_space_bytes, unsigned long long cpu_seconds,
               unsigned long long file_size_bytes) {
    int report[2];
    if (pipe2(report, O_CLOEXEC) != 0) return -errno;
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(report[0]);
        close(report[1]);
        return -e;
    }
    if (pid == 0) {
        // The child: async-signal-safe calls only.
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) _exit(127);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        struct sigaction dfl;
        memset(&dfl, 0, sizeof dfl);
        dfl.sa_handler = SIG_DFL;
        for (int s = 1; s < 32; s++) {
            if (s != SIGKILL && s != SIGSTOP) sigaction(s, &dfl, NULL);
        }
        if (dup2(stdin_fd, 0) < 0 || dup2(stdout_fd, 1) < 0 || dup2(stderr_fd, 2) < 0) mf_child_fail(report[1], errno);
        // Every other descriptor is closed, except the exec report pipe (close-on-exec).
        for (int fd = 3; fd < 1024; fd++) {
            if (fd != report[1]) close(fd);
        }
        mf_set_limit(RLIMIT_AS, address_space_bytes);
        mf_set_limit(RLIMIT_CPU, cpu_seconds);
        mf_set_limit(RLIMIT_FSIZE, file_size_bytes);
        execve(path, argv, envp);
        mf_child_fail(report[1], errno);
    }
    close(report[1]);
    int error = 0;
    ssize_t n;
    do {
        n = read(report[0], &error, sizeof error);
    } while (n < 0 && errno == EINTR);
    close(report[0]);
    if (n == (ssize_t)sizeof error) {
        int status;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
        return -error;
    }
    return pid;
}

pid_t mf_wait(pid_t pid, int *status) {
    pid_t r;
    do {
        r = waitpid(pid, status, 0);
    } while (r < 0 && errno == EINTR);
    return r < 0 ? -errno : r;
}

int mf_exited(int status) { return WIFEXITED(status); }
int mf_exit_status(int status) { return WEXITSTATUS(status); }
int mf_signaled(int status) { return WIFSIGNALED(status); }
int mf_term_signal(int status) { return WTERMSIG(status); }

int mf_pipe(int fds[2]) { return pipe2(fds, O_CLOEXEC) == 0 ? 0 : -errno; }

int mf_pidfd_open(pid_t pid) {
    long fd = syscall(SYS_pidfd_open, pid, 0);
    return fd < 0 ? -errno : (int)fd;
}

int mf_pidfd_signal(int pidfd, int sig) {
    return syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0) == 0 ? 0 : -errno;
}

int mf_pidfd_wait_exit(int pidfd, int timeout_ms) {
    struct pollfd p = { pidfd, POLLIN, 0 };
    int r;
    do {
        r = poll(&p, 1, timeout_ms);
    } while (r < 0 && errno == EINTR);
    if (r < 0) return -errno;
    return r > 0 ? 1 : 0;
}

int mf_wait_exit_nowait(pid_t pid, int block) {
    siginfo_t info;
    memset(&info, 0, sizeof info);
    int r;
    do {
        r = waitid(P_PID, (id_t)pid, &info, WEXITED | WNOWAIT | (block ? 0 : WNOHANG));
    } while (r < 0 && errno == EINTR);
    if (r < 0) return -errno;
    return info.si_pid == pid ? 1 : 0;
}

#include <malloc.h>

void mf_trim_heap(void) { malloc_trim(0); }
