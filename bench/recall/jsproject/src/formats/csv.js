'use strict';

const csv = require('../csv');

module.exports = {
  render(invoice) {
    const rows = invoice.lines.map((l) => [l.sku, l.qty, l.net.toMajor(), l.tax.toMajor()]);
    rows.push(['TOTAL', '', invoice.subtotal.toMajor(), invoice.tax.toMajor()]);
    return csv.stringify(rows, { header: ['sku', 'qty', 'net', 'tax'] });
  },
};
