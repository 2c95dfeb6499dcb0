/* peak_rss - runs a command and reports its peak resident memory.
 *
 *   peak_rss FILE COMMAND [ARGS...]
 *
 * Writes the command's largest resident set size in KiB (getrusage's
 * ru_maxrss of the child) to FILE and exits with the command's status
 * (128 + the signal when a signal ended it). For the tests that bound what
 * a run may use. */
#define _DEFAULT_SOURCE

#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: peak_rss FILE COMMAND [ARGS...]\n");
        return 2;
    }
    pid_t pid = fork();
    if (pid < 0) {
        perror("peak_rss: fork");
        return 2;
    }
    if (pid == 0) {
        execvp(argv[2], argv + 2);
        perror("peak_rss: exec");
        _exit(127);
    }
    int status;
    struct rusage usage;
    if (wait4(pid, &status, 0, &usage) < 0) {
        perror("peak_rss: wait4");
        return 2;
    }
    FILE *f = fopen(argv[1], "w");
    if (!f || fprintf(f, "%ld\n", usage.ru_maxrss) < 0 || fclose(f) != 0) {
        perror("peak_rss: writing the result");
        return 2;
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
