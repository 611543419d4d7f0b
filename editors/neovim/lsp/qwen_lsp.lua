-- For the native route: with this plugin on 'runtimepath', `vim.lsp.enable('qwen_lsp')` is all
-- it takes; override fields with `vim.lsp.config('qwen_lsp', {...})` (e.g. cmd, init_options).
return require('qwen_lsp.config').defaults()
