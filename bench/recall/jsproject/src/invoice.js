'use strict';

const path = require('node:path');
const { padStart } = require('./util');

const FORMATS = ['text', 'csv', 'json'];

function invoiceNumber(year, sequence) {
  return `INV-${year}-${padStart(sequence, 5, '0')}`;
}

function makeInvoice(cart, { year, sequence }) {
  const lines = cart.priced();
  return {
    number: invoiceNumber(year, sequence),
    lines,
    subtotal: cart.subtotal(),
    tax: cart.tax(),
    total: cart.total(),
  };
}

function formatter(name) {
  if (!FORMATS.includes(name)) throw new Error(`unknown invoice format: ${name}`);
  return require(path.join(__dirname, 'formats', name));
}

function render(invoice, format = 'text') {
  return formatter(format).render(invoice);
}

module.exports = { invoiceNumber, makeInvoice, render, FORMATS };
