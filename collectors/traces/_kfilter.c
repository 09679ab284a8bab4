/* The Kineto event filter: one pass over a trace's JSON text (a document, or a piece of one)
 * that checks its syntax and writes out only the events analysis reads (complete events, "ph"
 * "X", of the categories kineto_scan.Columns keeps), and of them only the fields analysis reads,
 * already as columns: lists of starts, durations, devices, streams, correlations; each op name
 * and each thread once, with a place in those lists per event. Values are copied as written,
 * so one msgspec decode of the result gives the values the typed decode of the full text gives
 * (kineto_events.Filtered), and the other events (CPU ops, flows, metadata: most of a trace)
 * become no Python object at all.
 *
 * It answers None wherever the text is anything but plain: invalid JSON, an escape in a key or
 * in "ph", "cat" not ASCII (or any field msgspec decodes as a string, names aside, not ASCII),
 * a key written twice, an element that is no object, nesting deeper than MAX_DEPTH, a document
 * without exactly one "traceEvents" array, and for a kept event a time that is no number or an
 * op without integer device, stream and correlation. The caller then decodes the text the usual
 * way, which decides what it means and names any fault. The pass is linear in the input, its
 * memory too, and a lookup of a name or a thread gives up after MAX_PROBE slots (only text
 * crafted to collide gets there), so no input can stall it.
 *
 * keep(buf, document, head, first_is_event) -> (bytes, skipped) | None
 *   buf: the text (any object with the buffer protocol)
 *   document: the text is an object holding "traceEvents" (else an array of events)
 *   head: the first `head` events' times are written too (the epoch test reads them)
 *   first_is_event: the first element must be an object with a non-empty "ph" string (a piece
 *         cut elsewhere than between two events fails that)
 *   skipped: how many events were passed over
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#define MAX_DEPTH 512

typedef const unsigned char *cp;

/* One output list: the JSON text of its values, comma-separated. */
typedef struct {
    unsigned char *p;
    size_t n, cap;
    Py_ssize_t count;
} Buf;

/* The lists written, in this order (kineto_events.Filtered reads them):
 * the first `head` events' times (the epoch test reads them); stream syncs, whole;
 * the GPU ops' start, duration, device, stream, correlation, name (a place in the names list)
 * and category; the names (each text once, in order of first appearance);
 * the launch calls' start, duration, correlation and thread (a place in the threads lists);
 * the step ranges' start, duration, category, name, thread, and place among the host events
 * (calls and ranges in document order);
 * the threads' pid and tid (each pair of texts once, in order of first appearance) and each
 * one's first place among the host events as a call (-1: none). */
enum { B_HEAD_TS, B_ROWS, O_TS, O_DUR, O_DEV, O_STREAM, O_CORR, O_NAME, O_CAT, O_NAMES,
       C_TS, C_DUR, C_CORR, C_THREAD, R_TS, R_DUR, R_CAT, R_NAME, R_THREAD, R_AT,
       T_PID, T_TID, T_FIRST_CALL, NB };

/* Texts seen (op names; thread pid-tid pairs), by open addressing on their text. A probe
 * longer than MAX_PROBE (only text crafted to collide) sends the piece to the usual decode, so
 * a lookup stays cheap whatever the input. */
#define MAX_PROBE 64
typedef struct {
    const unsigned char *a, *b;  /* the first text's bounds */
    const unsigned char *a2, *b2;  /* the second's (pairs) */
    Py_ssize_t id;
} Slot;

typedef struct {
    Slot *slots;
    size_t cap, count;
} Table;

typedef struct {
    Buf out[NB];
    Table names, threads;
    Py_ssize_t *first_call;  /* by thread: its first place among the host events as a call */
    size_t first_cap;
    Py_ssize_t hosts;  /* host events written */
    int oom;
} Cur;

/* The scanner's functions take the position and the end of the text and give the position
 * after what they passed (NULL: the text is not JSON there); positions stay in registers. */
static inline cp ws(cp p, cp e) {
    while (p < e && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t'))
        p++;
    return p;
}

/* The value of the four hex digits at p (a \u escape's), or -1. */
static long unit(cp p, cp e) {
    long v = 0;
    if (e - p < 4)
        return -1;
    for (int i = 0; i < 4; i++) {
        unsigned char ch = p[i];
        int d = ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
                : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10 : -1;
        if (d < 0)
            return -1;
        v = v * 16 + d;
    }
    return v;
}

/* At a '"': past the string's closing quote; *esc set if it holds an escape. Sixteen bytes at
 * a time where SSE2 is at hand (every x86-64): most of a trace's bytes are in strings. */
static inline cp skip_string(cp p, cp e, int *esc) {
    p++;
    for (;;) {
#ifdef __SSE2__
        const __m128i quote = _mm_set1_epi8('"'), slash = _mm_set1_epi8('\\'),
                      ctl = _mm_set1_epi8(0x1f);
        while (e - p >= 16) {
            __m128i x = _mm_loadu_si128((const __m128i *)p);
            __m128i hit = _mm_or_si128(
                _mm_or_si128(_mm_cmpeq_epi8(x, quote), _mm_cmpeq_epi8(x, slash)),
                _mm_cmpeq_epi8(_mm_min_epu8(x, ctl), x));
            int mask = _mm_movemask_epi8(hit);
            if (mask) {
                p += __builtin_ctz((unsigned)mask);
                goto found;
            }
            p += 16;
        }
#endif
        while (p < e && *p != '"' && *p != '\\' && *p >= 0x20)
            p++;
#ifdef __SSE2__
    found:
#endif
        if (p >= e || *p < 0x20)
            return NULL;
        if (*p == '"')
            return p + 1;
        *esc = 1;
        if (++p >= e)
            return NULL;
        switch (*p) {
        case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
            p++;
            break;
        case 'u': {
            /* four hex digits; a surrogate only as a high one escaped before a low one (as
             * msgspec reads them, in every string, skipped or not) */
            long v = unit(p + 1, e);
            if (v < 0 || (v >= 0xDC00 && v <= 0xDFFF))
                return NULL;
            p += 5;
            if (v >= 0xD800 && v <= 0xDBFF) {
                if (e - p < 2 || p[0] != '\\' || p[1] != 'u')
                    return NULL;
                long low = unit(p + 2, e);
                if (low < 0xDC00 || low > 0xDFFF)
                    return NULL;
                p += 6;
            }
            break;
        }
        default:
            return NULL;
        }
    }
}

static inline cp digits(cp p, cp e) {
    while (p < e && *p >= '0' && *p <= '9')
        p++;
    return p;
}

/* JSON's number grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? */
static inline cp skip_number(cp p, cp e) {
    if (p < e && *p == '-')
        p++;
    if (p >= e || *p < '0' || *p > '9')
        return NULL;
    p = *p == '0' ? p + 1 : digits(p, e);
    if (p < e && *p == '.') {
        cp q = digits(p + 1, e);
        if (q == p + 1)
            return NULL;
        p = q;
    }
    if (p < e && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < e && (*p == '+' || *p == '-'))
            p++;
        cp q = digits(p, e);
        if (q == p)
            return NULL;
        p = q;
    }
    return p;
}

static cp skip_literal(cp p, cp e, const char *word, Py_ssize_t n) {
    if (e - p < n || memcmp(p, word, (size_t)n) != 0)
        return NULL;
    return p + n;
}

/* One JSON value of any shape, checked and passed over (no recursion: a stack of brackets). */
static cp skip_value(cp p, cp e) {
    unsigned char stack[MAX_DEPTH];
    int d = 0, esc = 0;
value:
    p = ws(p, e);
    if (p >= e)
        return NULL;
    switch (*p) {
    case '{':
    case '[': {
        unsigned char close = *p == '{' ? '}' : ']';
        p = ws(p + 1, e);
        if (p < e && *p == close) {
            p++;
            goto after;
        }
        if (d >= MAX_DEPTH)
            return NULL;
        stack[d++] = close;
        if (close == '}')
            goto key;
        goto value;
    }
    case '"':
        p = skip_string(p, e, &esc);
        break;
    case 't':
    case 'f':
    case 'n': {
        const char *word = *p == 't' ? "true" : *p == 'f' ? "false" : "null";
        p = skip_literal(p, e, word, (Py_ssize_t)strlen(word));
        break;
    }
    default:
        p = skip_number(p, e);
    }
    if (!p)
        return NULL;
after:
    if (d == 0)
        return p;
    p = ws(p, e);
    if (p >= e)
        return NULL;
    if (*p == ',') {
        p++;
        if (stack[d - 1] == '}')
            goto key;
        goto value;
    }
    if (*p == stack[d - 1]) {
        p++;
        d--;
        goto after;
    }
    return NULL;
key:
    p = ws(p, e);
    if (p >= e || *p != '"' || !(p = skip_string(p, e, &esc)))
        return NULL;
    p = ws(p, e);
    if (p >= e || *p != ':')
        return NULL;
    p++;
    goto value;
}

/* The fields written out, by their key's text. */
enum { F_PH, F_CAT, F_NAME, F_PID, F_TID, F_TS, F_DUR, F_ARGS, NF };
static const char *const FIELD[NF] = {"ph", "cat", "name", "pid", "tid", "ts", "dur", "args"};
static const Py_ssize_t FIELD_LEN[NF] = {2, 3, 4, 3, 3, 2, 3, 4};
enum { A_DEVICE, A_STREAM, A_CORR, A_WAIT, A_WAIT_CORR, NA };
static const char *const ARG[NA] = {"device", "stream", "correlation", "wait_on_stream",
                                    "wait_on_cuda_event_record_corr_id"};
static const Py_ssize_t ARG_LEN[NA] = {6, 6, 11, 14, 33};
/* kineto_scan's OP_CATS, CALL_CATS, RANGE_CATS and SYNC_CATS (lower case) */
static const char *const KEPT_CATS[] = {
    "kernel", "gpu_memcpy", "gpu_memset", "memcpy", "memset", "cuda_runtime", "cuda_driver",
    "runtime", "driver", "user_annotation", "operator", "cuda_sync", NULL};
static Py_ssize_t KEPT_LEN[sizeof KEPT_CATS / sizeof *KEPT_CATS];  /* set as the module loads */

typedef struct {
    cp a, b;
} Span;

static inline int eq(cp k, const char *name, Py_ssize_t n) { return memcmp(k, name, (size_t)n) == 0; }

/* An event's key as a field number, by its length first; -1: not read. */
static int field_of(cp k, Py_ssize_t n) {
    switch (n) {
    case 2:
        return eq(k, "ph", 2) ? F_PH : eq(k, "ts", 2) ? F_TS : -1;
    case 3:
        return eq(k, "cat", 3) ? F_CAT : eq(k, "pid", 3) ? F_PID : eq(k, "tid", 3) ? F_TID
               : eq(k, "dur", 3) ? F_DUR : -1;
    case 4:
        return eq(k, "name", 4) ? F_NAME : eq(k, "args", 4) ? F_ARGS : -1;
    default:
        return -1;
    }
}

/* An argument's key as an argument number; -1: not read. */
static int arg_of(cp k, Py_ssize_t n) {
    switch (n) {
    case 6:
        return eq(k, "device", 6) ? A_DEVICE : eq(k, "stream", 6) ? A_STREAM : -1;
    case 11:
        return eq(k, "correlation", 11) ? A_CORR : -1;
    case 14:
        return eq(k, "wait_on_stream", 14) ? A_WAIT : -1;
    case 33:
        return eq(k, "wait_on_cuda_event_record_corr_id", 33) ? A_WAIT_CORR : -1;
    default:
        return -1;
    }
}

/* At a '"' starting a key: the key text in k and n (no escapes allowed), past its ':' and
 * the space after it. */
static inline cp read_key(cp p, cp e, cp *k, Py_ssize_t *n) {
    int esc = 0;
    if (p >= e || *p != '"')
        return NULL;
    *k = p + 1;
    p = skip_string(p, e, &esc);
    if (!p || esc)
        return NULL;
    *n = (p - 1) - *k;
    p = ws(p, e);
    if (p >= e || *p != ':')
        return NULL;
    return ws(p + 1, e);
}

/* A value: strings and numbers (nearly all of a trace's) without the general walk. */
static inline cp skip_any(cp p, cp e) {
    int esc = 0;
    if (p < e) {
        unsigned char ch = *p;
        if (ch == '"')
            return skip_string(p, e, &esc);
        if (ch == '-' || (ch >= '0' && ch <= '9'))
            return skip_number(p, e);
    }
    return skip_value(p, e);
}

/* After a member or an element: *more 0 past the container's `close`, 1 past a ',' and the
 * space after it (more follow); NULL on anything else. */
static inline cp next(cp p, cp e, unsigned char close, int *more) {
    p = ws(p, e);
    if (p >= e)
        return NULL;
    if (*p == close) {
        *more = 0;
        return p + 1;
    }
    if (*p != ',')
        return NULL;
    *more = 1;
    return ws(p + 1, e);
}

/* At a '"': an event's key written as plain text of one of the fields read (every event's keys
 * in a Kineto trace), as its field number, *after past its closing quote, without the general
 * scan of a string; -2 where it is not one of them (the general read then decides). */
static inline int quick_field(cp p, cp e, cp *after) {
    if (e - p < 6)
        return -2;
    int f = -2, n = 0;
    switch (p[1]) {
    case 'p':
        f = p[2] == 'h' ? (n = 2, F_PH) : (p[2] == 'i' && p[3] == 'd') ? (n = 3, F_PID) : -2;
        break;
    case 'c':
        f = (p[2] == 'a' && p[3] == 't') ? (n = 3, F_CAT) : -2;
        break;
    case 'n':
        f = (p[2] == 'a' && p[3] == 'm' && p[4] == 'e') ? (n = 4, F_NAME) : -2;
        break;
    case 't':
        f = p[2] == 's' ? (n = 2, F_TS) : (p[2] == 'i' && p[3] == 'd') ? (n = 3, F_TID) : -2;
        break;
    case 'd':
        f = (p[2] == 'u' && p[3] == 'r') ? (n = 3, F_DUR) : -2;
        break;
    case 'a':
        f = (p[2] == 'r' && p[3] == 'g' && p[4] == 's') ? (n = 4, F_ARGS) : -2;
        break;
    }
    if (f == -2 || p[n + 1] != '"')
        return -2;
    *after = p + n + 2;
    return f;
}

/* An object's members (at its '{'), checked; the values of the keys read kept in `spans`
 * (an event's fields, then at spans + NF its arguments'; `args`: this object is the
 * arguments). A key read twice: NULL. */
static cp members(cp p, cp e, int args, Span *spans) {
    int more = 1;
    p = ws(p + 1, e);
    if (p < e && *p == '}')
        return p + 1;
    while (more) {
        cp k, q;
        Py_ssize_t n;
        int f = args || p >= e || *p != '"' ? -2 : quick_field(p, e, &q);
        if (f != -2) {
            p = ws(q, e);
            if (p >= e || *p != ':')
                return NULL;
            p = ws(p + 1, e);
        } else {
            if (!(p = read_key(p, e, &k, &n)))
                return NULL;
            f = args ? arg_of(k, n) : field_of(k, n);
        }
        cp a = p;
        if (!args && f == F_ARGS && p < e && *p == '{')
            p = members(p, e, 1, spans + NF);
        else
            p = skip_any(p, e);
        if (!p)
            return NULL;
        if (f >= 0) {
            if (spans[f].a)
                return NULL;
            spans[f].a = a;
            spans[f].b = p;
        }
        if (!(p = next(p, e, '}', &more)))
            return NULL;
    }
    return p;
}

static int grow(Buf *b, size_t need) {
    if (b->cap - b->n >= need)
        return 1;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap - b->n < need)
        cap *= 2;
    unsigned char *p = PyMem_RawRealloc(b->p, cap);
    if (!p)
        return 0;
    b->p = p;
    b->cap = cap;
    return 1;
}

static int put(Cur *c, int which, const void *s, size_t n) {
    Buf *b = &c->out[which];
    if (!grow(b, n)) {
        c->oom = 1;
        return 0;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    return 1;
}

/* One more value of a list: its JSON text as written. */
static int value(Cur *c, int which, cp a, cp b) {
    Buf *o = &c->out[which];
    if (o->count++ && !put(c, which, ",", 1))
        return 0;
    return put(c, which, a, (size_t)(b - a));
}

static int text_value(Cur *c, int which, const char *s) {
    return value(c, which, (cp)s, (cp)s + strlen(s));
}

static int put_field(Cur *c, const char *name, Py_ssize_t n, Span s, int *first) {
    if (!put(c, B_ROWS, *first ? "\"" : ",\"", *first ? 1 : 2) ||
        !put(c, B_ROWS, name, (size_t)n) || !put(c, B_ROWS, "\":", 2))
        return 0;
    *first = 0;
    return put(c, B_ROWS, s.a, (size_t)(s.b - s.a));
}

/* A string value's text (between the quotes) if it holds no escape; else 0. */
static int plain_text(Span s, cp *t, Py_ssize_t *n) {
    if (s.b - s.a < 2 || *s.a != '"')
        return 0;
    for (cp q = s.a + 1; q < s.b - 1; q++)
        if (*q == '\\')
            return 0;
    *t = s.a + 1;
    *n = (s.b - s.a) - 2;
    return 1;
}

/* A complete event's category: 1 + its place in KEPT_CATS, 0 where it is not kept, -1 where it
 * cannot be judged here. */
static int kept_category(Span s) {
    if (!s.a)
        return 0;  /* no category: "" */
    cp t;
    Py_ssize_t n;
    if (!plain_text(s, &t, &n))
        return -1;
    char low[24];
    if (n == 0 || n >= (Py_ssize_t)sizeof low)
        return 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (t[i] >= 0x80)
            return -1;  /* str.lower() of some non-ASCII letters is ASCII */
        low[i] = (char)((t[i] >= 'A' && t[i] <= 'Z') ? t[i] + 32 : t[i]);
    }
    for (int i = 0; KEPT_CATS[i]; i++)
        if (KEPT_CATS[i][0] == low[0] && KEPT_LEN[i] == n &&
            memcmp(low, KEPT_CATS[i], (size_t)n) == 0)
            return i + 1;
    return 0;
}

enum { CAT_FIRST_CALL = 6, CAT_FIRST_RANGE = 10, CAT_SYNC = 12 };  /* 1 + places in KEPT_CATS */

/* A JSON number's text. */
static int number(Span s) {
    return s.a && s.b > s.a && (*s.a == '-' || (*s.a >= '0' && *s.a <= '9'));
}

/* A JSON integer of at most 18 digits (an int64), not negative unless `sign`. */
static int integer(Span s, int sign) {
    cp p = s.a;
    if (!p)
        return 0;
    if (p < s.b && *p == '-') {
        if (!sign)
            return 0;
        p++;
    }
    if (s.b - p < 1 || s.b - p > 18)
        return 0;
    for (; p < s.b; p++)
        if (*p < '0' || *p > '9')
            return 0;
    return 1;
}

static uint64_t hash_text(cp t, Py_ssize_t n, uint64_t h) {
    h ^= 0x9E3779B97F4A7C15ULL ^ (uint64_t)n;
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, t, 8);
        h = (h ^ w) * 0xBF58476D1CE4E5B9ULL;
        h ^= h >> 31;
        t += 8;
        n -= 8;
    }
    uint64_t w = 0;
    memcpy(&w, t, (size_t)n);
    h = (h ^ w) * 0x94D049BB133111EBULL;
    return h ^ (h >> 29);
}

static uint64_t slot_hash(cp a, cp b, cp a2, cp b2) {
    uint64_t h = hash_text(a, b - a, 0);
    return a2 ? hash_text(a2, b2 - a2, h) : h;
}

static int same(Span x, cp a, cp b) {
    return b - a == x.b - x.a && memcmp(a, x.a, (size_t)(b - a)) == 0;
}

/* The place of a text (or pair of texts: `second.a` set) in `t`; *fresh set where it is
 * new. -1: give up (a probe too long, or no memory). */
static Py_ssize_t place(Cur *c, Table *t, Span first, Span second, int *fresh) {
    *fresh = 0;
    if (2 * (t->count + 1) > t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 256;
        Slot *slots = PyMem_RawCalloc(cap, sizeof(Slot));
        if (!slots) {
            c->oom = 1;
            return -1;
        }
        for (size_t i = 0; i < t->cap; i++) {
            Slot *o = &t->slots[i];
            if (!o->a)
                continue;
            size_t j = slot_hash(o->a, o->b, o->a2, o->b2) & (cap - 1);
            while (slots[j].a)
                j = (j + 1) & (cap - 1);
            slots[j] = *o;
        }
        PyMem_RawFree(t->slots);
        t->slots = slots;
        t->cap = cap;
    }
    size_t j = slot_hash(first.a, first.b, second.a, second.b) & (t->cap - 1);
    for (int probe = 0; probe < MAX_PROBE; probe++, j = (j + 1) & (t->cap - 1)) {
        Slot *o = &t->slots[j];
        if (!o->a) {
            *o = (Slot){first.a, first.b, second.a, second.b, (Py_ssize_t)t->count++};
            *fresh = 1;
            return o->id;
        }
        if (same(first, o->a, o->b) && (!second.a || same(second, o->a2, o->b2)))
            return o->id;
    }
    return -1;
}

static int id_value(Cur *c, int which, Py_ssize_t id) {
    char text[24];
    char *end = text + sizeof text, *q = end;
    size_t u = id < 0 ? (size_t)0 - (size_t)id : (size_t)id;
    do {
        *--q = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (id < 0)
        *--q = '-';
    return value(c, which, (cp)q, (cp)end);
}

/* An op's name as its place in the names list (the text written there if new); -1: give up. */
static Py_ssize_t name_id(Cur *c, Span name) {
    int fresh;
    Py_ssize_t id = place(c, &c->names, name, (Span){NULL, NULL}, &fresh);
    if (id >= 0 && fresh && !value(c, O_NAMES, name.a, name.b))
        return -1;
    return id;
}

/* A host event's thread as its place in the threads lists (written there if new); a launch
 * call's place among the host events is its thread's first as a call if none came before.
 * -1: give up. */
static Py_ssize_t thread_id(Cur *c, Span pid, Span tid, int call) {
    int fresh;
    Py_ssize_t id = place(c, &c->threads, pid, tid, &fresh);
    if (id < 0)
        return -1;
    if (fresh) {
        if (!value(c, T_PID, pid.a, pid.b) || !value(c, T_TID, tid.a, tid.b))
            return -1;
        if ((size_t)id >= c->first_cap) {
            size_t cap = c->first_cap ? 2 * c->first_cap : 64;
            Py_ssize_t *f = PyMem_RawRealloc(c->first_call, cap * sizeof *f);
            if (!f) {
                c->oom = 1;
                return -1;
            }
            c->first_call = f;
            c->first_cap = cap;
        }
        c->first_call[id] = -1;
    }
    if (call && c->first_call[id] < 0)
        c->first_call[id] = c->hosts;
    return id;
}

/* The event written whole into rows (after a ',' if rows has any). */
static int row(Cur *c, Span *s) {
    int first = 1, later = c->out[B_ROWS].count++ > 0;
    if (!put(c, B_ROWS, later ? ",{" : "{", later ? 2 : 1))
        return 0;
    for (int f = 0; f < NF; f++) {
        if (!s[f].a)
            continue;
        if (f == F_ARGS && *s[f].a == '{') {
            int first_arg = 1;
            if (!put(c, B_ROWS, first ? "\"args\":{" : ",\"args\":{", first ? 8 : 9))
                return 0;
            first = 0;
            for (int a = 0; a < NA; a++)
                if (s[NF + a].a && !put_field(c, ARG[a], ARG_LEN[a], s[NF + a], &first_arg))
                    return 0;
            if (!put(c, B_ROWS, "}", 1))
                return 0;
        } else if (!put_field(c, FIELD[f], FIELD_LEN[f], s[f], &first)) {
            return 0;
        }
    }
    return put(c, B_ROWS, "}", 1);
}

static int is_string(Span x) { return *x.a == '"'; }
static int is_null(Span x) { return x.b - x.a == 4 && memcmp(x.a, "null", 4) == 0; }

/* A number that float64 holds without overflow (msgspec refuses the others): short, and any
 * exponent small. */
static int in_float_range(Span x) {
    if (!number(x) || x.b - x.a > 32)
        return 0;
    /* an exponent ends a number (its text is checked JSON): its digits are the last run */
    cp d = x.b;
    while (d > x.a && d[-1] >= '0' && d[-1] <= '9')
        d--;
    if (d > x.a && (d[-1] == '+' || d[-1] == '-'))
        d--;
    if (d == x.a || (d[-1] != 'e' && d[-1] != 'E'))
        return 1;
    d += *d == '+' || *d == '-';
    return x.b - d <= 2;  /* |exponent| < 100 */
}

/* Each field present has a type the typed decode (kineto_events._Event) takes; where one does
 * not, the usual path reads the document another way, so it is left to it. */
static int typed(Span *s) {
    if ((s[F_PH].a && !is_string(s[F_PH])) || (s[F_CAT].a && !is_string(s[F_CAT])))
        return 0;
    for (int f = F_PID; f <= F_TID; f++)
        if (s[f].a && !is_string(s[f]) && !integer(s[f], 1))
            return 0;
    for (int f = F_TS; f <= F_DUR; f++)
        if (s[f].a && !is_string(s[f]) && !in_float_range(s[f]))
            return 0;
    if (s[F_ARGS].a && *s[F_ARGS].a != '{' && !is_null(s[F_ARGS]))
        return 0;
    for (int a = 0; a < NA; a++) {
        Span x = s[NF + a];
        if (x.a && !is_string(x) && !is_null(x) && !integer(x, 1))
            return 0;
    }
    return 1;
}

/* An event, its fields read into `s`: into the columns, into rows (stream syncs), or passed
 * over (*kept 0); with `head`, its time is also written to the head's times. 0 where the piece
 * must be decoded the usual way. */
static int event(Cur *c, Span *s, int head, int must_have_ph, int *kept) {
    static const char EMPTY[] = "\"\"", ZERO[] = "0";
    *kept = 0;
    /* msgspec checks the UTF-8 of the strings it decodes (all but names, which stay raw):
     * text that is not ASCII there is left to it */
    for (int f = 0; f < NF + NA; f++)
        if (f != F_NAME && f != F_ARGS && s[f].a && *s[f].a == '"')
            for (cp q = s[f].a; q < s[f].b; q++)
                if (*q >= 0x80)
                    return 0;
    if (!typed(s))
        return 0;
    if (head && !(s[F_TS].a ? value(c, B_HEAD_TS, s[F_TS].a, s[F_TS].b)
                            : text_value(c, B_HEAD_TS, ZERO)))
        return 0;
    int is_x = 0;
    if (s[F_PH].a) {
        cp t;
        Py_ssize_t n;
        if (!plain_text(s[F_PH], &t, &n))
            return 0;  /* a phase that is no string, or one with an escape */
        if (must_have_ph && n == 0)
            return 0;
        is_x = n == 1 && *t == 'X';
    } else if (must_have_ph) {
        return 0;
    }
    int cat = is_x ? kept_category(s[F_CAT]) : 0;
    if (cat <= 0)
        return cat == 0;
    *kept = 1;
    if (cat == CAT_SYNC)
        return row(c, s);
    /* the columns: times as numbers, and the fields each kind reads, of the types the quick
     * path of kineto_scan.Columns takes; anything else is decoded the usual way */
    if (!number(s[F_TS]) || !number(s[F_DUR]))
        return 0;
    Span name = s[F_NAME].a ? s[F_NAME] : (Span){(cp)EMPTY, (cp)EMPTY + 2};
    Span corr = s[NF + A_CORR];
    if (cat < CAT_FIRST_CALL) {
        if (!s[F_ARGS].a || *s[F_ARGS].a != '{' || !integer(s[NF + A_DEVICE], 0) ||
            !integer(s[NF + A_STREAM], 1) || !integer(corr, 1))
            return 0;
        Py_ssize_t id = name_id(c, name);
        return id >= 0 && value(c, O_TS, s[F_TS].a, s[F_TS].b) &&
               value(c, O_DUR, s[F_DUR].a, s[F_DUR].b) &&
               value(c, O_DEV, s[NF + A_DEVICE].a, s[NF + A_DEVICE].b) &&
               value(c, O_STREAM, s[NF + A_STREAM].a, s[NF + A_STREAM].b) &&
               value(c, O_CORR, corr.a, corr.b) && id_value(c, O_NAME, id) &&
               id_value(c, O_CAT, cat);
    }
    int call = cat < CAT_FIRST_RANGE;
    if (call) {  /* a launch call: kept where it has a correlation */
        if (!corr.a || (corr.b - corr.a == 4 && memcmp(corr.a, "null", 4) == 0)) {
            *kept = 0;
            return 1;
        }
        if (!integer(corr, 1))
            return 0;
    }
    Span pid = s[F_PID].a ? s[F_PID] : (Span){(cp)ZERO, (cp)ZERO + 1};
    Span tid = s[F_TID].a ? s[F_TID] : (Span){(cp)ZERO, (cp)ZERO + 1};
    Py_ssize_t thread = thread_id(c, pid, tid, call);
    if (thread < 0)
        return 0;
    int ok = call ? value(c, C_TS, s[F_TS].a, s[F_TS].b) &&
                    value(c, C_DUR, s[F_DUR].a, s[F_DUR].b) &&
                    value(c, C_CORR, corr.a, corr.b) && id_value(c, C_THREAD, thread)
                  : value(c, R_TS, s[F_TS].a, s[F_TS].b) &&
                    value(c, R_DUR, s[F_DUR].a, s[F_DUR].b) &&
                    id_value(c, R_CAT, cat) && value(c, R_NAME, name.a, name.b) &&
                    id_value(c, R_THREAD, thread) && id_value(c, R_AT, c->hosts);
    c->hosts++;
    return ok;
}

/* An array of events (at its '['). */
static cp events(Cur *c, cp p, cp e, Py_ssize_t head, int first_is_event, Py_ssize_t *skipped) {
    Py_ssize_t i = 0;
    int more = 1;
    p = ws(p + 1, e);
    if (p < e && *p == ']')
        return first_is_event ? NULL : p + 1;
    while (more) {
        Span s[NF + NA];
        int kept;
        if (p >= e || *p != '{')
            return NULL;  /* an element that is no object */
        for (int f = 0; f < NF + NA; f++)
            s[f].a = NULL;  /* a field is there where its start is set; its end is read then */
        if (!(p = members(p, e, 0, s)) || !event(c, s, i < head, first_is_event && i == 0, &kept))
            return NULL;
        *skipped += !kept;
        i++;
        if (!(p = next(p, e, ']', &more)))
            return NULL;
    }
    return p;
}

/* A document: an object whose "traceEvents" (once, an array) is filtered; its other keys'
 * values are checked and passed over. */
static cp document(Cur *c, cp p, cp e, Py_ssize_t head, int first_is_event,
                   Py_ssize_t *skipped) {
    int found = 0, more = 1;
    if (p >= e || *p != '{')
        return NULL;
    p = ws(p + 1, e);
    if (p < e && *p == '}')
        return NULL;
    while (more) {
        cp k;
        Py_ssize_t n;
        if (!(p = read_key(p, e, &k, &n)))
            return NULL;
        if (n == 11 && memcmp(k, "traceEvents", 11) == 0) {
            if (found || p >= e || *p != '[')
                return NULL;
            found = 1;
            p = events(c, p, e, head, first_is_event, skipped);
        } else {
            p = skip_value(p, e);
        }
        if (!p || !(p = next(p, e, '}', &more)))
            return NULL;
    }
    return found ? p : NULL;
}

/* Each thread's first place among the host events as a call, written in thread order. */
static int first_calls(Cur *c) {
    for (size_t id = 0; id < c->threads.count; id++)
        if (!id_value(c, T_FIRST_CALL, c->first_call[id]))
            return 0;
    return 1;
}

static PyObject *keep(PyObject *self, PyObject *args) {
    Py_buffer buf;
    int doc, first_is_event, ok;
    Py_ssize_t head, skipped = 0;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*pnp", &buf, &doc, &head, &first_is_event))
        return NULL;
    Cur c;
    memset(&c, 0, sizeof c);
    cp p = (cp)buf.buf, e = (cp)buf.buf + buf.len;
    Py_BEGIN_ALLOW_THREADS
    p = ws(p, e);
    if (doc)
        p = document(&c, p, e, head, first_is_event, &skipped);
    else
        p = p < e && *p == '[' ? events(&c, p, e, head, first_is_event, &skipped) : NULL;
    ok = p && ws(p, e) == e;
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&buf);
    PyObject *got = NULL;
    if (c.oom) {
        PyErr_NoMemory();
    } else if (!ok) {
        got = Py_NewRef(Py_None);
    } else if (!first_calls(&c)) {
        if (c.oom)
            PyErr_NoMemory();
        else
            got = Py_NewRef(Py_None);
    } else {
        /* [[rows...],[o_ts...],...] */
        size_t total = 2;
        for (int k = 0; k < NB; k++)
            total += c.out[k].n + 3;
        PyObject *text = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)total);
        if (text) {
            char *o = PyBytes_AS_STRING(text);
            *o++ = '[';
            for (int k = 0; k < NB; k++) {
                if (k)
                    *o++ = ',';
                *o++ = '[';
                if (c.out[k].n)
                    memcpy(o, c.out[k].p, c.out[k].n);
                o += c.out[k].n;
                *o++ = ']';
            }
            *o++ = ']';
            if (_PyBytes_Resize(&text, o - PyBytes_AS_STRING(text)) == 0)
                got = Py_BuildValue("(Nn)", text, skipped);
        }
    }
    for (int k = 0; k < NB; k++)
        PyMem_RawFree(c.out[k].p);
    PyMem_RawFree(c.names.slots);
    PyMem_RawFree(c.threads.slots);
    PyMem_RawFree(c.first_call);
    return got;
}

static PyMethodDef methods[] = {
    {"keep", keep, METH_VARARGS, "The needed events of a piece of Kineto JSON, or None."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_kfilter", NULL, -1, methods,
                                    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__kfilter(void) {
    PyObject *m = PyModule_Create(&module);
    if (!m)
        return NULL;
    Py_ssize_t n = 0;
    while (KEPT_CATS[n]) {
        KEPT_LEN[n] = (Py_ssize_t)strlen(KEPT_CATS[n]);
        n++;
    }
    PyObject *cats = PyTuple_New(n);
    if (!cats) {
        Py_DECREF(m);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *s = PyUnicode_FromString(KEPT_CATS[i]);
        if (!s) {
            Py_DECREF(cats);
            Py_DECREF(m);
            return NULL;
        }
        PyTuple_SET_ITEM(cats, i, s);
    }
    if (PyModule_AddObject(m, "CATEGORIES", cats) < 0) {
        Py_DECREF(cats);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
