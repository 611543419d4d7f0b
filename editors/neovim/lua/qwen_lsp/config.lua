-- The LSP client configuration for qwen-lsp, shared by `lsp/qwen_lsp.lua` (native
-- `vim.lsp.enable('qwen_lsp')`) and `require('qwen_lsp').setup()`.

local M = {}

M.name = 'qwen_lsp'

M.root_markers = {
  'pyproject.toml', 'setup.py', 'setup.cfg', 'package.json', 'Cargo.toml', 'go.mod', 'Makefile', '.git',
}

--- Root: the nearest project marker, else the file's own directory. The server needs a
--- workspace even for a loose file, and unlike cwd the file's directory always contains it.
---@param markers string[]
---@return fun(bufnr: integer, on_dir: fun(root: string))
function M.root_dir(markers)
  return function(bufnr, on_dir)
    local name = vim.api.nvim_buf_get_name(bufnr)
    if name == '' then
      return -- nothing to attach to
    end
    on_dir(vim.fs.root(bufnr, markers) or vim.fs.dirname(vim.fs.normalize(name)))
  end
end

--- The command that starts the server: `qwen-lsp`, or `<python> -m qwen_lsp.cli`.
---@param python string|nil
---@return string[]
function M.cmd(python)
  if python and python ~= '' then
    return { python, '-m', 'qwen_lsp.cli' }
  end
  return { 'qwen-lsp' }
end

--- Defaults for `vim.lsp.config('qwen_lsp', ...)`. Server settings stay empty so the
--- server's own defaults and the project's `[tool.qwen-lsp]` apply.
---@return vim.lsp.Config
function M.defaults()
  return {
    cmd = M.cmd(nil),
    root_dir = M.root_dir(M.root_markers),
    init_options = {},
    settings = { qwen = {} }, -- answers the server's workspace/configuration for section `qwen`
    handlers = {
      ['qwen/status'] = function(...)
        return require('qwen_lsp.status').handler(...)
      end,
    },
    -- Client commands named by the server's code actions (docs/protocol.md).
    commands = {
      ['qwen.runInTerminal'] = function(command, ctx)
        return require('qwen_lsp.terminal').run_in_terminal(command.arguments and command.arguments[1], ctx)
      end,
      ['qwen.ask'] = function(command, ctx)
        local client = vim.lsp.get_client_by_id(ctx.client_id)
        return require('qwen_lsp.commands').ask(client, command.arguments and command.arguments[1])
      end,
      ['qwen.refine'] = function(command, ctx)
        local client = vim.lsp.get_client_by_id(ctx.client_id)
        return require('qwen_lsp.commands').refine(client, command.arguments and command.arguments[1])
      end,
    },
    on_init = function()
      require('qwen_lsp').init() -- user commands and terminal tracking, also without setup()
    end,
    on_exit = function(_, _, client_id)
      vim.schedule(function()
        local others = vim.tbl_filter(function(client)
          return client.id ~= client_id and not client:is_stopped()
        end, vim.lsp.get_clients({ name = M.name }))
        if #others == 0 then
          require('qwen_lsp.status').set({ state = 'stopped', message = '' })
        end
      end)
    end,
  }
end

return M
