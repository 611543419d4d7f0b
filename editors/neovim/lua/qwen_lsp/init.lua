-- qwen-lsp for Neovim ≥ 0.11: registers the server with vim.lsp.config/vim.lsp.enable and adds
-- the commands, terminal integration and status that the protocol needs (docs/protocol.md).

local config = require('qwen_lsp.config')

local M = {}

---@class qwen_lsp.Options
---@field python string|nil Python with qwen-lsp installed: runs `<python> -m qwen_lsp.cli`
---@field cmd string[]|nil command that starts the server (default `qwen-lsp`); wins over python
---@field settings table|nil server settings (initializationOptions and the `qwen` section), e.g. { baseUrl = 'http://gpu:8000/v1', reviewOnSave = true }
---@field root_markers string[]|nil files that mark a project root
---@field filetypes string[]|nil restrict to these filetypes (default: every file)
---@field progress boolean|nil echo the server's progress (LspProgress); default true
---@field prompt_pattern string|nil Lua pattern for prompts in terminals without OSC 133
---@field lsp vim.lsp.Config|nil anything else for vim.lsp.config (capabilities, on_attach, …)

local initialized = false
local show_progress = true
local version_said = false

--- Whether this Neovim has what the plugin uses (vim.lsp.config, the LspProgress event, …); if not,
--- says so once, with the version and program found (a newer `nvim` may sit later on PATH), and
--- touches nothing else. Plain Lua and vim.fn only: it must run on any Neovim.
---@return boolean
function M.supported()
  if vim.fn.has('nvim-0.11') == 1 then
    return true
  end
  if not version_said then
    version_said = true
    local v = vim.version and vim.version() or {}
    vim.notify(('qwen_lsp needs Neovim 0.11 or newer; this is %s (%s). Newer Neovim: the README, "In the editor".')
      :format(v.major and ('%d.%d.%d'):format(v.major, v.minor, v.patch) or 'older', vim.v.progpath),
      vim.log.levels.WARN)
  end
  return false
end

--- User commands, terminal tracking and the progress display. Idempotent: setup() and the
--- client's on_init both call it, so the native `vim.lsp.enable('qwen_lsp')` route gets it too.
function M.init()
  if initialized or not M.supported() then
    return
  end
  initialized = true
  require('qwen_lsp.commands').create()
  require('qwen_lsp.terminal').track()
  local group = vim.api.nvim_create_augroup('qwen_lsp', { clear = true })
  vim.api.nvim_create_autocmd('LspProgress', {
    group = group,
    callback = function(ev)
      local client = vim.lsp.get_client_by_id(ev.data.client_id)
      if not show_progress or not client or client.name ~= config.name then
        return
      end
      local value = ev.data.params.value or {}
      local text = ''
      if value.kind ~= 'end' then
        local title = value.title or ''
        text = (title:match('^Qwen') and '' or 'Qwen: ') .. title .. (value.message and (' ' .. value.message) or '')
      end
      vim.api.nvim_echo({ { text } }, false, {})
    end,
  })
end

--- The vim.lsp.Config that setup() registers (exposed for tests and inspection).
---@param opts qwen_lsp.Options|nil
---@return vim.lsp.Config
function M.lsp_config(opts)
  opts = opts or {}
  local settings = opts.settings or {}
  local cfg = vim.tbl_deep_extend('force', config.defaults(), {
    cmd = opts.cmd or config.cmd(opts.python),
    root_dir = config.root_dir(opts.root_markers or config.root_markers),
    filetypes = opts.filetypes,
    init_options = settings,
    settings = { qwen = settings },
  }, opts.lsp or {})
  return cfg
end

---@param opts qwen_lsp.Options|nil
function M.setup(opts)
  if not M.supported() then
    return -- before anything of 0.11's is touched: an older Neovim gets one message, not a stack trace
  end
  opts = opts or {}
  show_progress = opts.progress ~= false
  if opts.prompt_pattern then
    require('qwen_lsp.terminal').options.prompt_pattern = opts.prompt_pattern
  end
  M.init()
  vim.lsp.config(config.name, M.lsp_config(opts))
  vim.lsp.enable(config.name)
end

--- Statusline component: '' when stopped, 'Qwen' when idle, 'Qwen: <what>' when busy, 'Qwen ✗'.
function M.status()
  return require('qwen_lsp.status').statusline()
end

--- The last `qwen/status`: { state = 'idle'|'busy'|'error'|'stopped', message = string }.
function M.status_state()
  return require('qwen_lsp.status').current
end

return M
