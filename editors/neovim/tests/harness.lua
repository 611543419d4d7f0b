-- A minimal test runner for plain `nvim -l`: named cases, assertions with messages, a summary
-- line, and exit status 1 when anything failed.

local M = { cases = {}, cleanups = {}, diagnostics = {} }

function M.test(name, fn)
  table.insert(M.cases, { name = name, fn = fn })
end

--- Runs after all cases, whatever happened (stop processes, remove temp files).
function M.cleanup(fn)
  table.insert(M.cleanups, fn)
end

--- Called after a failure; returns extra text to print (e.g. a log tail).
function M.on_failure(fn)
  table.insert(M.diagnostics, fn)
end

--- Ends the current case as skipped, e.g. when an optional program is missing.
function M.skip(reason)
  error({ skip = reason }, 0)
end

function M.eq(actual, expected, what)
  if not vim.deep_equal(actual, expected) then
    error(('%s\n  expected: %s\n  actual:   %s'):format(what or 'values differ', vim.inspect(expected), vim.inspect(actual)), 2)
  end
end

function M.ok(cond, what)
  if not cond then
    error(what or 'assertion failed', 2)
  end
end

--- Waits up to `ms` for `cond()`; raises `what` on timeout.
function M.wait(ms, cond, what)
  if not vim.wait(ms, cond, 20) then
    error(('timed out after %d ms: %s'):format(ms, what), 2)
  end
end

--- Waits until a terminal buffer's text stops changing for 100 ms (at most 5 s): its
--- screen is copied into the buffer on a timer, after the shell's marks have arrived.
function M.settle(buf)
  local last, stable_since = nil, vim.uv.now()
  vim.wait(5000, function()
    local text = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), '\n')
    if text ~= last then
      last, stable_since = text, vim.uv.now()
    end
    return vim.uv.now() - stable_since >= 100
  end, 20)
end

--- Runs the cases and exits: 0 if all passed, 1 otherwise. With `steps`, the cases build on
--- each other, so the first failure skips the rest.
---@param opts { steps: boolean }|nil
function M.run(opts)
  local failed, skipped = 0, 0
  for _, case in ipairs(M.cases) do
    if failed > 0 and opts and opts.steps then
      skipped = skipped + 1
      io.stdout:write(('skip %s (an earlier step failed)\n'):format(case.name))
      goto continue
    end
    local started = vim.uv.hrtime()
    local ok, err = xpcall(case.fn, function(e)
      return type(e) == 'table' and e or debug.traceback(e, 2)
    end)
    local ms = (vim.uv.hrtime() - started) / 1e6
    if not ok and type(err) == 'table' and err.skip then
      skipped = skipped + 1
      io.stdout:write(('skip %s: %s\n'):format(case.name, err.skip))
    elseif ok then
      io.stdout:write(('ok   %s (%.0f ms)\n'):format(case.name, ms))
    else
      failed = failed + 1
      io.stdout:write(('FAIL %s (%.0f ms)\n%s\n'):format(case.name, ms, err))
      for _, describe in ipairs(M.diagnostics) do
        local ok_d, text = pcall(describe)
        io.stdout:write(tostring(ok_d and text or ('(failure hook failed: ' .. tostring(text) .. ')')), '\n')
      end
    end
    ::continue::
  end
  for _, fn in ipairs(M.cleanups) do
    pcall(fn)
  end
  local passed = #M.cases - failed - skipped
  io.stdout:write(('%d passed, %d failed%s\n'):format(passed, failed, skipped > 0 and (', %d skipped'):format(skipped) or ''))
  io.stdout:flush()
  os.exit(failed == 0 and 0 or 1)
end

--- Absolute path of the plugin (editors/neovim), from this file's location.
function M.plugin_dir()
  local this = debug.getinfo(1, 'S').source:sub(2)
  return vim.fs.dirname(vim.fs.dirname(vim.fs.normalize(vim.fn.fnamemodify(this, ':p'))))
end

--- Puts the plugin on 'runtimepath' and sources its plugin/ file, as a plugin manager would.
function M.load_plugin()
  local dir = M.plugin_dir()
  vim.opt.runtimepath:prepend(dir)
  vim.cmd.runtime('plugin/qwen_lsp.lua')
  return dir
end

return M
