'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const { Cart, makeInvoice, render, invoiceNumber, csv } = require('../src');

function sampleCart() {
  return new Cart('USD', { region: 'FR' }).addItem('TEA', 4, 2).addItem('BOOK', 20, 1, 'reduced');
}

test('invoice numbers are zero padded', () => {
  assert.equal(invoiceNumber(2024, 42), 'INV-2024-00042');
});

test('an invoice adds up its lines', () => {
  const invoice = makeInvoice(sampleCart(), { year: 2024, sequence: 7 });
  assert.equal(invoice.number, 'INV-2024-00007');
  assert.equal(invoice.subtotal.toString(), '$28.00');
  assert.equal(invoice.tax.toString(), '$2.70');
  assert.equal(invoice.total.toString(), '$30.70');
});

test('the text format lines up columns', () => {
  const text = render(makeInvoice(sampleCart(), { year: 2024, sequence: 1 }), 'text');
  assert.equal(text, ['TEA     2         $8.00', 'BOOK    1        $20.00', 'TOTAL             $30.70'].join('\n'));
});

test('the csv format round-trips through the csv parser', () => {
  const out = render(makeInvoice(sampleCart(), { year: 2024, sequence: 1 }), 'csv');
  const rows = csv.parse(out, { header: true });
  assert.deepEqual(rows[0], { sku: 'TEA', qty: '2', net: '8', tax: '1.6' });
  assert.deepEqual(rows[2], { sku: 'TOTAL', qty: '', net: '28', tax: '2.7' });
});

test('the json format carries amounts and currencies', () => {
  const out = JSON.parse(render(makeInvoice(sampleCart(), { year: 2024, sequence: 3 }), 'json'));
  assert.deepEqual(out.total, { amount: 30.7, currency: 'USD' });
  assert.equal(out.lines.length, 2);
});

test('an unknown format is refused', () => {
  assert.throws(() => render(makeInvoice(sampleCart(), { year: 2024, sequence: 1 }), 'pdf'), /unknown invoice format/);
});
