-- End to end in headless Neovim: the real qwen-lsp server, the vLLM test double, a real buggy
-- project, and a real bash in :terminal with the plugin's OSC 133 integration.
--   QWEN_LSP_PYTHON=/path/to/venv/bin/python nvim --headless --clean -u NONE -l editors/neovim/tests/e2e.lua
-- Exits 1 on any failure.

package.path = vim.fs.dirname(vim.fn.fnamemodify(arg[0], ':p')) .. '/?.lua;' .. package.path
local t = require('harness')
local plugin_dir = t.load_plugin()
vim.cmd('filetype on') -- -u NONE leaves it off, and vim.lsp.enable starts clients on FileType

local REPO = os.getenv('QWEN_LSP_REPO') or vim.fs.dirname(vim.fs.dirname(plugin_dir))
local PYTHON = os.getenv('QWEN_LSP_PYTHON')
  or (vim.uv.fs_stat(REPO .. '/.venv/bin/python') and REPO .. '/.venv/bin/python')
  or 'python3'

local BUGGY = { 'def add(a, b):', '    total = a + c', '    return total' }
local FIXED = { 'def add(a, b):', '    total = a + b', '    return total' }
local DOCUMENTED = { 'def add(a, b):', '    """Sum of a and b."""', '    total = a + b', '    return total' }
local PLAN = {
  hypotheses = { 'add() uses an undefined name c instead of b' },
  evidence = { { path = 'calc.py', start_line = 2, end_line = 2, reason = "NameError: name 'c' is not defined" } },
  steps = { 'use b in add' },
  verify_command = vim.NIL,
}
local function call(name, arguments)
  return { tool_calls = { { name = name, arguments = arguments } } }
end
-- What the double answers, in order: the fix (plan, read, edit, finish), then :QwenAsk.
local SCRIPT = {
  { reasoning = 'The traceback points at calc.py line 2: c is undefined.', content = vim.json.encode(PLAN) },
  call('read_file', { path = 'calc.py' }),
  call('edit_file', { path = 'calc.py', old_string = 'total = a + c', new_string = 'total = a + b' }),
  call('finish', { summary = 'add() now adds b' }),
  { reasoning = 'Add a docstring.', content = vim.json.encode(vim.tbl_extend('force', PLAN, { steps = { 'docstring' } })) },
  call('edit_file', { path = 'calc.py', old_string = 'def add(a, b):\n', new_string = 'def add(a, b):\n    """Sum of a and b."""\n' }),
  call('finish', { summary = 'documented add()' }),
  -- A problem only a shell command can fix: the engine suggests it, the client runs it.
  { reasoning = 'A module is missing; nothing to edit.', content = vim.json.encode(vim.tbl_extend('force', PLAN, { steps = { 'create it' } })) },
  {
    tool_calls = {
      { name = 'suggest_command', arguments = { command = 'touch suggested.marker', reason = 'the check wants this file' } },
      { name = 'finish', arguments = { summary = 'needs a file the user must create' } },
    },
  },
  -- :QwenReview: one structured answer.
  {
    content = vim.json.encode({
      findings = {
        { path = 'calc.py', line = 3, severity = 'warning', category = 'bug', message = 'add() ignores overflow' },
      },
    }),
  },
}

local work = vim.fn.tempname()
local project = work .. '/proj'
vim.fn.mkdir(project, 'p')
vim.fn.writefile(BUGGY, project .. '/calc.py')
vim.fn.writefile({ 'from calc import add', '', '', 'def test_add():', '    assert add(2, 3) == 5' }, project .. '/test_calc.py')
vim.fn.writefile({ vim.json.encode(SCRIPT) }, work .. '/script.json')
vim.fn.writefile({ 'import os', '', 'assert os.path.exists("suggested.marker"), "suggested.marker is missing"' }, project .. '/check.py')
local PYTEST = PYTHON .. ' -m pytest -q -p no:cacheprovider test_calc.py'

local double, base_url
local statuses, progress, notes, levels = {}, {}, {}, {}
vim.notify = function(msg, level) -- collected: shown on failure, checked where it matters
  table.insert(notes, msg)
  table.insert(levels, level or vim.log.levels.INFO)
end
vim.api.nvim_create_autocmd('LspProgress', {
  callback = function(ev)
    local value = ev.data.params.value or {}
    table.insert(progress, value.message or value.title or value.kind)
  end,
})
vim.api.nvim_create_autocmd('User', {
  pattern = 'QwenStatus',
  callback = function(ev)
    table.insert(statuses, ev.data.state)
  end,
})

--- Starts the double (on `port`, default any free one) with the replies of `script` queued.
local function start_double(port, script)
  base_url = nil
  double = vim.system({ PYTHON, '-m', 'tests.vllm_double', '--port', tostring(port or 0), '--script', script or (work .. '/script.json') }, {
    cwd = REPO,
    stdout = function(_, data)
      base_url = base_url or (data and data:match('READY (%S+)'))
    end,
  })
  t.wait(60000, function()
    return base_url ~= nil
  end, 'the vLLM double to print READY')
end

--- The double's control endpoints (tests/vllm_double.py): `GET /_double/stats`, `POST /_double/script`, ….
local function double_api(method, path, body)
  local code = [[
import json, sys, urllib.request
method, url, body = sys.argv[1], sys.argv[2], sys.stdin.read()
request = urllib.request.Request(url, data=body.encode() if body else None, method=method, headers={"content-type": "application/json"})
print(urllib.request.urlopen(request, timeout=10).read().decode())
]]
  local root = base_url:gsub('/v1$', '')
  local done = vim.system({ PYTHON, '-c', code, method, root .. path }, { stdin = body and vim.json.encode(body) or '' }):wait(15000)
  assert(done.code == 0, ('%s %s failed: %s'):format(method, path, done.stderr))
  return vim.json.decode(done.stdout)
end

local function chat_requests()
  return #vim.tbl_filter(function(r)
    return r.path == '/v1/chat/completions'
  end, double_api('GET', '/_double/requests'))
end

local calc_buf, term_buf, client

t.cleanup(function()
  if double then
    double:kill('sigterm')
    double:wait(5000)
  end
  vim.fn.delete(work, 'rf')
end)

t.on_failure(function()
  return 'notifications:\n' .. table.concat(notes, '\n')
end)

t.on_failure(function() -- the server's stderr goes to the LSP log
  local lines = vim.fn.readfile(vim.lsp.get_log_path())
  return 'LSP log (' .. vim.lsp.get_log_path() .. '), last lines:\n' .. table.concat(vim.list_slice(lines, math.max(1, #lines - 60)), '\n')
end)

t.test('the server starts and attaches to a Python buffer', function()
  start_double()
  require('qwen_lsp').setup({
    python = PYTHON,
    settings = { baseUrl = base_url, cacheDir = work .. '/cache', maxRetries = 0 },
  })
  vim.cmd.edit(project .. '/calc.py')
  calc_buf = vim.api.nvim_get_current_buf()
  t.wait(60000, function()
    client = vim.lsp.get_clients({ bufnr = calc_buf, name = 'qwen_lsp' })[1]
    return client ~= nil and client.initialized
  end, 'qwen_lsp to attach and initialize')
  t.eq(client.root_dir, vim.fs.normalize(project), 'workspace root: the file directory (no marker in the temp project)')
  t.ok(client.server_capabilities.codeActionProvider, 'the server offers code actions')
end)

--- Types `command` into the bash terminal and waits until OSC 133 says it finished.
-- What `gra` does with "Fix with Qwen" chosen: request, resolve lazily, apply the versioned edit.
local function apply_fix_with_qwen()
  vim.lsp.buf.code_action({
    apply = true,
    filter = function(action)
      return vim.startswith(action.title, 'Fix with Qwen')
    end,
  })
end

local function run_in_terminal(command)
  local terminal = require('qwen_lsp.terminal')
  local before = terminal.last_command(term_buf)
  vim.fn.chansend(vim.bo[term_buf].channel, command .. '\n')
  t.wait(60000, function()
    local last = terminal.last_command(term_buf)
    return last ~= nil and last.exit ~= nil and not vim.deep_equal(last, before)
  end, 'OSC 133 D for: ' .. command)
  t.settle(term_buf)
  return terminal.last_command(term_buf)
end

t.test('a failing command in :terminal becomes diagnostics with :QwenFixTerminal', function()
  -- A bashrc as editors/README.md says: a prompt, then the plugin's OSC 133 marks.
  vim.fn.writefile({ "PS1='$ '", '. ' .. vim.fn.shellescape(plugin_dir .. '/shell/osc133.bash') }, work .. '/bashrc')
  vim.cmd('botright new')
  term_buf = vim.api.nvim_get_current_buf()
  vim.fn.jobstart({ 'bash', '--noprofile', '--rcfile', work .. '/bashrc', '-i' }, {
    term = true,
    cwd = project,
    env = { HISTFILE = '/dev/null' },
  })
  local last = run_in_terminal(PYTEST)
  t.eq(last.command, PYTEST, 'command read between the B and C marks')
  t.eq(last.exit, 1, 'exit status from the D mark')
  t.ok(last.output:match('NameError'), 'output read between the C and D marks:\n' .. last.output)

  vim.cmd('QwenFixTerminal')
  t.wait(30000, function()
    return #vim.diagnostic.get(calc_buf) > 0
  end, 'diagnostics on calc.py')
  local diagnostic = vim.diagnostic.get(calc_buf)[1]
  t.eq(diagnostic.source, 'qwen', 'source')
  t.eq(diagnostic.lnum, 1, 'on line 2, where the traceback points')
  t.ok(diagnostic.message:match('NameError'), 'message: ' .. diagnostic.message)
end)

t.test('the Qwen code action is listed (gra) and applying it fixes the file', function()
  local win = vim.fn.bufwinid(calc_buf)
  vim.api.nvim_set_current_win(win)
  vim.api.nvim_win_set_cursor(win, { 2, 4 })
  local params = vim.lsp.util.make_range_params(win, client.offset_encoding)
  params.context = {
    diagnostics = vim.tbl_map(function(d)
      return d.user_data.lsp
    end, vim.diagnostic.get(calc_buf, { lnum = 1 })),
  }
  local responses = vim.lsp.buf_request_sync(calc_buf, 'textDocument/codeAction', params, 30000) or {}
  local titles = {}
  for _, response in pairs(responses) do
    for _, action in ipairs(response.result or {}) do
      table.insert(titles, action.title)
    end
  end
  t.ok(vim.iter(titles):any(function(title)
    return vim.startswith(title, 'Fix with Qwen')
  end), 'a "Fix with Qwen" action among ' .. vim.inspect(titles))

  apply_fix_with_qwen()
  t.wait(90000, function()
    return vim.deep_equal(vim.api.nvim_buf_get_lines(calc_buf, 0, -1, false), FIXED)
  end, 'the buffer to be fixed; it is: ' .. vim.inspect(vim.api.nvim_buf_get_lines(calc_buf, 0, -1, false)))
  vim.cmd.write()
  t.eq(vim.fn.readfile(project .. '/calc.py'), FIXED, 'file fixed on disk')
  t.ok(vim.tbl_contains(statuses, 'busy'), 'qwen/status said busy: ' .. vim.inspect(statuses))
  t.ok(vim.tbl_contains(progress, 'planning'), '$/progress reached LspProgress: ' .. vim.inspect(progress))
  t.wait(10000, function()
    return require('qwen_lsp').status_state().state == 'idle'
  end, 'qwen/status idle again')
end)

t.test('the passing re-run clears the diagnostics (exit 0)', function()
  local last = run_in_terminal(PYTEST)
  t.eq(last.exit, 0, 'the test passes now:\n' .. last.output)
  vim.api.nvim_set_current_buf(term_buf)
  vim.cmd('QwenFixTerminal')
  t.ok(notes[#notes]:match('succeeded'), 'says so: ' .. notes[#notes])
  t.wait(30000, function()
    return #vim.diagnostic.get(calc_buf) == 0
  end, 'diagnostics cleared')
end)

t.test(':QwenAsk runs qwen.server.ask and the edit is applied', function()
  vim.api.nvim_set_current_buf(calc_buf)
  vim.cmd('1,3QwenAsk add a docstring')
  t.wait(90000, function()
    return vim.deep_equal(vim.api.nvim_buf_get_lines(calc_buf, 0, -1, false), DOCUMENTED)
  end, 'the docstring; the buffer is: ' .. vim.inspect(vim.api.nvim_buf_get_lines(calc_buf, 0, -1, false)))
end)

t.test('a suggested shell command runs only after confirmation, pre-filled in a terminal', function()
  vim.cmd.edit(project .. '/check.py')
  local check_buf = vim.api.nvim_get_current_buf()
  t.wait(30000, function()
    return #vim.lsp.get_clients({ bufnr = check_buf, name = 'qwen_lsp' }) > 0
  end, 'qwen_lsp attached to check.py')
  local last = run_in_terminal(PYTHON .. ' check.py')
  t.eq(last.exit, 1, 'check.py fails:\n' .. last.output)
  vim.api.nvim_set_current_buf(term_buf)
  vim.cmd('QwenFixTerminal')
  t.wait(30000, function()
    return #vim.diagnostic.get(check_buf) > 0
  end, 'diagnostics on check.py')

  local function terminals()
    return #vim.tbl_filter(function(b)
      return vim.bo[b].buftype == 'terminal'
    end, vim.api.nvim_list_bufs())
  end
  local asked = {}
  local select = vim.ui.select
  vim.ui.select = function(items, opts, on_choice)
    -- What had happened by the time the user is asked: nothing may have run or opened yet.
    local marker = vim.uv.fs_stat(project .. '/suggested.marker')
    table.insert(asked, { items = items, prompt = opts.prompt, terminals = terminals(), marker = marker })
    on_choice(require('qwen_lsp.terminal').RUN)
  end
  local win = vim.fn.win_findbuf(check_buf)[1] or vim.api.nvim_get_current_win()
  vim.api.nvim_win_set_buf(win, check_buf)
  vim.api.nvim_set_current_win(win)
  vim.api.nvim_win_set_cursor(win, { vim.diagnostic.get(check_buf)[1].lnum + 1, 0 })
  local terminals_before = terminals()
  apply_fix_with_qwen()
  t.wait(60000, function()
    return #asked > 0
  end, 'the resolved action to call qwen.runInTerminal')
  vim.ui.select = select
  t.ok(asked[1].prompt:match('touch suggested.marker') and asked[1].prompt:match('modifies files'), 'command and risk shown:\n' .. asked[1].prompt)
  t.eq({ asked[1].terminals, asked[1].marker }, { terminals_before, nil }, 'before the answer: no terminal, nothing run')
  local new_term = vim.tbl_filter(function(b)
    return vim.bo[b].buftype == 'terminal'
  end, vim.api.nvim_list_bufs())
  t.eq(#new_term, terminals_before + 1, 'a terminal opened')
  local opened = new_term[#new_term]
  t.wait(10000, function()
    return table.concat(vim.api.nvim_buf_get_lines(opened, 0, -1, false), '\n'):find('touch suggested.marker', 1, true) ~= nil
  end, 'the command typed at its prompt')
  vim.wait(300)
  t.eq(vim.uv.fs_stat(project .. '/suggested.marker'), nil, 'not run: Enter is the user\'s')
  vim.cmd('stopinsert')
end)

t.test(':QwenReview publishes the review as diagnostics', function()
  vim.api.nvim_set_current_buf(calc_buf)
  vim.cmd('QwenReview')
  t.wait(60000, function()
    return #vim.diagnostic.get(calc_buf) > 0
  end, 'review diagnostics on calc.py')
  local finding = vim.diagnostic.get(calc_buf)[1]
  t.eq({ finding.source, finding.lnum, finding.message }, { 'qwen-review', 2, 'add() ignores overflow' }, 'the finding')
  t.wait(10000, function()
    return notes[#notes]:match('review: 1 finding') ~= nil
  end, 'the count reported: ' .. tostring(notes[#notes]))
end)

--- Notifications since `from` (an index into notes), with their levels.
local function notes_since(from)
  local out = {}
  for i = from + 1, #notes do
    table.insert(out, { notes[i], levels[i] })
  end
  return out
end

t.test('an AI comment: a hint on it, "Do it with Qwen" (gra) edits its function and takes the comment out; :QwenRefine follows up', function()
  local UTIL = { 'NOTE = "# qwen: a string is no instruction"', '', '', 'def first(xs):', '    # qwen: handle the empty list', '    return xs[0]' }
  local DONE = { 'NOTE = "# qwen: a string is no instruction"', '', '', 'def first(xs):', '    return xs[0] if xs else None' }
  vim.fn.writefile(UTIL, project .. '/util.py')
  local plan = vim.tbl_extend('force', PLAN, { hypotheses = {}, evidence = {}, steps = { 'return None for []' } })
  double_api('POST', '/_double/script', {
    { reasoning = 'An empty list has no first item.', content = vim.json.encode(plan) },
    call('edit_file', { path = 'util.py', old_string = 'return xs[0]', new_string = 'return xs[0] if xs else None' }),
    call('finish', { summary = 'first() handles []' }),
  })
  local requests = chat_requests()
  vim.cmd.edit(project .. '/util.py')
  local util_buf = vim.api.nvim_get_current_buf()
  local function hints()
    return vim.tbl_filter(function(d)
      return d.code == 'qwen-comment'
    end, vim.diagnostic.get(util_buf))
  end
  t.wait(30000, function()
    return #hints() > 0
  end, 'the hint on the comment')
  t.eq({ #hints(), hints()[1].lnum, hints()[1].severity }, { 1, 4, vim.diagnostic.severity.HINT }, 'one hint, on the comment (not the string)')
  t.eq(chat_requests(), requests, 'a marked comment alone runs nothing')
  vim.api.nvim_win_set_cursor(0, { 5, 6 })
  vim.lsp.buf.code_action({
    apply = true,
    filter = function(action)
      return vim.startswith(action.title, 'Do it with Qwen: handle the empty list')
    end,
  })
  t.wait(90000, function()
    return vim.deep_equal(vim.api.nvim_buf_get_lines(util_buf, 0, -1, false), DONE)
  end, 'the instruction done and its comment gone; util.py is: ' .. vim.inspect(vim.api.nvim_buf_get_lines(util_buf, 0, -1, false)))
  t.wait(10000, function()
    return #hints() == 0
  end, 'no hint once the comment is gone')

  -- A follow-up on that change: :QwenRefine goes on with the same conversation (no new plan).
  local REFINED = { 'NOTE = "# qwen: a string is no instruction"', '', '', 'def first(xs):', '    return None if not xs else xs[0]' }
  double_api('POST', '/_double/script', {
    call('edit_file', { path = 'util.py', old_string = 'return xs[0] if xs else None', new_string = 'return None if not xs else xs[0]' }),
    call('finish', { summary = 'the empty case first' }),
  })
  vim.cmd('QwenRefine put the empty case first')
  t.wait(60000, function()
    return vim.deep_equal(vim.api.nvim_buf_get_lines(util_buf, 0, -1, false), REFINED)
  end, 'the refined change; util.py is: ' .. vim.inspect(vim.api.nvim_buf_get_lines(util_buf, 0, -1, false)))
  vim.api.nvim_set_current_buf(calc_buf)
end)

t.test(':QwenCancel while a fix runs: the model stream closes, nothing changes, the next fix works', function()
  local lines = vim.api.nvim_buf_get_lines(calc_buf, 0, -1, false)
  local plan = vim.tbl_extend('force', PLAN, { hypotheses = { 'overflow' }, evidence = {}, steps = { 'document it' } })
  -- ~50 s of streamed thinking unless the client closes the stream first.
  double_api('POST', '/_double/script', { { reasoning = string.rep('thinking ', 200), content = vim.json.encode(plan), chunk_delay = 0.25 } })
  local requests, aborted = chat_requests(), double_api('GET', '/_double/stats').aborted_streams
  local win = vim.fn.bufwinid(calc_buf)
  vim.api.nvim_set_current_win(win)
  vim.api.nvim_win_set_cursor(win, { 3, 4 }) -- the review finding
  apply_fix_with_qwen()
  t.wait(30000, function()
    return chat_requests() > requests
  end, 'the model call')
  t.wait(10000, function()
    return require('qwen_lsp').status_state().state == 'busy'
  end, 'qwen/status busy')
  local from = #notes
  vim.cmd('QwenCancel')
  t.wait(15000, function()
    return double_api('GET', '/_double/stats').aborted_streams > aborted
  end, 'the double to see the model stream closed')
  t.wait(15000, function()
    return require('qwen_lsp').status_state().state == 'idle'
  end, 'qwen/status idle again')
  vim.wait(1500) -- a late edit, message or model request would come now
  t.eq(vim.api.nvim_buf_get_lines(calc_buf, 0, -1, false), lines, 'calc.py unchanged')
  t.eq(chat_requests(), requests + 1, 'no model request after the cancel')
  t.eq(notes_since(from), { { 'Qwen: cancelled', vim.log.levels.INFO } }, 'one quiet message, no error')

  -- The next fix runs as usual.
  double_api('POST', '/_double/script', {
    { reasoning = 'Document the overflow.', content = vim.json.encode(plan) },
    call('edit_file', { path = 'calc.py', old_string = '"""Sum of a and b."""', new_string = '"""Sum of a and b (no overflow in Python)."""' }),
    call('finish', { summary = 'documented overflow' }),
  })
  vim.cmd('QwenFix')
  t.wait(60000, function()
    return vim.api.nvim_buf_get_lines(calc_buf, 1, 2, false)[1] == '    """Sum of a and b (no overflow in Python)."""'
  end, 'the fix after the cancel to land; calc.py is: ' .. vim.inspect(vim.api.nvim_buf_get_lines(calc_buf, 0, -1, false)))
end)

t.test('a fix that finds nothing (gra) ends with a message in :messages: what was tried, the model\'s words', function()
  local lines = vim.api.nvim_buf_get_lines(calc_buf, 0, -1, false)
  local plan = vim.tbl_extend('force', PLAN, { hypotheses = { 'no bug' }, evidence = {}, steps = { 'nothing to do' } })
  double_api('POST', '/_double/script', {
    { reasoning = 'Python ints do not overflow.', content = vim.json.encode(plan) },
    call('finish', { summary = 'overflow cannot happen in Python' }),
  })
  local win = vim.fn.bufwinid(calc_buf)
  vim.api.nvim_set_current_win(win)
  vim.api.nvim_win_set_cursor(win, { 3, 4 }) -- the review finding
  vim.cmd('messages clear')
  apply_fix_with_qwen()
  t.wait(60000, function()
    return vim.fn.execute('messages'):find('made no change', 1, true) ~= nil
  end, ':messages to say the fix ended; it has: ' .. vim.fn.execute('messages'))
  local said = vim.fn.execute('messages')
  t.ok(said:find('tried ', 1, true) and said:find('the model says: “', 1, true), 'what was tried, the model labelled: ' .. said)
  t.eq(vim.api.nvim_buf_get_lines(calc_buf, 0, -1, false), lines, 'calc.py unchanged')
end)

t.test('with the model server down: one clear message, no stack trace, and the plugin keeps working', function()
  local port = base_url:match(':(%d+)/v1$')
  double:kill('sigterm')
  double:wait(5000)
  vim.v.errmsg = ''
  local from = #notes
  vim.api.nvim_set_current_buf(calc_buf)
  vim.cmd('QwenReview')
  t.wait(60000, function()
    return vim.tbl_contains(levels, vim.log.levels.ERROR, {}) and #notes > from and levels[#levels] == vim.log.levels.ERROR
  end, 'an error message')
  vim.wait(2000) -- a second message would come now
  local said = notes_since(from)
  local errors = vim.tbl_filter(function(n)
    return n[2] == vim.log.levels.ERROR
  end, said)
  t.eq(#errors, 1, 'one error message: ' .. vim.inspect(said))
  t.ok(errors[1][1]:match('Cannot reach the model server'), 'it says what is wrong: ' .. errors[1][1])
  for _, n in ipairs(said) do
    t.ok(not n[1]:lower():match('traceback'), 'no stack trace: ' .. n[1])
  end
  t.eq(vim.v.errmsg, '', 'no Lua error')
  t.eq(require('qwen_lsp').status_state().state, 'error', 'the statusline says so')
  t.ok(not client:is_stopped(), 'the server keeps running')

  -- The model server is back (same port): the next review works.
  vim.fn.writefile({ vim.json.encode({ { content = vim.json.encode({ findings = {} }) } }) }, work .. '/script-2.json')
  start_double(port, work .. '/script-2.json')
  vim.cmd('QwenReview')
  t.wait(60000, function()
    return notes[#notes]:match('review: no findings') ~= nil
  end, 'the review after recovery: ' .. tostring(notes[#notes]))
  t.wait(10000, function()
    return require('qwen_lsp').status_state().state == 'idle'
  end, 'qwen/status idle again')
end)

t.test('the server shuts down cleanly', function()
  client:stop()
  t.wait(10000, function()
    return client:is_stopped()
  end, 'the server to stop')
  t.wait(5000, function()
    return require('qwen_lsp').status() == ''
  end, 'the statusline component to go blank')
  t.eq(require('qwen_lsp').status_state().state, 'stopped', 'status stopped')
end)

t.run({ steps = true })
