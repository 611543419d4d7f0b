# Shell integration for Neovim's :terminal (and other terminals), sourced from ~/.zshrc:
#   [[ -n $NVIM ]] && source /path/to/qwen-lsp/editors/neovim/shell/osc133.zsh
# Marks each prompt and command with OSC 133 so :QwenFixTerminal can find the last command,
# its output and its exit status: A = prompt start, B = command start, C = output start,
# D;<status> = command finished.

__qwen_osc133_precmd() {
  # First among the precmd hooks, so $? is the command's status; returned for the others.
  local st=$?
  print -rn -- $'\e]133;D;'"$st"$'\a\e]133;A\a'
  return $st
}

__qwen_osc133_preexec() {
  print -rn -- $'\e]133;C\a'
}

if (( ! ${precmd_functions[(I)__qwen_osc133_precmd]:-0} )); then # not sourced twice
  precmd_functions=(__qwen_osc133_precmd $precmd_functions)
  preexec_functions+=(__qwen_osc133_preexec)
  PS1="${PS1}"$'%{\e]133;B\a%}'
fi
