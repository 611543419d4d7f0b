# qfix shell integration for fish. Install with:  qfix init fish | source
# The fish_postexec hook records the command line, its exit status and the
# directory it was typed in (one JSON file per shell). The `qfix` function puts a
# suggested command into the command line to edit and run; it never runs it.

set -g __qfix_sessions @SESSIONS@
@PATH_LINE@
set -g __qfix_cwd $PWD
command mkdir -p -- $__qfix_sessions 2>/dev/null
command rm -f -- $__qfix_sessions/$fish_pid.json  # a dead shell with our pid may have left one

function __qfix_quote --description 'the argument as a JSON string literal'
    set -l s (string split \n -- $argv[1] | string replace -a '\\' '\\\\' | string replace -a '"' '\\"' \
        | string replace -a \t '\\t' | string replace -a \r '\\r' | string join '\\n')
    printf '"%s"' "$s"
end

function __qfix_preexec --on-event fish_preexec
    set -g __qfix_cwd $PWD
    set -g __qfix_line $argv[1]  # the line being run: `cmd; or qfix` fixes `cmd`, not yet recorded
end

function __qfix_postexec --on-event fish_postexec
    set -l rc $status
    set -l cmd $argv[1]
    test -n "$cmd"; or return
    set -l on_line $__qfix_on_line
    set -e __qfix_on_line
    string match -qr '^\s*(\S*/)?qfix(\s|$)' -- $cmd; and return  # qfix itself is not the command to fix
    test -n "$on_line"; and return  # qfix ran after the command on this line and recorded it itself
    printf '{"shell":"fish","pid":%s,"command":%s,"exit_code":%s,"cwd":%s}\n' \
        $fish_pid (__qfix_quote $cmd) $rc (__qfix_quote $__qfix_cwd) >$__qfix_sessions/$fish_pid.json 2>/dev/null
end

function qfix --description 'fix the last failed command with Qwen'
    set -l qfix_status $status
    set -l buffer $__qfix_sessions/$fish_pid.buffer
    set -lx QFIX_LINE_STATUS $qfix_status
    set -lx QFIX_LINE "$__qfix_line"
    set -g __qfix_on_line 1
    command rm -f -- $buffer
    set -lx QFIX_SHELL fish
    set -lx QFIX_SHELL_PID $fish_pid
    set -lx QFIX_BUFFER_FILE $buffer
    if not command -q @QFIX_BIN@  # the qfix that printed this script may since have been uninstalled
        echo "qfix: @QFIX_BIN@ is gone (uninstalled?): reinstall qwen-lsp, or delete ~/.config/fish/conf.d/qfix.fish (or the 'qfix init' line in your fish config)" >&2
        return 127
    end
    @QFIX@ $argv
    set -l rc $status
    if test -s $buffer
        commandline -r -- (string collect <$buffer)  # Enter runs it
        command rm -f -- $buffer
    end
    return $rc
end
