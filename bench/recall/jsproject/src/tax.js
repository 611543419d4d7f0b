'use strict';

const RATES = {
  DE: { standard: 19, reduced: 7, exempt: 0 },
  FR: { standard: 20, reduced: 5.5, exempt: 0 },
  UK: { standard: 20, reduced: 5, exempt: 0 },
};

function rateFor(region, category) {
  const table = RATES[region];
  if (!table) throw new RangeError(`no tax rates for ${region}`);
  const rate = table[category];
  return rate === undefined ? table.standard : rate;
}

function taxFor(net, category, region) {
  const rate = rateFor(region, category);
  if (rate === 0) return net.multiply(0);
  return net.multiply(rate / 100);
}

module.exports = { RATES, rateFor, taxFor };
