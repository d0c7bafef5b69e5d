/*
 * metron.h: the C API of Metron, an instrumentation SDK (regions, perf markers, marks,
 * counters, annotations) that writes a run folder (summary.txt, summary.json, metadata.json).
 *
 * Link with libmetron.so (CMake: find_package(metron) + metron::metron, or pkg-config metron)
 * or libmetron.a (metron::metron-static, pkg-config --static metron).
 *
 * Rules of the ABI (METRON_ABI_VERSION):
 *  - Every function returns a metron_status (0 is success) or a plain value; none aborts,
 *    unwinds or exits. A NULL name, an end without a begin, or an end that does not match the
 *    innermost open region returns an error code, does nothing else, and is counted in the run's
 *    metadata.json ("c_api" section). Other threads' data is never affected.
 *  - Enum values are explicit and never reused; extensible structs start with struct_size.
 *  - Names are NUL-terminated UTF-8 (other bytes are replaced). They are copied on first use:
 *    the caller keeps ownership and may free or reuse the buffer after the call.
 *  - Metron starts lazily on the first call; metron_init() is optional. It finishes at normal
 *    exit (or metron_finalize()).
 *  - With METRON_DISABLE defined before including this header, the METRON_* macros compile to
 *    nothing (arguments are not evaluated); the functions stay declared.
 *
 * This header is hand-written; tests/tests/c_api_header.rs checks that it declares exactly the
 * functions libmetron.so exports and that the constants match the library's.
 */
#ifndef METRON_METRON_H
#define METRON_METRON_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Version of this C ABI. Bumped only for incompatible changes; compare with metron_abi_version(). */
#define METRON_ABI_VERSION 1
#define METRON_VERSION_MAJOR 0
#define METRON_VERSION_MINOR 1
#define METRON_VERSION_PATCH 0
#define METRON_VERSION_STRING "0.1.0"

/* An interned region name (metron_region_id). 0 is never a valid id. */
typedef uint32_t metron_id;

/* Status of a call. 0 is success; every other value names what was wrong. */
typedef int32_t metron_status;
enum {
    /* The call did what it says (or nothing, when collection is off: still success). */
    METRON_OK = 0,
    /* A required pointer (a name, a key, an annotation array with count > 0) was NULL. */
    METRON_ERROR_NULL_ARGUMENT = 1,
    /* An argument was out of range: struct_size too small, an unknown annotation type. */
    METRON_ERROR_INVALID_ARGUMENT = 2,
    /* An end/pop with no region open on this thread (end without begin). */
    METRON_ERROR_NO_OPEN_REGION = 3,
    /* The end does not match the innermost open region of this thread (another name, or a
     * region/perf marker/push of another kind). Nothing was ended. */
    METRON_ERROR_MISMATCHED_END = 4,
    /* metron_init(): Metron is turned off (METRON_ENABLED=0, or a forked child with
     * METRON_FORK=disable). Every other call then succeeds and records nothing. */
    METRON_ERROR_DISABLED = 5,
    /* metron_init() with options after Metron already started (an earlier call started it
     * lazily); the options were not applied. */
    METRON_ERROR_ALREADY_STARTED = 6,
    /* A Metron call from a signal handler interrupted another Metron call on the same thread;
     * nothing was recorded. */
    METRON_ERROR_REENTRANT = 7,
    /* A bug inside Metron was caught at the boundary; the call did nothing. */
    METRON_ERROR_INTERNAL = 8,
    /* A begin with 256 regions already open on this thread; nothing was begun. */
    METRON_ERROR_TOO_DEEP = 9
};

/* Flags of metron_init_args.flags. */
enum {
    /* Start with collection off; metron_start() turns it on. */
    METRON_INIT_START_STOPPED = 1
};

/* Options of metron_init(). Zero-initialise, then set struct_size = sizeof(metron_init_args):
 * older callers pass a smaller size and the fields they lack keep their defaults. */
typedef struct metron_init_args {
    uint32_t struct_size;    /* sizeof(metron_init_args) */
    uint32_t flags;          /* METRON_INIT_* bits */
    const char* output_path; /* NULL: $METRON_OUTPUT_PATH or the default run folder template */
} metron_init_args;

/* Type of an annotation value. */
typedef uint32_t metron_annotation_type;
enum {
    METRON_ANNOTATION_STRING = 1,  /* value.string: NUL-terminated, cut to 240 bytes */
    METRON_ANNOTATION_INT64 = 2,   /* value.int64 */
    METRON_ANNOTATION_UINT64 = 3,  /* value.uint64 */
    METRON_ANNOTATION_DOUBLE = 4,  /* value.float64 */
    METRON_ANNOTATION_POINTER = 5  /* value.pointer, shown as 0x... */
};

/* A key/value annotation of a region. */
typedef struct metron_annotation {
    const char* key;             /* never NULL */
    metron_annotation_type type; /* METRON_ANNOTATION_* */
    uint32_t reserved;           /* 0 */
    union {
        const char* string;
        int64_t int64;
        uint64_t uint64;
        double float64;
        const void* pointer;
    } value;
} metron_annotation;

/* ---- version and errors --------------------------------------------------------------- */

/* The ABI version of the loaded library (METRON_ABI_VERSION it was built with). */
uint32_t metron_abi_version(void);
/* The library's version, e.g. "0.1.0" (static storage). */
const char* metron_version(void);
/* A one-line description of a status (static storage; unknown values get a generic text). */
const char* metron_status_string(metron_status status);
/* The detailed message of this thread's last failed call, or "" (valid until this thread's
 * next Metron call). */
const char* metron_last_error(void);

/* ---- process ---------------------------------------------------------------------------- */

/* Starts Metron now instead of on the first call. args may be NULL. */
metron_status metron_init(const metron_init_args* args);
/* Ends the run: drains every thread's buffer and writes the run folder. Later calls record
 * nothing. Idempotent; also runs at normal exit. */
metron_status metron_finalize(void);
/* Delivers everything recorded so far to the outputs' in-memory state. */
metron_status metron_flush(void);
/* Turns recording on / off for the whole process (regions already open still end). */
metron_status metron_start(void);
metron_status metron_stop(void);
/* Turns recording on / off for the calling thread only. */
metron_status metron_thread_start(void);
metron_status metron_thread_stop(void);
/* Names the calling thread (the kernel keeps 15 bytes; the outputs keep the full name). */
metron_status metron_set_thread_name(const char* name);

/* ---- regions ---------------------------------------------------------------------------- */

/* Begins region `name` on this thread. Regions nest. */
metron_status metron_region_begin(const char* name);
/* Ends region `name`, which must be the innermost region open on this thread. */
metron_status metron_region_end(const char* name);

/* The fast path: intern a name once, then begin and end by id (no name to check; an end is
 * one integer compare against the innermost open region). Ids and names mix: a region begun by
 * id may be ended by name and the other way round.
 *   static metron_id solve_id;                        (or METRON_REGION_ID(solve_id, "solve"))
 *   if (!solve_id) solve_id = metron_region_id("solve");
 *   metron_region_begin_id(solve_id); ... metron_region_end_id(solve_id);
 * metron_region_id() returns the region's id (the same for equal names, valid in every thread
 * for the whole process), or 0 when name is NULL (an error, counted). It takes a lock: call it
 * once per name, not per region. */
metron_id metron_region_id(const char* name);
/* Begins region `id`. An id that is 0 or not from metron_region_id() returns
 * METRON_ERROR_INVALID_ARGUMENT and begins nothing. */
metron_status metron_region_begin_id(metron_id id);
/* Ends region `id`, which must be the innermost region open on this thread
 * (METRON_ERROR_NO_OPEN_REGION / METRON_ERROR_MISMATCHED_END / METRON_ERROR_INVALID_ARGUMENT
 * otherwise, and nothing is ended). */
metron_status metron_region_end_id(metron_id id);

/* Begins a perf marker (clBeginPerfMarker model): a region named `name`, annotated with
 * group=`group` (group may be NULL). */
metron_status metron_perf_marker_begin(const char* name, const char* group);
/* Ends the most recently begun perf marker, which must be the innermost open region. */
metron_status metron_perf_marker_end(void);

/* Begins region `name` and annotates it with `count` annotations (annotations may be NULL
 * when count is 0). */
metron_status metron_push(const char* name, const metron_annotation* annotations, size_t count);
/* Ends the innermost region begun with metron_push(). */
metron_status metron_pop(void);

/* Annotates the innermost open region of this thread. */
metron_status metron_annotate(const metron_annotation* annotation);
metron_status metron_annotate_string(const char* key, const char* value);
metron_status metron_annotate_int64(const char* key, int64_t value);
metron_status metron_annotate_uint64(const char* key, uint64_t value);
metron_status metron_annotate_double(const char* key, double value);
metron_status metron_annotate_pointer(const char* key, const void* value);

/* ---- instants and counters -------------------------------------------------------------- */

/* Records an instant mark. */
metron_status metron_mark(const char* name);
/* Records a value of counter `name`. */
metron_status metron_counter(const char* name, double value);

/* ---- causal profiling: progress points (`metron causal`, see the Causal profiling chapter) */

/* A progress counter: the layout of Coz's coz_counter_t, so coz.h programs count into the same
 * counters. Increment `count` atomically (METRON_PROGRESS does). */
typedef struct metron_progress_counter_t {
    size_t count;   /* visits */
    size_t backoff; /* unused (Coz's layout) */
} metron_progress_counter_t;
#define METRON_PROGRESS_THROUGHPUT 1
#define METRON_PROGRESS_BEGIN_KIND 2
#define METRON_PROGRESS_END_KIND 3
/* The counter of progress point `name` of `kind` (made on first use; valid until the process
 * ends); NULL for a NULL name or an unknown kind. */
metron_progress_counter_t* metron_progress_counter(int kind, const char* name);
/* One visit of throughput point `name` (by name: a lookup under a lock; in a loop use
 * METRON_PROGRESS, which caches the counter). */
metron_status metron_progress(const char* name);
/* The start and the end of one transaction of latency point `name`. */
metron_status metron_progress_begin(const char* name);
metron_status metron_progress_end(const char* name);

/* ---- what can be measured: counters, metrics, traces -------------------------------------- */

/* What a metron_info describes. */
typedef uint32_t metron_info_kind;
#define METRON_INFO_COUNTER 1u /* a counter the device counts (a perf event on the CPU) */
#define METRON_INFO_METRIC 2u  /* a metric derived from counters by an expression */
#define METRON_INFO_TRACE 3u   /* a kind of trace record Metron collects */

/* One counter, metric or trace. Strings are valid only during the callback. */
typedef struct metron_info {
    uint32_t struct_size;        /* sizeof(metron_info) of the library; fields grow at the end */
    metron_info_kind kind;       /* METRON_INFO_* */
    const char* device;          /* "cpu" */
    const char* name;            /* as METRON_PERF_EVENTS / METRON_METRICS accept it */
    const char* description;     /* one line */
    const char* detail;          /* counter group, metric unit, or the setting of a trace */
    const char* expression;      /* metrics: the formula; "" otherwise */
    int32_t available;           /* 1 when this machine offers it now */
    const char* reason;          /* why not, when available is 0; "" otherwise */
} metron_info;

/* Called once per item; return 0 to go on, anything else to stop. */
typedef int (*metron_info_callback)(const metron_info* info, void* user_data);

/* Calls `callback` for every item of `kind` on `device` ("cpu"; NULL means "cpu").
 * METRON_ERROR_INVALID_ARGUMENT for an unknown device or kind (metron_last_error() lists the
 * devices), METRON_ERROR_NULL_ARGUMENT for a NULL callback. */
metron_status metron_info_iterate(const char* device, metron_info_kind kind, metron_info_callback callback, void* user_data);

/* ---- the inline fast path (begin/end by id, without a call into the library) ---------- */

/* Version of metron_fast_thread's layout and of the records the inline path writes. The
 * library refuses a header with another version or size (the inline path then always calls
 * the library), so a header and a library of different versions stay correct. */
#define METRON_FAST_ABI 2
/* Ids below this have a byte in the map *ids points at (the library asserts the same size:
 * FAST_REGION_IDS in user-api/src/thread_state.rs). */
#define METRON_FAST_REGION_IDS 65536u
/* An open region's word: the id, whether its begin was recorded, begun by id. */
#define METRON_FAST_OPEN_BY_ID ((uint64_t)3 << 40)
/* Record header words of a region's begin and end (id in the low 32 bits). */
#define METRON_FAST_BEGIN_RECORD ((uint64_t)1 << 32)
#define METRON_FAST_END_RECORD ((uint64_t)2 << 32)

/* A thread's producer: where its records go. `end` points at the current segment's published
 * end (the write cursor, an address); `limit` is where the library must be called instead. */
typedef struct metron_fast_cursor {
    size_t* end;
    void* limit;
} metron_fast_cursor;

/* The library's per-thread state that the inline begin/end read and write (see
 * docs/src/c-fast-path.md). Internal: use the macros. */
typedef struct metron_fast_thread {
    uint32_t struct_size;              /* sizeof(metron_fast_thread) of the library */
    uint32_t abi;                      /* METRON_FAST_ABI of the library */
    size_t open_limit;                 /* inline begins run while depth < open_limit */
    size_t depth;                      /* regions open on this thread */
    const metron_fast_cursor* cursor;  /* this thread's producer */
    /* the run's gate: *ids has a byte per id below METRON_FAST_REGION_IDS, 1 for a region the
     * inline begin may record; it points at zeros while the run does not record */
    const uint8_t* const volatile* ids;
    uint64_t open[1 + 256];            /* open[0] is always 0; open[1..depth] the open regions */
} metron_fast_thread;

/* The calling thread's state for the inline path (never NULL); abi and size are the caller's
 * METRON_FAST_ABI and sizeof(metron_fast_thread). Called once per thread by the inline path. */
metron_fast_thread* metron_fast_thread_get(uint32_t abi, uint32_t size);
/* Byte offset of field number `field` (in declaration order) of the library's
 * metron_fast_thread, its size after the last field, UINT32_MAX beyond (for tests). */
uint32_t metron_fast_layout(uint32_t field);

#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__) && defined(__linux__) && \
    !defined(METRON_NO_INLINE) && !defined(METRON_DISABLE)
#define METRON_FAST_INLINE_ 1
/* Before a module's first call on a thread, its pointer points here: a state with nothing open
 * and no room (struct_size 0), so the first begin or end takes the branch that fetches the
 * thread's state from the library (one per module, read-only). */
#ifdef __cplusplus
__attribute__((weak, visibility("hidden"))) extern const metron_fast_thread metron_fast_start_ = {};
#else
__attribute__((weak, visibility("hidden"))) const metron_fast_thread metron_fast_start_ = {0};
#endif
/* One per module (executable or shared library), per thread: the address of the library's
 * state of this thread, fetched on the module's first call on the thread. In an executable
 * the compiler reaches it with the local-exec model (one instruction); in a shared library
 * with the model the library is built with (define METRON_FAST_TLS_MODEL as
 * __attribute__((tls_model("initial-exec"))) there for the one-instruction access, at the
 * cost of 8 bytes of static TLS). */
#ifndef METRON_FAST_TLS_MODEL
#define METRON_FAST_TLS_MODEL
#endif
__attribute__((weak, visibility("hidden"))) __thread metron_fast_thread* metron_fast_tls_
    METRON_FAST_TLS_MODEL = (metron_fast_thread*)&metron_fast_start_;

/* Stores one record as the library's producer does: the slot, then the new end, which
 * publishes it to the flusher (volatile stores stay in program order, and x86-64 keeps stores
 * in order: the release store of the Rust producer). 0 when the cursor is at the limit. */
static __inline__ int metron_fast_write_(const metron_fast_cursor* c, uint64_t header) {
    volatile size_t* end = c->end;
    size_t at = *end;
    if (__builtin_expect(at == (size_t)c->limit, 0)) return 0;
    uint32_t lo, hi;
    /* The time stamp's halves stored as they come from rdtsc: two stores instead of a shift,
     * an or and a store (the flusher reads the slot only after the publishing store). */
    __asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
    ((volatile uint32_t*)at)[0] = lo;
    ((volatile uint32_t*)at)[1] = hi;
    ((volatile uint64_t*)at)[1] = header;
    *end = at + 16;
    return 1;
}

/* The slow branch, before the library's function: on the module's first call on this thread,
 * fetch the thread's state. */
#define METRON_FAST_FETCH_(f)                                                             \
    do {                                                                                  \
        if ((f)->struct_size == 0)                                                        \
            metron_fast_tls_ =                                                            \
                metron_fast_thread_get(METRON_FAST_ABI, (uint32_t)sizeof(metron_fast_thread)); \
    } while (0)

/* metron_region_begin_id(id), inline when nothing but a record is needed: one lookup in the
 * run's gate answers "a region id" and "the run records". */
static __inline__ __attribute__((always_inline)) metron_status metron_fast_begin_id(metron_id id) {
    metron_fast_thread* f = metron_fast_tls_;
    size_t d = f->depth;
    if (__builtin_expect(d < f->open_limit && id < METRON_FAST_REGION_IDS && (*f->ids)[id] &&
                             metron_fast_write_(f->cursor, METRON_FAST_BEGIN_RECORD | id),
                         1)) {
        f->open[d + 1] = METRON_FAST_OPEN_BY_ID | id;
        f->depth = d + 1;
        return METRON_OK;
    }
    METRON_FAST_FETCH_(f);
    return metron_region_begin_id(id);
}

/* The same for an id from metron_region_id() (a call site's static). */
#define metron_fast_begin_known_(id) metron_fast_begin_id(id)

/* metron_region_end_id(id), inline when `id` is the innermost region, begun by id. */
static __inline__ metron_status metron_fast_end_id(metron_id id) {
    metron_fast_thread* f = metron_fast_tls_;
    size_t d = f->depth;
    if (__builtin_expect(f->open[d] == (METRON_FAST_OPEN_BY_ID | id) &&
                             metron_fast_write_(f->cursor, METRON_FAST_END_RECORD | id),
                         1)) {
        f->depth = d - 1;
        return METRON_OK;
    }
    METRON_FAST_FETCH_(f);
    return metron_region_end_id(id);
}
#else
#define metron_fast_begin_id(id) metron_region_begin_id(id)
#define metron_fast_begin_known_(id) metron_region_begin_id(id)
#define metron_fast_end_id(id) metron_region_end_id(id)
#endif

#ifdef __cplusplus
} /* extern "C" */
#endif

/* ---- macros: compile to nothing under METRON_DISABLE ---------------------------------- */

#ifndef METRON_DISABLE
#define METRON_INIT(args) metron_init(args)
#define METRON_FINALIZE() metron_finalize()
#define METRON_FLUSH() metron_flush()
#define METRON_START() metron_start()
#define METRON_STOP() metron_stop()
#define METRON_THREAD_START() metron_thread_start()
#define METRON_THREAD_STOP() metron_thread_stop()
#define METRON_THREAD_NAME(name) metron_set_thread_name(name)
#if defined(__GNUC__) && !defined(METRON_NO_SITE_IDS)
/* A literal name (a constant address) is interned once per call site, into a static of that
 * site, and the call goes by id: the cost of metron_region_begin_id, with no name to hash or
 * compare. A name computed at run time goes by name. The static keeps the id with the low 32
 * bits of the literal's address, in one 64-bit word (so threads racing on it never see an id
 * with another literal's address), so that copies of one call site inlined
 * with different literals (which share the static) each check that the id is theirs. (GCC
 * and Clang; define METRON_NO_SITE_IDS to always call by name.) Mixing is fine: a region begun
 * by one may be ended by the other. */
#define METRON_SITE_ID_(name)                                                            \
    __extension__({                                                                      \
        static uint64_t metron_site_;                                                    \
        uint64_t metron_word_ = __atomic_load_n(&metron_site_, __ATOMIC_RELAXED);        \
        uint32_t metron_key_ = (uint32_t)(uintptr_t)(const void*)(name);                 \
        metron_id metron_id_ = (metron_id)(metron_word_ >> 32);                          \
        if ((uint32_t)metron_word_ != metron_key_ || metron_id_ == 0) {                  \
            metron_id_ = metron_region_id(name);                                         \
            __atomic_store_n(&metron_site_, (uint64_t)metron_id_ << 32 | metron_key_,    \
                             __ATOMIC_RELAXED);                                          \
        }                                                                                \
        metron_id_;                                                                      \
    })
static __inline__ int metron_site_name_(const char* name) { return name != 0; }
#define METRON_REGION_BEGIN(name)                                                        \
    (__builtin_constant_p(name) && metron_site_name_(name)                               \
         ? metron_fast_begin_known_(METRON_SITE_ID_(name))                               \
         : metron_region_begin(name))
#define METRON_REGION_END(name)                                                          \
    (__builtin_constant_p(name) && metron_site_name_(name)                               \
         ? metron_fast_end_id(METRON_SITE_ID_(name))                                     \
         : metron_region_end(name))
#else
#define METRON_REGION_BEGIN(name) metron_region_begin(name)
#define METRON_REGION_END(name) metron_region_end(name)
#endif
/* Declares `static metron_id var` in the enclosing block and interns `name` into it on first
 * use. (Threads racing on the first use all store the same id.) */
#define METRON_REGION_ID(var, name) \
    static metron_id var = 0;       \
    if (var == 0) var = metron_region_id(name)
#define METRON_REGION_BEGIN_ID(id) metron_fast_begin_id(id)
#define METRON_REGION_END_ID(id) metron_fast_end_id(id)
#define METRON_PERF_MARKER_BEGIN(name, group) metron_perf_marker_begin((name), (group))
#define METRON_PERF_MARKER_END() metron_perf_marker_end()
#define METRON_PUSH(name, annotations, count) metron_push((name), (annotations), (count))
#define METRON_POP() metron_pop()
#define METRON_MARK(name) metron_mark(name)
#define METRON_COUNTER(name, value) metron_counter((name), (double)(value))
#define METRON_ANNOTATE_STRING(key, value) metron_annotate_string((key), (value))
#define METRON_ANNOTATE_INT64(key, value) metron_annotate_int64((key), (int64_t)(value))
#define METRON_ANNOTATE_UINT64(key, value) metron_annotate_uint64((key), (uint64_t)(value))
#define METRON_ANNOTATE_DOUBLE(key, value) metron_annotate_double((key), (double)(value))
#define METRON_ANNOTATE_POINTER(key, value) metron_annotate_pointer((key), (value))
/* Progress points for causal profiling: one relaxed atomic add once the counter is cached in
 * a static of the call site (`name` must be the same on every pass: a literal). */
#define METRON_PROGRESS_AT_(kind, name)                                                  \
    do {                                                                                 \
        static metron_progress_counter_t* metron_progress_ = 0;                          \
        metron_progress_counter_t* metron_p_ =                                           \
            __atomic_load_n(&metron_progress_, __ATOMIC_RELAXED);                        \
        if (!metron_p_) {                                                                \
            metron_p_ = metron_progress_counter((kind), (name));                         \
            __atomic_store_n(&metron_progress_, metron_p_, __ATOMIC_RELAXED);            \
        }                                                                                \
        if (metron_p_) __atomic_add_fetch(&metron_p_->count, 1, __ATOMIC_RELAXED);      \
    } while (0)
#define METRON_PROGRESS(name) METRON_PROGRESS_AT_(METRON_PROGRESS_THROUGHPUT, name)
#define METRON_PROGRESS_BEGIN(name) METRON_PROGRESS_AT_(METRON_PROGRESS_BEGIN_KIND, name)
#define METRON_PROGRESS_END(name) METRON_PROGRESS_AT_(METRON_PROGRESS_END_KIND, name)
#else
/* Disabled: no code and no evaluation. `sizeof` keeps the arguments "used", so variables that
 * only feed Metron raise no unused-variable warning. */
#define METRON_INIT(args) ((void)sizeof(args))
#define METRON_FINALIZE() ((void)0)
#define METRON_FLUSH() ((void)0)
#define METRON_START() ((void)0)
#define METRON_STOP() ((void)0)
#define METRON_THREAD_START() ((void)0)
#define METRON_THREAD_STOP() ((void)0)
#define METRON_THREAD_NAME(name) ((void)sizeof(name))
#define METRON_REGION_BEGIN(name) ((void)sizeof(name))
#define METRON_REGION_END(name) ((void)sizeof(name))
/* `var` stays declared (a constant 0), so code that passes it elsewhere still compiles. */
#define METRON_REGION_ID(var, name) enum { var = 0 }
#define METRON_REGION_BEGIN_ID(id) ((void)sizeof(id))
#define METRON_REGION_END_ID(id) ((void)sizeof(id))
#define METRON_PERF_MARKER_BEGIN(name, group) ((void)sizeof(name), (void)sizeof(group))
#define METRON_PERF_MARKER_END() ((void)0)
#define METRON_PUSH(name, annotations, count) \
    ((void)sizeof(name), (void)sizeof(annotations), (void)sizeof(count))
#define METRON_POP() ((void)0)
#define METRON_MARK(name) ((void)sizeof(name))
#define METRON_COUNTER(name, value) ((void)sizeof(name), (void)sizeof(value))
#define METRON_ANNOTATE_STRING(key, value) ((void)sizeof(key), (void)sizeof(value))
#define METRON_ANNOTATE_INT64(key, value) ((void)sizeof(key), (void)sizeof(value))
#define METRON_ANNOTATE_UINT64(key, value) ((void)sizeof(key), (void)sizeof(value))
#define METRON_ANNOTATE_DOUBLE(key, value) ((void)sizeof(key), (void)sizeof(value))
#define METRON_ANNOTATE_POINTER(key, value) ((void)sizeof(key), (void)sizeof(value))
#define METRON_PROGRESS(name) ((void)sizeof(name))
#define METRON_PROGRESS_BEGIN(name) ((void)sizeof(name))
#define METRON_PROGRESS_END(name) ((void)sizeof(name))
#endif

#ifdef __cplusplus
#define METRON_CONCAT_INNER_(a, b) a##b
#define METRON_CONCAT_(a, b) METRON_CONCAT_INNER_(a, b)

namespace metron {
/* A region that ends when the object goes out of scope, by name (for a name computed at run
 * time). The name must outlive the scope. */
class Scope {
public:
    explicit Scope(const char* name) noexcept : name_(name) { metron_region_begin(name_); }
    ~Scope() { metron_region_end(name_); }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

private:
    const char* name_;
};

/* A region that ends when the object goes out of scope, by id (made by METRON_SCOPE). */
class IdScope {
public:
    explicit IdScope(metron_id id) noexcept : id_(id) { metron_fast_begin_id(id_); }
    ~IdScope() { metron_fast_end_id(id_); }
    IdScope(const IdScope&) = delete;
    IdScope& operator=(const IdScope&) = delete;

private:
    metron_id id_;
};
} /* namespace metron */

#ifndef METRON_DISABLE
/* C++: a region from here to the end of the enclosing block. `name` is interned once, into a
 * function-local static (thread-safe), so it must be the same on every pass (a literal); for a
 * name computed at run time, use ::metron::Scope. */
#define METRON_SCOPE(name)                                                                      \
    static const metron_id METRON_CONCAT_(metron_id_line_, __LINE__) = metron_region_id(name); \
    ::metron::IdScope METRON_CONCAT_(metron_scope_line_, __LINE__)(                            \
        METRON_CONCAT_(metron_id_line_, __LINE__))
/* C++: a region named after the enclosing function. */
#define METRON_FUNCTION() METRON_SCOPE(__func__)
#else
#define METRON_SCOPE(name) static_cast<void>(sizeof(name))
#define METRON_FUNCTION() static_cast<void>(0)
#endif
#endif /* __cplusplus */

#endif /* METRON_METRON_H */
