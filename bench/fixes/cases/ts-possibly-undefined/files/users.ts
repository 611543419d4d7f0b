export interface User {
  id: number;
  name: string;
}

export function nameOf(users: User[], id: number): string {
  const user = users.find((u) => u.id === id);
  return user.name;
}
