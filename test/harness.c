/*
 * harness.c - run each registered TEST in a forked child with a timeout and
 * report TAP.  See harness.h for the contract.
 *
 * Child -> parent protocol: one message on a pipe, "F<text>" for a failure
 * or "S<text>" for a skip, then exit status 1 or 77.  A clean exit 0 with no
 * message is a pass.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

/* LeakSanitizer's on-demand check, present only in sanitizer builds */
extern int __lsan_do_recoverable_leak_check(void) __attribute__((weak));

#define MSG_MAX         2048
#define EXIT_FAIL       1
#define EXIT_SKIP       77
#define DEFAULT_TIMEOUT 120

static struct swp_test **tests;
static size_t ntests, cap;
static int msg_fd = -1;                 /* child: write end of the pipe */
static const char *current;

void swp_test_register(struct swp_test *t)
{
    if (ntests == cap) {
        cap = cap ? cap * 2 : 32;
        tests = realloc(tests, cap * sizeof(*tests));
        if (!tests) {
            perror("harness: realloc");
            exit(99);
        }
    }
    tests[ntests++] = t;
}

const char *swp_test_current(void) { return current; }

static void send_msg(char kind, const char *fmt, va_list ap)
{
    char buf[MSG_MAX];
    int n;

    buf[0] = kind;
    n = vsnprintf(buf + 1, sizeof(buf) - 1, fmt, ap);
    if (n < 0)
        n = 0;
    if (n > (int)sizeof(buf) - 2)
        n = (int)sizeof(buf) - 2;
    if (msg_fd >= 0) {
        /* one write of < PIPE_BUF bytes is atomic; ignore errors, we exit */
        ssize_t r = write(msg_fd, buf, (size_t)n + 1);
        (void)r;
    } else {
        fprintf(stderr, "%s\n", buf + 1);
    }
}

void swp_test_fail(const char *file, int line, const char *fmt, ...)
{
    char f[MSG_MAX];
    va_list ap;

    snprintf(f, sizeof(f), "%s:%d: %s", file, line, fmt);
    va_start(ap, fmt);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
    send_msg('F', f, ap);
#pragma GCC diagnostic pop
    va_end(ap);
    fflush(NULL);
    _exit(EXIT_FAIL);
}

void swp_test_skip(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    send_msg('S', fmt, ap);
    va_end(ap);
    fflush(NULL);
    _exit(EXIT_SKIP);
}

void swp_test_fail_eq(const char *file, int line, const char *ea, const char *eb,
                      long long a, long long b)
{
    swp_test_fail(file, line, "ASSERT_EQ(%s, %s) failed: %lld (0x%llx) != %lld (0x%llx)",
                  ea, eb, a, (unsigned long long)a, b, (unsigned long long)b);
}

void swp_test_check_mem(const char *file, int line, const char *ea, const char *eb,
                        const void *a, const void *b, size_t n)
{
    const unsigned char *pa = a, *pb = b;
    size_t i;

    if (n == 0 || memcmp(a, b, n) == 0)
        return;
    for (i = 0; i < n && pa[i] == pb[i]; i++)
        ;
    swp_test_fail(file, line,
                  "ASSERT_MEM_EQ(%s, %s, %zu) failed: first difference at offset %zu: "
                  "0x%02x != 0x%02x", ea, eb, n, i, pa[i], pb[i]);
}

void swp_test_fail_ok(const char *file, int line, const char *expr, long long rc)
{
    if (rc < 0 && rc > -4096)
        swp_test_fail(file, line, "ASSERT_OK(%s) failed: %lld (%s)", expr, rc,
                      strerror((int)-rc));
    swp_test_fail(file, line, "ASSERT_OK(%s) failed: %lld", expr, rc);
}

/* ---- runner ------------------------------------------------------------------ */

static int cmp_tests(const void *x, const void *y)
{
    const struct swp_test *a = *(struct swp_test *const *)x;
    const struct swp_test *b = *(struct swp_test *const *)y;
    int c = strcmp(a->file, b->file);

    return c ? c : a->line - b->line;
}

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* TAP descriptions end at the line; keep the message on one line. */
static void one_line(char *s)
{
    for (; *s; s++)
        if (*s == '\n' || *s == '\r')
            *s = ' ';
}

static void drain(int fd, char *buf, size_t *len)
{
    ssize_t r;

    while (*len < MSG_MAX - 1 &&
           (r = read(fd, buf + *len, MSG_MAX - 1 - *len)) > 0)
        *len += (size_t)r;
    buf[*len] = '\0';
}

enum result { RES_PASS, RES_FAIL, RES_SKIP };

/* Run one case; fills why[] with the TAP directive or failure text. */
static enum result run_one(const struct swp_test *t, const sigset_t *oldmask,
                           int timeout_s, char *why, size_t whylen)
{
    char msg[MSG_MAX];
    size_t mlen = 0;
    int pfd[2], status = 0;
    pid_t pid;
    double deadline;
    int timed_out = 0;

    if (pipe2(pfd, O_CLOEXEC) < 0) {
        snprintf(why, whylen, "harness: pipe: %s", strerror(errno));
        return RES_FAIL;
    }
    fflush(NULL);
    pid = fork();
    if (pid < 0) {
        snprintf(why, whylen, "harness: fork: %s", strerror(errno));
        close(pfd[0]);
        close(pfd[1]);
        return RES_FAIL;
    }
    if (pid == 0) {
        close(pfd[0]);
        /* keep the message pipe across exec-less forks only */
        msg_fd = pfd[1];
        setpgid(0, 0);
        sigprocmask(SIG_SETMASK, oldmask, NULL);
        signal(SIGCHLD, SIG_DFL);
        dup2(STDERR_FILENO, STDOUT_FILENO);    /* keep TAP clean */
        current = t->name;
        t->fn();
        fflush(NULL);
        /* SWP_TEST_LEAKS=1 under LeakSanitizer: a case that passed must
         * also have released what it created (_exit below skips the check
         * at exit).  contrib/ci-sanitizers.sh sets it for every program;
         * a plain `make check` in a sanitizer build leaves it off. */
        if (__lsan_do_recoverable_leak_check && getenv("SWP_TEST_LEAKS") &&
            __lsan_do_recoverable_leak_check())
            swp_test_fail(__FILE__, __LINE__, "LeakSanitizer: the case leaked (report above)");
        _exit(0);
    }
    setpgid(pid, pid);          /* both sides, no race with kill(-pid) */
    close(pfd[1]);
    fcntl(pfd[0], F_SETFL, O_NONBLOCK);

    /* Wait for the child with SIGCHLD blocked: sigtimedwait wakes on any
     * child exit; waitpid(WNOHANG) says whether it was ours. */
    deadline = now_s() + timeout_s;
    for (;;) {
        pid_t w = waitpid(pid, &status, WNOHANG);
        double left;
        struct timespec ts;

        if (w == pid)
            break;
        if (w < 0 && errno != EINTR) {
            snprintf(why, whylen, "harness: waitpid: %s", strerror(errno));
            close(pfd[0]);
            return RES_FAIL;
        }
        drain(pfd[0], msg, &mlen);
        left = deadline - now_s();
        if (left <= 0) {
            kill(-pid, SIGKILL);
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            timed_out = 1;
            break;
        }
        if (left > 0.5)
            left = 0.5;     /* also poll the pipe so it never fills */
        ts.tv_sec = (time_t)left;
        ts.tv_nsec = (long)((left - (double)ts.tv_sec) * 1e9);
        sigset_t chld;
        sigemptyset(&chld);
        sigaddset(&chld, SIGCHLD);
        sigtimedwait(&chld, NULL, &ts);
    }
    /* reap anything the case forked and left behind */
    kill(-pid, SIGKILL);
    drain(pfd[0], msg, &mlen);
    close(pfd[0]);
    one_line(msg);

    if (timed_out) {
        snprintf(why, whylen, "timed out after %d s%s%s", timeout_s,
                 mlen ? ": " : "", mlen ? msg + 1 : "");
        return RES_FAIL;
    }
    if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        snprintf(why, whylen, "killed by signal %d (SIG%s)%s%s", sig,
                 sigabbrev_np(sig) ? sigabbrev_np(sig) : "?",
                 mlen ? ": " : "", mlen ? msg + 1 : "");
        return RES_FAIL;
    }
    if (mlen && msg[0] == 'S' && WEXITSTATUS(status) == EXIT_SKIP) {
        snprintf(why, whylen, "%s", mlen > 1 ? msg + 1 : "no reason given");
        return RES_SKIP;
    }
    if (mlen && msg[0] == 'F') {
        snprintf(why, whylen, "%s", msg + 1);
        return RES_FAIL;
    }
    if (WEXITSTATUS(status) != 0) {
        snprintf(why, whylen, "exited with status %d", WEXITSTATUS(status));
        return RES_FAIL;
    }
    return RES_PASS;
}

int swp_test_main(int argc, char **argv)
{
    const char *filter = argc > 1 ? argv[1] : NULL;
    const char *env = getenv("SWP_TEST_TIMEOUT");
    int timeout_s = DEFAULT_TIMEOUT, failed = 0;
    size_t i, n = 0, k = 0;
    sigset_t chld, old;

    if (env && atoi(env) > 0)
        timeout_s = atoi(env);
    if (ntests)
        qsort(tests, ntests, sizeof(*tests), cmp_tests);
    for (i = 0; i < ntests; i++)
        if (!filter || strstr(tests[i]->name, filter))
            n++;

    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    sigprocmask(SIG_BLOCK, &chld, &old);
    setvbuf(stdout, NULL, _IOLBF, 0);

    printf("1..%zu\n", n);
    for (i = 0; i < ntests; i++) {
        const struct swp_test *t = tests[i];
        char why[MSG_MAX + 128];
        double t0;
        enum result r;

        if (filter && !strstr(t->name, filter))
            continue;
        k++;
        t0 = now_s();
        r = run_one(t, &old, timeout_s, why, sizeof(why));
        switch (r) {
        case RES_PASS:
            printf("ok %zu - %s\n", k, t->name);
            break;
        case RES_SKIP:
            printf("ok %zu - %s # SKIP %s\n", k, t->name, why);
            break;
        case RES_FAIL:
            failed++;
            printf("not ok %zu - %s # %s\n", k, t->name, why);
            break;
        }
        fprintf(stderr, "# %s: %.3f s\n", t->name, now_s() - t0);
    }
    sigprocmask(SIG_SETMASK, &old, NULL);
    return failed ? 1 : 0;
}
