import "../fake/register";
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type * as vscode from "vscode";
import { StatusItem } from "../../src/status";
import { FakeStatusBarItem, ThemeColor } from "../fake/vscode";

function make(): { item: FakeStatusBarItem; status: StatusItem } {
  const item = new FakeStatusBarItem();
  return { item, status: new StatusItem(item as unknown as vscode.StatusBarItem) };
}

describe("StatusItem", () => {
  it("is visible and says it is starting before the server talks", () => {
    const { item } = make();
    assert.equal(item.visible, true);
    assert.match(item.text, /loading~spin.*Qwen/);
  });

  it("shows idle, busy and error from qwen/status", () => {
    const { item, status } = make();
    status.update({ state: "busy", message: "patch round 2" });
    assert.equal(item.text, "$(loading~spin) Qwen: patch round 2");
    assert.equal(item.tooltip, "patch round 2\nClick to cancel.");
    assert.equal(item.command, "qwen.cancel"); // the way to cancel a Quick Fix while it runs
    assert.equal(item.backgroundColor, undefined);

    status.update({ state: "error", message: "cannot reach http://127.0.0.1:8000/v1" });
    assert.equal(item.text, "$(error) Qwen");
    assert.equal(item.tooltip, "cannot reach http://127.0.0.1:8000/v1");
    assert.deepEqual(item.backgroundColor, new ThemeColor("statusBarItem.errorBackground"));
    assert.equal(item.command, "qwen.showOutput");

    status.update({ state: "idle", message: "ready" });
    assert.equal(item.text, "$(sparkle) Qwen");
    assert.equal(item.tooltip, "ready");
    assert.equal(item.command, "qwen.showOutput");
    assert.equal(item.backgroundColor, undefined);
  });

  it("does not say Qwen twice when the server's title names it", () => {
    const { item, status } = make();
    status.update({ state: "busy", message: "Qwen: fixing AssertionError: planning" });
    assert.equal(item.text, "$(loading~spin) Qwen: fixing AssertionError: planning");
  });

  it("keeps long busy messages short in the bar and whole in the tooltip", () => {
    const { item, status } = make();
    const long = "validating: pytest -x tests/test_a.py::test_something_long\nsecond line";
    status.update({ state: "busy", message: long });
    assert.ok(item.text.length <= "$(loading~spin) Qwen: ".length + 40, item.text);
    assert.ok(item.text.endsWith("…"));
    assert.equal(item.tooltip, `${long}\nClick to cancel.`);
  });

  it("reports a malformed notification instead of ignoring it", () => {
    const { item, status } = make();
    status.update({ state: "sleeping", message: "?" } as never);
    assert.equal(item.text, "$(error) Qwen");
    assert.match(String(item.tooltip), /Unexpected qwen\/status/);
  });

  it("offers a restart when the server stopped", () => {
    const { item, status } = make();
    status.stopped();
    assert.equal(item.command, "qwen.restart");
    assert.match(item.text, /circle-slash/);
  });
});
