'use strict';

module.exports = {
  ...require('./strings'),
  ...require('./numbers'),
};
