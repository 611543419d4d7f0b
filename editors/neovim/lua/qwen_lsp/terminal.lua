-- :terminal integration.
--
-- Commands: shells that emit OSC 133 (see shell/osc133.bash) mark prompt (A), command (B),
-- output (C) and end with exit status (D). Marks are kept as extmarks, which follow the text
-- when scrollback drops lines; `last_command()` reads the command and output between them.
-- Without OSC 133 a prompt pattern is the (weaker) fallback.
--
-- Suggestions: `qwen.runInTerminal` never runs anything by itself; after confirmation it opens
-- a terminal with the command typed at the prompt, and the user presses Enter.

local util = require('qwen_lsp.util')

local M = {}

local ns = vim.api.nvim_create_namespace('qwen_lsp.terminal')
local MAX_RECORDS = 50 -- commands remembered per terminal
local MAX_OUTPUT = 100000 -- characters sent; the end of the output matters most

--- Options set by setup(): see require('qwen_lsp').setup.
M.options = {
  -- Fallback without OSC 133: a prompt line is one matching this Lua pattern; the command
  -- follows the match. A prompt character, one space, then the command (or nothing), so
  -- pytest's ">       assert …" lines are not prompts.
  prompt_pattern = '^.-[%$#%%>] %f[^ ]',
}

---@class qwen_lsp.TerminalRecord
---@field a { id: integer, col: integer }|nil marks, see set_mark()
---@field b { id: integer, col: integer }|nil
---@field c { id: integer, col: integer }|nil
---@field d { id: integer, col: integer }|nil
---@field exit integer|nil
---@field cmdline string|nil the command line, when the shell sends it with C

---@type table<integer, { records: qwen_lsp.TerminalRecord[], cwd: string|nil, width: integer|nil }>
local terminals = {}

local function state(buf)
  terminals[buf] = terminals[buf] or { records = {} }
  return terminals[buf]
end

--- A mark is an extmark at the start of the cursor's row (it follows the row when scrollback
--- drops lines) plus the cursor column, kept aside: the row's text may not be in the buffer
--- yet when the sequence arrives, so the column cannot be checked against it.
---@return { id: integer, col: integer }|nil
local function set_mark(buf, cursor)
  local ok, id = pcall(vim.api.nvim_buf_set_extmark, buf, ns, cursor[1] - 1, 0, {})
  return ok and { id = id, col = cursor[2] } or nil
end

local function percent_decode(text)
  return (text:gsub('%%(%x%x)', function(hex)
    return string.char(tonumber(hex, 16))
  end))
end

local function decode_file_url(url)
  local path = url:match('^file://[^/]*(/.*)$')
  return path and percent_decode(path)
end

--- Handles one OSC sequence from a terminal (the TermRequest autocmd calls this).
---@param buf integer
---@param sequence string e.g. "\27]133;D;1"
---@param cursor integer[] (1,0)-indexed cursor position when it arrived
function M.on_request(buf, sequence, cursor)
  local url = sequence:match('^\27%]7;(.*)$') -- OSC 7: the shell reports its directory
  if url then
    state(buf).cwd = decode_file_url(url) or state(buf).cwd
    return
  end
  local kind, params = sequence:match('^\27%]133;(%u)(.*)$')
  if not kind then
    return
  end
  state(buf).width = M.width(buf) or state(buf).width
  local records = state(buf).records
  local current = records[#records]
  if kind == 'A' then
    table.insert(records, { a = set_mark(buf, cursor) })
    if #records > MAX_RECORDS then
      local old = table.remove(records, 1)
      for _, key in ipairs({ 'a', 'b', 'c', 'd' }) do
        if old[key] then
          pcall(vim.api.nvim_buf_del_extmark, buf, ns, old[key].id)
        end
      end
    end
  elseif current and kind == 'B' and not current.b then
    current.b = set_mark(buf, cursor)
  elseif current and kind == 'C' and not current.c then
    current.c = set_mark(buf, cursor)
    -- fish ≥ 4 (kitty's protocol) sends the command line itself: exact, even when wrapped.
    local url = params:match(';cmdline_url=([^;]*)')
    current.cmdline = url and percent_decode(url) or params:match(';cmdline=([^;]*)')
  elseif current and kind == 'D' and current.c and not current.d then
    current.d = set_mark(buf, cursor)
    current.exit = tonumber(params:match('^;(%-?%d+)')) -- may be absent: then unknown
  end
end

---@return integer[]|nil (row, col), 0-based
local function pos(buf, mark)
  local p = mark and vim.api.nvim_buf_get_extmark_by_id(buf, ns, mark.id, {}) or {}
  return p[1] and { p[1], mark.col } or nil
end

--- A terminal buffer has one line per screen row, so a long line is split at the terminal's
--- width. Rows that fill the width exactly are joined with the next one, except rows that
--- are full on purpose: rules ending in `===`/`---`/`___` and pytest's `[ 42%]` progress.
---@param rows string[]
---@param width integer|nil terminal width in cells; nil: no joining
---@return string[]
function M.unwrap(rows, width)
  if not width or width < 1 then
    return rows
  end
  local lines, pending = {}, nil
  for _, row in ipairs(rows) do
    local line = (pending or '') .. row
    local full = vim.fn.strdisplaywidth(row) == width
      and not row:match('([=_%-%*#~])%1%1$')
      and not row:match('%[%s*%d+%%%]$')
    if full then
      pending = line
    else
      table.insert(lines, line)
      pending = nil
    end
  end
  if pending then
    table.insert(lines, pending)
  end
  return lines
end

--- The terminal's width: the narrowest window showing it (the pty follows it), else the
--- width it had when the shell last sent a mark; nil if never seen in a window.
---@param buf integer
---@return integer|nil
function M.width(buf)
  local width
  for _, win in ipairs(vim.fn.win_findbuf(buf)) do
    local info = vim.fn.getwininfo(win)[1]
    width = math.min(width or math.huge, info.width - info.textoff)
  end
  return width or (terminals[buf] and terminals[buf].width)
end

--- Byte index in `line` of screen cell `cells`: terminal cursor columns count cells, and a
--- prompt like "❯ " is wider in bytes.
local function byte_col(line, cells)
  local width = 0
  for i = 0, vim.fn.strchars(line) - 1 do
    if width >= cells then
      return #vim.fn.strcharpart(line, 0, i)
    end
    width = width + vim.fn.strdisplaywidth(vim.fn.strcharpart(line, i, 1))
  end
  return #line -- past the text: the row's padding was trimmed
end

--- Rows from mark `from` to mark `to` (row, cell col), the first and last cut at the marks.
---@return string[] rows, integer first_cut byte where the first row was cut
local function rows_between(buf, from, to)
  if to[1] < from[1] or (to[1] == from[1] and to[2] < from[2]) then
    return {}, 0
  end
  local rows = vim.api.nvim_buf_get_lines(buf, from[1], to[1] + 1, false)
  if #rows == 0 then
    return {}, 0
  end
  local first_cut = byte_col(rows[1], from[2])
  rows[#rows] = rows[#rows]:sub(1, byte_col(rows[#rows], to[2]))
  return rows, first_cut
end

--- The text between two marks, with wrapped rows joined and the padding of rows dropped.
local function text_between(buf, from, to)
  -- Whole rows are unwrapped (a wrapped first row is full including the prompt), then cut.
  local rows, first_cut = rows_between(buf, from, to)
  local lines = M.unwrap(rows, M.width(buf))
  if #lines > 0 then
    lines[1] = lines[1]:sub(first_cut + 1)
  end
  return table.concat(
    vim.tbl_map(function(line)
      return (line:gsub('%s+$', ''))
    end, lines),
    '\n'
  )
end

--- From prompt-pattern matches alone: the last prompt line with a command, its output up to
--- the next prompt. The exit status is unknown.
---@param lines string[]
---@param pattern string
---@return { command: string, output: string }|nil
function M.parse_by_prompt(lines, pattern)
  local prompts = {}
  for i, line in ipairs(lines) do
    local prompt_end = select(2, line:find(pattern))
    if prompt_end then
      table.insert(prompts, { row = i, command = vim.trim(line:sub(prompt_end + 1)) })
    end
  end
  for k = #prompts, 1, -1 do
    local prompt = prompts[k]
    if prompt.command ~= '' then
      local stop = prompts[k + 1] and prompts[k + 1].row - 1 or #lines
      local output = {}
      for i = prompt.row + 1, stop do
        table.insert(output, (lines[i]:gsub('%s+$', '')))
      end
      return { command = prompt.command, output = table.concat(output, '\n') }
    end
  end
  return nil
end

---@class qwen_lsp.TerminalCommand
---@field command string
---@field output string
---@field exit integer|nil nil: the shell did not report it

--- The last finished command of a terminal buffer, or nil.
---@param buf integer
---@return qwen_lsp.TerminalCommand|nil
function M.last_command(buf)
  local records = (terminals[buf] or { records = {} }).records
  for i = #records, 1, -1 do
    local r = records[i]
    local a, b, c, d = pos(buf, r.a), pos(buf, r.b), pos(buf, r.c), pos(buf, r.d)
    if c and d then
      local command
      if r.cmdline then
        command = r.cmdline
      elseif b then
        command = text_between(buf, b, c)
      elseif a then
        local line = vim.api.nvim_buf_get_lines(buf, a[1], a[1] + 1, false)[1] or ''
        local prompt_end = select(2, line:find(M.options.prompt_pattern)) or 0
        command = line:sub(prompt_end + 1)
      end
      command = vim.trim(command or '')
      if command ~= '' then
        return { command = command, output = text_between(buf, c, d), exit = r.exit }
      end
    end
  end
  if #records == 0 then
    local parsed = M.parse_by_prompt(vim.api.nvim_buf_get_lines(buf, 0, -1, false), M.options.prompt_pattern)
    return parsed and { command = parsed.command, output = parsed.output, exit = nil }
  end
  return nil
end

--- The directory the terminal's shell is in: OSC 7 if the shell reports it, else where the
--- terminal started (from its term:// name), else Neovim's cwd.
---@param buf integer
---@return string
function M.cwd(buf)
  local reported = terminals[buf] and terminals[buf].cwd
  if reported then
    return reported
  end
  local started = vim.api.nvim_buf_get_name(buf):match('^term://(.-)//%d+:')
  if started and started ~= '' then
    return vim.fs.normalize(vim.fn.fnamemodify(started, ':p'))
  end
  return vim.fn.getcwd()
end

---@return integer|nil
local function last_terminal()
  local best, best_used = nil, -1
  for _, info in ipairs(vim.fn.getbufinfo({ buflisted = 0 })) do
    if vim.bo[info.bufnr].buftype == 'terminal' and info.lastused > best_used then
      best, best_used = info.bufnr, info.lastused
    end
  end
  return best
end

--- :QwenFixTerminal: sends the last command of `buf` (or of the last used terminal) as
--- `qwen/terminalOutput`. An unreported exit status is sent as 1: the user asked for a fix.
---@param buf integer
---@return table|nil params the notification's params, when sent
function M.send_last_command(buf)
  if vim.bo[buf].buftype ~= 'terminal' then
    buf = last_terminal() or buf
  end
  if vim.bo[buf].buftype ~= 'terminal' then
    util.notify('no :terminal buffer found', vim.log.levels.ERROR)
    return nil
  end
  local last = M.last_command(buf)
  if not last then
    util.notify('no finished command found in this terminal (see :help qwen_lsp-terminal)', vim.log.levels.ERROR)
    return nil
  end
  local cwd = M.cwd(buf)
  local client = util.client_for_path(cwd)
  if not client then
    util.notify('qwen_lsp is not running: open a file of the project first', vim.log.levels.ERROR)
    return nil
  end
  local output = #last.output > MAX_OUTPUT and last.output:sub(-MAX_OUTPUT) or last.output
  local params = { command = last.command, exitCode = last.exit or 1, output = output, cwd = cwd }
  client:notify('qwen/terminalOutput', params)
  if params.exitCode == 0 then
    util.notify(('`%s` succeeded: its earlier diagnostics are cleared'):format(last.command))
  else
    util.notify(('sent `%s` (exit %d): its problems appear as diagnostics'):format(last.command, params.exitCode))
  end
  return params
end

--- Starts tracking OSC sequences in all terminals; safe to call again.
function M.track()
  local group = vim.api.nvim_create_augroup('qwen_lsp.terminal', { clear = true })
  vim.api.nvim_create_autocmd('TermRequest', {
    group = group,
    callback = function(ev)
      M.on_request(ev.buf, ev.data.sequence, ev.data.cursor)
    end,
  })
  vim.api.nvim_create_autocmd('BufWipeout', {
    group = group,
    callback = function(ev)
      terminals[ev.buf] = nil
    end,
  })
end

local KNOWN_RISKS = { ['read-only'] = true, ['modifies files'] = true, destructive = true, network = true }
M.RUN = 'Run'
M.RUN_DESTRUCTIVE = 'Run destructive command'
M.CANCEL = 'Cancel'

--- Validates the argument; an unknown risk label counts as destructive, never as safe.
---@return { command: string, reason: string, risk: string, dangers: string[] }|nil
function M.parse_run_args(arg)
  if type(arg) ~= 'table' or type(arg.command) ~= 'string' or vim.trim(arg.command) == '' then
    return nil
  end
  local dangers = vim.tbl_filter(function(d)
    return type(d) == 'string'
  end, type(arg.dangers) == 'table' and arg.dangers or {})
  return {
    command = arg.command,
    reason = type(arg.reason) == 'string' and arg.reason or '',
    risk = KNOWN_RISKS[arg.risk] and arg.risk or 'destructive',
    dangers = dangers,
  }
end

--- Opens a terminal below with `command` typed at the prompt but not run.
---@return integer bufnr
local function prefilled_terminal(command, cwd)
  vim.cmd('botright new')
  local buf = vim.api.nvim_get_current_buf()
  local chan = vim.fn.jobstart(vim.o.shell, { term = true, cwd = cwd })
  -- No newline: the shell shows it at its prompt; Enter is the user's.
  vim.fn.chansend(chan, command)
  vim.cmd.startinsert()
  return buf
end

--- The `qwen.runInTerminal` client command.
---@param arg table|nil {command, reason, risk, dangers}
---@param ctx { client_id: integer }|nil
---@param on_done fun(ran: boolean, bufnr: integer|nil)|nil for tests and callers that chain
function M.run_in_terminal(arg, ctx, on_done)
  on_done = on_done or function() end
  local args = M.parse_run_args(arg)
  if not args then
    util.notify('qwen.runInTerminal got an invalid argument: ' .. vim.inspect(arg), vim.log.levels.ERROR)
    return on_done(false, nil)
  end
  local destructive = args.risk == 'destructive'
  local lines = {}
  if destructive then
    table.insert(lines, '⚠ DESTRUCTIVE command suggested by Qwen:')
  else
    table.insert(lines, ('Run in a terminal (%s):'):format(args.risk))
  end
  table.insert(lines, '    ' .. args.command)
  if args.reason ~= '' then
    table.insert(lines, args.reason)
  end
  for _, danger in ipairs(args.dangers) do
    table.insert(lines, '⚠ ' .. danger)
  end
  if destructive then
    util.notify(table.concat(lines, '\n'), vim.log.levels.WARN) -- loud, and stays in :messages
  end
  -- Cancel comes first for destructive commands, so a stray Enter/1 does not run it.
  local choices = destructive and { M.CANCEL, M.RUN_DESTRUCTIVE } or { M.RUN, M.CANCEL }
  local confirm_label = destructive and M.RUN_DESTRUCTIVE or M.RUN
  vim.ui.select(choices, { prompt = table.concat(lines, '\n'), kind = 'qwen.runInTerminal' }, function(choice)
    if choice ~= confirm_label then
      return on_done(false, nil)
    end
    local client = ctx and vim.lsp.get_client_by_id(ctx.client_id)
    local cwd = client and client.root_dir or vim.fn.getcwd()
    on_done(true, prefilled_terminal(args.command, cwd))
  end)
end

return M
