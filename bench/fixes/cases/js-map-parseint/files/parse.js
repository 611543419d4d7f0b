function toNumbers(csv) {
  return csv.split(",").map(parseInt);
}
module.exports = { toNumbers };
