# qfix shell integration for bash. Install with:  eval "$(qfix init bash)"
# After every command the hook records the command line, its exit status and the
# directory it was typed in (one JSON file per shell, no extra processes but one).
# The `qfix` function offers a suggested command on an editable line; it never runs
# anything until you press Enter.

__qfix_sessions=@SESSIONS@
@PATH_LINE@
__qfix_exec() {  # the qfix that printed this script; it may since have been uninstalled
    command -v @QFIX_BIN@ >/dev/null 2>&1 || { echo "qfix: @QFIX_BIN@ is gone (uninstalled?): reinstall qwen-lsp, or remove the lines with 'qfix init' from your shell's startup files" >&2; return 127; }
    @QFIX@ "$@"
}
command mkdir -p -- "$__qfix_sessions" 2>/dev/null
command rm -f -- "$__qfix_sessions/$$.json"  # a dead shell with our pid may have left one

__qfix_quote() {  # sets __qfix_q to $1 as a JSON string literal
    local s=$1
    s=${s//\\/\\\\}; s=${s//\"/\\\"}; s=${s//$'\n'/\\n}; s=${s//$'\r'/\\r}; s=${s//$'\t'/\\t}
    __qfix_q="\"$s\""
}

__qfix_record() {
    local rc=$? entry number cmd first command_json
    entry=$(HISTTIMEFORMAT= builtin history 1)
    [[ $entry =~ ^\ *([0-9]+)\*?\ +(.*)$ ]] || { __qfix_cwd=$PWD __qfix_on_line=; return $rc; }
    number=${BASH_REMATCH[1]} cmd=${BASH_REMATCH[2]}
    # A command ran when PS0 set the flag (bash >= 4.4; it catches repeats that HISTCONTROL=ignoredups
    # keeps out of history) or when the history moved on. Neither: an empty line.
    if [[ -n $__qfix_ran || $number != "$__qfix_histno" ]]; then
        __qfix_ran= __qfix_histno=$number
        first=${cmd#"${cmd%%[![:space:]]*}"}
        first=${first%%[[:space:]]*}
        # qfix itself is not the command to fix; on a line with qfix after the command (`cmd || qfix`)
        # qfix has already recorded `cmd` itself (terminal_agent/same_line.py).
        if [[ ${first##*/} != qfix && -z $__qfix_on_line ]]; then
            __qfix_quote "$cmd"; command_json=$__qfix_q
            __qfix_quote "$__qfix_cwd"
            printf '{"shell":"bash","pid":%s,"command":%s,"exit_code":%s,"cwd":%s}\n' \
                "$$" "$command_json" "$rc" "$__qfix_q" >| "$__qfix_sessions/$$.json" 2>/dev/null
        fi
    fi
    __qfix_cwd=$PWD  # where the next command is typed
    __qfix_on_line=
    return $rc
}

__qfix_histno=
[[ $(HISTTIMEFORMAT= builtin history 1) =~ ^\ *([0-9]+) ]] && __qfix_histno=${BASH_REMATCH[1]}
__qfix_cwd=$PWD
__qfix_ran=
__qfix_on_line=
if [[ $PROMPT_COMMAND != *__qfix_record* ]]; then
    PROMPT_COMMAND="__qfix_record${PROMPT_COMMAND:+;$PROMPT_COMMAND}"
    # PS0 is expanded just before a command runs: the subscript sets the flag and prints nothing.
    PS0='${__qfix_unset[__qfix_ran=1]}'"${PS0-}"
fi

qfix() {
    local status=$? buffer="$__qfix_sessions/$$.buffer" rc line= entry
    # The line being run, so that `cmd || qfix` fixes `cmd` (not yet recorded: the hook runs once the
    # line is done). bash puts a typed line in history before running it; the number tells it is new.
    if [[ -n $__qfix_ran ]]; then
        __qfix_on_line=1
        entry=$(HISTTIMEFORMAT= builtin history 1)
        [[ $entry =~ ^\ *([0-9]+)\*?\ +(.*)$ && ${BASH_REMATCH[1]} != "$__qfix_histno" ]] && line=${BASH_REMATCH[2]}
    fi
    command rm -f -- "$buffer"
    QFIX_SHELL=bash QFIX_SHELL_PID=$$ QFIX_BUFFER_FILE=$buffer QFIX_LINE=$line QFIX_LINE_STATUS=$status __qfix_exec "$@"
    rc=$?
    if [[ -s $buffer ]]; then
        line=$(<"$buffer")
        command rm -f -- "$buffer"
        # bash cannot pre-fill the next prompt from a function: offer the line here instead.
        if read -r -e -i "$line" -p "qfix: edit, Enter runs it, Ctrl-C cancels> " line && [[ -n $line ]]; then
            builtin history -s -- "$line"
            __qfix_on_line=  # the hook records this line's last command: the accepted one
            eval -- "$line"
            rc=$?
        fi
    fi
    return $rc
}
