'use strict';

function padStart(text, width, fill = ' ') {
  const s = String(text);
  if (s.length >= width) return s;
  return fill.repeat(width - s.length) + s;
}

function padEnd(text, width, fill = ' ') {
  const s = String(text);
  if (s.length >= width) return s;
  return s + fill.repeat(width - s.length);
}

function titleCase(text) {
  return text
    .split(/\s+/)
    .filter((w) => w.length > 0)
    .map((w) => w[0].toUpperCase() + w.slice(1).toLowerCase())
    .join(' ');
}

function slugify(text) {
  return text
    .toLowerCase()
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '');
}

function truncate(text, max, ellipsis = '…') {
  if (text.length <= max) return text;
  const keep = max - ellipsis.length;
  return keep > 0 ? text.slice(0, keep) + ellipsis : ellipsis.slice(0, max);
}

module.exports = { padStart, padEnd, titleCase, slugify, truncate };
