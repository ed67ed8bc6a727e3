/* Helpers shared by the data-format modules core/json.c, core/json_read.c, core/json_text.c,
 * core/yaml.c and core/yaml_dump.c; defined in core/encode.c unless noted. Internal, not
 * installed. */
#pragma once

#include <stdint.h>
#include <string.h>

#include "internal.h"

/* Nesting limit of the JSON and YAML readers and writers. */
#define WB_MAX_NESTING 1000

/* A growable output buffer. With a Lua state (wb_buf_new) the buffer belongs to a userdata whose
 * __gc frees the memory if an error unwinds, and running out of memory raises "not enough
 * memory". Without one (wb_buf_init(b, NULL), for the Lua-free C API) running out of memory
 * sets `failed` and later writes are dropped; the owner frees `data`. A buffer given a file
 * descriptor (wb_buf_to_fd) writes its contents there whenever it fills, so its memory stays
 * bounded; a failed write sets `failed` and `werr` (the errno) and later writes are dropped. */
typedef struct wb_buf {
  char *data;
  size_t len, cap;
  lua_State *L;
  int failed;
  int fd, werr;
} wb_buf;

/* Pushes the owning userdata and returns its initialised buffer. */
wb_buf *wb_buf_new(lua_State *L);
void wb_buf_init(wb_buf *b, lua_State *L);
/* Makes room for extra more bytes; returns 0, or -1 when memory ran out (Lua-free buffers). */
int wb_buf_reserve(wb_buf *b, size_t extra);

static inline void wb_buf_add(wb_buf *b, const char *s, size_t n) {
  if (b->failed || (b->cap - b->len < n && wb_buf_reserve(b, n))) return;
  memcpy(b->data + b->len, s, n);
  b->len += n;
}

static inline void wb_buf_addc(wb_buf *b, char c) {
  if (b->failed || (b->len == b->cap && wb_buf_reserve(b, 1))) return;
  b->data[b->len++] = c;
}

#define wb_buf_lit(b, s) wb_buf_add((b), "" s, sizeof(s) - 1)

/* Streams the buffer to fd from now on (see wb_buf). */
void wb_buf_to_fd(wb_buf *b, int fd);
/* Writes what the buffer holds to its descriptor; returns 0 or the errno of a failed write. */
int wb_buf_flush(wb_buf *b);

/* Appends n spaces. */
void wb_buf_spaces(wb_buf *b, size_t n);

/* Pushes the buffer's contents as a Lua string and releases its memory. */
void wb_buf_push_result(lua_State *L, wb_buf *b);

/* How the table at index t encodes. Returns n >= 0 when it is an array of n items (a "wb.array"
 * table: 1..#t; or keys exactly 1..n with n >= 1). Otherwise returns -1 and pushes its keys as a
 * sequence, in output order: ordered tables in insertion order, others sorted (booleans, then
 * numbers ascending, then strings bytewise, then any other keys). */
lua_Integer wb_table_layout(lua_State *L, int t);

/* Pushes the keys of the table at index t as a sequence, sorted as wb_table_layout describes. */
void wb_sorted_keys(lua_State *L, int t);

/* An encoder entering the table at idx, with path[0..*depth) the tables it is inside: raises
 * "<format>: cycle" when the table is among them and "<format>: nesting too deep" past
 * WB_MAX_NESTING; else makes stack room for the level and appends the table to path. */
void wb_enter_table(lua_State *L, int idx, const void **path, int *depth, const char *format);

/* Writes the shortest %.15g..%.17g form of d that reads back exactly, with ".0" appended when it
 * would otherwise read as an integer; "nan", "inf", "-inf" for the non-finite values. buf must
 * hold 32 bytes. Returns the length. */
int wb_format_float(char *buf, double d);

/* ---- JSON text (core/json_read.c, core/json_text.c; Lua-free, so the C API runs inside any
 * host) ---- */

enum wb_json_kind { WB_JSON_NULL, WB_JSON_BOOL, WB_JSON_INT, WB_JSON_FLOAT, WB_JSON_STRING };

/* A scalar. BOOL and INT use i, FLOAT d, STRING s[0..n) (decoded; it may hold NUL bytes and is
 * valid only during the callback). */
struct wb_json_scalar {
  enum wb_json_kind kind;
  int64_t i;
  double d;
  const char *s;
  size_t n;
};

/* The reader's events, in document order. A key (an object member's name, a STRING) precedes
 * each member value. */
struct wb_json_sink {
  void (*scalar)(void *ctx, const struct wb_json_scalar *v);
  /* returns 0, or nonzero when the object already has the key (the parse fails there) */
  int (*key)(void *ctx, const struct wb_json_scalar *k);
  void (*open)(void *ctx, int object);
  void (*close)(void *ctx, int object);
  /* optional (NULL): text[0..offset) will not be read again; called between members */
  void (*consumed)(void *ctx, size_t offset);
};

/* Reads text[0..len) (RFC 8259, an optional UTF-8 BOM, nesting up to WB_MAX_NESTING) through
 * cJSON and feeds the sink; a key the sink reports as repeated in its object is an error
 * ("duplicate key"). Integral numbers without fraction or exponent and |v| <= 2^53 are INT,
 * other numbers FLOAT. Returns 0, or -1 with err set to "json: line L col C: what" (1-based,
 * bytes) at the first error in the text. *held is the cJSON tree being read (NULL before and
 * after): a sink callback that raises (longjmps) past the reader leaves it to the caller, who
 * releases it with wb_json_release. */
int wb_json_parse(const char *text, size_t len, const struct wb_json_sink *sink, void *ctx,
                  void **held, char *err, size_t errlen);

/* Releases *held (a tree wb_json_parse left there) and sets it to NULL. */
void wb_json_release(void **held);

/* Writers of the canonical form shared by wb.json.encode and wb_json_reformat: a quoted,
 * escaped string; an integer; a float (quoted: as an object key; unquoted non-finite: null);
 * with pretty, a newline and depth * indent spaces. */
void wb_json_write_string(wb_buf *b, const char *s, size_t n);
void wb_json_write_int(wb_buf *b, int64_t i, int quoted);
void wb_json_write_float(wb_buf *b, double d, int quoted);
void wb_json_newline(wb_buf *b, int pretty, int indent, int depth);

/* ---- YAML ---- */

/* Whether the YAML plain scalar s reads as a string under the core schema (core/yaml.c). */
int wb_yaml_plain_is_string(const char *s, size_t n);

/* -- s = wb.yaml.dump(v) (core/yaml_dump.c) */
int wb_yaml_dump(lua_State *L);
