# qfix shell integration for zsh. Install with:  eval "$(qfix init zsh)"
# preexec/precmd hooks record the command line, its exit status and the directory
# it was typed in (one JSON file per shell). The `qfix` function puts a suggested
# command into your next prompt's buffer to edit and run; it never runs it.

typeset -g __qfix_sessions=@SESSIONS@
@PATH_LINE@
__qfix_exec() {  # the qfix that printed this script; it may since have been uninstalled
    command -v @QFIX_BIN@ >/dev/null 2>&1 || { echo "qfix: @QFIX_BIN@ is gone (uninstalled?): reinstall qwen-lsp, or remove the lines with 'qfix init' from your shell's startup files" >&2; return 127 }
    @QFIX@ "$@"
}
command mkdir -p -- "$__qfix_sessions" 2>/dev/null
command rm -f -- "$__qfix_sessions/$$.json"  # a dead shell with our pid may have left one

typeset -g __qfix_pending= __qfix_cmd= __qfix_cwd=$PWD __qfix_q= __qfix_on_line=

__qfix_quote() {  # sets __qfix_q to $1 as a JSON string literal
    local s=$1
    s=${s//\\/\\\\}; s=${s//\"/\\\"}; s=${s//$'\n'/\\n}; s=${s//$'\r'/\\r}; s=${s//$'\t'/\\t}
    __qfix_q="\"$s\""
}

__qfix_preexec() {  # $1: the command line as typed
    __qfix_cmd=$1 __qfix_cwd=$PWD __qfix_pending=1
}

__qfix_precmd() {
    local rc=$? command_json
    [[ -n $__qfix_pending ]] || return $rc  # an empty line ran nothing
    __qfix_pending=
    # qfix itself is not the command to fix; on a line with qfix after the command (`cmd || qfix`)
    # qfix has already recorded `cmd` itself (terminal_agent/same_line.py).
    [[ ${${(z)__qfix_cmd}[1]:t} == qfix || -n $__qfix_on_line ]] && { __qfix_on_line=; return $rc }
    __qfix_quote "$__qfix_cmd"; command_json=$__qfix_q
    __qfix_quote "$__qfix_cwd"
    printf '{"shell":"zsh","pid":%s,"command":%s,"exit_code":%s,"cwd":%s}\n' \
        "$$" "$command_json" "$rc" "$__qfix_q" >| "$__qfix_sessions/$$.json" 2>/dev/null
    return $rc
}

autoload -Uz add-zsh-hook
add-zsh-hook preexec __qfix_preexec
add-zsh-hook precmd __qfix_precmd

qfix() {
    local qfix_status=$? buffer="$__qfix_sessions/$$.buffer" rc line=
    # The line being run (preexec saw it), so that `cmd || qfix` fixes `cmd`, not yet recorded.
    [[ -n $__qfix_pending ]] && { line=$__qfix_cmd; __qfix_on_line=1 }
    command rm -f -- "$buffer"
    QFIX_SHELL=zsh QFIX_SHELL_PID=$$ QFIX_BUFFER_FILE=$buffer QFIX_LINE=$line QFIX_LINE_STATUS=$qfix_status __qfix_exec "$@"
    rc=$?
    if [[ -s $buffer ]]; then
        print -z -- "$(<$buffer)"  # the next prompt starts with it; Enter runs it
        command rm -f -- "$buffer"
    fi
    return $rc
}
