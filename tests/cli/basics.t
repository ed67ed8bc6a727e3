# The foundation's command line: version, help, list, unknown names, recipe errors and exit codes.

$ wb version
wb 0%.1%.0 %(Lua 5%.4%.%d+%) (re)

$ wb help
usage: wb <command> [args]
...

$ wb
usage: wb <command> [args]
...
[2]

# `wb help COMMAND` for a command that is not a recipe: its own usage, or wb's
$ wb help compare | head -n 1
usage: wb compare BASE.json NEW.json [--json] [--fail-on-regression] [--threshold 0.02] [--confirm]

$ wb help trend | head -n 1
usage: wb trend [-o DIR] [--root DIR]... [--db FILE] [--recipe R] [--name N] [--metric M]

$ wb help history | head -n 1
usage: wb history [update|records|series|alerts] [--root DIR]... [--db FILE] [--rebuild]

$ wb help list | head -n 1
usage: wb <command> [args]

$ wb list
Available recipes:
...
    demo %s*# Measure the bundled example workload over several trials and print a summary table. (re)
...

$ wb nosuch
wb: unknown command or recipe 'nosuch' (see `wb list` and `wb help`)
[2]

$ wb dmo
wb: unknown command or recipe 'dmo' (did you mean: demo?)
[2]

$ wb lst
wb: unknown command or recipe 'lst' (did you mean: list, test?)
[2]

$ wb --frobnicate
wb: unknown option '--frobnicate' (see `wb help`)
[2]

$ wb run
wb: run: which recipe? (see `wb list`)
[2]

$ wb run tests/fixtures/recipes/nope.lua
wb: run: tests/fixtures/recipes/nope.lua: no such recipe file
[2]

$ wb run tests/fixtures/recipes/syntax_error.lua
wb: tests/fixtures/recipes/syntax_error.lua:4: unexpected symbol near 'then'
[2]

$ wb run tests/fixtures/recipes/undefined_global.lua
wb: tests/fixtures/recipes/undefined_global.lua:5: undefined global 'trails'
[2]

$ wb run tests/fixtures/recipes/runtime_error.lua
wb: tests/fixtures/recipes/runtime_error.lua:5: the data set is empty
[1]

$ wb run tests/fixtures/recipes/runtime_error.lua -v
wb: tests/fixtures/recipes/runtime_error.lua:5: the data set is empty
stack traceback:
...
[1]

$ wb run tests/fixtures/recipes/not_a_recipe.lua
wb: tests/fixtures/recipes/not_a_recipe.lua: a recipe must return wb.recipe{...}
[2]

$ wb run tests/fixtures/recipes/args.lua 3 'two words' -- --flag x=1
1	3
2	two words
3	--flag
4	x=1
[3]

$ wb run tests/fixtures/recipes/args.lua --bogus
wb: unknown option '--bogus' (a command's own options go after --; see `wb help args`)
[2]

$ cd tests/fixtures && wb recipes/args.lua 2>&1 | head -1
wb: unknown command or recipe 'recipes/args.lua' (see `wb list` and `wb help`)

# A compiled Lua module finds the Lua API in wb, which links Lua statically.
$ cc -shared -fPIC $(pkg-config --cflags lua5.4) -o $T/wbhello.so tests/fixtures/wbhello.c && LUA_CPATH="$T/?.so" wb run tests/fixtures/recipes/cmodule.lua
hello, wb
