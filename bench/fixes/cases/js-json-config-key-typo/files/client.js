const config = require("./config.json");

function retries() {
  return config.retries ?? 1;
}
module.exports = { retries };
