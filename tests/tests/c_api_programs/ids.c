/* The id API: metron_region_id, metron_region_begin_id, metron_region_end_id, the
 * METRON_REGION_ID macros, misuse by id, and ids mixed with names. Exits 1 on an unexpected
 * status. Expected summary: outer 10 > inner 10 (by id), mixed 2 (by id + by name), kept 1
 * (ended by id after a refused end). Expected c_api errors: null_argument 1,
 * invalid_argument 3, mismatched_end 2, no_open_region 1. With "by-name" as its argument it
 * records the same regions by name, and makes no error. */
#include <metron/metron.h>

#include <stdio.h>
#include <string.h>

static int failures = 0;

static void expect(metron_status got, metron_status want, const char* what) {
    if (got != want) {
        fprintf(stderr, "%s: got %d (%s), want %d; last error: %s\n", what, (int)got,
                metron_status_string(got), (int)want, metron_last_error());
        failures++;
    }
}

static void by_name(void) {
    int i;
    for (i = 0; i < 10; i++) {
        expect(METRON_REGION_BEGIN("outer"), METRON_OK, "begin outer");
        expect(METRON_REGION_BEGIN("inner"), METRON_OK, "begin inner");
        expect(METRON_REGION_END("inner"), METRON_OK, "end inner");
        expect(METRON_REGION_END("outer"), METRON_OK, "end outer");
    }
    for (i = 0; i < 2; i++) {
        expect(metron_region_begin("mixed"), METRON_OK, "begin mixed");
        expect(metron_region_end("mixed"), METRON_OK, "end mixed");
    }
    expect(metron_region_begin("kept"), METRON_OK, "begin kept");
    expect(metron_region_end("kept"), METRON_OK, "end kept");
}

static void by_id(void) {
    int i;
    char buffer[16];
    metron_id outer = metron_region_id("outer");
    metron_id kept = metron_region_id("kept");
    metron_id mixed;
    if (outer == 0 || kept == 0 || outer == kept) {
        fprintf(stderr, "bad ids %u %u\n", (unsigned)outer, (unsigned)kept);
        failures++;
    }
    /* Equal names, equal ids, whatever the buffer. */
    strcpy(buffer, "outer");
    if (metron_region_id(buffer) != outer) {
        fprintf(stderr, "the id of a copy differs\n");
        failures++;
    }
    for (i = 0; i < 10; i++) {
        METRON_REGION_ID(inner, "inner");
        expect(METRON_REGION_BEGIN_ID(outer), METRON_OK, "begin_id outer");
        expect(METRON_REGION_BEGIN_ID(inner), METRON_OK, "begin_id inner");
        expect(METRON_REGION_END_ID(inner), METRON_OK, "end_id inner");
        expect(METRON_REGION_END_ID(outer), METRON_OK, "end_id outer");
    }
    /* Mixed: begun by id, ended by name, and the other way round. */
    mixed = metron_region_id("mixed");
    expect(metron_region_begin_id(mixed), METRON_OK, "begin_id mixed");
    expect(metron_region_end("mixed"), METRON_OK, "end mixed by name");
    expect(metron_region_begin("mixed"), METRON_OK, "begin mixed by name");
    expect(metron_region_end_id(mixed), METRON_OK, "end_id mixed");

    /* NULL name: 1 */
    if (metron_region_id(NULL) != 0) {
        fprintf(stderr, "metron_region_id(NULL) is not 0\n");
        failures++;
    }
    /* Not an id: 3 */
    expect(metron_region_begin_id(0), METRON_ERROR_INVALID_ARGUMENT, "begin_id(0)");
    expect(metron_region_end_id(0), METRON_ERROR_INVALID_ARGUMENT, "end_id(0)");
    expect(metron_region_begin_id(3000000000u), METRON_ERROR_INVALID_ARGUMENT, "begin_id(junk)");
    /* Mismatched ends: 2; end without begin: 1 */
    expect(metron_region_begin_id(kept), METRON_OK, "begin_id kept");
    expect(metron_region_end_id(outer), METRON_ERROR_MISMATCHED_END, "end_id(outer) in kept");
    printf("%s\n", metron_last_error());
    expect(metron_region_end("outer"), METRON_ERROR_MISMATCHED_END, "end(outer) in kept");
    printf("%s\n", metron_last_error());
    expect(metron_region_end_id(kept), METRON_OK, "end_id kept");
    expect(metron_region_end_id(kept), METRON_ERROR_NO_OPEN_REGION, "end_id kept again");
}

int main(int argc, char** argv) {
    if (argc > 1 && strcmp(argv[1], "by-name") == 0) {
        by_name();
    } else {
        by_id();
    }
    return failures == 0 ? 0 : 1;
}
