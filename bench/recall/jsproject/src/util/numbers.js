'use strict';

function roundHalfEven(value) {
  const floor = Math.floor(value);
  const diff = value - floor;
  if (diff > 0.5) return floor + 1;
  if (diff < 0.5) return floor;
  return floor % 2 === 0 ? floor : floor + 1;
}

function groupDigits(digits, separator = ',') {
  const out = [];
  for (let end = digits.length; end > 0; end -= 3) {
    out.unshift(digits.slice(Math.max(0, end - 3), end));
  }
  return out.join(separator);
}

function clamp(value, low, high) {
  if (value < low) return low;
  if (value > high) return high;
  return value;
}

function sum(values) {
  let total = 0;
  for (const v of values) total += v;
  return total;
}

module.exports = { roundHalfEven, groupDigits, clamp, sum };
