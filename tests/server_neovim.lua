-- Driven by tests/test_server_neovim.py: headless Neovim, the documented configuration
-- (editors/neovim/remat-lint.lua), a misuse typed into a buffer, the diagnostic awaited,
-- the preferred code action applied, the buffer written.
local function say(text)
  io.stdout:write(text .. "\n")
end

vim.cmd("edit " .. vim.env.REMAT_FILE)
vim.cmd("doautocmd FileType python")
local buf = vim.api.nvim_get_current_buf()
if not vim.wait(30000, function() return #vim.lsp.get_active_clients() > 0 and vim.lsp.buf_is_attached(buf, vim.lsp.get_active_clients()[1].id) end, 20) then
  say("NO CLIENT")
  vim.cmd("cquit 1")
end
vim.wait(30000, function() return vim.lsp.get_active_clients()[1].initialized end, 20)

-- Type the misuse (a change notification, the file on disk unchanged).
local typed = vim.loop.hrtime()
vim.api.nvim_buf_set_lines(buf, -1, -1, false, { 'g = jax.checkpoint(f, policy="dots_saveable")' })
if not vim.wait(30000, function() return #vim.diagnostic.get(buf) > 0 end, 5) then
  say("NO DIAGNOSTIC")
  vim.cmd("cquit 1")
end
local diagnostic = vim.diagnostic.get(buf)[1]
say(string.format("DIAGNOSTIC %d %s", diagnostic.lnum, diagnostic.message:sub(1, 60)))
say(string.format("LATENCY_MS %.0f", (vim.loop.hrtime() - typed) / 1e6))

local params = vim.lsp.util.make_range_params()
params.range = { start = { line = diagnostic.lnum, character = 0 }, ["end"] = { line = diagnostic.lnum, character = 0 } }
params.context = { diagnostics = {}, only = { "quickfix" } }
local responses = vim.lsp.buf_request_sync(buf, "textDocument/codeAction", params, 10000) or {}
for _, response in pairs(responses) do
  for _, action in ipairs(response.result or {}) do
    if action.isPreferred then
      say("ACTION " .. action.title)
      vim.lsp.util.apply_workspace_edit(action.edit, "utf-16")
    end
  end
end
vim.cmd("write")
if not vim.wait(30000, function() return #vim.diagnostic.get(buf) == 0 end, 20) then
  say("DIAGNOSTIC STAYED")
  vim.cmd("cquit 1")
end
say("CLEAN")
vim.cmd("qall!")
