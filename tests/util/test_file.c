/* test_file.c: whole-file reads (missing file, contents and length), atomic replacement (the mode,
 * no temporary left, writers at once), the running program's folder, and a file held as a lock. */
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "util/error.h"
#include "util/file.h"

static void file_write_atomic__then_read_all(void **state)
{
    char dir[] = "/tmp/castor-file-XXXXXX", path[128], tmp[160], *data = NULL;
    size_t len = 0;
    struct stat st;
    struct error e = {0};

    (void)state;
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/f", dir);
    assert_int_equal(file_read_all(path, &data, &len, &e), ERR_NOENT);
    assert_null(data);
    assert_int_equal(file_write_atomic(path, "one\ntwo", 7, 0600, &e), 0);
    assert_int_equal(file_write_atomic(path, "three", 5, 0600, &e), 0);
    assert_int_equal(file_read_all(path, &data, &len, &e), 0);
    assert_int_equal(len, 5);
    assert_string_equal(data, "three");
    free(data);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    snprintf(tmp, sizeof(tmp), "%s/f.tmp", dir);
    assert_int_not_equal(access(tmp, F_OK), 0);
    unlink(path);
    assert_int_equal(rmdir(dir), 0); /* (nothing else left in it) */
}

/* The entries of dir other than . and .. */
static int entries(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    int n = 0;

    assert_non_null(d);
    while ((de = readdir(d)))
        n += strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0;
    closedir(d);
    return n;
}

/* Four processes replacing one file at once, 300 times each, each with a content of its own (its
 * letter, 4000 times): none fails, every read finds one writer's content whole, and no temporary
 * file is left. (With one temporary name shared by all writers, a rename moved another's file,
 * half written, and the other's rename failed.) */
static void file_write_atomic__writers_at_once(void **state)
{
    enum { WRITERS = 4, ROUNDS = 300, SIZE = 4000 };
    char dir[] = "/tmp/castor-file-XXXXXX", path[128];
    pid_t pids[WRITERS];
    int reads = 0, alive = WRITERS;

    (void)state;
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/ckpt", dir);
    for (int w = 0; w < WRITERS; w++) {
        pids[w] = fork();
        assert_true(pids[w] >= 0);
        if (pids[w] == 0) {
            static char text[SIZE];
            int bad = 0;

            memset(text, 'a' + w, sizeof(text));
            for (int r = 0; r < ROUNDS; r++)
                bad += file_write_atomic(path, text, sizeof(text), 0600, NULL) < 0;
            _exit(bad ? 1 : 0);
        }
    }
    while (alive > 0) {
        char *data = NULL;
        size_t len = 0;
        int status;
        pid_t pid;

        if (file_read_all(path, &data, &len, NULL) == 0) {
            assert_int_equal(len, SIZE);
            for (size_t i = 1; i < len; i++)
                if (data[i] != data[0])
                    fail_msg("a read found two writers' bytes (%c at 0, %c at %zu)", data[0],
                             data[i], i);
            reads++;
        }
        free(data);
        while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
            if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
                fail_msg("a writer failed to replace the file (status %d)", status);
            alive--;
        }
    }
    assert_true(reads > 0);
    assert_int_equal(entries(dir), 1);
    unlink(path);
    assert_int_equal(rmdir(dir), 0);
}

/* The folder of this test program: where ctest runs it from (its path's folder), and a buffer too
 * small is refused without a write. */
static void file_exe_dir__the_programs_folder(void **state)
{
    char dir[4096], exe[4096], small[4] = "xyz", *slash;
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

    (void)state;
    assert_true(n > 0);
    exe[n] = '\0';
    slash = strrchr(exe, '/');
    assert_non_null(slash);
    *slash = '\0';
    assert_int_equal(file_exe_dir(dir, sizeof(dir)), 0);
    assert_string_equal(dir, exe);
    assert_int_equal(file_exe_dir(small, sizeof(small)), ERR_RANGE);
    assert_string_equal(small, "xyz");
}

/* A lock is held by one open file at a time (flock is per open file, so a second open in this
 * process is refused as another process would be), names its holder's pid to the refused, and
 * is free again once closed. */
static void file_lock__one_holder_at_a_time(void **state)
{
    char dir[] = "/tmp/castor-lock-XXXXXX", path[64];
    struct error e = {0};
    long holder = -1;
    int fd = -1, fd2 = -1;

    (void)state;
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/state.db.lock", dir);
    assert_int_equal(file_lock(path, &fd, NULL, &e), 0);
    assert_true(fd >= 0);
    assert_int_equal(file_lock(path, &fd2, &holder, &e), ERR_CONFLICT);
    assert_int_equal(fd2, -1);
    assert_int_equal(holder, (long)getpid());
    assert_non_null(strstr(e.msg, "held by another process"));
    assert_int_equal(close(fd), 0);
    assert_int_equal(file_lock(path, &fd2, &holder, &e), 0);
    assert_int_equal(close(fd2), 0);
    snprintf(path, sizeof(path), "%s/missing/x.lock", dir);
    assert_int_equal(file_lock(path, &fd2, NULL, &e), ERR_IO);
    snprintf(path, sizeof(path), "%s/state.db.lock", dir);
    assert_int_equal(unlink(path), 0);
    assert_int_equal(rmdir(dir), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(file_write_atomic__then_read_all),
        cmocka_unit_test(file_write_atomic__writers_at_once),
        cmocka_unit_test(file_exe_dir__the_programs_folder),
        cmocka_unit_test(file_lock__one_holder_at_a_time),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
