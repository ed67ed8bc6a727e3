#!/usr/bin/env bash
# Runs CLI transcript files (tests/cli/*.t) with the stock Lua interpreter; see tests/cli/run.lua.
exec lua5.4 "$(dirname "$0")/run.lua" "$@"
