/* wb.python: the Python call stacks of CPython processes, read from outside the process as it
 * runs (process_vm_readv; nothing is injected and the target is never stopped).
 *
 * The interpreter's state is found through its exported symbols (_PyRuntime, Py_Version,
 * PyCode_Type) in the python3.X executable or libpython3.X.so of the process's mappings, and
 * walked with the struct offsets of its minor version: runtime -> interpreters -> thread states
 * -> the chain of _PyInterpreterFrame -> code objects (qualified name, file name, first line).
 * The offsets are facts per CPython version: 3.11 and 3.12 are tables here (tests/lua/
 * python_test.lua checks them against the installed headers), 3.13 and later are read from the
 * _Py_DebugOffsets the runtime publishes for such tools. Every pointer read is checked (a code
 * object must have PyCode_Type as its type), so a torn read while the target runs gives a
 * shorter or a skipped stack, never garbage. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#include "opt.h"
#include "proctree.h"
#include "ticker.h"
#include "internal.h"

#define PY_MAX_FRAMES 128
#define PY_MAX_THREADS 256
#define MAX_PROCS 64
#define NAME_MAX_LEN 200
#define WHY_LEN 320 /* room for a path and a reason */

/* ---- layouts ---------------------------------------------------------------------------- */

typedef struct layout {
  int minor;
  uint64_t runtime_interpreters_head, interp_next, interp_threads_head;
  uint64_t tstate_next, tstate_native_thread_id;
  uint64_t tstate_cframe;        /* 3.11, 3.12: tstate->cframe->current_frame */
  uint64_t cframe_current_frame;
  uint64_t tstate_current_frame; /* 3.13+: tstate->current_frame (when tstate_cframe is 0) */
  uint64_t frame_previous, frame_code, frame_owner;
  int owner_cstack; /* owner value of the C-stack shim frames to skip; -1 when there are none */
  uint64_t code_filename, code_qualname, code_firstlineno;
  uint64_t ob_type; /* PyObject.ob_type */
  uint64_t unicode_length, unicode_state, ascii_size, compact_size;
} layout;

static const layout LAYOUT_311 = {
    .minor = 11, .runtime_interpreters_head = 40, .interp_next = 0, .interp_threads_head = 16,
    .tstate_next = 8, .tstate_native_thread_id = 160, .tstate_cframe = 56, .cframe_current_frame = 8,
    .frame_previous = 48, .frame_code = 32, .frame_owner = 69, .owner_cstack = -1,
    .code_filename = 112, .code_qualname = 128, .code_firstlineno = 72, .ob_type = 8,
    .unicode_length = 16, .unicode_state = 32, .ascii_size = 48, .compact_size = 72};

static const layout LAYOUT_312 = {
    .minor = 12, .runtime_interpreters_head = 40, .interp_next = 0, .interp_threads_head = 72,
    .tstate_next = 8, .tstate_native_thread_id = 144, .tstate_cframe = 56, .cframe_current_frame = 0,
    .frame_previous = 8, .frame_code = 0, .frame_owner = 70, .owner_cstack = 3,
    .code_filename = 112, .code_qualname = 128, .code_firstlineno = 68, .ob_type = 8,
    .unicode_length = 16, .unicode_state = 32, .ascii_size = 40, .compact_size = 56};

/* Positions of the fields wb uses inside _Py_DebugOffsets (version 3.13; the struct is
 * versioned: its layout is the one of the interpreter's own minor version). */
enum {
  DBG_RUNTIME_INTERPRETERS_HEAD = 40, DBG_INTERP_NEXT = 64, DBG_INTERP_THREADS_HEAD = 72,
  DBG_TSTATE_NEXT = 168, DBG_TSTATE_CURRENT_FRAME = 184, DBG_TSTATE_NATIVE_THREAD_ID = 200,
  DBG_FRAME_PREVIOUS = 232, DBG_FRAME_EXECUTABLE = 240, DBG_FRAME_OWNER = 264,
  DBG_CODE_FILENAME = 280, DBG_CODE_QUALNAME = 296, DBG_CODE_FIRSTLINENO = 312,
  DBG_UNICODE_STATE = 544, DBG_UNICODE_LENGTH = 552, DBG_UNICODE_ASCII_SIZE = 560, DBG_SIZE = 568
};

/* ---- reading another process -------------------------------------------------------- */

static int peek(pid_t pid, uint64_t addr, void *out, size_t n) {
  struct iovec local = {out, n}, remote = {(void *)(uintptr_t)addr, n};
  return addr != 0 && process_vm_readv(pid, &local, 1, &remote, 1, 0) == (ssize_t)n ? 0 : -1;
}

static int peek_u64(pid_t pid, uint64_t addr, uint64_t *out) { return peek(pid, addr, out, 8); }

/* ---- finding the interpreter ---------------------------------------------------------- */

typedef struct pyproc {
  pid_t pid;
  layout lay;
  uint64_t runtime, code_type;
  char binary[256];
  char version[16];
  /* code objects seen (an open-addressing table by address, 0 = empty): their label
   * "qualname (file:line)", and what the label was read from (a freed code object's address is
   * reused: a hit is checked against these) */
  uint64_t *code_addr;
  char **code_label;
  uint64_t (*code_key)[3]; /* qualname and filename pointers, first line */
  size_t code_cap, code_n;
} pyproc;

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
  int fd = open(path, O_RDONLY | O_CLOEXEC);
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
static int debug_offsets(pyproc *p, int minor) {
  unsigned char d[DBG_SIZE];
  if (peek(p->pid, p->runtime, d, sizeof d) != 0 || memcmp(d, "xdebugpy", 8) != 0) return -1;
#define U64(off) (*(const uint64_t *)(const void *)(d + (off)))
  layout *l = &p->lay;
  memset(l, 0, sizeof *l);
  l->minor = minor;
  l->runtime_interpreters_head = U64(DBG_RUNTIME_INTERPRETERS_HEAD);
  l->interp_next = U64(DBG_INTERP_NEXT);
  l->interp_threads_head = U64(DBG_INTERP_THREADS_HEAD);
  l->tstate_next = U64(DBG_TSTATE_NEXT);
  l->tstate_current_frame = U64(DBG_TSTATE_CURRENT_FRAME);
  l->tstate_native_thread_id = U64(DBG_TSTATE_NATIVE_THREAD_ID);
  l->frame_previous = U64(DBG_FRAME_PREVIOUS);
  l->frame_code = U64(DBG_FRAME_EXECUTABLE);
  l->frame_owner = U64(DBG_FRAME_OWNER);
  l->owner_cstack = 3;
  l->code_filename = U64(DBG_CODE_FILENAME);
  l->code_qualname = U64(DBG_CODE_QUALNAME);
  l->code_firstlineno = U64(DBG_CODE_FIRSTLINENO);
  l->ob_type = 8;
  l->unicode_state = U64(DBG_UNICODE_STATE);
  l->unicode_length = U64(DBG_UNICODE_LENGTH);
  l->ascii_size = U64(DBG_UNICODE_ASCII_SIZE);
  l->compact_size = l->ascii_size + 16; /* utf8_length, utf8 */
#undef U64
  return 0;
}

/* Fills p for pid; returns 0, or -1 with why set. */
static int py_attach(pyproc *p, pid_t pid, char *why, size_t whylen) {
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
    return -1;
  }
  p->runtime = runtime + bias, p->code_type = code_type + bias;
  uint64_t hex = 0;
  if (!version || peek_u64(pid, version + bias, &hex) != 0 || (hex >> 24) != 3) {
    snprintf(why, whylen, "%s: no readable Py_Version (CPython before 3.11?)", p->binary);
    return -1;
  }
  int minor = (int)((hex >> 16) & 0xff);
  snprintf(p->version, sizeof p->version, "3.%d.%d", minor, (int)((hex >> 8) & 0xff));
  if (minor == 11) p->lay = LAYOUT_311;
  else if (minor == 12) p->lay = LAYOUT_312;
  else if (minor < 11 || debug_offsets(p, minor) != 0) {
    snprintf(why, whylen, "CPython %s is not supported (3.11 and later are)", p->version);
    return -1;
  }
  return 0;
}

static void py_release(pyproc *p) {
  for (size_t i = 0; i < p->code_cap; i++) free(p->code_label[i]);
  free(p->code_addr);
  free(p->code_label);
  free(p->code_key);
  p->code_addr = NULL, p->code_label = NULL, p->code_key = NULL, p->code_n = p->code_cap = 0;
}

/* Reads a str object as UTF-8 into out (at most outlen - 1 bytes); -1 when it is not one wb can
 * read (not compact, or torn). */
static int read_str(const pyproc *p, uint64_t obj, char *out, size_t outlen) {
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

/* Doubles the code cache (an open-addressing table by address); 0, or -1 out of memory. */
static int code_grow(pyproc *p) {
  size_t cap = p->code_cap ? p->code_cap * 2 : 1024;
  uint64_t *addr = calloc(cap, sizeof *addr);
  char **label = calloc(cap, sizeof *label);
  uint64_t(*key)[3] = calloc(cap, sizeof *key);
  if (!addr || !label || !key) {
    free(addr), free(label), free(key);
    return -1;
  }
  for (size_t i = 0; i < p->code_cap; i++) {
    if (!p->code_addr[i]) continue;
    size_t j = (size_t)((p->code_addr[i] >> 4) * 0x9e3779b97f4a7c15ull) & (cap - 1);
    while (addr[j]) j = (j + 1) & (cap - 1);
    addr[j] = p->code_addr[i], label[j] = p->code_label[i];
    memcpy(key[j], p->code_key[i], sizeof key[j]);
  }
  free(p->code_addr), free(p->code_label), free(p->code_key);
  p->code_addr = addr, p->code_label = label, p->code_key = key, p->code_cap = cap;
  return 0;
}

/* The label of a code object, "qualname (file:line)" with the file's base name, cached; NULL
 * when obj is no code object. One read of the object's head checks its type and, on a cache
 * hit, that it is still the object the label was made from. */
static const char *code_label(pyproc *p, uint64_t obj) {
  const layout *l = &p->lay;
  uint64_t span = l->code_qualname + 8;
  if (l->code_filename + 8 > span) span = l->code_filename + 8;
  unsigned char head[512];
  if (span > sizeof head || peek(p->pid, obj, head, span)) return NULL;
  uint64_t type = *(uint64_t *)(void *)(head + l->ob_type);
  if (type != p->code_type) return NULL;
  uint64_t qual = *(uint64_t *)(void *)(head + l->code_qualname);
  uint64_t file = *(uint64_t *)(void *)(head + l->code_filename);
  int32_t line = *(int32_t *)(void *)(head + l->code_firstlineno);
  if (p->code_n * 2 >= p->code_cap && code_grow(p) != 0) return NULL;
  size_t slot = (size_t)((obj >> 4) * 0x9e3779b97f4a7c15ull) & (p->code_cap - 1);
  while (p->code_addr[slot] && p->code_addr[slot] != obj) slot = (slot + 1) & (p->code_cap - 1);
  if (p->code_addr[slot] && p->code_key[slot][0] == qual && p->code_key[slot][1] == file &&
      p->code_key[slot][2] == (uint64_t)(int64_t)line)
    return p->code_label[slot];
  /* a new code object, or another one at a freed one's address */
  char qn[NAME_MAX_LEN], fn[NAME_MAX_LEN];
  if (read_str(p, qual, qn, sizeof qn) || read_str(p, file, fn, sizeof fn)) return NULL;
  const char *base = strrchr(fn, '/');
  char label[2 * NAME_MAX_LEN + 32];
  snprintf(label, sizeof label, "%s (%s:%d)", qn, base ? base + 1 : fn, (int)line);
  /* ';' separates folded frames */
  for (char *c = label; *c; c++)
    if (*c == ';') *c = ',';
  char *copy = strdup(label);
  if (!copy) return NULL;
  if (p->code_addr[slot]) free(p->code_label[slot]);
  else p->code_n++;
  p->code_addr[slot] = obj;
  p->code_label[slot] = copy;
  p->code_key[slot][0] = qual, p->code_key[slot][1] = file, p->code_key[slot][2] = (uint64_t)(int64_t)line;
  return copy;
}

/* ---- stacks --------------------------------------------------------------------------- */

typedef struct pythread {
  int64_t tid;
  int nframes, truncated;
  const char *frames[PY_MAX_FRAMES]; /* innermost first */
} pythread;

/* The Python stacks of every thread of every interpreter of p; returns the number of threads,
 * -1 when the runtime cannot be read (the process has exited). */
static int py_stacks(pyproc *p, pythread *out, int max) {
  const layout *l = &p->lay;
  uint64_t interp;
  if (peek_u64(p->pid, p->runtime + l->runtime_interpreters_head, &interp)) return -1;
  int n = 0;
  for (int ni = 0; interp && ni < 16 && n < max; ni++) {
    uint64_t ts;
    if (peek_u64(p->pid, interp + l->interp_threads_head, &ts)) break;
    for (int nt = 0; ts && nt < PY_MAX_THREADS && n < max; nt++) {
      pythread *t = &out[n];
      t->nframes = t->truncated = 0;
      if (peek(p->pid, ts + l->tstate_native_thread_id, &t->tid, 8)) break;
      uint64_t frame = 0;
      if (l->tstate_cframe) {
        uint64_t cf;
        if (peek_u64(p->pid, ts + l->tstate_cframe, &cf) == 0) peek_u64(p->pid, cf + l->cframe_current_frame, &frame);
      } else {
        peek_u64(p->pid, ts + l->tstate_current_frame, &frame);
      }
      for (int depth = 0; frame; depth++) {
        if (t->nframes == PY_MAX_FRAMES) {
          t->truncated = 1;
          break;
        }
        unsigned char fr[96];
        uint64_t span = l->frame_owner + 1 > l->frame_previous + 8 ? l->frame_owner + 1 : l->frame_previous + 8;
        if (span < l->frame_code + 8) span = l->frame_code + 8;
        if (span > sizeof fr || peek(p->pid, frame, fr, span)) {
          t->truncated = 1;
          break;
        }
        uint64_t code = *(uint64_t *)(void *)(fr + l->frame_code);
        uint64_t prev = *(uint64_t *)(void *)(fr + l->frame_previous);
        int owner = fr[l->frame_owner];
        if (l->owner_cstack < 0 || owner != l->owner_cstack) {
          const char *label = code_label(p, code);
          if (!label) {
            t->truncated = 1;
            break;
          }
          t->frames[t->nframes++] = label;
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

/* 'R' when the thread is running or runnable, its state letter otherwise, 0 when gone. */
static char thread_state(pid_t pid, int64_t tid) {
  char path[80], buf[512];
  snprintf(path, sizeof path, "/proc/%d/task/%lld/stat", (int)pid, (long long)tid);
  if (wb_read_small(path, buf, sizeof buf) <= 0) return 0;
  char *rp = strrchr(buf, ')');
  return rp && rp[1] == ' ' ? rp[2] : 0;
}

/* ---- the sampler ---------------------------------------------------------------------- */

typedef struct stack_count {
  char *key;
  uint64_t hash;
  int64_t oncpu;
  double offcpu;
} stack_count;

typedef struct sampler {
  wb_ticker ticker;
  pid_t root;
  double last; /* when the previous sample was taken */
  pyproc procs[MAX_PROCS];
  int nprocs;
  pid_t skipped[MAX_PROCS]; /* processes looked at that are not (readable) CPython ... */
  char skipped_exe[MAX_PROCS][256]; /* ... with this CPython image, or none ("": looked at again
                                        when it maps one, after an exec or once ld.so maps libpython) */
  char skipped_why[MAX_PROCS][WHY_LEN];
  int nskipped;
  stack_count *stacks;
  size_t cap, n;
  int64_t ticks, thread_samples, truncated;
  pythread scratch[PY_MAX_THREADS];
} sampler;

static uint64_t hash_str(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h ? h : 1;
}

/* Adds weight to the folded stack key (copied). */
static void count_stack(sampler *s, const char *key, int oncpu, double seconds) {
  if (s->n * 2 >= s->cap) {
    size_t cap = s->cap ? s->cap * 2 : 1024;
    stack_count *t = calloc(cap, sizeof *t);
    if (!t) return;
    for (size_t i = 0; i < s->cap; i++) {
      if (!s->stacks[i].key) continue;
      size_t j = s->stacks[i].hash & (cap - 1);
      while (t[j].key) j = (j + 1) & (cap - 1);
      t[j] = s->stacks[i];
    }
    free(s->stacks);
    s->stacks = t, s->cap = cap;
  }
  uint64_t h = hash_str(key);
  size_t j = h & (s->cap - 1);
  while (s->stacks[j].key && (s->stacks[j].hash != h || strcmp(s->stacks[j].key, key) != 0)) j = (j + 1) & (s->cap - 1);
  if (!s->stacks[j].key) {
    if (!(s->stacks[j].key = strdup(key))) return;
    s->stacks[j].hash = h;
    s->n++;
  }
  if (oncpu) s->stacks[j].oncpu++;
  else s->stacks[j].offcpu += seconds;
}

/* Attaches to pid unless it is attached already, or was found not to be readable CPython with
 * the image it maps now (a process is looked at again once its CPython image changes: a child
 * spawned for `python3 script.py` execs right after the sampler starts, and a python3.X linked
 * with libpython3.X.so maps the library only after the executable). */
static void consider(sampler *s, pid_t pid) {
  for (int i = 0; i < s->nprocs; i++)
    if (s->procs[i].pid == pid) return;
  char exe[256];
  python_image(pid, exe, sizeof exe);
  int slot = -1;
  for (int i = 0; i < s->nskipped; i++) {
    if (s->skipped[i] != pid) continue;
    if (strcmp(s->skipped_exe[i], exe) == 0) return;
    slot = i;
  }
  char why[WHY_LEN];
  if (s->nprocs < MAX_PROCS && py_attach(&s->procs[s->nprocs], pid, why, sizeof why) == 0) {
    s->nprocs++;
    if (slot >= 0) s->skipped[slot] = 0; /* no longer skipped */
    return;
  }
  if (slot < 0 && s->nskipped < MAX_PROCS) slot = s->nskipped++;
  if (slot < 0) return;
  if (s->nprocs >= MAX_PROCS) snprintf(why, sizeof why, "more than %d Python processes", MAX_PROCS);
  s->skipped[slot] = pid;
  snprintf(s->skipped_exe[slot], sizeof s->skipped_exe[0], "%s", exe);
  snprintf(s->skipped_why[slot], sizeof s->skipped_why[0], "%s", why);
}

/* Attaches to the root and to every descendant of it that is not known yet. */
static void discover(sampler *s) {
  pid_t tree[1024];
  int n = wb_descendants(s->root, tree, 1024);
  for (int i = 0; i < n; i++) consider(s, tree[i]);
}

/* One sample of every thread of every attached process, each weighted by dt seconds off-CPU. */
static void tick(sampler *s, double dt) {
  char key[8192];
  for (int i = 0; i < s->nprocs; i++) {
    pyproc *p = &s->procs[i];
    int n = py_stacks(p, s->scratch, PY_MAX_THREADS);
    for (int t = 0; t < n; t++) {
      pythread *th = &s->scratch[t];
      char st = thread_state(p->pid, th->tid);
      if (!st) continue;
      size_t o = (size_t)snprintf(key, sizeof key, "python %d;%s %lld", (int)p->pid,
                                  th->tid == p->pid ? "main thread" : "thread", (long long)th->tid);
      if (th->truncated) o += (size_t)snprintf(key + o, sizeof key - o, ";[truncated]");
      for (int f = th->nframes - 1; f >= 0 && o < sizeof key; f--)
        o += (size_t)snprintf(key + o, sizeof key - o, ";%s", th->frames[f]);
      if (o >= sizeof key) continue;
      s->thread_samples++;
      s->truncated += th->truncated;
      count_stack(s, key, st == 'R', dt);
    }
  }
  s->ticks++;
}

/* One sample of every attached process (a wb_ticker call); descendants are looked for every 10. */
static void sample(void *arg, double now) {
  sampler *s = arg;
  if (s->ticks % 10 == 0) discover(s);
  tick(s, s->ticks ? now - s->last : 0);
  s->last = now;
}

static void sampler_free(sampler *s) {
  for (int i = 0; i < s->nprocs; i++) py_release(&s->procs[i]);
  for (size_t i = 0; i < s->cap; i++) free(s->stacks[i].key);
  free(s->stacks);
  s->stacks = NULL, s->cap = s->n = 0, s->nprocs = 0;
}

/* ---- Lua API -------------------------------------------------------------------------- */

#define PYTHON_SAMPLER_MT "wb.python.sampler"

static void push_proc_list(lua_State *L, const sampler *s) {
  lua_createtable(L, s->nprocs, 0);
  for (int i = 0; i < s->nprocs; i++) {
    lua_createtable(L, 0, 3);
    wb_set_int(L, "pid", s->procs[i].pid);
    wb_set_str(L, "version", s->procs[i].version);
    wb_set_str(L, "binary", s->procs[i].binary);
    lua_rawseti(L, -2, i + 1);
  }
}

/* -- info, err = wb.python.probe(pid) : {version = "3.11.2", binary = path} of a CPython process
 * wb can read, or nil and why not (not CPython, stripped, unsupported version, gone). */
static int l_probe(lua_State *L) {
  pid_t pid = (pid_t)luaL_checkinteger(L, 1);
  pyproc p;
  char why[WHY_LEN];
  if (py_attach(&p, pid, why, sizeof why) != 0) {
    lua_pushnil(L);
    lua_pushfstring(L, "pid %d: %s", (int)pid, why);
    return 2;
  }
  lua_createtable(L, 0, 2);
  wb_set_str(L, "version", p.version);
  wb_set_str(L, "binary", p.binary);
  py_release(&p);
  return 1;
}

/* -- threads, err = wb.python.stacks(pid) : one reading of the Python stacks of every thread,
 * {{tid, frames = {"func (file.py:12)", ... innermost first}, truncated}}; nil, err as probe. */
static int l_stacks(lua_State *L) {
  pid_t pid = (pid_t)luaL_checkinteger(L, 1);
  pyproc *p = lua_newuserdatauv(L, sizeof *p + sizeof(pythread) * 64, 0);
  pythread *th = (pythread *)(void *)(p + 1);
  char why[WHY_LEN];
  if (py_attach(p, pid, why, sizeof why) != 0) {
    lua_pushnil(L);
    lua_pushfstring(L, "pid %d: %s", (int)pid, why);
    return 2;
  }
  int n = py_stacks(p, th, 64);
  if (n < 0) {
    py_release(p);
    lua_pushnil(L);
    lua_pushfstring(L, "pid %d: the interpreter state cannot be read (exited?)", (int)pid);
    return 2;
  }
  lua_createtable(L, n, 0);
  for (int i = 0; i < n; i++) {
    lua_createtable(L, 0, 3);
    wb_set_int(L, "tid", th[i].tid);
    wb_set_bool(L, "truncated", th[i].truncated);
    lua_createtable(L, th[i].nframes, 0);
    for (int f = 0; f < th[i].nframes; f++) {
      lua_pushstring(L, th[i].frames[f]);
      lua_rawseti(L, -2, f + 1);
    }
    lua_setfield(L, -2, "frames");
    lua_rawseti(L, -2, i + 1);
  }
  py_release(p);
  return 1;
}

/* -- s, err = wb.python.sampler(pid [, {hz = 99}]) : samples the Python stacks of pid and of
 * its descendants (looked for every 10 samples) from a thread of wb's, until s:stop(). */
static int l_sampler(lua_State *L) {
  pid_t pid = (pid_t)luaL_checkinteger(L, 1);
  double hz = wb_opt_number(L, 2, "hz", 99);
  if (!(hz >= 1 && hz <= 10000)) luaL_argerror(L, 2, "hz must be in [1, 10000]");
  sampler *s = lua_newuserdatauv(L, sizeof *s, 0);
  memset(s, 0, sizeof *s);
  luaL_setmetatable(L, PYTHON_SAMPLER_MT);
  s->root = pid;
  int e = wb_ticker_start(&s->ticker, hz, sample, s);
  if (e) {
    lua_pushnil(L);
    lua_pushfstring(L, "python sampler: %s", strerror(e));
    return 2;
  }
  return 1;
}

/* -- r = s:stop() : {oncpu = {[folded] = samples}, offcpu = {[folded] = seconds}, ticks,
 * thread_samples, truncated, processes = {{pid, version, binary}}, skipped = {{pid, reason}}}.
 * A folded stack is "python PID;main thread TID|thread TID;outer (f.py:1);...;inner (f.py:9)".
 * On-CPU: the thread was running or runnable (state R) when sampled; off-CPU: any other state,
 * weighted by the time since the previous sample. */
static int l_sampler_stop(lua_State *L) {
  sampler *s = luaL_checkudata(L, 1, PYTHON_SAMPLER_MT);
  wb_ticker_stop(&s->ticker);
  lua_createtable(L, 0, 7);
  lua_newtable(L);
  lua_newtable(L);
  for (size_t i = 0; i < s->cap; i++) {
    const stack_count *c = &s->stacks[i];
    if (!c->key) continue;
    if (c->oncpu) {
      lua_pushinteger(L, c->oncpu);
      lua_setfield(L, -3, c->key);
    }
    if (c->offcpu > 0) {
      lua_pushnumber(L, c->offcpu);
      lua_setfield(L, -2, c->key);
    }
  }
  lua_setfield(L, -3, "offcpu");
  lua_setfield(L, -2, "oncpu");
  wb_set_int(L, "ticks", s->ticks);
  wb_set_int(L, "thread_samples", s->thread_samples);
  wb_set_int(L, "truncated", s->truncated);
  push_proc_list(L, s);
  lua_setfield(L, -2, "processes");
  lua_createtable(L, s->nskipped, 0);
  for (int i = 0, k = 0; i < s->nskipped; i++) {
    if (!s->skipped[i]) continue;
    lua_createtable(L, 0, 3);
    wb_set_int(L, "pid", s->skipped[i]);
    wb_set_str(L, "image", s->skipped_exe[i]);
    wb_set_str(L, "reason", s->skipped_why[i]);
    lua_rawseti(L, -2, ++k);
  }
  lua_setfield(L, -2, "skipped");
  sampler_free(s);
  return 1;
}

static int l_sampler_gc(lua_State *L) {
  sampler *s = luaL_checkudata(L, 1, PYTHON_SAMPLER_MT);
  wb_ticker_stop(&s->ticker);
  sampler_free(s);
  return 0;
}

/* -- t = wb.python.layout(minor) : the struct offsets wb uses for CPython 3.<minor> (11 or 12;
 * 3.13 and later are read from the interpreter), for tests to check against the headers; nil
 * for another minor version. */
static int l_layout(lua_State *L) {
  lua_Integer minor = luaL_checkinteger(L, 1);
  const layout *l = minor == 11 ? &LAYOUT_311 : minor == 12 ? &LAYOUT_312 : NULL;
  if (!l) return 0;
  lua_createtable(L, 0, 20);
  wb_set_int(L, "runtime_interpreters_head", (lua_Integer)l->runtime_interpreters_head);
  wb_set_int(L, "interp_next", (lua_Integer)l->interp_next);
  wb_set_int(L, "interp_threads_head", (lua_Integer)l->interp_threads_head);
  wb_set_int(L, "tstate_next", (lua_Integer)l->tstate_next);
  wb_set_int(L, "tstate_native_thread_id", (lua_Integer)l->tstate_native_thread_id);
  wb_set_int(L, "tstate_cframe", (lua_Integer)l->tstate_cframe);
  wb_set_int(L, "cframe_current_frame", (lua_Integer)l->cframe_current_frame);
  wb_set_int(L, "frame_previous", (lua_Integer)l->frame_previous);
  wb_set_int(L, "frame_code", (lua_Integer)l->frame_code);
  wb_set_int(L, "frame_owner", (lua_Integer)l->frame_owner);
  wb_set_int(L, "owner_cstack", l->owner_cstack);
  wb_set_int(L, "code_filename", (lua_Integer)l->code_filename);
  wb_set_int(L, "code_qualname", (lua_Integer)l->code_qualname);
  wb_set_int(L, "code_firstlineno", (lua_Integer)l->code_firstlineno);
  wb_set_int(L, "unicode_length", (lua_Integer)l->unicode_length);
  wb_set_int(L, "unicode_state", (lua_Integer)l->unicode_state);
  wb_set_int(L, "ascii_size", (lua_Integer)l->ascii_size);
  wb_set_int(L, "compact_size", (lua_Integer)l->compact_size);
  return 1;
}

static const luaL_Reg sampler_methods[] = {{"stop", l_sampler_stop}, {NULL, NULL}};
static const luaL_Reg sampler_meta[] = {{"__gc", l_sampler_gc}, {"__close", l_sampler_gc}, {NULL, NULL}};
static const luaL_Reg python_functions[] = {
    {"layout", l_layout}, {"probe", l_probe}, {"sampler", l_sampler}, {"stacks", l_stacks}, {NULL, NULL}};

int luaopen_wb_python(lua_State *L) {
  luaL_newmetatable(L, PYTHON_SAMPLER_MT);
  luaL_setfuncs(L, sampler_meta, 0);
  luaL_newlib(L, sampler_methods);
  lua_setfield(L, -2, "__index");
  lua_pop(L, 1);
  luaL_newlib(L, python_functions);
  return 1;
}
