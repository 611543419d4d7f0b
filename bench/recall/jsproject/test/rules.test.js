'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const { rules } = require('../src');

test('tokenize splits numbers, names, strings and operators', () => {
  const tokens = rules.tokenize('qty >= 3 and sku != "TEA"');
  assert.deepEqual(tokens.map((t) => t.type), ['name', 'op', 'number', 'and', 'name', 'op', 'string']);
  assert.equal(tokens[2].value, 3);
  assert.equal(tokens[6].value, 'TEA');
});

test('tokenize refuses stray characters', () => {
  assert.throws(() => rules.tokenize('qty # 3'), SyntaxError);
  assert.throws(() => rules.tokenize('sku = "TEA'), /unterminated/);
});

test('and binds tighter than or', () => {
  const rule = rules.compile('member or qty > 5 and total >= 100');
  assert.equal(rule({ member: true, qty: 1, total: 0 }), true);
  assert.equal(rule({ member: false, qty: 6, total: 100 }), true);
  assert.equal(rule({ member: false, qty: 6, total: 99 }), false);
});

test('not and parentheses', () => {
  const rule = rules.compile('not (sku = "GIFT" or qty < 2)');
  assert.equal(rule({ sku: 'TEA', qty: 2 }), true);
  assert.equal(rule({ sku: 'TEA', qty: 1 }), false);
  assert.equal(rule({ sku: 'GIFT', qty: 5 }), false);
});

test('dotted names look into nested objects', () => {
  const rule = rules.compile('customer.tier = "gold" and customer.orders >= 10');
  assert.equal(rule({ customer: { tier: 'gold', orders: 10 } }), true);
  assert.equal(rule({ customer: { tier: 'gold', orders: 9 } }), false);
  assert.equal(rule({}), false);
});

test('every comparison', () => {
  const scope = { n: 5 };
  assert.equal(rules.compile('n = 5')(scope), true);
  assert.equal(rules.compile('n != 5')(scope), false);
  assert.equal(rules.compile('n < 5')(scope), false);
  assert.equal(rules.compile('n <= 5')(scope), true);
  assert.equal(rules.compile('n > 4')(scope), true);
  assert.equal(rules.compile('n >= 6')(scope), false);
});

test('a rule must be whole', () => {
  assert.throws(() => rules.compile('qty > 3 )'), SyntaxError);
  assert.throws(() => rules.compile('(qty > 3'), SyntaxError);
});
