#!/bin/sh
# Neovim (headless) as the LSP client of amp-migrate --lsp: the quick fix applied by Neovim gives
# the file amp-migrate --fix writes, and the file on disk is untouched (ctest lsp.neovim).
# usage: nvim_trial.sh <nvim> <amp-migrate> <mock-torch dir> <input.cpp> <work dir>
set -eu
nvim=$1 tool=$2 mock=$3 input=$4 work=$5
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work" && mkdir -p "$work"
# Hermetic: without this, the build tree's compile_commands.json would be found upward.
echo "[]" > "$work/compile_commands.json"
cp "$input" "$work/train.cpp"
cp "$input" "$work/expected.cpp"
"$tool" --fix --use-color=never "$work/expected.cpp" -- -std=c++17 "-I$mock" >/dev/null
cd "$work"
AMP_MIGRATE=$tool AMP_MOCK=$mock AMP_OUT=$work/out.cpp \
  "$nvim" --headless -u NONE -c "luafile $here/nvim_trial.lua" train.cpp
cmp "$work/out.cpp" "$work/expected.cpp"
cmp "$work/train.cpp" "$input"
echo "neovim applied the quick fix: same file as amp-migrate --fix"
