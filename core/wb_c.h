/* C users' entry point to the wb API: the includes that the FFI-clean core header leaves out. */
#ifndef WB_C_H
#define WB_C_H
#include <stddef.h>
#include <stdint.h>
#include "wb.h"
#endif
