-- `qwen/status` for statuslines: the last state the server reported, a ready-made component,
-- and a `User QwenStatus` autocmd so statusline plugins can redraw when it changes.

local M = {}

---@class qwen_lsp.Status
---@field state 'idle'|'busy'|'error'|'stopped'
---@field message string

---@type qwen_lsp.Status
M.current = { state = 'stopped', message = '' }

local MAX_MESSAGE = 40 -- statuslines are narrow; the full message is in M.current

---@param status qwen_lsp.Status
function M.set(status)
  M.current = status
  vim.api.nvim_exec_autocmds('User', { pattern = 'QwenStatus', data = status, modeline = false })
  -- Nothing to redraw without a UI (and in 0.11.4 headless, :redrawstatus next to a :terminal
  -- can crash after 'columns' changed).
  if #vim.api.nvim_list_uis() > 0 then
    pcall(vim.cmd.redrawstatus)
  end
end

--- Handler for the `qwen/status` notification.
---@param result { state: string, message: string }|nil
function M.handler(_, result, _)
  local known = { idle = true, busy = true, error = true }
  if type(result) ~= 'table' or not known[result.state] then
    M.set({ state = 'error', message = 'unexpected qwen/status: ' .. vim.inspect(result) })
    return
  end
  M.set({ state = result.state, message = type(result.message) == 'string' and result.message or '' })
end

--- A statusline component, e.g. `vim.o.statusline = "%f %= %{v:lua.require'qwen_lsp'.status()}"`.
---@return string
function M.statusline()
  local state, message = M.current.state, M.current.message
  if state == 'stopped' then
    return ''
  elseif state == 'idle' then
    return 'Qwen'
  elseif state == 'busy' then
    local line = vim.split(message ~= '' and message or 'working', '\n', { plain = true })[1]
    line = line:gsub('^Qwen: ', '') -- the server's titles name it already: not "Qwen: Qwen: fixing …"
    if vim.fn.strchars(line) > MAX_MESSAGE then
      line = vim.fn.strcharpart(line, 0, MAX_MESSAGE - 1) .. '…'
    end
    return 'Qwen: ' .. line
  end
  return 'Qwen ✗'
end

return M
