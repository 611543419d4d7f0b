// Applies LSP TextEdits to a string, as an editor does when it applies a WorkspaceEdit.

import type { LspPosition, LspRange } from "../../src/protocol";

export interface TextEdit {
  range: LspRange;
  newText: string;
}

/** Offset of an LSP position; JS strings are UTF-16, the LSP's default position encoding. */
function offsetAt(text: string, position: LspPosition): number {
  let offset = 0;
  for (let line = 0; line < position.line; line++) {
    const next = text.indexOf("\n", offset);
    if (next < 0) return text.length;
    offset = next + 1;
  }
  const lineEnd = text.indexOf("\n", offset);
  return Math.min(offset + position.character, lineEnd < 0 ? text.length : lineEnd);
}

/** Edits must not overlap (an LSP rule); applying from the end keeps earlier offsets valid. */
export function applyTextEdits(text: string, edits: TextEdit[]): string {
  const located = edits.map((edit) => ({
    start: offsetAt(text, edit.range.start),
    end: offsetAt(text, edit.range.end),
    newText: edit.newText,
  }));
  located.sort((a, b) => b.start - a.start || b.end - a.end);
  for (const edit of located) text = text.slice(0, edit.start) + edit.newText + text.slice(edit.end);
  return text;
}
