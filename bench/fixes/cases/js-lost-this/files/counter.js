class Counter {
  constructor() {
    this.count = 0;
  }

  increment() {
    this.count += 1;
  }

  incrementAll(items) {
    items.forEach(this.increment);
    return this.count;
  }
}
module.exports = { Counter };
