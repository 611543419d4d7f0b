'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const { validateOrder, ValidationError, Validator } = require('../src');

const good = { email: 'a@example.com', currency: 'EUR', items: [{ sku: 'TEA', qty: 2, price: 4.5 }] };

test('a good order passes', () => {
  assert.deepEqual(validateOrder(good), good);
});

test('every problem is reported with its place', () => {
  const bad = { email: 'nobody', currency: 'EURO', items: [{ sku: '', qty: 1.5, price: -1 }, { qty: 1, price: 2 }] };
  try {
    validateOrder(bad);
    assert.fail('no error');
  } catch (err) {
    assert.ok(err instanceof ValidationError);
    assert.deepEqual(err.problems, [
      'email does not match ^[^@\\s]+@[^@\\s]+$',
      'currency is longer than 3',
      'items[0].sku is shorter than 1',
      'items[0].qty must be an integer',
      'items[0].price is less than 0',
      'items[1].sku is required',
    ]);
  }
});

test('an empty item list is refused', () => {
  assert.throws(() => validateOrder({ ...good, items: [] }), /needs at least 1 items/);
});

test('wrong types are named', () => {
  assert.throws(() => validateOrder({ ...good, items: 'TEA' }), /items must be a list/);
  assert.throws(() => new Validator({ type: 'number' }).validate('3'), /value must be a number/);
  assert.throws(() => new Validator({ type: 'date' }).validate('3'), /no check for type date/);
});
