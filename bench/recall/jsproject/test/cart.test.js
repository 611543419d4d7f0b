'use strict';

const { describe, it, beforeEach } = require('node:test');
const assert = require('node:assert/strict');
const { Cart } = require('../src');

describe('Cart', () => {
  let cart;

  beforeEach(() => {
    cart = new Cart('EUR');
  });

  it('merges lines of the same sku', () => {
    cart.addItem('TEA', 4.5, 2).addItem('TEA', 4.5, 1).addItem('MUG', 9);
    assert.equal(cart.lines.length, 2);
    assert.equal(cart.count(), 4);
  });

  it('removes part of a line, then all of it', () => {
    cart.addItem('TEA', 4.5, 3);
    cart.removeItem('TEA', 1);
    assert.equal(cart.count(), 2);
    cart.removeItem('TEA', 2);
    assert.equal(cart.lines.length, 0);
  });

  it('refuses a zero quantity', () => {
    assert.throws(() => cart.addItem('TEA', 4.5, 0), RangeError);
  });

  it('adds German VAT by category', () => {
    cart.addItem('BOOK', 10, 1, 'reduced').addItem('MUG', 10, 1);
    assert.equal(cart.subtotal().toString(), '20.00 €');
    assert.equal(cart.tax().toString(), '2.60 €');
    assert.equal(cart.total().toString(), '22.60 €');
  });

  it('uses the region given', () => {
    const uk = new Cart('GBP', { region: 'UK' });
    uk.addItem('MUG', 10, 1).addItem('CHILDSEAT', 100, 1, 'reduced').addItem('BREAD', 2, 1, 'exempt');
    assert.equal(uk.tax().toString(), '£7.00');
  });

  it('takes the best discount that applies', () => {
    cart.addItem('TEA', 5, 4);
    cart.addDiscount({ kind: 'percent', value: 10 });
    cart.addDiscount({ kind: 'bogo', when: 'qty >= 2 and sku = "TEA"' });
    const [line] = cart.priced();
    assert.equal(line.discount.toString(), '10.00 €');
    assert.equal(line.net.toString(), '10.00 €');
  });

  it('caps a fixed discount at the line total', () => {
    cart.addItem('PEN', 3, 1);
    cart.addDiscount({ kind: 'fixed', value: 5 });
    assert.equal(cart.subtotal().toString(), '0.00 €');
  });

  it('gives members their discount only', () => {
    cart.addItem('TEA', 10, 1);
    cart.addDiscount({ kind: 'percent', value: 20, when: 'member' });
    assert.equal(cart.subtotal().toString(), '10.00 €');
    const member = new Cart('EUR', { member: true }).addItem('TEA', 10, 1).addDiscount({ kind: 'percent', value: 20, when: 'member' });
    assert.equal(member.subtotal().toString(), '8.00 €');
  });
});
