'use strict';

// Checks an order as it arrives from the web shop against a schema: { field: { type, required, ... } }.

class ValidationError extends Error {
  constructor(problems) {
    super(problems.join('; '));
    this.name = 'ValidationError';
    this.problems = problems;
  }
}

class Validator {
  constructor(schema) {
    this.schema = schema;
  }

  validate(value) {
    const problems = [];
    this.visit(this.schema, value, '', problems);
    if (problems.length > 0) throw new ValidationError(problems);
    return value;
  }

  visit(rule, value, where, problems) {
    const check = this['check' + rule.type[0].toUpperCase() + rule.type.slice(1)];
    if (!check) throw new Error(`no check for type ${rule.type}`);
    check.call(this, rule, value, where, problems);
  }

  checkString(rule, value, where, problems) {
    if (typeof value !== 'string') return problems.push(`${where || 'value'} must be a string`);
    if (rule.min !== undefined && value.length < rule.min) problems.push(`${where} is shorter than ${rule.min}`);
    if (rule.max !== undefined && value.length > rule.max) problems.push(`${where} is longer than ${rule.max}`);
    if (rule.pattern && !new RegExp(rule.pattern).test(value)) problems.push(`${where} does not match ${rule.pattern}`);
    return undefined;
  }

  checkNumber(rule, value, where, problems) {
    if (typeof value !== 'number' || Number.isNaN(value)) return problems.push(`${where || 'value'} must be a number`);
    if (rule.integer && !Number.isInteger(value)) problems.push(`${where} must be an integer`);
    if (rule.min !== undefined && value < rule.min) problems.push(`${where} is less than ${rule.min}`);
    if (rule.max !== undefined && value > rule.max) problems.push(`${where} is more than ${rule.max}`);
    return undefined;
  }

  checkArray(rule, value, where, problems) {
    if (!Array.isArray(value)) return problems.push(`${where || 'value'} must be a list`);
    if (rule.minItems !== undefined && value.length < rule.minItems) {
      problems.push(`${where} needs at least ${rule.minItems} items`);
    }
    value.forEach((item, i) => this.visit(rule.items, item, `${where}[${i}]`, problems));
    return undefined;
  }

  checkObject(rule, value, where, problems) {
    if (value === null || typeof value !== 'object' || Array.isArray(value)) {
      return problems.push(`${where || 'value'} must be an object`);
    }
    for (const [key, sub] of Object.entries(rule.fields || {})) {
      const at = where ? `${where}.${key}` : key;
      if (value[key] === undefined) {
        if (sub.required) problems.push(`${at} is required`);
        continue;
      }
      this.visit(sub, value[key], at, problems);
    }
    return undefined;
  }
}

const ORDER_SCHEMA = {
  type: 'object',
  fields: {
    email: { type: 'string', required: true, pattern: '^[^@\\s]+@[^@\\s]+$' },
    currency: { type: 'string', required: true, min: 3, max: 3 },
    items: {
      type: 'array',
      required: true,
      minItems: 1,
      items: {
        type: 'object',
        fields: {
          sku: { type: 'string', required: true, min: 1 },
          qty: { type: 'number', required: true, integer: true, min: 1 },
          price: { type: 'number', required: true, min: 0 },
        },
      },
    },
  },
};

function validateOrder(order) {
  return new Validator(ORDER_SCHEMA).validate(order);
}

module.exports = { Validator, ValidationError, validateOrder, ORDER_SCHEMA };
