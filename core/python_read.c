/* Reading CPython 3.11+ processes from outside (see core/python.h): nothing is injected and the
 * target is never stopped; every read is process_vm_readv.
 *
 * The interpreter's state is found through its exported symbols (_PyRuntime, Py_Version,
 * PyCode_Type) in the python3.X executable or libpython3.X.so of the process's mappings, and
 * walked with the struct offsets of its minor version: runtime -> interpreters -> thread states
 * -> the chain of _PyInterpreterFrame -> code objects (qualified name, file name, line table).
 * The offsets are facts per CPython version: 3.11 and 3.12 are tables here (tests/lua/
 * python_test.lua checks them against the installed headers), 3.13's are read from the
 * _Py_DebugOffsets the runtime publishes for such tools (its layout is 3.13's: later minors are
 * refused). Every pointer read is checked (a code
 * object must have PyCode_Type as its type), so a torn read while the target runs gives a
 * shorter stack or an unknown frame, never garbage. A frame's line is the one of the
 * instruction it executes, from the code object's co_linetable (the format of CPython's
 * Objects/locations.md, the same in 3.11 to 3.13). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "fs_guard.h"
#include "python.h"

/* ---- layouts ---------------------------------------------------------------------------- */

typedef struct layout {
  int minor;
  uint64_t runtime_interpreters_head, interp_next, interp_threads_head;
  uint64_t tstate_next, tstate_native_thread_id;
  uint64_t tstate_cframe;        /* 3.11, 3.12: tstate->cframe->current_frame */
  uint64_t cframe_current_frame;
  uint64_t tstate_current_frame; /* 3.13+: tstate->current_frame (when tstate_cframe is 0) */
  uint64_t frame_previous, frame_code, frame_instr, frame_owner;
  int frame_is_entry; /* 3.11's is_entry; -1 after */
  int owner_cstack;   /* owner value of the C-stack shim frames (3.12+); -1 when there are none */
  uint64_t code_filename, code_qualname, code_firstlineno, code_linetable, code_adaptive;
  uint64_t ob_type; /* PyObject.ob_type */
  uint64_t bytes_size, bytes_sval;
  uint64_t unicode_length, unicode_state, ascii_size, compact_size;
  uint64_t runtime_gil;    /* 3.11: the GIL inside _PyRuntime (0: not there) */
  uint64_t interp_gil_ptr; /* 3.12+: the pointer to it in the interpreter state */
} layout;

#define GIL_SIZE 208 /* sizeof(struct _gil_runtime_state), 3.11 to 3.13 */

static const layout LAYOUT_311 = {
    .minor = 11, .runtime_interpreters_head = 40, .interp_next = 0, .interp_threads_head = 16,
    .tstate_next = 8, .tstate_native_thread_id = 160, .tstate_cframe = 56, .cframe_current_frame = 8,
    .frame_previous = 48, .frame_code = 32, .frame_instr = 56, .frame_owner = 69, .frame_is_entry = 68,
    .owner_cstack = -1, .code_filename = 112, .code_qualname = 128, .code_firstlineno = 72,
    .code_linetable = 136, .code_adaptive = 184, .ob_type = 8, .bytes_size = 16, .bytes_sval = 32,
    .unicode_length = 16, .unicode_state = 32, .ascii_size = 48, .compact_size = 72, .runtime_gil = 360};

static const layout LAYOUT_312 = {
    .minor = 12, .runtime_interpreters_head = 40, .interp_next = 0, .interp_threads_head = 72,
    .tstate_next = 8, .tstate_native_thread_id = 144, .tstate_cframe = 56, .cframe_current_frame = 0,
    .frame_previous = 8, .frame_code = 0, .frame_instr = 56, .frame_owner = 70, .frame_is_entry = -1,
    .owner_cstack = 3, .code_filename = 112, .code_qualname = 128, .code_firstlineno = 68,
    .code_linetable = 136, .code_adaptive = 192, .ob_type = 8, .bytes_size = 16, .bytes_sval = 32,
    .unicode_length = 16, .unicode_state = 32, .ascii_size = 40, .compact_size = 56, .interp_gil_ptr = 384};

/* Positions of the fields wb uses inside _Py_DebugOffsets (version 3.13; the struct is
 * versioned: its layout is the one of the interpreter's own minor version). */
enum {
  DBG_FREE_THREADED = 16, DBG_RUNTIME_INTERPRETERS_HEAD = 40, DBG_INTERP_NEXT = 64, DBG_INTERP_THREADS_HEAD = 72,
  DBG_INTERP_CEVAL_GIL = 112, DBG_TSTATE_NEXT = 168, DBG_TSTATE_CURRENT_FRAME = 184,
  DBG_TSTATE_NATIVE_THREAD_ID = 200, DBG_FRAME_PREVIOUS = 232, DBG_FRAME_EXECUTABLE = 240,
  DBG_FRAME_INSTR_PTR = 248, DBG_FRAME_OWNER = 264, DBG_CODE_FILENAME = 280, DBG_CODE_QUALNAME = 296,
  DBG_CODE_LINETABLE = 304, DBG_CODE_FIRSTLINENO = 312, DBG_CODE_ADAPTIVE = 344, DBG_BYTES_OB_SIZE = 520,
  DBG_BYTES_SVAL = 528, DBG_UNICODE_STATE = 544, DBG_UNICODE_LENGTH = 552, DBG_UNICODE_ASCII_SIZE = 560,
  DBG_SIZE = 568
};

#define WB_PY_RETRIES 64 /* looks at a process whose image was caught mid-exec (python_start polls,
                          * then once per drain: seconds) */

/* ---- reading another process -------------------------------------------------------- */

static int peek(pid_t pid, uint64_t addr, void *out, size_t n) {
  struct iovec local = {out, n}, remote = {(void *)(uintptr_t)addr, n};
  return addr != 0 && process_vm_readv(pid, &local, 1, &remote, 1, 0) == (ssize_t)n ? 0 : -1;
}

static int peek_u64(pid_t pid, uint64_t addr, uint64_t *out) { return peek(pid, addr, out, 8); }


/* ---- finding the interpreter ---------------------------------------------------------- */

/* A code object seen: what its labels were made from (checked on a hit: a freed code object's
 * address is reused), its line table as ranges of code units, the label id of each range (0:
 * not made yet) and of the function without a line. */
typedef struct code_entry {
  uint64_t addr; /* 0: an empty slot */
  uint64_t qual, file, linetable;
  int32_t first;
  char *name; /* "qualname (file" */
  uint32_t nranges;
  uint32_t *end; /* the code unit each range ends before */
  int32_t *line; /* -1: no line */
  uint32_t *ids;
  uint32_t id_first; /* the label with the first line: an offset outside the table */
} code_entry;

struct wb_pyproc {
  pid_t pid;
  layout lay;
  uint64_t runtime, code_type, gil;
  char binary[256];
  char version[16];
  code_entry *codes; /* open addressing by address */
  size_t ncodes, capcodes;
};

/* The load bias of the mapping of path in pid's maps (start - offset of the mapping at file
 * offset 0), or 0 with *found = 0. */
static uint64_t load_bias(pid_t pid, const char *path, int *found) {
  char maps[64], line[4096];
  snprintf(maps, sizeof maps, "/proc/%d/maps", (int)pid);
  FILE *f = fopen(maps, "re");
  *found = 0;
  if (!f) return 0;
  uint64_t bias = 0;
  while (fgets(line, sizeof line, f)) {
    unsigned long long start, end, off;
    int at = 0;
    if (sscanf(line, "%llx-%llx %*4s %llx %*s %*s %n", &start, &end, &off, &at) < 3 || !at) continue;
    char *p = line + at;
    p[strcspn(p, "\n")] = 0;
    if (strcmp(p, path) == 0 && off == 0) {
      bias = start, *found = 1;
      break;
    }
  }
  fclose(f);
  return bias;
}

/* The path of the CPython image (python3.X executable or libpython3.X.so) mapped in pid, or
 * "" when there is none. */
static void python_image(pid_t pid, char *out, size_t outlen) {
  char maps[64], line[4096];
  snprintf(maps, sizeof maps, "/proc/%d/maps", (int)pid);
  out[0] = 0;
  FILE *f = fopen(maps, "re");
  if (!f) return;
  while (fgets(line, sizeof line, f)) {
    char *p = strchr(line, '/');
    if (!p) continue;
    p[strcspn(p, "\n")] = 0;
    const char *base = strrchr(p, '/') + 1;
    if (strncmp(base, "libpython3.", 11) == 0) { /* a shared libpython beats the executable */
      snprintf(out, outlen, "%s", p);
      break;
    }
    if (!out[0] && strncmp(base, "python3", 7) == 0) snprintf(out, outlen, "%s", p);
  }
  fclose(f);
}

/* Looks up the data symbols wb needs in the ELF file at path (.dynsym, then .symtab): their
 * ELF virtual addresses, 0 when absent. Returns -1 when the file cannot be read. The ELF
 * vaddr of file offset 0 goes to *base (to turn vaddrs into addresses with the load bias). */
static int elf_symbols(const char *path, uint64_t *runtime, uint64_t *version, uint64_t *code_type,
                       uint64_t *base) {
  *runtime = *version = *code_type = 0, *base = 0;
  int fd = wb_open_foreign(path);
  if (fd < 0) return -1;
  elf_version(EV_CURRENT);
  Elf *e = elf_begin(fd, ELF_C_READ, NULL);
  if (!e) {
    close(fd);
    return -1;
  }
  size_t nph = 0;
  elf_getphdrnum(e, &nph);
  for (size_t i = 0; i < nph; i++) {
    GElf_Phdr ph;
    if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD && ph.p_offset == 0) {
      *base = ph.p_vaddr;
      break;
    }
  }
  for (int pass = 0; pass < 2 && !(*runtime && *version && *code_type); pass++) {
    Elf_Scn *scn = NULL;
    while ((scn = elf_nextscn(e, scn))) {
      GElf_Shdr sh;
      if (!gelf_getshdr(scn, &sh) || sh.sh_type != (pass == 0 ? SHT_DYNSYM : SHT_SYMTAB)) continue;
      Elf_Data *d = elf_getdata(scn, NULL);
      size_t n = sh.sh_entsize ? sh.sh_size / sh.sh_entsize : 0;
      for (size_t i = 0; d && i < n; i++) {
        GElf_Sym s;
        if (!gelf_getsym(d, (int)i, &s) || s.st_shndx == SHN_UNDEF || !s.st_value) continue;
        const char *name = elf_strptr(e, sh.sh_link, s.st_name);
        if (!name || (name[0] != '_' && name[0] != 'P')) continue;
        if (!*runtime && strcmp(name, "_PyRuntime") == 0) *runtime = s.st_value;
        else if (!*version && strcmp(name, "Py_Version") == 0) *version = s.st_value;
        else if (!*code_type && strcmp(name, "PyCode_Type") == 0) *code_type = s.st_value;
      }
    }
  }
  elf_end(e);
  close(fd);
  return 0;
}


/* Reads the offsets of a 3.13+ runtime from its _Py_DebugOffsets (at the start of _PyRuntime). */
static int debug_offsets(wb_pyproc *p, int minor) {
  unsigned char d[DBG_SIZE];
  if (peek(p->pid, p->runtime, d, sizeof d) != 0 || memcmp(d, "xdebugpy", 8) != 0) return -1;
#define U64(off) (*(const uint64_t *)(const void *)(d + (off)))
  if (U64(DBG_FREE_THREADED)) return -1; /* another object layout (3.13t) */
  layout *l = &p->lay;
  memset(l, 0, sizeof *l);
  l->minor = minor;
  l->runtime_interpreters_head = U64(DBG_RUNTIME_INTERPRETERS_HEAD);
  l->interp_next = U64(DBG_INTERP_NEXT);
  l->interp_threads_head = U64(DBG_INTERP_THREADS_HEAD);
  l->interp_gil_ptr = U64(DBG_INTERP_CEVAL_GIL);
  l->tstate_next = U64(DBG_TSTATE_NEXT);
  l->tstate_current_frame = U64(DBG_TSTATE_CURRENT_FRAME);
  l->tstate_native_thread_id = U64(DBG_TSTATE_NATIVE_THREAD_ID);
  l->frame_previous = U64(DBG_FRAME_PREVIOUS);
  l->frame_code = U64(DBG_FRAME_EXECUTABLE);
  l->frame_instr = U64(DBG_FRAME_INSTR_PTR);
  l->frame_owner = U64(DBG_FRAME_OWNER);
  l->frame_is_entry = -1;
  l->owner_cstack = 3;
  l->code_filename = U64(DBG_CODE_FILENAME);
  l->code_qualname = U64(DBG_CODE_QUALNAME);
  l->code_firstlineno = U64(DBG_CODE_FIRSTLINENO);
  l->code_linetable = U64(DBG_CODE_LINETABLE);
  l->code_adaptive = U64(DBG_CODE_ADAPTIVE);
  l->ob_type = 8;
  l->bytes_size = U64(DBG_BYTES_OB_SIZE);
  l->bytes_sval = U64(DBG_BYTES_SVAL);
  l->unicode_state = U64(DBG_UNICODE_STATE);
  l->unicode_length = U64(DBG_UNICODE_LENGTH);
  l->ascii_size = U64(DBG_UNICODE_ASCII_SIZE);
  l->compact_size = l->ascii_size + 16; /* utf8_length, utf8 */
#undef U64
  /* the frame fields the BPF program reads must lie in its WB_PY_FRAME_READ bytes */
  uint64_t far = l->frame_previous > l->frame_code ? l->frame_previous : l->frame_code;
  if (l->frame_instr > far) far = l->frame_instr;
  return far + 8 <= WB_PY_FRAME_READ && l->frame_owner < WB_PY_FRAME_READ ? 0 : -1;
}

/* Fills p for pid; returns 0, or -1 with why set. */
/* Attaches p to pid: 0, or -1 with why; *transient when the failure may pass (an image read while
 * its exec is still mapping it). */
static int py_attach(wb_pyproc *p, pid_t pid, char *why, size_t whylen, int *transient) {
  *transient = 0;
  memset(p, 0, sizeof *p);
  p->pid = pid;
  python_image(pid, p->binary, sizeof p->binary);
  if (!p->binary[0]) {
    snprintf(why, whylen, "no CPython image (python3.X or libpython3.X.so) in its mappings");
    return -1;
  }
  uint64_t runtime, version, code_type, base;
  if (elf_symbols(p->binary, &runtime, &version, &code_type, &base) != 0) {
    snprintf(why, whylen, "%s: cannot be read", p->binary);
    return -1;
  }
  if (!runtime || !code_type) {
    snprintf(why, whylen, "%s has no _PyRuntime or PyCode_Type symbol (stripped?)", p->binary);
    return -1;
  }
  int found;
  uint64_t bias = load_bias(pid, p->binary, &found) - base;
  if (!found) {
    snprintf(why, whylen, "%s: not mapped at offset 0", p->binary);
    *transient = 1;
    return -1;
  }
  p->runtime = runtime + bias, p->code_type = code_type + bias;
  uint64_t hex = 0;
  if (!version || peek_u64(pid, version + bias, &hex) != 0 || (hex >> 24) != 3) {
    snprintf(why, whylen, "%s: no readable Py_Version (CPython before 3.11?)", p->binary);
    *transient = version != 0;
    return -1;
  }
  int minor = (int)((hex >> 16) & 0xff);
  snprintf(p->version, sizeof p->version, "3.%d.%d", minor, (int)((hex >> 8) & 0xff));
  if (minor == 11) p->lay = LAYOUT_311;
  else if (minor == 12) p->lay = LAYOUT_312;
  else if (minor != 13 || debug_offsets(p, minor) != 0) { /* the positions below are 3.13's */
    snprintf(why, whylen, "CPython %s is not supported (3.11, 3.12 and 3.13 are)", p->version);
    return -1;
  }
  return 0;
}

static void py_release(wb_pyproc *p) {
  for (size_t i = 0; i < p->capcodes; i++) {
    code_entry *c = &p->codes[i];
    free(c->name), free(c->end), free(c->line), free(c->ids);
  }
  free(p->codes);
  p->codes = NULL, p->ncodes = p->capcodes = 0;
}

int wb_py_probe(pid_t pid, char *version, size_t vlen, char *binary, size_t blen, char *why, size_t whylen) {
  wb_pyproc p;
  int transient;
  if (py_attach(&p, pid, why, whylen, &transient) != 0) return -1;
  snprintf(version, vlen, "%s", p.version);
  snprintf(binary, blen, "%s", p.binary);
  return 0;
}

/* Reads a str object as UTF-8 into out (at most outlen - 1 bytes); -1 when it is not one wb can
 * read (not compact, or torn). */
static int read_str(const wb_pyproc *p, uint64_t obj, char *out, size_t outlen) {
  const layout *l = &p->lay;
  int64_t length;
  uint32_t state;
  if (peek(p->pid, obj + l->unicode_length, &length, 8) || peek(p->pid, obj + l->unicode_state, &state, 4))
    return -1;
  unsigned kind = (state >> 2) & 7, compact = (state >> 5) & 1, ascii = (state >> 6) & 1;
  if (!compact || length < 0 || length > 4096 || (kind != 1 && kind != 2 && kind != 4)) return -1;
  unsigned char raw[4096 * 4];
  size_t n = (size_t)length * kind;
  if (peek(p->pid, obj + (ascii ? l->ascii_size : l->compact_size), raw, n)) return -1;
  size_t o = 0;
  for (size_t i = 0; i < (size_t)length; i++) {
    uint32_t c = kind == 1 ? raw[i] : kind == 2 ? ((uint16_t *)(void *)raw)[i] : ((uint32_t *)(void *)raw)[i];
    char b[4];
    size_t k = c < 0x80 ? (b[0] = (char)c, 1)
             : c < 0x800 ? (b[0] = (char)(0xc0 | c >> 6), b[1] = (char)(0x80 | (c & 0x3f)), 2)
             : c < 0x10000 ? (b[0] = (char)(0xe0 | c >> 12), b[1] = (char)(0x80 | ((c >> 6) & 0x3f)),
                              b[2] = (char)(0x80 | (c & 0x3f)), 3)
             : (b[0] = (char)(0xf0 | c >> 18), b[1] = (char)(0x80 | ((c >> 12) & 0x3f)),
                b[2] = (char)(0x80 | ((c >> 6) & 0x3f)), b[3] = (char)(0x80 | (c & 0x3f)), 4);
    if (o + k >= outlen) break;
    memcpy(out + o, b, k);
    o += k;
  }
  out[o] = 0;
  return 0;
}


/* ---- code objects and lines ------------------------------------------------------------ */

struct wb_pyres {
  wb_pyproc *procs[WB_PY_MAX_PROCS];
  int nprocs;
  pid_t skipped[WB_PY_MAX_PROCS];   /* processes looked at that are not (readable) CPython ... */
  char skipped_image[WB_PY_MAX_PROCS][256]; /* ... with this CPython image, or none ("": looked at
                                        again when it maps one, after an exec or once ld.so maps libpython) */
  char skipped_why[WB_PY_MAX_PROCS][WB_PY_WHY_LEN];
  int skipped_tries[WB_PY_MAX_PROCS]; /* transient failures so far */
  int nskipped;
  char **texts; /* label id - 1 -> text */
  uint32_t ntexts, captexts;
  uint32_t *slots; /* open addressing over texts: id, 0 empty */
  size_t nslots;
};

static uint64_t hash_str(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

/* The id of text, interned; 0 out of memory. */
static uint32_t intern(wb_pyres *r, const char *text) {
  if ((r->ntexts + 1) * 2 > r->nslots) {
    size_t n = r->nslots ? r->nslots * 2 : 1024;
    uint32_t *slots = calloc(n, sizeof *slots);
    if (!slots) return 0;
    for (uint32_t id = 1; id <= r->ntexts; id++) {
      size_t j = hash_str(r->texts[id - 1]) & (n - 1);
      while (slots[j]) j = (j + 1) & (n - 1);
      slots[j] = id;
    }
    free(r->slots);
    r->slots = slots, r->nslots = n;
  }
  size_t j = hash_str(text) & (r->nslots - 1);
  for (; r->slots[j]; j = (j + 1) & (r->nslots - 1))
    if (strcmp(r->texts[r->slots[j] - 1], text) == 0) return r->slots[j];
  if (r->ntexts == r->captexts) {
    uint32_t cap = r->captexts ? r->captexts * 2 : 256;
    char **t = realloc(r->texts, cap * sizeof *t);
    if (!t) return 0;
    r->texts = t, r->captexts = cap;
  }
  if (!(r->texts[r->ntexts] = strdup(text))) return 0;
  r->slots[j] = ++r->ntexts;
  return r->ntexts;
}

const char *wb_pyres_text(const wb_pyres *r, uint32_t id) {
  return id >= 1 && id <= r->ntexts ? r->texts[id - 1] : WB_PY_UNKNOWN;
}

static unsigned varint(const uint8_t *t, size_t n, size_t *at) {
  unsigned v = 0, shift = 0;
  uint8_t b;
  do {
    if (*at >= n) return v;
    b = t[(*at)++];
    v |= (unsigned)(b & 63) << shift;
    shift += 6;
  } while ((b & 64) && shift < 30);
  return v;
}

static int svarint(const uint8_t *t, size_t n, size_t *at) {
  unsigned u = varint(t, n, at);
  return u & 1 ? -(int)(u >> 1) : (int)(u >> 1);
}

/* Parses a co_linetable (CPython's Objects/locations.md) into c's ranges; 0, or -1. Each entry: a
 * byte with bit 7 set, its code (bits 3-6) and its length in code units (bits 0-2, + 1): code 15
 * no location, 14 long form (line delta, end line delta, columns), 13 no columns (line delta),
 * 10-12 one line (delta code - 10, two column bytes), 0-9 short form (same line, one byte). */
static int parse_lines(code_entry *c, const uint8_t *t, size_t n) {
  uint32_t cap = 0, addr = 0;
  int line = c->first;
  for (size_t at = 0; at < n;) {
    uint8_t b = t[at++];
    if (!(b & 0x80)) return -1;
    int code = (b >> 3) & 15, delta = 0, none = 0;
    uint32_t len = (b & 7) + 1u;
    if (code == 15) none = 1;
    else if (code == 14) {
      delta = svarint(t, n, &at);
      varint(t, n, &at), varint(t, n, &at), varint(t, n, &at);
    } else if (code == 13) delta = svarint(t, n, &at);
    else if (code >= 10) delta = code - 10, at += 2;
    else at += 1;
    line += delta;
    if (c->nranges == cap) {
      cap = cap ? cap * 2 : 32;
      uint32_t *e = realloc(c->end, cap * sizeof *e);
      if (e) c->end = e;
      int32_t *l = e ? realloc(c->line, cap * sizeof *l) : NULL;
      if (l) c->line = l;
      uint32_t *ids = l ? realloc(c->ids, cap * sizeof *ids) : NULL;
      if (!ids) return -1;
      c->ids = ids;
    }
    addr += len;
    c->end[c->nranges] = addr, c->line[c->nranges] = none ? -1 : line, c->ids[c->nranges] = 0;
    c->nranges++;
  }
  return 0;
}

/* Doubles p's code table; 0, or -1 out of memory. */
static int codes_grow(wb_pyproc *p) {
  size_t cap = p->capcodes ? p->capcodes * 2 : 1024;
  code_entry *t = calloc(cap, sizeof *t);
  if (!t) return -1;
  for (size_t i = 0; i < p->capcodes; i++) {
    if (!p->codes[i].addr) continue;
    size_t j = (size_t)((p->codes[i].addr >> 4) * 0x9e3779b97f4a7c15ull) & (cap - 1);
    while (t[j].addr) j = (j + 1) & (cap - 1);
    t[j] = p->codes[i];
  }
  free(p->codes);
  p->codes = t, p->capcodes = cap;
  return 0;
}

/* The slot of obj in p's code table: its entry, or the free slot it would take. */
static code_entry *code_slot(wb_pyproc *p, uint64_t obj) {
  size_t slot = (size_t)((obj >> 4) * 0x9e3779b97f4a7c15ull) & (p->capcodes - 1);
  while (p->codes[slot].addr && p->codes[slot].addr != obj) slot = (slot + 1) & (p->capcodes - 1);
  return &p->codes[slot];
}

/* The entry of code object obj, read when new or when its address now holds another code object;
 * NULL when obj is no code object, or when `sampled` (co_qualname as read at the sample; 0: not
 * read) is not what obj holds now: the object sampled was freed and another made at its address
 * before this read, and must not be named after it. After the process is gone, the entry seen
 * last is trusted. */
static code_entry *code_of(wb_pyres *r, wb_pyproc *p, uint64_t obj, uint64_t sampled) {
  const layout *l = &p->lay;
  if (p->ncodes * 2 >= p->capcodes && codes_grow(p) != 0) return NULL;
  code_entry *c = code_slot(p, obj);
  uint64_t span = l->code_qualname;
  if (l->code_filename > span) span = l->code_filename;
  if (l->code_linetable > span) span = l->code_linetable;
  if (l->code_firstlineno > span) span = l->code_firstlineno;
  unsigned char head[512];
  if (span + 8 > sizeof head || peek(p->pid, obj, head, span + 8))
    return c->addr && (!sampled || c->qual == sampled) ? c : NULL;
  uint64_t type = *(uint64_t *)(void *)(head + l->ob_type);
  if (type != p->code_type) return NULL;
  uint64_t qual = *(uint64_t *)(void *)(head + l->code_qualname);
  if (sampled && qual != sampled) return NULL;
  uint64_t file = *(uint64_t *)(void *)(head + l->code_filename);
  uint64_t table = *(uint64_t *)(void *)(head + l->code_linetable);
  int32_t first = *(int32_t *)(void *)(head + l->code_firstlineno);
  if (c->addr && c->qual == qual && c->file == file && c->linetable == table && c->first == first) return c;
  /* a new code object, or another one at a freed one's address */
  char qn[WB_PY_NAME_MAX], fn[WB_PY_NAME_MAX];
  if (read_str(p, qual, qn, sizeof qn) || read_str(p, file, fn, sizeof fn)) return NULL;
  const char *base = strrchr(fn, '/');
  char name[2 * WB_PY_NAME_MAX + 8], label[sizeof name + 16];
  snprintf(name, sizeof name, "%s (%s", qn, base ? base + 1 : fn);
  for (char *s = name; *s; s++) /* ';' separates folded frames */
    if (*s == ';') *s = ',';
  snprintf(label, sizeof label, "%s:%d)", name, (int)first);
  uint32_t id_first = intern(r, label);
  char *copy = strdup(name);
  if (!copy || !id_first) {
    free(copy);
    return NULL;
  }
  if (c->addr) free(c->name), free(c->end), free(c->line), free(c->ids);
  else p->ncodes++;
  *c = (code_entry){.addr = obj, .qual = qual, .file = file, .linetable = table, .first = first, .name = copy,
                    .id_first = id_first};
  int64_t size = 0;
  uint8_t *bytes = NULL;
  if (peek(p->pid, table + l->bytes_size, &size, 8) == 0 && size > 0 && size <= 65536 && (bytes = malloc((size_t)size)) &&
      peek(p->pid, table + l->bytes_sval, bytes, (size_t)size) == 0 && parse_lines(c, bytes, (size_t)size) != 0)
    c->nranges = 0;
  free(bytes);
  return c;
}

void wb_pyres_prime(wb_pyres *r, wb_pyproc *p, uint64_t code, uint64_t qual) {
  if (!p->capcodes || !code_slot(p, code)->addr) code_of(r, p, code, qual);
}

uint32_t wb_pyres_label(wb_pyres *r, wb_pyproc *p, uint64_t code, uint64_t instr, uint64_t qual) {
  code_entry *c = code_of(r, p, code, qual);
  if (!c) return intern(r, WB_PY_UNKNOWN);
  uint64_t start = code + p->lay.code_adaptive;
  if (instr < start || c->nranges == 0) return c->id_first;
  uint64_t unit = (instr - start) / 2;
  uint32_t lo = 0, hi = c->nranges;
  while (lo < hi) { /* the first range that ends after unit */
    uint32_t mid = (lo + hi) / 2;
    if (c->end[mid] <= unit) lo = mid + 1;
    else hi = mid;
  }
  if (lo == c->nranges || c->line[lo] < 0) return c->id_first;
  if (!c->ids[lo]) {
    char label[2 * WB_PY_NAME_MAX + 32];
    snprintf(label, sizeof label, "%s:%d)", c->name, (int)c->line[lo]);
    c->ids[lo] = intern(r, label);
  }
  return c->ids[lo] ? c->ids[lo] : c->id_first;
}

/* ---- processes ------------------------------------------------------------------------- */

wb_pyres *wb_pyres_new(void) { return calloc(1, sizeof(wb_pyres)); }

void wb_pyres_free(wb_pyres *r) {
  if (!r) return;
  for (int i = 0; i < r->nprocs; i++) {
    py_release(r->procs[i]);
    free(r->procs[i]);
  }
  for (uint32_t i = 0; i < r->ntexts; i++) free(r->texts[i]);
  free(r->texts);
  free(r->slots);
  free(r);
}

wb_pyproc *wb_pyres_attach(wb_pyres *r, pid_t pid) {
  for (int i = 0; i < r->nprocs; i++)
    if (r->procs[i]->pid == pid) return r->procs[i];
  char image[256];
  python_image(pid, image, sizeof image);
  int slot = -1;
  for (int i = 0; i < r->nskipped; i++) {
    if (r->skipped[i] != pid) continue;
    /* the same image, or none now (gone): what was seen stands */
    if (strcmp(r->skipped_image[i], image) == 0 || !image[0]) return NULL;
    slot = i;
  }
  char why[WB_PY_WHY_LEN] = "out of memory";
  int transient = 0;
  wb_pyproc *p = r->nprocs < WB_PY_MAX_PROCS ? malloc(sizeof *p) : NULL;
  if (p && py_attach(p, pid, why, sizeof why, &transient) == 0) {
    r->procs[r->nprocs++] = p;
    if (slot >= 0) r->skipped[slot] = 0; /* no longer skipped */
    return p;
  }
  free(p);
  if (r->nprocs >= WB_PY_MAX_PROCS) snprintf(why, sizeof why, "more than %d Python processes", WB_PY_MAX_PROCS);
  if (slot < 0 && r->nskipped < WB_PY_MAX_PROCS) slot = r->nskipped++;
  if (slot < 0) return NULL;
  r->skipped[slot] = pid;
  /* a failure that may pass keeps no image, so the next look tries again, WB_PY_RETRIES times */
  if (transient && r->skipped_tries[slot]++ < WB_PY_RETRIES) image[0] = 0;
  snprintf(r->skipped_image[slot], sizeof r->skipped_image[0], "%s", image);
  snprintf(r->skipped_why[slot], sizeof r->skipped_why[0], "%s", why);
  return NULL;
}

void wb_pyproc_bpf(const wb_pyproc *p, struct wb_py_proc *out) {
  const layout *l = &p->lay;
  *out = (struct wb_py_proc){
      .runtime = p->runtime, .interp_head = (__u32)l->runtime_interpreters_head, .interp_next = (__u32)l->interp_next,
      .threads_head = (__u32)l->interp_threads_head, .tstate_next = (__u32)l->tstate_next,
      .tstate_tid = (__u32)l->tstate_native_thread_id, .tstate_cframe = (__u32)l->tstate_cframe,
      .frame_at = (__u32)(l->tstate_cframe ? l->cframe_current_frame : l->tstate_current_frame),
      .frame_previous = (__u32)l->frame_previous, .frame_code = (__u32)l->frame_code,
      .code_qualname = (__u32)l->code_qualname,
      .frame_instr = (__u32)l->frame_instr, .frame_owner = (__u32)l->frame_owner,
      .frame_is_entry = l->frame_is_entry < 0 ? WB_PY_NONE : (__u32)l->frame_is_entry,
      .owner_cstack = l->owner_cstack < 0 ? WB_PY_NONE : (__u32)l->owner_cstack};
}

int wb_pyproc_in_gil(wb_pyproc *p, uint64_t addr) {
  const layout *l = &p->lay;
  if (!p->gil && l->runtime_gil) p->gil = p->runtime + l->runtime_gil;
  uint64_t interp;
  if (!p->gil && l->interp_gil_ptr && peek_u64(p->pid, p->runtime + l->runtime_interpreters_head, &interp) == 0)
    peek_u64(p->pid, interp + l->interp_gil_ptr, &p->gil);
  return p->gil && addr >= p->gil && addr < p->gil + GIL_SIZE;
}

size_t wb_pyres_count(const wb_pyres *r) { return (size_t)r->nprocs; }
const wb_pyproc *wb_pyres_proc(const wb_pyres *r, size_t i) { return r->procs[i]; }
pid_t wb_pyproc_pid(const wb_pyproc *p) { return p->pid; }
const char *wb_pyproc_version(const wb_pyproc *p) { return p->version; }
const char *wb_pyproc_binary(const wb_pyproc *p) { return p->binary; }
size_t wb_pyres_nskipped(const wb_pyres *r) { return (size_t)r->nskipped; }

void wb_pyres_skipped(const wb_pyres *r, size_t i, pid_t *pid, const char **image, const char **why) {
  *pid = r->skipped[i], *image = r->skipped_image[i], *why = r->skipped_why[i];
}

/* ---- stacks read from user space ------------------------------------------------------- */

int wb_pyproc_stacks(wb_pyres *r, wb_pyproc *p, wb_pythread *out, int max) {
  const layout *l = &p->lay;
  uint64_t interp;
  if (peek_u64(p->pid, p->runtime + l->runtime_interpreters_head, &interp)) return -1;
  int n = 0;
  for (int ni = 0; interp && ni < 16 && n < max; ni++) {
    uint64_t ts;
    if (peek_u64(p->pid, interp + l->interp_threads_head, &ts)) break;
    for (int nt = 0; ts && nt < 256 && n < max; nt++) {
      wb_pythread *t = &out[n];
      t->nframes = t->truncated = 0;
      if (peek(p->pid, ts + l->tstate_native_thread_id, &t->tid, 8)) break;
      uint64_t frame = 0;
      if (l->tstate_cframe) {
        uint64_t cf;
        if (peek_u64(p->pid, ts + l->tstate_cframe, &cf) == 0) peek_u64(p->pid, cf + l->cframe_current_frame, &frame);
      } else {
        peek_u64(p->pid, ts + l->tstate_current_frame, &frame);
      }
      while (frame) {
        unsigned char fr[WB_PY_FRAME_READ];
        if (t->nframes == WB_PY_STACK_MAX || peek(p->pid, frame, fr, sizeof fr)) {
          t->truncated = 1;
          break;
        }
        uint64_t code = *(uint64_t *)(void *)(fr + l->frame_code);
        uint64_t prev = *(uint64_t *)(void *)(fr + l->frame_previous);
        uint64_t instr = *(uint64_t *)(void *)(fr + l->frame_instr);
        if (l->owner_cstack < 0 || fr[l->frame_owner] != l->owner_cstack) {
          code_entry *c = code_of(r, p, code, 0);
          if (!c) {
            t->truncated = 1;
            break;
          }
          t->frames[t->nframes++] = wb_pyres_label(r, p, code, instr, 0); /* read just now */
        }
        if (prev == frame) break;
        frame = prev;
      }
      n++;
      if (peek_u64(p->pid, ts + l->tstate_next, &ts)) break;
    }
    if (peek_u64(p->pid, interp + l->interp_next, &interp)) break;
  }
  return n;
}

int wb_py_layout(int minor, wb_py_offset *out, int max) {
  const layout *l = minor == 11 ? &LAYOUT_311 : minor == 12 ? &LAYOUT_312 : NULL;
  if (!l) return 0;
  const wb_py_offset all[] = {
      {"runtime_interpreters_head", l->runtime_interpreters_head}, {"interp_next", l->interp_next},
      {"interp_threads_head", l->interp_threads_head}, {"tstate_next", l->tstate_next},
      {"tstate_native_thread_id", l->tstate_native_thread_id}, {"tstate_cframe", l->tstate_cframe},
      {"cframe_current_frame", l->cframe_current_frame}, {"frame_previous", l->frame_previous},
      {"frame_code", l->frame_code}, {"frame_instr", l->frame_instr}, {"frame_owner", l->frame_owner},
      {"frame_is_entry", (uint64_t)(int64_t)l->frame_is_entry}, {"owner_cstack", (uint64_t)(int64_t)l->owner_cstack},
      {"code_filename", l->code_filename}, {"code_qualname", l->code_qualname},
      {"code_firstlineno", l->code_firstlineno}, {"code_linetable", l->code_linetable},
      {"code_adaptive", l->code_adaptive}, {"bytes_size", l->bytes_size}, {"bytes_sval", l->bytes_sval},
      {"unicode_length", l->unicode_length}, {"unicode_state", l->unicode_state}, {"ascii_size", l->ascii_size},
      {"compact_size", l->compact_size}, {"runtime_gil", l->runtime_gil}, {"interp_gil_ptr", l->interp_gil_ptr},
      {"gil_size", GIL_SIZE}};
  int n = (int)(sizeof all / sizeof all[0]);
  if (n > max) n = max;
  memcpy(out, all, (size_t)n * sizeof *out);
  return n;
}
