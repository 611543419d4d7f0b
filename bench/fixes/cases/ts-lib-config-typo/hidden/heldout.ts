import { isAdmin } from "./roles";

export const yes: boolean = isAdmin(["admin"]) && [1, 2].includes(2);
