-- Loaded at startup when the plugin is on 'runtimepath': commands and terminal tracking must
-- exist before the first :terminal command runs, even if the server starts later.
if vim.fn.has('nvim-0.11') == 0 then
  vim.notify('qwen_lsp needs Neovim 0.11 or newer', vim.log.levels.WARN)
  return
end
require('qwen_lsp').init()
