'use strict';

const { compile } = require('./rules');
const { Money } = require('./money');

// Discount kinds by name, as stored in the shop's settings.
const KINDS = {
  percent(line, discount) {
    return line.total.multiply(discount.value / 100);
  },
  fixed(line, discount) {
    const off = Money.of(discount.value, line.total.code);
    return off.compare(line.total) > 0 ? line.total : off;
  },
  bogo(line) {
    const free = Math.floor(line.qty / 2);
    return line.unit.multiply(free);
  },
};

function registerKind(name, fn) {
  if (KINDS[name]) throw new Error(`discount kind ${name} exists`);
  KINDS[name] = fn;
}

function applies(discount, line) {
  if (!discount.when) return true;
  const rule = compile(discount.when);
  return rule({ qty: line.qty, sku: line.sku, total: line.total.toMajor(), member: Boolean(line.member) });
}

function discountFor(line, discounts) {
  let best = Money.zero(line.total.code);
  for (const discount of discounts) {
    if (!applies(discount, line)) continue;
    const kind = KINDS[discount.kind];
    if (!kind) throw new Error(`unknown discount kind: ${discount.kind}`);
    const amount = kind(line, discount);
    if (amount.compare(best) > 0) best = amount;
  }
  return best;
}

module.exports = { KINDS, registerKind, applies, discountFor };
