function displayName(user) {
  // Users without a profile show their login.
  return user.profile.name || user.login;
}
module.exports = { displayName };
