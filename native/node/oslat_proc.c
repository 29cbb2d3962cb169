/* oslat tests of one process and its children: system calls, files, signals,
 * process creation. Every operation's result is checked. */
#include "oslat.h"

#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define FILE_BYTES 123

static int op_null(void *ctx, size_t n)
{
    long want = (long)(intptr_t)ctx, bad = 0;
    for (size_t i = 0; i < n; i++) /* the raw system call: libc may not cache it, the kernel is entered */
        bad |= syscall(SYS_getppid) != want;
    return (int)bad;
}

void oslat_null(oslat_env *e)
{
    oslat_measure(e, "null", "null syscall", op_null, (void *)(intptr_t)getppid(), 0, 1, NAN, 0, NULL);
}

typedef struct {
    char path[64];
} file_ctx;

static int make_file(file_ctx *f)
{
    snprintf(f->path, sizeof f->path, "/tmp/rmax-oslat-%d", (int)getpid());
    int fd = open(f->path, O_CREAT | O_TRUNC | O_WRONLY, 0600);
    if (fd < 0)
        return -1;
    char buf[FILE_BYTES] = {0};
    int ok = write(fd, buf, sizeof buf) == (ssize_t)sizeof buf;
    close(fd);
    return ok ? 0 : -1;
}

static int op_stat(void *ctx, size_t n)
{
    file_ctx *f = ctx;
    struct stat st;
    int bad = 0;
    for (size_t i = 0; i < n; i++)
        bad |= stat(f->path, &st) != 0 || st.st_size != FILE_BYTES;
    return bad;
}

static int op_open_close(void *ctx, size_t n)
{
    file_ctx *f = ctx;
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
        int fd = open(f->path, O_RDONLY);
        bad |= fd < 0 || close(fd) != 0;
    }
    return bad;
}

void oslat_stat(oslat_env *e)
{
    file_ctx f;
    if (make_file(&f) != 0) {
        e->r->failed = 1;
        return;
    }
    oslat_measure(e, "stat", "stat", op_stat, &f, 0, 1, NAN, 0, NULL);
    unlink(f.path);
}

void oslat_open_close(oslat_env *e)
{
    file_ctx f;
    if (make_file(&f) != 0) {
        e->r->failed = 1;
        return;
    }
    oslat_measure(e, "open-close", "open/close", op_open_close, &f, 0, 1, NAN, 0, NULL);
    unlink(f.path);
}

static volatile sig_atomic_t caught;

static void on_signal(int sig)
{
    (void)sig;
    caught++;
}

static int op_sig_install(void *ctx, size_t n)
{
    (void)ctx;
    struct sigaction sa = {0};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    int bad = 0;
    for (size_t i = 0; i < n; i++)
        bad |= sigaction(SIGUSR1, &sa, NULL) != 0;
    return bad;
}

static int op_sig_catch(void *ctx, size_t n)
{
    (void)ctx;
    caught = 0;
    pid_t self = getpid();
    for (size_t i = 0; i < n; i++)
        kill(self, SIGUSR1); /* delivered before kill returns: a signal to oneself is handled on the way out */
    return caught != (sig_atomic_t)n;
}

void oslat_sig_install(oslat_env *e)
{
    oslat_measure(e, "sig-install", "signal install", op_sig_install, NULL, 0, 1, NAN, 0, NULL);
}

void oslat_sig_catch(oslat_env *e)
{
    op_sig_install(NULL, 1);
    oslat_measure(e, "sig-catch", "signal catch", op_sig_catch, NULL, 0, 1, NAN, 0, NULL);
    signal(SIGUSR1, SIG_DFL);
}

static int op_fork(void *ctx, size_t n)
{
    int exec = ctx != NULL, bad = 0;
    fflush(NULL);
    for (size_t i = 0; i < n; i++) {
        pid_t pid = fork();
        if (pid == 0) {
            if (exec) {
                execl("/bin/true", "true", (char *)NULL);
                _exit(127);
            }
            _exit(7);
        }
        int status = 0;
        if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
            WEXITSTATUS(status) != (exec ? 0 : 7))
            bad = 1;
    }
    return bad;
}

void oslat_fork_exit(oslat_env *e)
{
    oslat_measure(e, "fork-exit", "fork+exit", op_fork, NULL, 0, 1, NAN, 0, NULL);
}

void oslat_fork_exec(oslat_env *e)
{
    static int exec_flag = 1;
    oslat_measure(e, "fork-exec", "fork+exec /bin/true", op_fork, &exec_flag, 0, 1, NAN, 0, NULL);
}
