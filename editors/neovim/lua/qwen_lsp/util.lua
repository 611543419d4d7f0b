-- Small helpers shared by the commands and the terminal integration.

local M = {}

local NAME = 'qwen_lsp'

---@param msg string
---@param level integer|nil
function M.notify(msg, level)
  vim.notify('Qwen: ' .. msg, level or vim.log.levels.INFO, { title = 'Qwen' })
end

--- The qwen_lsp client of a buffer, or any running one when the buffer has none.
---@param bufnr integer|nil
---@return vim.lsp.Client|nil
function M.client(bufnr)
  if bufnr then
    local attached = vim.lsp.get_clients({ bufnr = bufnr, name = NAME })[1]
    if attached then
      return attached
    end
  end
  return vim.lsp.get_clients({ name = NAME })[1]
end

--- The running client whose workspace contains `path` (longest root wins), else any.
---@param path string
---@return vim.lsp.Client|nil
function M.client_for_path(path)
  local best, best_len = nil, -1
  for _, client in ipairs(vim.lsp.get_clients({ name = NAME })) do
    local root = client.root_dir
    if root and (path == root or vim.startswith(path, root .. '/')) and #root > best_len then
      best, best_len = client, #root
    end
  end
  return best or vim.lsp.get_clients({ name = NAME })[1]
end

--- Sends `workspace/executeCommand` and calls `on_result(result)` on success.
---@param client vim.lsp.Client
---@param bufnr integer
---@param command string
---@param arg table
---@param on_result fun(result: any)|nil
function M.execute(client, bufnr, command, arg, on_result)
  client:request('workspace/executeCommand', { command = command, arguments = { arg } }, function(err, result)
    if err then
      M.notify(command .. ' failed: ' .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
    elseif on_result then
      on_result(result)
    end
  end, bufnr)
end

--- LSP range covering whole lines `line1..line2` (1-based, inclusive) of a buffer.
---@param bufnr integer
---@param line1 integer
---@param line2 integer
---@param encoding string
---@return lsp.Range
function M.line_range(bufnr, line1, line2, encoding)
  local last = vim.api.nvim_buf_get_lines(bufnr, line2 - 1, line2, false)[1] or ''
  return {
    start = { line = line1 - 1, character = 0 },
    ['end'] = { line = line2 - 1, character = vim.lsp.util.character_offset(bufnr, line2 - 1, #last, encoding) },
  }
end

return M
