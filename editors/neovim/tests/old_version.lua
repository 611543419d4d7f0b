-- The plugin on a Neovim older than 0.11 (Debian's 0.7.2), faked on this one: `setup()` from init.lua
-- and then the plugin/ file must give one clear message and no stack trace.
--   nvim --headless --clean -u NONE -l editors/neovim/tests/old_version.lua
package.path = vim.fs.dirname(vim.fn.fnamemodify(arg[0], ':p')) .. '/?.lua;' .. package.path
local t = require('harness')
local plugin_dir = t.plugin_dir()

-- What 0.7.2 has and lacks: no vim.lsp.config/enable, and an autocmd on LspProgress is an error.
local has = vim.fn.has
vim.fn.has = function(feature)
  if feature:match('^nvim%-0%.1[1-9]') or feature:match('^nvim%-0%.[89]') then
    return 0
  end
  return has(feature)
end
vim.version = function()
  return { major = 0, minor = 7, patch = 2 }
end
vim.lsp.config, vim.lsp.enable = nil, nil
local create_autocmd = vim.api.nvim_create_autocmd
vim.api.nvim_create_autocmd = function(event, opts)
  if event == 'LspProgress' then
    error('unexpected event') -- as 0.7.2 says for an event it does not know
  end
  return create_autocmd(event, opts)
end
local notes = {}
vim.notify = function(msg, level)
  table.insert(notes, { msg = msg, level = level })
end

t.test('setup() in init.lua, then the plugin file: one message naming the version, no error', function()
  vim.opt.runtimepath:append(plugin_dir)
  local ok, err = pcall(function()
    require('qwen_lsp').setup({ settings = { baseUrl = 'http://127.0.0.1:8000/v1' } })
  end)
  t.ok(ok, 'setup() raised: ' .. tostring(err))
  local ok_plugin, err_plugin = pcall(vim.cmd.source, plugin_dir .. '/plugin/qwen_lsp.lua')
  t.ok(ok_plugin, 'plugin/qwen_lsp.lua raised: ' .. tostring(err_plugin))
  t.eq(#notes, 1, 'messages')
  t.ok(notes[1].msg:find('needs Neovim 0.11 or newer; this is 0.7.2', 1, true), notes[1].msg)
  t.ok(notes[1].msg:find(vim.v.progpath, 1, true), 'the message names which nvim ran: ' .. notes[1].msg)
  t.eq(vim.fn.exists(':QwenFix'), 0, 'no commands on an old Neovim')
end)

t.run()
