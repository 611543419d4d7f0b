'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const { csv } = require('../src');

test('fields with separators or quotes are quoted', () => {
  assert.equal(csv.stringify([['a,b', 'say "hi"', 3, null]]), '"a,b","say ""hi""",3,');
});

test('parse undoes stringify', () => {
  const rows = [['sku', 'note'], ['TEA', 'green, loose'], ['MUG', '"big" one']];
  assert.deepEqual(csv.parse(csv.stringify(rows)), rows);
});

test('parse with a header gives objects', () => {
  assert.deepEqual(csv.parse('a;b\n1;2\n3;4\n', { separator: ';', header: true }), [{ a: '1', b: '2' }, { a: '3', b: '4' }]);
});

test('empty fields are kept', () => {
  assert.deepEqual(csv.parseLine(',x,,', ','), ['', 'x', '', '']);
});
