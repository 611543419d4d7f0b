import { fromForm } from "./cart";

const total: number = fromForm({ price: "2", quantity: "3" });
export default total;
