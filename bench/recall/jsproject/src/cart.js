'use strict';

const { Money, sumMoney } = require('./money');
const { discountFor } = require('./discounts');
const { taxFor } = require('./tax');

class Cart {
  constructor(code, { member = false, region = 'DE' } = {}) {
    this.code = code;
    this.member = member;
    this.region = region;
    this.lines = [];
    this.discounts = [];
  }

  addItem(sku, unitPrice, qty = 1, category = 'standard') {
    if (qty <= 0) throw new RangeError(`quantity must be positive, got ${qty}`);
    const existing = this.lines.find((l) => l.sku === sku);
    if (existing) {
      existing.qty += qty;
      return this;
    }
    this.lines.push({ sku, unit: Money.of(unitPrice, this.code), qty, category });
    return this;
  }

  removeItem(sku, qty = Infinity) {
    const index = this.lines.findIndex((l) => l.sku === sku);
    if (index < 0) return this;
    const line = this.lines[index];
    if (qty >= line.qty) {
      this.lines.splice(index, 1);
    } else {
      line.qty -= qty;
    }
    return this;
  }

  addDiscount(discount) {
    this.discounts.push(discount);
    return this;
  }

  count() {
    return this.lines.reduce((n, l) => n + l.qty, 0);
  }

  priced() {
    return this.lines.map((l) => {
      const total = l.unit.multiply(l.qty);
      const line = { ...l, total, member: this.member };
      const discount = discountFor(line, this.discounts);
      const net = total.subtract(discount);
      return { ...line, discount, net, tax: taxFor(net, l.category, this.region) };
    });
  }

  subtotal() {
    return sumMoney(this.priced().map((l) => l.net), this.code);
  }

  tax() {
    return sumMoney(this.priced().map((l) => l.tax), this.code);
  }

  total() {
    return this.subtotal().add(this.tax());
  }
}

module.exports = { Cart };
