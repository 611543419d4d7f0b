-- Loaded at startup when the plugin is on 'runtimepath': commands and terminal tracking must
-- exist before the first :terminal command runs, even if the server starts later.
local qwen = require('qwen_lsp')
if not qwen.supported() then -- says why, once (setup() in init.lua may already have)
  return
end
qwen.init()
