'use strict';

const { Money, CurrencyMismatchError, sumMoney } = require('./money');
const { Cart } = require('./cart');

module.exports = {
  Money,
  CurrencyMismatchError,
  sumMoney,
  Cart,
  ...require('./invoice'),
  ...require('./validate'),
  rules: require('./rules'),
  csv: require('./csv'),
  util: require('./util'),
};
