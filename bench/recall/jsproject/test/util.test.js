'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const { util } = require('../src');

test('titleCase', () => {
  assert.equal(util.titleCase('  green TEA  loose '), 'Green Tea Loose');
});

test('slugify drops accents and punctuation', () => {
  assert.equal(util.slugify('Crème Brûlée, 2 for 1!'), 'creme-brulee-2-for-1');
});

test('truncate keeps the ellipsis inside the limit', () => {
  assert.equal(util.truncate('abcdefgh', 5), 'abcd…');
  assert.equal(util.truncate('abc', 5), 'abc');
  assert.equal(util.truncate('abcdef', 1), '…');
});

test('groupDigits', () => {
  assert.equal(util.groupDigits('1234567'), '1,234,567');
  assert.equal(util.groupDigits('123'), '123');
});

test('clamp and sum', () => {
  assert.equal(util.clamp(5, 0, 3), 3);
  assert.equal(util.clamp(-1, 0, 3), 0);
  assert.equal(util.sum([1, 2, 3.5]), 6.5);
});
