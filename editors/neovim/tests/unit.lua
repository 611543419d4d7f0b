-- Unit tests of the Neovim plugin, no server needed:
--   nvim --headless --clean -u NONE -l editors/neovim/tests/unit.lua
package.path = vim.fs.dirname(vim.fn.fnamemodify(arg[0], ':p')) .. '/?.lua;' .. package.path
local t = require('harness')
local plugin_dir = t.load_plugin()

-- Notifications are collected, not printed; tests that check them read `notes`.
local notes = {}
vim.notify = function(msg, level)
  table.insert(notes, { msg = msg, level = level })
end

local qwen = require('qwen_lsp')
local terminal = require('qwen_lsp.terminal')
local status = require('qwen_lsp.status')

local function with_select(answer, fn)
  local original = vim.ui.select
  local seen = {}
  vim.ui.select = function(items, opts, on_choice)
    table.insert(seen, { items = items, prompt = opts.prompt })
    on_choice(answer)
  end
  local ok, err = pcall(fn, seen)
  vim.ui.select = original
  if not ok then
    error(err, 0)
  end
  return seen
end

local function terminal_buffers()
  return vim.tbl_filter(function(b)
    return vim.bo[b].buftype == 'terminal'
  end, vim.api.nvim_list_bufs())
end

--- A terminal running `script` (sh); waits for `done()`, then for the buffer to catch up:
--- OSC sequences arrive before the terminal's text is refreshed into the buffer.
local function run_in_sh(script, done)
  vim.cmd('botright new')
  local buf = vim.api.nvim_get_current_buf()
  vim.fn.jobstart({ 'sh', '-c', script }, { term = true })
  t.wait(5000, function()
    return done(buf)
  end, 'the terminal script to finish')
  t.settle(buf)
  return buf
end

t.test('setup registers the server with vim.lsp.config and enables it', function()
  -- Recorded, not done: enabling would try to start the (fake) command for open buffers.
  local enabled = {}
  local enable = vim.lsp.enable
  vim.lsp.enable = function(name, on)
    table.insert(enabled, { name, on })
  end
  qwen.setup({
    python = '/opt/venv/bin/python',
    settings = { baseUrl = 'http://gpu:8000/v1', reviewOnSave = true, budgets = { files = 8192 } },
    lsp = { capabilities = { general = { positionEncodings = { 'utf-16' } } } },
  })
  local cfg = vim.lsp.config.qwen_lsp
  t.eq(cfg.cmd, { '/opt/venv/bin/python', '-m', 'qwen_lsp.cli' }, 'cmd from python')
  t.eq(cfg.init_options, { baseUrl = 'http://gpu:8000/v1', reviewOnSave = true, budgets = { files = 8192 } }, 'init_options')
  t.eq(cfg.settings, { qwen = cfg.init_options }, 'the `qwen` section answers workspace/configuration')
  t.eq(cfg.capabilities.general.positionEncodings, { 'utf-16' }, 'extra vim.lsp.config fields pass through')
  t.ok(type(cfg.handlers['qwen/status']) == 'function', 'qwen/status handler')
  t.ok(type(cfg.commands['qwen.runInTerminal']) == 'function', 'qwen.runInTerminal client command')
  t.ok(type(cfg.commands['qwen.ask']) == 'function', 'qwen.ask client command')
  vim.lsp.enable = enable
  t.eq(enabled, { { 'qwen_lsp' } }, 'vim.lsp.enable called')
  for _, name in ipairs({ 'QwenFix', 'QwenAsk', 'QwenReview', 'QwenFixTerminal' }) do
    t.ok(vim.fn.exists(':' .. name) == 2, ':' .. name .. ' exists')
  end
end)

t.test('an explicit cmd wins over python; no settings are sent unless given', function()
  local cfg = qwen.lsp_config({ cmd = { 'qwen-lsp', '--log-level', 'debug' }, python = '/x/python' })
  t.eq(cfg.cmd, { 'qwen-lsp', '--log-level', 'debug' }, 'cmd')
  t.eq(cfg.init_options, {}, 'no init_options: the server default and pyproject apply')
  t.eq(qwen.lsp_config().cmd, { 'qwen-lsp' }, 'default cmd')
end)

t.test('lsp/qwen_lsp.lua is found on runtimepath for the native route', function()
  local files = vim.api.nvim_get_runtime_file('lsp/qwen_lsp.lua', true)
  t.eq(files, { plugin_dir .. '/lsp/qwen_lsp.lua' }, 'runtime file')
  local cfg = dofile(files[1])
  t.eq(cfg.cmd, { 'qwen-lsp' }, 'cmd')
  t.ok(cfg.handlers['qwen/status'] and cfg.commands['qwen.runInTerminal'], 'handlers and commands')
end)

t.test('root: nearest project marker, else the file directory', function()
  local dir = vim.fn.tempname()
  vim.fn.mkdir(dir .. '/pkg/sub', 'p')
  vim.fn.writefile({ '[project]' }, dir .. '/pkg/pyproject.toml')
  local root_dir = require('qwen_lsp.config').root_dir({ 'pyproject.toml' })
  local function root_of(path)
    local buf = vim.fn.bufadd(path)
    local found
    root_dir(buf, function(r)
      found = r
    end)
    return found
  end
  t.eq(root_of(dir .. '/pkg/sub/a.py'), vim.fs.normalize(dir .. '/pkg'), 'marker')
  t.eq(root_of(dir .. '/loose.py'), vim.fs.normalize(dir), 'file directory')
end)

t.test('qwen/status drives the statusline component and fires User QwenStatus', function()
  local fired = {}
  vim.api.nvim_create_autocmd('User', {
    pattern = 'QwenStatus',
    callback = function(ev)
      table.insert(fired, ev.data.state)
    end,
  })
  status.handler(nil, { state = 'busy', message = 'patch round 2' }, {})
  t.eq(qwen.status(), 'Qwen: patch round 2', 'busy')
  status.handler(nil, { state = 'busy', message = 'Qwen: fixing NameError' }, {})
  t.eq(qwen.status(), 'Qwen: fixing NameError', 'the server names it already: not "Qwen: Qwen: …"')
  status.handler(nil, { state = 'busy', message = string.rep('x', 60) }, {})
  t.eq(vim.fn.strchars(qwen.status()), #'Qwen: ' + 40, 'long messages are cut')
  status.handler(nil, { state = 'idle', message = 'ready' }, {})
  t.eq(qwen.status(), 'Qwen', 'idle')
  status.handler(nil, { state = 'error', message = 'cannot reach the model server' }, {})
  t.eq(qwen.status(), 'Qwen ✗', 'error')
  t.eq(qwen.status_state(), { state = 'error', message = 'cannot reach the model server' }, 'state')
  status.handler(nil, { state = 'napping' }, {})
  t.eq(qwen.status_state().state, 'error', 'a malformed notification shows as an error')
  t.eq(fired, { 'busy', 'busy', 'busy', 'idle', 'error', 'error' }, 'User QwenStatus events')
end)

t.test('OSC 133 marks give the last command, its output and exit status', function()
  local buf = run_in_sh(
    [[printf '\033]133;A\007$ \033]133;B\007make test\r\n\033]133;C\007cc -c foo.c\r\nfoo.c:3:5: error: x undeclared\r\n\033]133;D;2\007]]
      .. [[\033]133;A\007$ \033]133;B\007\r\n\033]133;D;0\007\033]133;A\007$ '; sleep 30]],
    function(b)
      return terminal.last_command(b) ~= nil
    end
  )
  t.eq(terminal.last_command(buf), {
    command = 'make test',
    output = 'cc -c foo.c\nfoo.c:3:5: error: x undeclared\n',
    exit = 2,
  }, 'the empty command line after it is skipped')
  vim.cmd('bwipeout!')
end)

t.test('rows wrapped at the terminal width are joined back into lines', function()
  t.eq(terminal.unwrap({ 'abcdefghij', 'klm', 'short', '==========', 'next', 'F    [100%]', 'x' }, 10), {
    'abcdefghijklm',
    'short',
    '==========', -- a rule fills the width on purpose
    'next',
    'F    [100%]',
    'x',
  }, 'unwrapped')
  t.eq(terminal.unwrap({ 'abcdefghij', 'klm' }, nil), { 'abcdefghij', 'klm' }, 'unknown width: unchanged')
end)

t.test('a long command and output line wrapped by the terminal come back whole', function()
  local long = string.rep('x', 120) .. '.py:3: error'
  local buf = run_in_sh(
    ([[printf '\033]133;A\007$ \033]133;B\007%s\r\n\033]133;C\007%s\r\nshort\r\n\033]133;D;1\007\033]133;A\007$ '; sleep 30]]):format(
      'echo ' .. string.rep('y', 100),
      long
    ),
    function(b)
      return terminal.last_command(b) ~= nil
    end
  )
  local width = vim.fn.getwininfo(vim.fn.bufwinid(buf))[1].width
  t.ok(width < 120, 'the terminal is narrower than the line (' .. width .. ')')
  t.eq(terminal.last_command(buf), { command = 'echo ' .. string.rep('y', 100), output = long .. '\nshort\n', exit = 1 }, 'joined')
  vim.cmd('bwipeout!')
end)

t.test('a prompt wider in bytes than in cells ("❯ ") does not cut the command', function()
  local buf = run_in_sh(
    [[printf '\033]133;A\007~/proj ❯ \033]133;B\007cargo build\r\n\033]133;C\007error[E0425]: x\r\n\033]133;D;101\007'; sleep 30]],
    function(b)
      return terminal.last_command(b) ~= nil
    end
  )
  t.eq(terminal.last_command(buf), { command = 'cargo build', output = 'error[E0425]: x\n', exit = 101 }, 'command')
  vim.cmd('bwipeout!')
end)

--- An interactive `shell` in :terminal whose rc file sets a plain prompt and sources the
--- plugin's snippet, as editors/README.md says; returns the buffer once the first prompt is up.
local function shell_with_snippet(shell)
  if vim.fn.executable(shell) == 0 then
    t.skip(shell .. ' is not installed')
  end
  local dir = vim.fn.tempname()
  vim.fn.mkdir(dir, 'p')
  local snippet = vim.fn.shellescape(plugin_dir .. '/shell/osc133.' .. shell)
  local cmd, env
  if shell == 'bash' then
    -- A later PROMPT_COMMAND hook must still see the command's status.
    vim.fn.writefile({ "PS1='$ '", '. ' .. snippet, [[PROMPT_COMMAND="$PROMPT_COMMAND;"'echo "after=$?"']] }, dir .. '/rc')
    cmd, env = { 'bash', '--noprofile', '--rcfile', dir .. '/rc', '-i' }, { HISTFILE = '/dev/null' }
  else
    vim.fn.writefile({ "PS1='%% '", 'source ' .. snippet, 'precmd_functions+=(__after); __after() { echo "after=$?" }' }, dir .. '/.zshrc')
    cmd, env = { 'zsh', '-i' }, { ZDOTDIR = dir, HISTFILE = '/dev/null' }
  end
  vim.cmd('botright new')
  local buf = vim.api.nvim_get_current_buf()
  vim.fn.jobstart(cmd, { term = true, env = env, cwd = dir })
  return buf
end

for _, shell in ipairs({ 'bash', 'zsh' }) do
  t.test(('shell/osc133.%s marks commands for :QwenFixTerminal and keeps $? for later hooks'):format(shell), function()
    local buf = shell_with_snippet(shell)
    vim.fn.chansend(vim.bo[buf].channel, 'echo one; (exit 3)\n')
    t.wait(10000, function()
      local last = terminal.last_command(buf)
      return last and last.exit ~= nil
    end, 'the command to finish')
    t.settle(buf)
    t.eq(terminal.last_command(buf), { command = 'echo one; (exit 3)', output = 'one\n', exit = 3 }, 'last command')
    t.wait(5000, function()
      return table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), '\n'):find('after=3', 1, true) ~= nil
    end, 'the later hook to print after=3')
    vim.cmd('bwipeout!')
  end)
end

t.test('a command line sent with the C mark (fish 4, cmdline_url) is used as is', function()
  local buf = run_in_sh(
    [[printf '\033]133;A\007> \033]133;B\007(what the screen shows)\r\n\033]133;C;cmdline_url=make%%20%%20check\007boom\r\n\033]133;D;2\007'; sleep 30]],
    function(b)
      return terminal.last_command(b) ~= nil
    end
  )
  t.eq(terminal.last_command(buf), { command = 'make  check', output = 'boom\n', exit = 2 }, 'command from cmdline_url')
  vim.cmd('bwipeout!')
end)

t.test('OSC 7 reports the terminal directory', function()
  local buf = run_in_sh([[printf '\033]7;file://host/tmp/with%%20space\007'; sleep 30]], function(b)
    return terminal.cwd(b) == '/tmp/with space'
  end)
  t.eq(terminal.cwd(buf), '/tmp/with space', 'decoded path')
  vim.cmd('bwipeout!')
end)

t.test('without OSC 133, a prompt pattern finds the last command', function()
  local lines = {
    'me@host:~/proj$ ls',
    'a.py  b.py',
    'me@host:~/proj$ python a.py',
    'Traceback (most recent call last):',
    '  File "a.py", line 1, in <module>',
    '>       assert add(2, 3) == 5', -- not a prompt: ">" followed by several spaces
    "NameError: name 'y' is not defined",
    'me@host:~/proj$ ',
    '',
  }
  local parsed = terminal.parse_by_prompt(lines, terminal.options.prompt_pattern)
  t.eq(parsed.command, 'python a.py', 'command')
  t.eq(
    parsed.output,
    'Traceback (most recent call last):\n  File "a.py", line 1, in <module>\n>       assert add(2, 3) == 5\nNameError: name \'y\' is not defined',
    'output up to the next prompt'
  )
  t.eq(terminal.parse_by_prompt({ 'no prompt here' }, terminal.options.prompt_pattern), nil, 'nothing found')
end)

t.test(':QwenFixTerminal reports why nothing was sent', function()
  notes = {}
  local buf = run_in_sh([[printf '\033]133;A\007$ \033]133;B\007false\r\n\033]133;C\007\033]133;D;1\007'; sleep 30]], function(b)
    return terminal.last_command(b) ~= nil
  end)
  local sent = terminal.send_last_command(buf)
  t.eq(sent, nil, 'no client, nothing sent')
  t.ok(notes[#notes].msg:match('not running'), 'says the server is not running: ' .. vim.inspect(notes))
  vim.cmd('bwipeout!')
end)

local readonly = { command = 'git status', reason = 'see what changed', risk = 'read-only', dangers = {} }
local destructive = {
  command = 'rm -rf build',
  reason = 'start clean',
  risk = 'destructive',
  dangers = { 'rm with -r/-f deletes files for good' },
}

t.test('qwen.runInTerminal: cancel runs nothing and opens no terminal', function()
  local before = #terminal_buffers()
  local result
  local seen = with_select(nil, function()
    terminal.run_in_terminal(readonly, nil, function(ran)
      result = ran
    end)
  end)
  t.eq(result, false, 'not run')
  t.eq(#terminal_buffers(), before, 'no terminal')
  t.eq(seen[1].items, { terminal.RUN, terminal.CANCEL }, 'choices')
  t.ok(seen[1].prompt:match('read%-only') and seen[1].prompt:match('git status'), 'risk and command shown')
end)

t.test('qwen.runInTerminal: destructive is loud and needs its own confirmation', function()
  notes = {}
  local results = {}
  local seen = with_select(terminal.RUN, function() -- the ordinary label does not confirm it
    terminal.run_in_terminal(destructive, nil, function(ran)
      table.insert(results, ran)
    end)
  end)
  t.eq(results, { false }, 'not run')
  t.eq(seen[1].items, { terminal.CANCEL, terminal.RUN_DESTRUCTIVE }, 'Cancel first')
  t.ok(seen[1].prompt:match('DESTRUCTIVE'), 'labelled')
  t.ok(seen[1].prompt:match('deletes files for good'), 'dangers listed')
  t.eq(notes[1].level, vim.log.levels.WARN, 'warned')

  seen = with_select(terminal.RUN, function()
    terminal.run_in_terminal(vim.tbl_extend('force', readonly, { risk = 'sounds fine' }), nil, function(ran)
      table.insert(results, ran)
    end)
  end)
  t.eq(seen[1].items, { terminal.CANCEL, terminal.RUN_DESTRUCTIVE }, 'unknown risk treated as destructive')
  t.eq(results, { false, false }, 'not run')
end)

t.test('qwen.runInTerminal: after confirmation the command is typed in a new terminal, not run', function()
  local marker = vim.fn.tempname()
  local shell = vim.o.shell
  vim.o.shell = 'sh'
  local bufnr
  with_select(terminal.RUN_DESTRUCTIVE, function()
    terminal.run_in_terminal(vim.tbl_extend('force', destructive, { command = 'touch ' .. marker }), nil, function(ran, b)
      t.eq(ran, true, 'confirmed')
      bufnr = b
    end)
  end)
  vim.o.shell = shell
  t.ok(bufnr and vim.bo[bufnr].buftype == 'terminal', 'a terminal opened')
  t.wait(5000, function()
    return table.concat(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false), '\n'):find('touch ' .. marker, 1, true) ~= nil
  end, 'the command shows at the prompt')
  vim.wait(300)
  t.eq(vim.uv.fs_stat(marker), nil, 'Enter is left to the user: the command did not run')
  vim.cmd('stopinsert')
  vim.cmd('bwipeout!')
end)

t.test('qwen.runInTerminal: a malformed argument is refused', function()
  local result
  notes = {}
  terminal.run_in_terminal({ reason = 'no command' }, nil, function(ran)
    result = ran
  end)
  t.eq(result, false, 'refused')
  t.eq(notes[1].level, vim.log.levels.ERROR, 'says why')
end)

t.test('qwen.ask prompts for the instruction and sends qwen.server.ask', function()
  local requests = {}
  local client = {
    request = function(_, method, params, handler)
      table.insert(requests, { method = method, params = params })
      handler(nil, { applied = true, summary = 'done' })
    end,
  }
  local input = vim.ui.input
  local answers = { '  handle None  ', '' }
  vim.ui.input = function(_, on_confirm)
    on_confirm(table.remove(answers, 1))
  end
  local arg = { uri = 'file:///proj/a.py', range = { start = { line = 0, character = 0 }, ['end'] = { line = 2, character = 0 } } }
  require('qwen_lsp.commands').ask(client, arg)
  require('qwen_lsp.commands').ask(client, arg) -- empty answer: cancelled
  vim.ui.input = input
  t.eq(requests, {
    {
      method = 'workspace/executeCommand',
      params = { command = 'qwen.server.ask', arguments = { vim.tbl_extend('force', arg, { instruction = 'handle None' }) } },
    },
  }, 'one request with the trimmed instruction')
end)

--- A stand-in for a running qwen_lsp client: its requests table as Neovim keeps it, and what it sent.
local function fake_client(id, requests)
  local sent = {}
  return {
    id = id,
    name = 'qwen_lsp',
    requests = requests,
    sent = sent,
    cancel_request = function(self, request_id)
      self.requests[request_id].type = 'cancel'
      table.insert(sent, { '$/cancelRequest', request_id })
    end,
    notify = function(_, method, params)
      table.insert(sent, { method, params })
    end,
  }, sent
end

local function with_clients(clients, fn)
  local get_clients, get_client_by_id = vim.lsp.get_clients, vim.lsp.get_client_by_id
  vim.lsp.get_clients = function(filter)
    return vim.tbl_filter(function(c)
      return not (filter and filter.name) or c.name == filter.name
    end, clients)
  end
  vim.lsp.get_client_by_id = function(id)
    return vim.iter(clients):find(function(c)
      return c.id == id
    end)
  end
  local ok, err = pcall(fn)
  vim.lsp.get_clients, vim.lsp.get_client_by_id = get_clients, get_client_by_id
  if not ok then
    error(err, 0)
  end
end

t.test(':QwenCancel cancels the pending fix and command requests, and only those', function()
  notes = {}
  local client, sent = fake_client(1, {
    [4] = { type = 'pending', method = 'codeAction/resolve' },
    [5] = { type = 'pending', method = 'workspace/executeCommand' },
    [6] = { type = 'pending', method = 'textDocument/codeAction' },
    [7] = { type = 'complete', method = 'codeAction/resolve' },
  })
  local other = fake_client(2, { [4] = { type = 'pending', method = 'codeAction/resolve' } })
  other.name = 'pyright'
  with_clients({ client, other }, function()
    vim.cmd('QwenCancel')
  end)
  table.sort(sent, function(a, b)
    return a[2] < b[2]
  end)
  t.eq(sent, { { '$/cancelRequest', 4 }, { '$/cancelRequest', 5 } }, 'the resolve and the command')
  t.eq(other.requests[4].type, 'pending', "another server's request is left alone")
  t.eq(notes, { { msg = 'Qwen: cancelled', level = vim.log.levels.INFO } }, 'says so, not as an error')
end)

t.test(':QwenCancel with nothing running says so', function()
  notes = {}
  local client, sent = fake_client(1, {})
  with_clients({ client }, function()
    vim.cmd('QwenCancel')
  end)
  t.eq(sent, {}, 'nothing sent')
  t.eq(notes[1].msg, 'Qwen: nothing to cancel')
end)

t.test(':QwenCancel reaches work no request waits for through its cancellable progress', function()
  notes = {}
  local client, sent = fake_client(1, {})
  local function progress(token, value)
    vim.api.nvim_exec_autocmds('LspProgress', {
      pattern = value.kind,
      modeline = false,
      data = { client_id = 1, params = { token = token, value = value } },
    })
  end
  with_clients({ client }, function()
    progress('review-1', { kind = 'begin', title = 'Qwen: reviewing calc.py', cancellable = true })
    progress('index-1', { kind = 'begin', title = 'indexing', cancellable = false })
    progress('done-1', { kind = 'begin', title = 'Qwen: fixing', cancellable = true })
    progress('done-1', { kind = 'end', message = 'done' })
    vim.cmd('QwenCancel')
    t.eq(sent, { { 'window/workDoneProgress/cancel', { token = 'review-1' } } }, 'only the running cancellable one')
    sent[1] = nil
    vim.cmd('QwenCancel')
    t.eq(sent, {}, 'not twice')
  end)
  t.eq(notes[1].msg, 'Qwen: cancelled')
end)

t.run()
