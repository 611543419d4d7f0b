-- :QwenFix, :QwenAsk, :QwenReview, :QwenFixTerminal and the `qwen.ask` client command: each
-- turns the editor state into a server command's argument (docs/protocol.md). :QwenCancel stops
-- what is running.

local util = require('qwen_lsp.util')

local M = {}

---@param result { applied: boolean, summary: string, title: string|nil }|nil
local function report_apply(result)
  local summary = type(result) == 'table' and type(result.summary) == 'string' and result.summary ~= ''
      and result.summary
    or 'no summary'
  if type(result) == 'table' and result.applied then
    -- The title says what was validated: "Fix NameError (✓ parses, ✓ pytest -x)".
    local title = type(result.title) == 'string' and result.title ~= '' and (result.title .. ': ') or ''
    util.notify(title:gsub('^Qwen: ', '') .. summary)
  else
    local status = require('qwen_lsp.status').current
    if status.state == 'error' and status.message == summary then
      return -- the server already reported this error (window/showMessage and the statusline)
    end
    util.notify('made no change: ' .. summary, vim.log.levels.WARN)
  end
end

---@param bufnr integer
---@return vim.lsp.Client|nil
local function attached_client(bufnr)
  local client = util.client(bufnr)
  if not client then
    util.notify('qwen_lsp is not running for this buffer', vim.log.levels.ERROR)
  end
  return client
end

--- Calls `send` with `given` when it has text, else with what the user types at `prompt`;
--- an empty answer (or <Esc>) is a cancel: nothing is sent.
---@param given string|nil
---@param prompt string
---@param send fun(text: string)
local function with_text(given, prompt, send)
  local function maybe(text)
    text = vim.trim(text or '')
    if text ~= '' then
      send(text)
    end
  end
  if given and vim.trim(given) ~= '' then
    maybe(given)
  else
    vim.ui.input({ prompt = prompt }, maybe)
  end
end

--- `qwen.ask`: asks for the instruction unless given, then runs `qwen.server.ask`.
---@param client vim.lsp.Client|nil
---@param arg { uri: string, range: lsp.Range }|nil
---@param instruction string|nil
function M.ask(client, arg, instruction)
  if not client or type(arg) ~= 'table' or type(arg.uri) ~= 'string' or type(arg.range) ~= 'table' then
    util.notify('qwen.ask needs a running client and {uri, range}', vim.log.levels.ERROR)
    return
  end
  with_text(instruction, 'Ask Qwen: ', function(text)
    local params = { uri = arg.uri, range = arg.range, instruction = text }
    util.execute(client, vim.uri_to_bufnr(arg.uri), 'qwen.server.ask', params, report_apply)
  end)
end

---@param opts vim.api.keyset.create_user_command.command_args
local function range_arg(opts, client)
  local bufnr = vim.api.nvim_get_current_buf()
  local line1, line2 = opts.line1, opts.line2
  if opts.range == 0 then
    line1 = vim.api.nvim_win_get_cursor(0)[1]
    line2 = line1
  end
  return bufnr, {
    uri = vim.uri_from_bufnr(bufnr),
    range = util.line_range(bufnr, line1, line2, client.offset_encoding),
  }
end

--- The editor's diagnostics on lines first..last (0-based), from any source, as LSP Diagnostics:
--- the server fixes one of them when it has none of its own there.
---@return lsp.Diagnostic[]
local function diagnostics_on(bufnr, first, last)
  local out = {}
  for _, d in ipairs(vim.diagnostic.get(bufnr)) do
    if d.lnum <= last and (d.end_lnum or d.lnum) >= first then
      table.insert(out, {
        range = {
          start = { line = d.lnum, character = d.col },
          ['end'] = { line = d.end_lnum or d.lnum, character = d.end_col or d.col },
        },
        severity = d.severity,
        message = d.message,
        source = d.source,
        code = d.code,
      })
    end
  end
  return out
end

function M.fix(opts)
  local client = attached_client(0)
  if not client then
    return
  end
  local bufnr, arg = range_arg(opts, client)
  arg.diagnostics = diagnostics_on(bufnr, arg.range.start.line, arg.range['end'].line)
  util.notify('fixing…')
  util.execute(client, bufnr, 'qwen.server.fix', arg, report_apply)
end

--- `qwen.refine`: asks for a note unless given, then runs `qwen.server.refine` on the last change
--- Qwen proposed for the file.
---@param client vim.lsp.Client|nil
---@param arg { uri: string }|nil
---@param note string|nil
function M.refine(client, arg, note)
  if not client or type(arg) ~= 'table' or type(arg.uri) ~= 'string' then
    util.notify('qwen.refine needs a running client and {uri}', vim.log.levels.ERROR)
    return
  end
  with_text(note, 'Refine Qwen\'s change: ', function(text)
    util.execute(client, vim.uri_to_bufnr(arg.uri), 'qwen.server.refine', { uri = arg.uri, note = text }, report_apply)
  end)
end

function M.refine_command(opts)
  local client = attached_client(0)
  if not client then
    return
  end
  M.refine(client, { uri = vim.uri_from_bufnr(0) }, opts.args)
end

function M.ask_command(opts)
  local client = attached_client(0)
  if not client then
    return
  end
  local _, arg = range_arg(opts, client)
  M.ask(client, arg, opts.args)
end

function M.review()
  local client = attached_client(0)
  if not client then
    return
  end
  local bufnr = vim.api.nvim_get_current_buf()
  util.notify('reviewing…')
  util.execute(client, bufnr, 'qwen.server.review', { uri = vim.uri_from_bufnr(bufnr) }, function(result)
    if type(result) == 'table' and result.reviewed == false then return end -- the server said why
    local findings = type(result) == 'table' and tonumber(result.findings) or 0
    util.notify(findings == 0 and 'review: no findings' or ('review: %d finding(s), see the diagnostics'):format(findings))
  end)
end

-- The requests that run the model: a code action being resolved (`gra`), :QwenFix/:QwenAsk/:QwenReview.
local CANCELLABLE = { ['codeAction/resolve'] = true, ['workspace/executeCommand'] = true }

--- Cancellable work-done progress the server began and has not ended, as [client_id][token] = true:
--- what :QwenCancel reaches when no request of ours waits for the work (e.g. a review on save).
M.progress = {}

--- LspProgress: remembers the server's cancellable progress until it ends.
---@param client_id integer
---@param token integer|string
---@param value { kind: string, cancellable: boolean|nil }
function M.track_progress(client_id, token, value)
  if value.kind == 'begin' and value.cancellable then
    M.progress[client_id] = M.progress[client_id] or {}
    M.progress[client_id][token] = true
  elseif value.kind == 'end' and M.progress[client_id] then
    M.progress[client_id][token] = nil
  end
end

--- :QwenCancel: cancels the in-flight Qwen requests (`$/cancelRequest`: the server stops the fix and
--- closes its model stream; nothing is applied); with none, the server's cancellable progress.
function M.cancel()
  local cancelled = 0
  for _, client in ipairs(vim.lsp.get_clients({ name = require('qwen_lsp.config').name })) do
    local ids = {}
    for id, request in pairs(client.requests) do
      if request.type == 'pending' and CANCELLABLE[request.method] then
        table.insert(ids, id)
      end
    end
    for _, id in ipairs(ids) do
      client:cancel_request(id)
    end
    cancelled = cancelled + #ids
  end
  if cancelled == 0 then
    for client_id, tokens in pairs(M.progress) do
      local client = vim.lsp.get_client_by_id(client_id)
      for token in pairs(client and tokens or {}) do
        client:notify('window/workDoneProgress/cancel', { token = token })
        cancelled = cancelled + 1
      end
    end
    M.progress = {}
  end
  util.notify(cancelled == 0 and 'nothing to cancel' or 'cancelled')
end

--- Creates the user commands; safe to call again.
function M.create()
  local create = vim.api.nvim_create_user_command
  create('QwenFix', M.fix, { range = true, desc = 'Qwen: fix the problem on these lines' })
  create('QwenAsk', M.ask_command, { range = true, nargs = '*', desc = 'Qwen: do {instruction} on these lines' })
  create('QwenRefine', M.refine_command, { nargs = '*', desc = "Qwen: follow up on its last change here with {note}" })
  create('QwenReview', M.review, { desc = 'Qwen: review this file' })
  create('QwenCancel', M.cancel, { desc = 'Qwen: cancel the running fix, ask or review' })
  vim.api.nvim_create_autocmd('LspProgress', {
    group = vim.api.nvim_create_augroup('qwen_lsp.cancel', { clear = true }),
    callback = function(ev)
      local client = vim.lsp.get_client_by_id(ev.data.client_id)
      if client and client.name == require('qwen_lsp.config').name then
        M.track_progress(ev.data.client_id, ev.data.params.token, ev.data.params.value or {})
      end
    end,
  })
  create('QwenFixTerminal', function()
    require('qwen_lsp.terminal').send_last_command(vim.api.nvim_get_current_buf())
  end, { desc = "Qwen: send the last :terminal command's output to the server" })
end

return M
