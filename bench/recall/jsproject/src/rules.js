'use strict';

// A small rule language for discounts: `qty >= 3 and sku = "TEA"`, `total > 50 or member`.

const KEYWORDS = new Set(['and', 'or', 'not', 'true', 'false']);

function tokenize(source) {
  const tokens = [];
  let i = 0;
  while (i < source.length) {
    const ch = source[i];
    if (/\s/.test(ch)) {
      i += 1;
    } else if (/[0-9]/.test(ch)) {
      let j = i;
      while (j < source.length && /[0-9.]/.test(source[j])) j += 1;
      tokens.push({ type: 'number', value: Number(source.slice(i, j)) });
      i = j;
    } else if (/[A-Za-z_]/.test(ch)) {
      let j = i;
      while (j < source.length && /[A-Za-z0-9_.]/.test(source[j])) j += 1;
      const word = source.slice(i, j);
      tokens.push(KEYWORDS.has(word) ? { type: word } : { type: 'name', value: word });
      i = j;
    } else if (ch === '"') {
      const end = source.indexOf('"', i + 1);
      if (end < 0) throw new SyntaxError(`unterminated string at ${i}`);
      tokens.push({ type: 'string', value: source.slice(i + 1, end) });
      i = end + 1;
    } else {
      const two = source.slice(i, i + 2);
      if (['>=', '<=', '!='].includes(two)) {
        tokens.push({ type: 'op', value: two });
        i += 2;
      } else if ('<>=()'.includes(ch)) {
        tokens.push({ type: ch === '(' || ch === ')' ? ch : 'op', value: ch });
        i += 1;
      } else {
        throw new SyntaxError(`unexpected ${ch} at ${i}`);
      }
    }
  }
  return tokens;
}

class Parser {
  constructor(tokens) {
    this.tokens = tokens;
    this.pos = 0;
  }

  peek() {
    return this.tokens[this.pos];
  }

  next() {
    const token = this.tokens[this.pos];
    this.pos += 1;
    return token;
  }

  expect(type) {
    const token = this.next();
    if (!token || token.type !== type) throw new SyntaxError(`expected ${type}`);
    return token;
  }

  parse() {
    const node = this.parseOr();
    if (this.pos < this.tokens.length) throw new SyntaxError(`unexpected ${this.peek().type}`);
    return node;
  }

  parseOr() {
    let left = this.parseAnd();
    while (this.peek() && this.peek().type === 'or') {
      this.next();
      left = { kind: 'or', left, right: this.parseAnd() };
    }
    return left;
  }

  parseAnd() {
    let left = this.parseNot();
    while (this.peek() && this.peek().type === 'and') {
      this.next();
      left = { kind: 'and', left, right: this.parseNot() };
    }
    return left;
  }

  parseNot() {
    if (this.peek() && this.peek().type === 'not') {
      this.next();
      return { kind: 'not', operand: this.parseNot() };
    }
    return this.parseComparison();
  }

  parseComparison() {
    const left = this.parseAtom();
    const token = this.peek();
    if (token && token.type === 'op') {
      this.next();
      return { kind: 'compare', op: token.value, left, right: this.parseAtom() };
    }
    return left;
  }

  parseAtom() {
    const token = this.next();
    if (!token) throw new SyntaxError('unexpected end of rule');
    switch (token.type) {
      case 'number':
        return { kind: 'literal', value: token.value };
      case 'string':
        return { kind: 'literal', value: token.value };
      case 'true':
        return { kind: 'literal', value: true };
      case 'false':
        return { kind: 'literal', value: false };
      case 'name':
        return { kind: 'name', name: token.value };
      case '(': {
        const inner = this.parseOr();
        this.expect(')');
        return inner;
      }
      default:
        throw new SyntaxError(`unexpected ${token.type}`);
    }
  }
}

const COMPARISONS = {
  '=': (a, b) => a === b,
  '!=': (a, b) => a !== b,
  '<': (a, b) => a < b,
  '<=': (a, b) => a <= b,
  '>': (a, b) => a > b,
  '>=': (a, b) => a >= b,
};

function lookup(scope, dotted) {
  let value = scope;
  for (const part of dotted.split('.')) {
    if (value === undefined || value === null) return undefined;
    value = value[part];
  }
  return value;
}

const evaluators = {
  literal(node) {
    return node.value;
  },
  name(node, scope) {
    return lookup(scope, node.name);
  },
  not(node, scope) {
    return !evaluate(node.operand, scope);
  },
  and(node, scope) {
    return Boolean(evaluate(node.left, scope)) && Boolean(evaluate(node.right, scope));
  },
  or(node, scope) {
    return Boolean(evaluate(node.left, scope)) || Boolean(evaluate(node.right, scope));
  },
  compare(node, scope) {
    const test = COMPARISONS[node.op];
    return test(evaluate(node.left, scope), evaluate(node.right, scope));
  },
};

function evaluate(node, scope) {
  const fn = evaluators[node.kind];
  if (!fn) throw new Error(`cannot evaluate ${node.kind}`);
  return fn(node, scope);
}

function compile(source) {
  const ast = new Parser(tokenize(source)).parse();
  return (scope) => Boolean(evaluate(ast, scope));
}

module.exports = { tokenize, Parser, evaluate, compile };
