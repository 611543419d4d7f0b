"""Rust's and Go's tests walked like Python's (issue 34 item 3): calls inside `assert_eq!`, module paths to
files, types to their impl blocks, `use` bindings, `Self::`; Go package calls through imports. Real
tree-sitter parses of small projects."""

from __future__ import annotations

from pathlib import Path

from qwen_lsp.context.callsites import Binding, call_sites
from qwen_lsp.context.go_packages import go_bindings, package_files
from qwen_lsp.context.rust_paths import module_files, rust_bindings
from qwen_lsp.context.treesitter import parse
from tests.context.helpers import walk_of, write_all

CRATE = {
    "Cargo.toml": '[package]\nname = "shop"\nversion = "0.1.0"\nedition = "2021"\n',
    "src/lib.rs": (
        "pub mod money;\n"
        "pub mod pricing;\n"
        "pub mod tax;\n"
        "use crate::money::Money;\n"
        "use crate::pricing::subtotal as sum_of;\n"
        "\n"
        "pub fn total(cents: &[u32]) -> Money {\n"
        "    let sub = sum_of(cents);\n"
        "    Money::of(sub + tax::apply(sub))\n"
        "}\n"
        "\n"
        "#[cfg(test)]\n"
        "mod tests {\n"
        "    use super::*;\n"
        "\n"
        "    #[test]\n"
        "    fn total_includes_tax() {\n"
        "        assert_eq!(total(&[100, 100]).cents(), 220);\n"
        "    }\n"
        "}\n"
    ),
    "src/pricing.rs": "pub fn subtotal(cents: &[u32]) -> u32 {\n    cents.iter().sum()\n}\n",
    "src/tax.rs": (
        "pub fn apply(sub: u32) -> u32 {\n"
        "    sub * rate() / 100\n"
        "}\n"
        "\n"
        "fn rate() -> u32 {\n"
        "    9\n"
        "}\n"
    ),
    "src/money.rs": (
        "pub struct Money {\n"
        "    cents: u32,\n"
        "}\n"
        "\n"
        "impl Money {\n"
        "    pub fn of(cents: u32) -> Self {\n"
        "        Self::checked(cents)\n"
        "    }\n"
        "\n"
        "    fn checked(cents: u32) -> Self {\n"
        "        Money { cents: round_cents(cents) }\n"
        "    }\n"
        "\n"
        "    pub fn cents(&self) -> u32 {\n"
        "        self.cents\n"
        "    }\n"
        "}\n"
        "\n"
        "fn round_cents(c: u32) -> u32 {\n"
        "    c\n"
        "}\n"
    ),
    # another crate's `tax` module, farther from src/lib.rs: not the one `tax::apply` means
    "vendor/other/src/tax.rs": "pub fn apply(x: u32) -> u32 {\n    x\n}\n",
}


def test_calls_inside_a_macro_and_path_calls_are_sites() -> None:
    src = ("fn t() {\n"
           "    assert_eq!(Money::of(1).add(&xs[0]), total(&[1]), \"{}\", self.fee(2));\n"
           "    let v = tax::apply(3);\n"
           "    crate::tax::rate();\n"
           "}\n")
    sites = {(s.name, s.receiver) for s in call_sites(parse(src, "rust"), "rust", 1, 5)}
    assert {("of", "Money"), ("total", None), ("fee", "self"), ("add", "?"), ("apply", "tax"),
            ("rate", "crate::tax")} <= sites
    # `xs[0]` is indexing, not a call; `Money::of` and `self.fee` are not also receiverless calls
    assert not {("xs", None), ("of", None), ("fee", None), ("fee", "?")} & sites


def test_use_declarations_bind_names_to_paths() -> None:
    src = ("use crate::tax;\n"
           "use crate::money::{Money, fee as f, sub::{a}, self};\n"
           "use super::*;\n"
           "use std::collections::HashMap as Map;\n")
    got = rust_bindings(parse(src, "rust"))
    assert got == {
        "tax": Binding("crate", "tax"), "Money": Binding("crate::money", "Money"), "f": Binding("crate::money", "fee"),
        "a": Binding("crate::money::sub", "a"), "money": Binding("crate", "money"),
        "Map": Binding("std::collections", "HashMap"),
    }


def test_a_module_path_is_the_nearest_file_of_that_name() -> None:
    files = ["src/lib.rs", "src/tax.rs", "src/geo/mod.rs", "vendor/other/src/tax.rs", "src/taxes.rs"]
    assert module_files("src/lib.rs", "crate::tax", files) == ["src/tax.rs", "vendor/other/src/tax.rs"]
    assert module_files("src/lib.rs", "geo", files) == ["src/geo/mod.rs"]
    assert module_files("src/lib.rs", "super", files) == []


def test_the_walk_from_a_rust_test_reaches_through_paths_types_and_uses(tmp_path: Path) -> None:
    ws = write_all(tmp_path / "ws", CRATE)
    walk = walk_of(ws, tmp_path)
    start = ("src/lib.rs", 18)  # the assert_eq! line of the failing test
    got = {f"{c.path}:{c.defn.name}" for c in walk.walk([start], walk.hints(*start))}
    for name in ("src/lib.rs:total",  # called inside assert_eq!
                 "src/pricing.rs:subtotal",  # `use ... subtotal as sum_of`, then sum_of()
                 "src/tax.rs:apply", "src/tax.rs:rate",  # tax::apply() to tax.rs, then a plain call there
                 "src/money.rs:of", "src/money.rs:checked",  # Money::of() to the impl block, Self::checked()
                 "src/money.rs:round_cents"):
        assert name in got, (name, sorted(got))
    assert "vendor/other/src/tax.rs:apply" not in got


GO_MODULE = {
    "go.mod": "module example.com/shop\n\ngo 1.21\n",
    "shop.go": (
        "package shop\n\nimport (\n\tm \"example.com/shop/money\"\n\t\"example.com/shop/tax\"\n)\n\n"
        "func Total(cents []int) m.Money {\n\tsub := subtotal(cents)\n\treturn m.Of(sub + tax.Apply(sub))\n}\n\n"
        "func subtotal(cents []int) int {\n\ts := 0\n\tfor _, c := range cents {\n\t\ts += c\n\t}\n\treturn s\n}\n"
    ),
    "shop_test.go": (
        "package shop\n\nimport \"testing\"\n\nfunc TestTotalIncludesTax(t *testing.T) {\n"
        "\tt.Run(\"two items\", func(t *testing.T) {\n\t\tgot := Total([]int{100, 100}).Cents()\n"
        "\t\tif got != 220 {\n\t\t\tt.Errorf(\"Total = %d, want 220\", got)\n\t\t}\n\t})\n}\n"
    ),
    "tax/tax.go": "package tax\n\nfunc Apply(sub int) int {\n\treturn sub * rate() / 100\n}\n\nfunc rate() int {\n\treturn 9\n}\n",
    "money/money.go": (
        "package money\n\ntype Money struct{ cents int }\n\nfunc Of(c int) Money { return Money{cents: roundCents(c)} }\n\n"
        "func (m Money) Cents() int { return m.cents }\n\nfunc roundCents(c int) int { return c }\n"
    ),
    "other/money/money.go": "package money\n\nfunc Of(c int) int { return c }\n",
}


def test_go_imports_bind_package_names_to_import_paths() -> None:
    src = ('package shop\nimport "testing"\nimport (\n\tm "example.com/shop/money"\n\t"example.com/shop/tax"\n'
           '\t_ "embed"\n\t. "strings"\n)\n')
    assert go_bindings(parse(src, "go")) == {
        "testing": Binding("testing", None), "m": Binding("example.com/shop/money", None),
        "tax": Binding("example.com/shop/tax", None)}
    files = ["money/money.go", "money/money_test.go", "shop/money/a.go", "other/money/b.go", "tax/tax.go"]
    assert package_files("example.com/shop/money", files) == ["shop/money/a.go"]  # two segments match
    assert package_files("example.com/x/money", files) == ["money/money.go"]  # nothing left over
    assert package_files("fmt", files) == []


def test_the_walk_from_a_go_subtest_reaches_through_package_calls(tmp_path: Path) -> None:
    ws = write_all(tmp_path / "ws", GO_MODULE)
    walk = walk_of(ws, tmp_path)
    start = ("shop_test.go", 9)  # t.Errorf inside the t.Run closure
    got = {f"{c.path}:{c.defn.name}" for c in walk.walk([start], walk.hints(*start))}
    for name in ("shop.go:Total", "shop.go:subtotal", "tax/tax.go:Apply", "tax/tax.go:rate",
                 "money/money.go:Of",  # m.Of(): a two-letter name, found through the import
                 "money/money.go:roundCents", "money/money.go:Cents"):
        assert name in got, (name, sorted(got))
    assert "other/money/money.go:Of" not in got
