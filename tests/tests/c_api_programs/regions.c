/* Every C API call once, correctly; exits 1 on the first status that is not METRON_OK.
 * Expected summary: outer 3 > marker 3 > pushed 3; name_reused 2; thread "renamed"
 * counters q x3, marks tick x3. */
#include <metron/metron.h>

#include <stdio.h>
#include <string.h>

#define CHECK(call)                                                                      \
    do {                                                                                 \
        metron_status s_ = (call);                                                       \
        if (s_ != METRON_OK) {                                                           \
            fprintf(stderr, "%s -> %d (%s): %s\n", #call, (int)s_, metron_status_string(s_), \
                    metron_last_error());                                                \
            return 1;                                                                    \
        }                                                                                \
    } while (0)

int main(void) {
    int i;
    char buffer[32];
    metron_annotation notes[5];
    notes[0].key = "s"; notes[0].type = METRON_ANNOTATION_STRING; notes[0].reserved = 0;
    notes[0].value.string = "text";
    notes[1].key = "i"; notes[1].type = METRON_ANNOTATION_INT64; notes[1].reserved = 0;
    notes[1].value.int64 = -5;
    notes[2].key = "u"; notes[2].type = METRON_ANNOTATION_UINT64; notes[2].reserved = 0;
    notes[2].value.uint64 = 5;
    notes[3].key = "d"; notes[3].type = METRON_ANNOTATION_DOUBLE; notes[3].reserved = 0;
    notes[3].value.float64 = 2.5;
    notes[4].key = "p"; notes[4].type = METRON_ANNOTATION_POINTER; notes[4].reserved = 0;
    notes[4].value.pointer = &i;

    if (metron_abi_version() != METRON_ABI_VERSION) return 1;
    if (strcmp(metron_version(), METRON_VERSION_STRING) != 0) return 1;
    {
        metron_init_args args;
        memset(&args, 0, sizeof args);
        args.struct_size = sizeof args;
        CHECK(metron_init(&args));
    }
    CHECK(metron_set_thread_name("renamed"));
    for (i = 0; i < 3; i++) {
        CHECK(metron_region_begin("outer"));
        CHECK(metron_perf_marker_begin("marker", i == 0 ? NULL : "group"));
        CHECK(metron_push("pushed", notes, 5));
        CHECK(metron_annotate(&notes[0]));
        CHECK(metron_annotate_string("k1", "v"));
        CHECK(metron_annotate_int64("k2", -1));
        CHECK(metron_annotate_uint64("k3", 1));
        CHECK(metron_annotate_double("k4", 0.5));
        CHECK(metron_annotate_pointer("k5", NULL));
        CHECK(metron_counter("q", i));
        CHECK(metron_mark("tick"));
        CHECK(metron_pop());
        CHECK(metron_perf_marker_end());
        CHECK(metron_region_end("outer"));
    }
    /* The same name from two different buffers (the per-thread cache keys on the address). */
    for (i = 0; i < 2; i++) {
        strcpy(buffer, "name_reused");
        CHECK(metron_region_begin(buffer));
        strcpy(buffer, "something_else");
        strcpy(buffer, "name_reused");
        CHECK(metron_region_end(buffer));
    }
    /* Collection off: nothing recorded, still balanced and successful. */
    CHECK(metron_stop());
    CHECK(metron_region_begin("while_stopped"));
    CHECK(metron_region_end("while_stopped"));
    CHECK(metron_start());
    CHECK(metron_thread_stop());
    CHECK(metron_region_begin("while_thread_stopped"));
    CHECK(metron_region_end("while_thread_stopped"));
    CHECK(metron_thread_start());
    CHECK(metron_flush());
    CHECK(metron_finalize());
    CHECK(metron_finalize());
    /* After the end of the run: calls still succeed and record nothing. */
    CHECK(metron_region_begin("after_finalize"));
    CHECK(metron_region_end("after_finalize"));
    printf("ok\n");
    return 0;
}
