'use strict';

const { currency, minorPerMajor } = require('./currency');
const { roundHalfEven, groupDigits } = require('./util');

class CurrencyMismatchError extends Error {
  constructor(a, b) {
    super(`cannot combine ${a} with ${b}`);
    this.name = 'CurrencyMismatchError';
  }
}

class Money {
  constructor(minor, code) {
    if (!Number.isInteger(minor)) throw new TypeError(`minor units must be an integer, got ${minor}`);
    this.minor = minor;
    this.code = currency(code).code;
  }

  static of(major, code) {
    return new Money(roundHalfEven(major * minorPerMajor(code)), code);
  }

  static zero(code) {
    return new Money(0, code);
  }

  checkSame(other) {
    if (this.code !== other.code) throw new CurrencyMismatchError(this.code, other.code);
  }

  add(other) {
    this.checkSame(other);
    return new Money(this.minor + other.minor, this.code);
  }

  subtract(other) {
    this.checkSame(other);
    return new Money(this.minor - other.minor, this.code);
  }

  multiply(factor) {
    return new Money(roundHalfEven(this.minor * factor), this.code);
  }

  compare(other) {
    this.checkSame(other);
    if (this.minor < other.minor) return -1;
    if (this.minor > other.minor) return 1;
    return 0;
  }

  equals(other) {
    return other instanceof Money && this.code === other.code && this.minor === other.minor;
  }

  isZero() {
    return this.minor === 0;
  }

  isNegative() {
    return this.minor < 0;
  }

  allocate(ratios) {
    const total = ratios.reduce((a, b) => a + b, 0);
    if (total <= 0) throw new RangeError('ratios must add up to more than zero');
    const shares = ratios.map((r) => Math.floor((this.minor * r) / total));
    let remainder = this.minor - shares.reduce((a, b) => a + b, 0);
    for (let i = 0; remainder > 0; i = (i + 1) % shares.length) {
      shares[i] += 1;
      remainder -= 1;
    }
    return shares.map((minor) => new Money(minor, this.code));
  }

  toMajor() {
    return this.minor / minorPerMajor(this.code);
  }

  toString() {
    const info = currency(this.code);
    const negative = this.minor < 0;
    const digits = String(Math.abs(this.minor)).padStart(info.exponent + 1, '0');
    const whole = digits.slice(0, digits.length - info.exponent);
    const fraction = info.exponent > 0 ? '.' + digits.slice(digits.length - info.exponent) : '';
    const amount = groupDigits(whole) + fraction;
    const text = info.symbolFirst ? `${info.symbol}${amount}` : `${amount} ${info.symbol}`;
    return negative ? `-${text}` : text;
  }

  toJSON() {
    return { amount: this.toMajor(), currency: this.code };
  }
}

function sumMoney(items, code) {
  return items.reduce((acc, m) => acc.add(m), Money.zero(code));
}

module.exports = { Money, CurrencyMismatchError, sumMoney };
