'use strict';

const CURRENCIES = {
  EUR: { code: 'EUR', symbol: '€', exponent: 2, symbolFirst: false },
  USD: { code: 'USD', symbol: '$', exponent: 2, symbolFirst: true },
  GBP: { code: 'GBP', symbol: '£', exponent: 2, symbolFirst: true },
  JPY: { code: 'JPY', symbol: '¥', exponent: 0, symbolFirst: true },
  KWD: { code: 'KWD', symbol: 'KD', exponent: 3, symbolFirst: false },
};

function currency(code) {
  const found = CURRENCIES[String(code).toUpperCase()];
  if (!found) throw new RangeError(`unknown currency: ${code}`);
  return found;
}

function minorPerMajor(code) {
  return 10 ** currency(code).exponent;
}

module.exports = { CURRENCIES, currency, minorPerMajor };
