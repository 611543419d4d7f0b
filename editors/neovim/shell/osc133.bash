# Shell integration for Neovim's :terminal (and other terminals), sourced from ~/.bashrc:
#   [ -n "$NVIM" ] && . /path/to/qwen-lsp/editors/neovim/shell/osc133.bash
# Marks each prompt and command with OSC 133 so :QwenFixTerminal can find the last command,
# its output and its exit status: A = prompt start, B = command start, C = output start,
# D;<status> = command finished.

__qwen_osc133_prompt() {
  # First in PROMPT_COMMAND, so $? is still the status of the command that just ran; it is
  # returned again so that hooks after this one (e.g. qfix's) see it too.
  local status=$?
  printf '\033]133;D;%s\007\033]133;A\007' "$status"
  return "$status"
}

case ";${PROMPT_COMMAND:-};" in
  *";__qwen_osc133_prompt;"*) ;; # already installed (the file was sourced twice)
  *) PROMPT_COMMAND="__qwen_osc133_prompt${PROMPT_COMMAND:+;$PROMPT_COMMAND}"
     PS1="${PS1:-\$ }"'\[\033]133;B\007\]'
     PS0="${PS0:-}"'\[\033]133;C\007\]' ;;
esac
