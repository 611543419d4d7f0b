import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { plainText, tail } from "../../src/terminalText";

describe("plainText", () => {
  it("removes colours, cursor moves and shell-integration OSC sequences", () => {
    const raw =
      "\x1b]633;C\x07\x1b[31mFAILED\x1b[0m test_calc.py::test_add - assert -1 == 5\r\n" +
      "\x1b[1m\x1b[31mE       assert -1 == 5\x1b[0m\r\n\x1b]133;D;1\x1b\\\x1b[?2004h";
    assert.equal(plainText(raw), "FAILED test_calc.py::test_add - assert -1 == 5\nE       assert -1 == 5\n");
  });

  it("keeps what a carriage return overwrote last, as the terminal shows it", () => {
    assert.equal(plainText("downloading 10%\rdownloading 100%\r\ndone\n"), "downloading 100%\ndone\n");
    assert.equal(plainText("building\r\n"), "building\n");
  });

  it("drops other control characters but keeps tabs", () => {
    assert.equal(plainText("a\tb\x07c\x08"), "a\tbc");
  });
});

describe("tail", () => {
  it("keeps the end, starting at a line boundary", () => {
    assert.equal(tail("line one\nline two\nline three\n", 16), "line three\n");
    assert.equal(tail("short", 100), "short");
  });
});
