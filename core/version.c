/* The C API's version, clock and memory functions (core/wb.h). */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "internal.h"
#include "wb_c.h"


WB_API const char *wb_version(void) { return WB_VERSION; }

WB_API int64_t wb_clock_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

WB_API void wb_free(void *ptr) { free(ptr); }
