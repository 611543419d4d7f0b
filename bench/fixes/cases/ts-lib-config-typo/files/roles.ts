export function isAdmin(roles: string[]): boolean {
  return roles.includes("admin");
}
