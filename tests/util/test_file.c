/* test_file.c: whole-file reads (missing file, contents and length), atomic replacement (the mode,
 * no temporary left), and the running program's folder. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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
    rmdir(dir);
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(file_write_atomic__then_read_all),
        cmocka_unit_test(file_exe_dir__the_programs_folder),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
