// Turns what a terminal wrote (escape sequences, CR-overwritten progress lines) into plain text
// the server's output parsers can read.

// OSC (…BEL or …ST), CSI, and the remaining two-byte ESC sequences, in that order of precedence.
const ESCAPES = /\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b\[[0-?]*[ -/]*[@-~]|\x1b[@-Z\\-_]/g;
// Control characters other than tab, newline and carriage return.
const CONTROLS = /[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]/g;

export function plainText(raw: string): string {
  const text = raw.replace(ESCAPES, "").replace(CONTROLS, "");
  return text
    .split(/\r?\n/)
    .map((line) => {
      // A bare CR returns to the line start: what follows overwrites what came before.
      const parts = line.split("\r");
      return parts[parts.length - 1] === "" && parts.length > 1 ? parts[parts.length - 2] : parts[parts.length - 1];
    })
    .join("\n");
}

/** Keeps the end: tracebacks, compiler errors and test summaries are printed last. */
export function tail(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  const cut = text.slice(text.length - maxChars);
  const newline = cut.indexOf("\n");
  return newline >= 0 && newline < cut.length - 1 ? cut.slice(newline + 1) : cut;
}
