/* The least a run with tmpfsctl's safety can cost, as root: the same system
 * calls `tmpfsctl run` makes (a cgroup for CMD, a guard process that kills
 * it if this process dies, a private tmpfs in a mount namespace, CMD cloned
 * into the cgroup with PR_SET_PDEATHSIG), from a static C program that does
 * nothing else: no argument parsing, no sampling, no summary.
 * Usage: safe-spawn CGROUP_BASE MOUNTPOINT CMD [ARG...] */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc < 4) return 2;
    char cg[512], path[600];
    snprintf(cg, sizeof cg, "%s/bench-safe-spawn-%d", argv[1], (int)getpid());
    if (mkdir(cg, 0755) != 0) { perror(cg); return 2; }
    int cgfd = open(cg, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    snprintf(path, sizeof path, "%s/cgroup.kill", cg);
    int killfd = open(path, O_WRONLY | O_CLOEXEC);
    int tell[2];
    if (cgfd < 0 || killfd < 0 || pipe2(tell, O_CLOEXEC) != 0) { perror("cgroup"); rmdir(cg); return 2; }
    pid_t guard = fork();
    if (guard == 0) {
        char b;
        close(tell[1]);
        if (read(tell[0], &b, 1) != 1) (void)!write(killfd, "1", 1);
        _exit(0);
    }
    close(tell[0]);
    if (unshare(CLONE_NEWNS) != 0 || mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) != 0 ||
        mount("safe-spawn", argv[2], "tmpfs", MS_NOSUID | MS_NODEV, "size=64m") != 0) {
        perror("mount");
        return 2;
    }
    setenv("TMPDIR", argv[2], 1);
    struct clone_args ca = {0};
    ca.flags = CLONE_VFORK | CLONE_INTO_CGROUP;
    ca.exit_signal = SIGCHLD;
    ca.cgroup = (unsigned)cgfd;
    pid_t c = (pid_t)syscall(SYS_clone3, &ca, sizeof ca);
    if (c == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        execvp(argv[3], argv + 3);
        _exit(127);
    }
    int st = 0;
    if (c > 0) waitpid(c, &st, 0);
    umount2(argv[2], 0);
    (void)!write(tell[1], "x", 1);
    close(tell[1]);
    waitpid(guard, NULL, 0);
    /* The cgroup empties as CMD is reaped; the kernel may need a moment. */
    for (int i = 0; i < 1000 && rmdir(cg) != 0; i++) sched_yield();
    return c > 0 && WIFEXITED(st) ? WEXITSTATUS(st) : 2;
}
