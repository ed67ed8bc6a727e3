/* placeholder until the module lands */
#include "lwb.h"
int wb_repl(lua_State *L) { (void)L; return 1; }
