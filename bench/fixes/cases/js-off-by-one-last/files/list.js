function last(items) {
  return items[items.length];
}
module.exports = { last };
