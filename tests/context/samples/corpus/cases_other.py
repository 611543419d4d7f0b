"""Ruby (plain, RSpec, minitest), PHP, shell scripts and ShellCheck."""

from __future__ import annotations

SC_SCRIPT = "#!/bin/bash\nfor f in $(ls *.txt); do  # EXPECT\n  echo $f\ndone\nif [ $count == 1 ]; then\n  echo one\nfi\ncd /tmp\nrm -rf $dir/\n"

CASES: dict[str, dict] = {
    "ruby_no_method": {"toolchain": "ruby", "classes": ["ruby"], "files": {
        "lib/cart.rb": "class Cart\n  def initialize(items)\n    @items = items\n  end\n\n  def total\n    @items.sum(&:price)  # EXPECT\n  end\nend\n",
        "main.rb": "require_relative 'lib/cart'\n\nputs Cart.new([1, 2]).total\n"}, "cmd": "ruby main.rb"},
    "ruby_name_error": {"toolchain": "ruby", "classes": ["ruby"], "files": {
        "report.rb": "def header(title)\n  \"== #{titel} ==\"  # EXPECT\nend\n\ndef render\n  header('x')\nend\n\nrender\n"}, "cmd": "ruby report.rb"},
    "ruby_syntax": {"toolchain": "ruby", "classes": ["ruby"], "files": {
        "conf.rb": "CONFIG = {\n  host: 'a',\n  port: 1,\n\ndef x\nend\n", }, "cmd": "ruby conf.rb", "expect": ("conf.rb", 6)},
    "ruby_raise_nested": {"toolchain": "ruby", "classes": ["ruby"], "files": {
        "app/parser.rb": "module App\n  class Parser\n    def parse(s)\n      Integer(s)  # EXPECT\n    end\n  end\nend\n",
        "run.rb": "require_relative 'app/parser'\n\ndef go\n  App::Parser.new.parse('zz')\nend\n\ngo\n"}, "cmd": "ruby run.rb"},
    "rspec_failure": {"toolchain": "rspec", "classes": ["rspec"], "files": {
        "lib/calc.rb": "class Calc\n  def add(a, b)\n    a - b\n  end\nend\n",
        "spec/calc_spec.rb": "require_relative '../lib/calc'\n\nRSpec.describe Calc do\n  it 'adds' do\n    expect(Calc.new.add(2, 2)).to eq(4)  # EXPECT\n  end\nend\n"},
        "cmd": "rspec --no-color"},
    "rspec_error_in_code": {"toolchain": "rspec", "classes": ["rspec"], "files": {
        "lib/user.rb": "class User\n  def initialize(h)\n    @h = h\n  end\n\n  def email\n    @h.fetch(:email).downcase  # EXPECT\n  end\nend\n",
        "spec/user_spec.rb": "require_relative '../lib/user'\n\nRSpec.describe User do\n  it 'has an email' do\n    expect(User.new({}).email).to eq('a')\n  end\n\n  it 'works' do\n    expect(1).to eq(1)\n  end\nend\n"},
        "cmd": "rspec --no-color"},
    "rspec_color": {"toolchain": "rspec", "classes": ["rspec", "ansi"], "files": {
        "spec/str_spec.rb": "RSpec.describe 'strings' do\n  it 'upcases' do\n    expect('ab'.upcase).to eq('Ab')  # EXPECT\n  end\nend\n"},
        "cmd": "rspec --force-color"},
    "minitest_failure": {"toolchain": "minitest", "classes": ["minitest"], "files": {
        "test/test_math.rb": "require 'minitest/autorun'\n\nclass TestMath < Minitest::Test\n  def test_mul\n    assert_equal 6, 2 * 4  # EXPECT\n  end\nend\n"},
        "cmd": "ruby test/test_math.rb --seed 1"},
    "minitest_error": {"toolchain": "minitest", "classes": ["minitest"], "files": {
        "lib/slug.rb": "def slug(s)\n  s.downcase.tr(' ', '-')  # EXPECT\nend\n",
        "test/test_slug.rb": "require 'minitest/autorun'\nrequire_relative '../lib/slug'\n\nclass TestSlug < Minitest::Test\n  def test_nil\n    assert_equal '', slug(nil)\n  end\nend\n"},
        "cmd": "ruby test/test_slug.rb --seed 1"},
    # ---------------------------------------------------------------- PHP
    "php_fatal_undefined_function": {"toolchain": "php", "classes": ["php"], "files": {
        "src/util.php": "<?php\nfunction price($x) {\n    return format_money($x);  // EXPECT\n}\n",
        "index.php": "<?php\nrequire __DIR__ . '/src/util.php';\necho price(3);\n"}, "cmd": "php index.php"},
    "php_uncaught_exception": {"toolchain": "php", "classes": ["php"], "files": {
        "lib/Repo.php": "<?php\nclass Repo {\n    public function find(int $id) {\n        throw new RuntimeException(\"no row $id\");  // EXPECT\n    }\n}\n",
        "app.php": "<?php\nrequire 'lib/Repo.php';\n\nfunction show($id) {\n    return (new Repo())->find($id);\n}\n\nshow(7);\n"}, "cmd": "php app.php"},
    "php_type_error": {"toolchain": "php", "classes": ["php"], "files": {
        "calc.php": "<?php\ndeclare(strict_types=1);\n\nfunction half(int $x): int {\n    return intdiv($x, 2);\n}\n\necho half('4');  // EXPECT\n"}, "cmd": "php calc.php"},
    "php_parse_error": {"toolchain": "php", "classes": ["php"], "files": {
        "broken.php": "<?php\n$a = [1, 2;  // EXPECT\necho $a;\n"}, "cmd": "php broken.php"},
    "php_warning_then_fatal": {"toolchain": "php", "classes": ["php"], "files": {
        "w.php": "<?php\n$rows = [];\necho $rows['x'];\n$o = null;\necho $o->name();  // EXPECT\n"}, "cmd": "php -d display_errors=stderr w.php"},
    # ---------------------------------------------------------------- shell
    "bash_unbound": {"toolchain": "bash", "files": {
        "deploy.sh": "#!/bin/bash\nset -u\necho start\necho \"$TARGET_HOST\"  # EXPECT\n"}, "cmd": "bash deploy.sh"},
    "bash_command_not_found": {"toolchain": "bash", "files": {
        "scripts/build.sh": "#!/bin/bash\nset -e\necho building\ncompile_assets --minify  # EXPECT\necho done\n"}, "cmd": "bash scripts/build.sh"},
    "shellcheck_tty": {"toolchain": "shellcheck", "classes": ["shellcheck"], "files": {"clean.sh": SC_SCRIPT},
        "cmd": "shellcheck clean.sh", "note": "the one error-level finding (SC2045) wins over the warnings after it"},
    "shellcheck_gcc": {"toolchain": "shellcheck", "classes": ["shellcheck"], "files": {"clean.sh": SC_SCRIPT},
        "cmd": "shellcheck -f gcc clean.sh"},
    "shellcheck_tty_error": {"toolchain": "shellcheck", "classes": ["shellcheck"], "files": {
        "start.sh": "#!/bin/sh\nname=x\necho $name\nif [[ $name == x ]]; then  # EXPECT\n  echo yes\nfi\n"},
        "cmd": "shellcheck start.sh"},
    "shellcheck_color": {"toolchain": "shellcheck", "classes": ["shellcheck", "ansi"], "files": {
        "start.sh": "#!/bin/sh\nname=x\necho $name\nif [[ $name == x ]]; then  # EXPECT\n  echo yes\nfi\n"},
        "cmd": "shellcheck --color=always start.sh"},
}
