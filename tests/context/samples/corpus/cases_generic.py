"""Toolchains with no dedicated recogniser (issue 19): the generic location finder must find these."""

from __future__ import annotations

G = {"generic": True}

CASES: dict[str, dict] = {
    # `at FILE line N.`
    "perl_die": {**G, "toolchain": "perl", "classes": ["at_file_line"], "files": {
        "lib/Conf.pm": "package Conf;\nuse strict;\nsub load {\n    my ($p) = @_;\n    open(my $fh, '<', $p) or die \"cannot open $p: $!\";  # EXPECT\n    return <$fh>;\n}\n1;\n",
        "run.pl": "use strict;\nuse lib 'lib';\nuse Conf;\nConf::load('/nonexistent/app.conf');\n"}, "cmd": "perl run.pl"},
    "perl_stdin": {**G, "toolchain": "perl", "classes": ["at_file_line"], "files": {
        "sum.pl": "use strict;\nuse warnings;\nmy $total = 0;\nwhile (my $line = <STDIN>) {\n    chomp $line;\n    die \"not a number: $line\" unless $line =~ /^\\d+$/;  # EXPECT\n    $total += $line;\n}\nprint \"$total\\n\";\n"},
        "cmd": "printf '1\\nx\\n' | perl sum.pl"},
    "perl_undef_sub": {**G, "toolchain": "perl", "classes": ["at_file_line"], "files": {
        "report.pl": "use strict;\nuse warnings;\n\nsub header { return 'h' }\n\nprint header(), \"\\n\";\nprint footr(), \"\\n\";  # EXPECT\n"}, "cmd": "perl report.pl"},
    # OCaml: `File "x.ml", line N, characters a-b` and `Called from`
    "ocaml_type_error": {**G, "toolchain": "ocaml", "classes": ["ocaml_file"], "files": {
        "calc.ml": "let double x = x * 2\n\nlet () =\n  print_endline (double 3)  (* EXPECT *)\n"}, "cmd": "ocaml calc.ml"},
    "ocaml_exception_backtrace": {**G, "toolchain": "ocaml", "classes": ["ocaml_file"], "files": {
        "lookup.ml": "let table = [(\"a\", 1)]\n\nlet find k = List.assoc k table  (* EXPECT *)\n\nlet () = Printf.printf \"%d\\n\" (find \"b\")\n"},
        "cmd": "ocamlopt -g lookup.ml -o lookup && OCAMLRUNPARAM=b ./lookup"},
    "ocaml_unbound": {**G, "toolchain": "ocaml", "classes": ["ocaml_file"], "files": {
        "main.ml": "let greet name = \"hi \" ^ name\n\nlet () = print_endline (gret \"x\")  (* EXPECT *)\n"}, "cmd": "ocamlc -c main.ml"},
    # `path(line, col)` / `path(line)`
    "nim_type_mismatch": {**G, "toolchain": "nim", "classes": ["paren_line"], "files": {
        "calc.nim": "proc double(x: int): int = x * 2\n\necho double(\"3\")  # EXPECT\n"}, "cmd": "nim c --hints:off --nimcache:/tmp/qls-nimcache calc.nim"},
    "nim_undeclared": {**G, "toolchain": "nim", "classes": ["paren_line"], "files": {
        "src/app.nim": "let total = 3\n\necho totl + 1  # EXPECT\n"}, "cmd": "nim c --hints:off --nimcache:/tmp/qls-nimcache2 src/app.nim"},
    "fpc_undeclared": {**G, "toolchain": "freepascal", "classes": ["paren_line"], "files": {
        "hello.pas": "program Hello;\nvar n: integer;\nbegin\n  n := 1;\n  writeln(count);  { EXPECT }\nend.\n"}, "cmd": "fpc -v0e hello.pas"},
    "fpc_type": {**G, "toolchain": "freepascal", "classes": ["paren_line"], "files": {
        "calc.pas": "program Calc;\nvar s: string;\nbegin\n  s := 'a';\n  s := 3 * 4;  { EXPECT }\nend.\n"}, "cmd": "fpc -v0e calc.pas"},
    # the location after other text on the same line
    "lua_runtime": {**G, "toolchain": "lua", "classes": ["after_text"], "files": {
        "cart.lua": "local function total(items)\n  local s = 0\n  for _, it in ipairs(items) do\n    s = s + it.price  -- EXPECT\n  end\n  return s\nend\n\nprint(total({1, 2}))\n"}, "cmd": "lua5.4 cart.lua"},
    "lua_error_call": {**G, "toolchain": "lua", "classes": ["after_text"], "files": {
        "lib/conf.lua": "local M = {}\nfunction M.load(t)\n  if not t.name then\n    error('config without name')  -- EXPECT\n  end\n  return t\nend\nreturn M\n",
        "main.lua": "package.path = 'lib/?.lua;' .. package.path\nlocal conf = require('conf')\nconf.load({})\n"}, "cmd": "lua5.4 main.lua"},
    "gawk_fatal": {**G, "toolchain": "gawk", "classes": ["after_text"], "files": {
        "avg.awk": "{ total += $1; n++ }\nEND {\n  print total / (n - 2)  # EXPECT\n}\n"}, "cmd": "printf '1\\n2\\n' | gawk -f avg.awk"},
    "gawk_syntax": {**G, "toolchain": "gawk", "classes": ["after_text"], "files": {
        "fmt.awk": "BEGIN { FS = \",\" }\n{\n  printf \"%s\\n\", $1 +* 2  # EXPECT\n}\n"}, "cmd": "echo a | gawk -f fmt.awk"},
    "elixir_compile": {**G, "toolchain": "elixir", "classes": ["after_text"], "files": {
        "calc.exs": "defmodule Calc do\n  def double(x), do: x * 2\n  def run, do: doubel(3)  # EXPECT\nend\n\nCalc.run()\n"}, "cmd": "elixir calc.exs"},
    "elixir_runtime": {**G, "toolchain": "elixir", "classes": ["after_text"], "files": {
        "lib/ratio.ex": "defmodule Ratio do\n  def of(a, b), do: div(a, b)  # EXPECT\nend\n",
        "run.exs": "Code.require_file(\"lib/ratio.ex\")\nIO.puts(Ratio.of(1, 0))\n"}, "cmd": "elixir run.exs"},
    # tool labels: `At line 8 of file main.f90`, `#2`-style, Erlang terms
    "gfortran_runtime": {**G, "toolchain": "gfortran", "classes": ["labels"], "files": {
        "main.f90": "program main\n  implicit none\n  integer :: xs(3), i\n  xs = 0\n  i = 5\n  xs(i) = 1  ! EXPECT\n  print *, xs\nend program main\n"},
        "cmd": "gfortran -g -fcheck=bounds -o main main.f90 && ./main"},
    "gfortran_runtime_io": {**G, "toolchain": "gfortran", "classes": ["labels"], "files": {
        "src/read.f90": "program rd\n  implicit none\n  integer :: n\n  open(10, file='/nonexistent/input.dat', status='old')  ! EXPECT\n  read(10, *) n\n  print *, n\nend program rd\n"},
        "cmd": "gfortran -g -o rd src/read.f90 && ./rd"},
    "gfortran_compile": {**G, "toolchain": "gfortran", "classes": ["after_text"], "files": {
        "sum.f90": "program s\n  implicit none\n  integer :: n\n  n = 1\n  total = n + 1  ! EXPECT\nend program s\n"}, "cmd": "gfortran -c sum.f90 -o /dev/null"},
    "erlang_badarith": {**G, "toolchain": "erlang", "classes": ["erlang_terms"], "files": {
        "calc.erl": "-module(calc).\n-export([main/1]).\n\nratio(A, B) ->\n    A div B.  % EXPECT\n\nmain(_) ->\n    io:format(\"~p~n\", [ratio(1, 0)]).\n"},
        "cmd": "erlc +debug_info calc.erl && erl -noshell -s calc main x -s init stop 2>&1 | head -40"},
    "erlang_escript": {**G, "toolchain": "erlang", "classes": ["erlang_terms"], "files": {
        "lookup.erl": "-module(lookup).\n-export([find/2]).\n\nfind(K, L) ->\n    {K, V} = lists:keyfind(K, 1, L),  % EXPECT\n    V.\n",
        "run.escript": "#!/usr/bin/env escript\n%%! -pa .\nmain(_) ->\n    io:format(\"~p~n\", [lookup:find(b, [{a, 1}])]).\n"},
        "cmd": "erlc lookup.erl && escript run.escript"},
    "erlang_compile": {**G, "toolchain": "erlang", "classes": ["after_text"], "files": {
        "bad.erl": "-module(bad).\n-export([f/0]).\n\nf() ->\n    X = 1,\n    Y.  % EXPECT\n"}, "cmd": "erlc bad.erl"},
    "r_error_location": {**G, "toolchain": "R", "classes": ["labels"], "files": {
        "analysis.R": "summarise <- function(df) {\n  mean(df$value) + missing_var  # EXPECT\n}\nsummarise(data.frame(value = 1:3))\n"},
        "cmd": "Rscript -e 'options(keep.source=TRUE, show.error.locations=TRUE); source(\"analysis.R\")'"},
    "r_stop": {**G, "toolchain": "R", "classes": ["labels"], "files": {
        "R/check.R": "validate <- function(x) {\n  if (x < 0) return(sqrt(\"x\"))  # EXPECT\n  x\n}\nvalidate(-1)\n"},
        "cmd": "Rscript -e 'options(keep.source=TRUE, show.error.locations=TRUE); source(\"R/check.R\")'"},
    "tcl_error": {**G, "toolchain": "tcl", "classes": ["labels"], "files": {
        "conf.tcl": "proc load {path} {\n    set fh [open $path r]\n    return [read $fh]\n}\n\nputs [load /nonexistent/x.conf]  ;# EXPECT\n"}, "cmd": "tclsh conf.tcl"},
    "tcl_unknown": {**G, "toolchain": "tcl", "classes": ["labels"], "files": {
        "run.tcl": "set n 3\nputs $n\nfrobnicate $n  ;# EXPECT\n"}, "cmd": "tclsh run.tcl"},
    # a prefix on every line, in front of output no recogniser knows
    "lua_compose_prefix": {**G, "toolchain": "lua", "classes": ["prefix"], "files": {
        "worker.lua": "print('worker up')\nlocal jobs = nil\nfor _, j in ipairs(jobs) do  -- EXPECT\n  print(j)\nend\n"},
        "cmd": "lua5.4 worker.lua 2>&1 | sed -u 's/^/worker-1  | /'", "note": "docker compose's prefix added by sed as compose does"},
    "perl_ts_prefix": {**G, "toolchain": "perl", "classes": ["prefix", "at_file_line"], "files": {
        "job.pl": "use strict;\nuse warnings;\nprint \"job start\\n\";\nmy %h;\nmy $n = 1 / scalar(keys %h);  # EXPECT\n"},
        "cmd": "perl job.pl 2>&1 | gawk '{ print strftime(\"%Y-%m-%dT%H:%M:%SZ\", systime(), 1) \" INFO [job-runner] \" $0; fflush() }'"},
}
