'use strict';

const { padEnd, padStart } = require('../util');

module.exports = {
  render(invoice) {
    const width = Math.max(...invoice.lines.map((l) => l.sku.length), 4);
    const rows = invoice.lines.map((l) => `${padEnd(l.sku, width)}  ${padStart(l.qty, 3)}  ${padStart(l.net.toString(), 12)}`);
    return [...rows, `${padEnd('TOTAL', width)}       ${padStart(invoice.total.toString(), 12)}`].join('\n');
  },
};
