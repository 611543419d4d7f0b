'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const { Money, CurrencyMismatchError, sumMoney } = require('../src');

test('of rounds to minor units half to even', () => {
  assert.equal(Money.of(10.125, 'EUR').minor, 1012);
  assert.equal(Money.of(10.375, 'EUR').minor, 1038);
  assert.equal(Money.of(1234, 'JPY').minor, 1234);
});

test('adding and subtracting keep the currency', () => {
  const a = Money.of(12.5, 'EUR');
  const b = Money.of(0.75, 'EUR');
  assert.equal(a.add(b).toString(), '13.25 €');
  assert.equal(a.subtract(b).minor, 1175);
});

test('mixing currencies is refused', () => {
  assert.throws(() => Money.of(1, 'EUR').add(Money.of(1, 'USD')), CurrencyMismatchError);
});

test('compare orders amounts', () => {
  const small = Money.of(1, 'USD');
  const big = Money.of(2, 'USD');
  assert.equal(small.compare(big), -1);
  assert.equal(big.compare(small), 1);
  assert.equal(big.compare(Money.of(2, 'USD')), 0);
  assert.ok(Money.of(2, 'USD').equals(big));
  assert.ok(!Money.of(2, 'EUR').equals(big));
});

test('allocate spreads the remainder from the first share', () => {
  const parts = Money.of(100, 'USD').allocate([1, 1, 1]);
  assert.deepEqual(parts.map((m) => m.minor), [3334, 3333, 3333]);
  assert.deepEqual(Money.of(0.05, 'EUR').allocate([3, 7]).map((m) => m.minor), [2, 3]);
});

test('toString groups digits and places the symbol', () => {
  assert.equal(Money.of(1234567.891, 'USD').toString(), '$1,234,567.89');
  assert.equal(Money.of(-5.5, 'EUR').toString(), '-5.50 €');
  assert.equal(Money.of(0.07, 'GBP').toString(), '£0.07');
  assert.equal(Money.of(1500, 'JPY').toString(), '¥1,500');
  assert.equal(Money.of(1.5, 'KWD').toString(), '1.500 KD');
});

test('sumMoney adds a list', () => {
  const total = sumMoney([Money.of(1.1, 'EUR'), Money.of(2.2, 'EUR'), Money.of(3.3, 'EUR')], 'EUR');
  assert.equal(total.minor, 660);
  assert.ok(sumMoney([], 'EUR').isZero());
});

test('JSON gives major units', () => {
  assert.equal(JSON.stringify(Money.of(19.99, 'USD')), '{"amount":19.99,"currency":"USD"}');
});
