// MediaFarm: SIGTERM and SIGINT caught from a long-running command's first instruction. GPL-2.0-or-later.
#define _GNU_SOURCE
#include "mf_process.h"
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

static int mf_stop_pipe[2] = {-1, -1};

static void mf_stop_handler(int sig) {
    int saved = errno;
    unsigned char byte = (unsigned char)sig;
    // Non-blocking: a full pipe already holds a request to stop.
    ssize_t ignored = write(mf_stop_pipe[1], &byte, 1);
    (void)ignored;
    errno = saved;
}

static void mf_stop_install(void) {
    if (pipe2(mf_stop_pipe, O_CLOEXEC | O_NONBLOCK) != 0) return;
    // The read end blocks: a thread of the program waits on it.
    int flags = fcntl(mf_stop_pipe[0], F_GETFL);
    if (flags >= 0) fcntl(mf_stop_pipe[0], F_SETFL, flags & ~O_NONBLOCK);
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = mf_stop_handler;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    sigaction(SIGTERM, &action, NULL);
    sigaction(SIGINT, &action, NULL);
}

// Runs as soon as the dynamic loader has mapped and relocated the program, before any library's
// initializer (the executable's .preinit_array; a constructor would run after every library's, some
// 50-100 ms into a debug build's life): for `coordinator` and `batch`, whose SIGTERM drains, and for the
// foreground commands that remove their temporary outputs when stopped (`run`, `scan`, `inspect`,
// `loudness`), a signal from then on is kept for the program's own handling instead of ending the
// process before that handler exists. glibc passes these functions the program's arguments.
// The `mediafarm` front blocks both signals before it execs this program (a signal sent meanwhile stays
// pending): they are unblocked here, after the handler is installed, so such a signal is handled as if it
// came now, and by the default action for the other commands.
static void mf_stop_signals_early(int argc, char **argv, char **envp) {
    (void)envp;
    static const char *const commands[] = {"coordinator", "batch", "run", "scan", "inspect", "loudness"};
    if (argc >= 2 && argv[1]) {
        for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
            if (strcmp(argv[1], commands[i]) == 0) { mf_stop_install(); break; }
        }
    }
    sigset_t stops;
    sigemptyset(&stops);
    sigaddset(&stops, SIGTERM);
    sigaddset(&stops, SIGINT);
    sigprocmask(SIG_UNBLOCK, &stops, NULL);
}

__attribute__((section(".preinit_array"), used)) static void (*const mf_stop_signals_preinit)(int, char **, char **) = mf_stop_signals_early;

int mf_stop_signals_fd(void) { return mf_stop_pipe[0]; }

int mf_stop_signals_install(void) {
    if (mf_stop_pipe[0] < 0) mf_stop_install();
    return mf_stop_pipe[0];
}
