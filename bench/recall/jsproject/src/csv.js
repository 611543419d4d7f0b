'use strict';

function quote(field, separator) {
  const text = field === null || field === undefined ? '' : String(field);
  if (text.includes('"') || text.includes(separator) || text.includes('\n')) {
    return '"' + text.replace(/"/g, '""') + '"';
  }
  return text;
}

function stringify(rows, { separator = ',', header } = {}) {
  const out = [];
  if (header) out.push(header.map((h) => quote(h, separator)).join(separator));
  for (const row of rows) out.push(row.map((f) => quote(f, separator)).join(separator));
  return out.join('\n');
}

function parseLine(line, separator) {
  const fields = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < line.length; i += 1) {
    const ch = line[i];
    if (quoted) {
      if (ch === '"' && line[i + 1] === '"') {
        field += '"';
        i += 1;
      } else if (ch === '"') {
        quoted = false;
      } else {
        field += ch;
      }
    } else if (ch === '"') {
      quoted = true;
    } else if (ch === separator) {
      fields.push(field);
      field = '';
    } else {
      field += ch;
    }
  }
  fields.push(field);
  return fields;
}

function parse(text, { separator = ',', header = false } = {}) {
  const lines = text.split(/\r?\n/).filter((l) => l.length > 0);
  const rows = lines.map((l) => parseLine(l, separator));
  if (!header) return rows;
  const [names, ...rest] = rows;
  return rest.map((r) => Object.fromEntries(names.map((n, i) => [n, r[i]])));
}

module.exports = { stringify, parse, parseLine, quote };
