-- remat-lint's Language Server in Neovim's built-in LSP client (docs/editors.md).
-- Put this file in ~/.config/nvim/plugin/ (or require it from init.lua). Neovim 0.7 and later.
local function root_dir(path)
  local markers = { "pyproject.toml", "remat-lint.toml", ".git" }
  if vim.fs and vim.fs.find then -- Neovim 0.8+
    local found = vim.fs.find(markers, { path = vim.fs.dirname(path), upward = true })[1]
    return found and vim.fs.dirname(found) or vim.fn.getcwd()
  end
  return vim.fn.getcwd()
end

local function start()
  local buf = vim.api.nvim_get_current_buf()
  local config = {
    name = "remat-lint",
    cmd = { "remat-lint", "server" },
    root_dir = root_dir(vim.api.nvim_buf_get_name(buf)),
    -- init_options = { ignore = { "REM302" } },  -- select / extendSelect / ignore, over pyproject.toml
  }
  if vim.lsp.start then -- Neovim 0.8+: reuses the running server of the same name and root
    vim.lsp.start(config)
  else
    _G.remat_lint_client = _G.remat_lint_client or vim.lsp.start_client(config)
    vim.lsp.buf_attach_client(buf, _G.remat_lint_client)
  end
end

vim.api.nvim_create_autocmd("FileType", { pattern = "python", callback = start })
