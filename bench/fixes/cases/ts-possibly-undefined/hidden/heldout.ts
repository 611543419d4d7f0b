import { nameOf } from "./users";

const who: string = nameOf([{ id: 1, name: "ada" }], 1);
export default who;
