-- Neovim as the LSP client of `amp-migrate --lsp` (headless): open a file, wait for the
-- diagnostics, take the quick fix at the autocast scope, apply its workspace edit with Neovim's own
-- apply_workspace_edit, and write the buffer to $AMP_OUT (the server itself writes nothing).
--
--   AMP_MIGRATE=build/tools/amp-migrate/amp-migrate AMP_MOCK=test/Inputs/mock-torch \
--   AMP_OUT=/tmp/out.cpp nvim --headless -u NONE -c 'luafile test/lsp/nvim_trial.lua' file.cpp
--
-- Prints one line per diagnostic and the title of the action taken; exits 0 on success.
-- Works with Neovim 0.7 (vim.lsp.start_client) and 0.8+ (vim.lsp.start, as in docs/ide.md).
local function out(s) io.stdout:write(s .. '\n') end
local function fail(s) out('FAIL: ' .. s); vim.cmd('cquit! 1') end

local tool, mock, dest = os.getenv('AMP_MIGRATE'), os.getenv('AMP_MOCK'), os.getenv('AMP_OUT')
local bufnr = vim.api.nvim_get_current_buf()
vim.bo[bufnr].filetype = 'cpp'
local config = {
  name = 'amp-migrate',
  cmd = { tool, '--lsp' },
  root_dir = vim.fn.getcwd(),
  init_options = { extraArgs = { '-I' .. mock } },
}
local client_id
if vim.lsp.start then
  client_id = vim.lsp.start(config)
else
  client_id = vim.lsp.start_client(config)
  vim.lsp.buf_attach_client(bufnr, client_id)
end
if not client_id then fail('the server did not start') return end

if not vim.wait(20000, function() return #vim.diagnostic.get(bufnr) > 0 end, 50) then
  fail('no diagnostics') return
end
local target
for _, d in ipairs(vim.diagnostic.get(bufnr)) do
  local lsp = d.user_data and d.user_data.lsp or {}
  local code = d.code or lsp.code
  out(string.format('%d:%d: %s [%s] (%s)', d.lnum + 1, d.col + 1, d.message, code, d.source or lsp.source or ''))
  if code == 'amp-autocast-scope' then target = d end
end
if not target then fail('no amp-autocast-scope diagnostic') return end

-- The cursor on the autocast scope, then the code actions there (what `:lua vim.lsp.buf.code_action()` asks).
vim.api.nvim_win_set_cursor(0, { target.lnum + 1, target.col })
local client = vim.lsp.get_client_by_id(client_id)
local params = vim.lsp.util.make_range_params()
params.context = { diagnostics = vim.lsp.diagnostic.get_line_diagnostics(bufnr) }
local responses = vim.lsp.buf_request_sync(bufnr, 'textDocument/codeAction', params, 10000)
local action
for _, r in pairs(responses or {}) do
  for _, a in ipairs(r.result or {}) do
    if a.kind == 'quickfix' and not action then action = a end
  end
end
if not action then fail('no quick fix') return end
out('action: ' .. action.title)
vim.lsp.util.apply_workspace_edit(action.edit, client.offset_encoding or 'utf-16')

local lines = vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)
local f = io.open(dest, 'w')
f:write(table.concat(lines, '\n') .. '\n')
f:close()
-- After the edit the server re-checks the buffer: the migrated step has no findings.
vim.wait(20000, function() return #vim.diagnostic.get(bufnr) == 0 end, 50)
out('diagnostics after the fix: ' .. #vim.diagnostic.get(bufnr))
vim.lsp.stop_client(client_id)
vim.cmd('qa!')
