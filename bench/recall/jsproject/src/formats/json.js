'use strict';

module.exports = {
  render(invoice) {
    return JSON.stringify({
      number: invoice.number,
      lines: invoice.lines.map((l) => ({ sku: l.sku, qty: l.qty, net: l.net, tax: l.tax })),
      subtotal: invoice.subtotal,
      tax: invoice.tax,
      total: invoice.total,
    });
  },
};
