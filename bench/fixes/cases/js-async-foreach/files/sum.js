async function price(item) {
  await new Promise((resolve) => setTimeout(resolve, 1));
  return { apple: 3, pear: 4 }[item];
}

async function total(items) {
  let sum = 0;
  items.forEach(async (item) => {
    sum += await price(item);
  });
  return sum;
}
module.exports = { total };
